//! What a copy has done so far, readable from another thread while it runs.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use krec_client::TopicPartition;

/// A copy's counters; [`CopyStats::snapshot`] reads them.
#[derive(Debug, Default)]
pub struct CopyStats {
    records: AtomicU64,
    bytes: AtomicU64,
    batches: AtomicU64,
    reencoded: AtomicU64,
    skipped: AtomicU64,
    transactions: AtomicU64,
    aborted: AtomicU64,
    lost_records: AtomicU64,
    lag: Mutex<Vec<(TopicPartition, i64)>>,
}

/// The counters at one moment. Records, bytes and batches count what committed
/// transactions carried.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CopySnapshot {
    /// Records copied.
    pub records: u64,
    /// Batch bytes written to the target.
    pub bytes: u64,
    /// Batches written to the target (re-encoded ones counted as written).
    pub batches: u64,
    /// Source batches the target could not take as they were, written again record by
    /// record: legacy message sets, LogAppendTime, offset gaps (compaction), too large.
    pub reencoded: u64,
    /// Source batches left with no record (the log cleaner's), not written.
    pub skipped: u64,
    /// Transactions committed.
    pub transactions: u64,
    /// Transactions aborted (their batches copied again after).
    pub aborted: u64,
    /// Records the source deleted (retention) before they were copied: the offsets a
    /// partition skipped when its reading started again at the source's log start.
    pub lost_records: u64,
    /// Records each source partition still has to copy, as last seen.
    pub lag: Vec<(TopicPartition, i64)>,
}

/// What one transaction carries, counted once it commits.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Carried {
    pub(crate) records: u64,
    pub(crate) bytes: u64,
    pub(crate) batches: u64,
    pub(crate) reencoded: u64,
    pub(crate) skipped: u64,
    pub(crate) lost_records: u64,
}

impl CopyStats {
    /// The counters now.
    pub fn snapshot(&self) -> CopySnapshot {
        CopySnapshot {
            records: self.records.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            batches: self.batches.load(Relaxed),
            reencoded: self.reencoded.load(Relaxed),
            skipped: self.skipped.load(Relaxed),
            transactions: self.transactions.load(Relaxed),
            aborted: self.aborted.load(Relaxed),
            lost_records: self.lost_records.load(Relaxed),
            lag: self.lag.lock().map(|lag| lag.clone()).unwrap_or_default(),
        }
    }

    pub(crate) fn committed(&self, carried: &Carried) {
        self.records.fetch_add(carried.records, Relaxed);
        self.bytes.fetch_add(carried.bytes, Relaxed);
        self.batches.fetch_add(carried.batches, Relaxed);
        self.reencoded.fetch_add(carried.reencoded, Relaxed);
        self.skipped.fetch_add(carried.skipped, Relaxed);
        self.lost_records.fetch_add(carried.lost_records, Relaxed);
        self.transactions.fetch_add(1, Relaxed);
    }

    pub(crate) fn aborted(&self) {
        self.aborted.fetch_add(1, Relaxed);
    }

    pub(crate) fn set_lag(&self, lag: Vec<(TopicPartition, i64)>) {
        if let Ok(mut held) = self.lag.lock() {
            *held = lag;
        }
    }
}
