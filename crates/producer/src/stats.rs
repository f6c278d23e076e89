//! The producer's counters: what a program reports when it is done (`krec produce`'s summary).

use std::sync::atomic::{AtomicU64, Ordering};

/// What the producer has done so far ([`Producer::stats`](crate::Producer::stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProducerStats {
    /// Records the brokers acknowledged (with acks=0: records written to the connection).
    pub records_acknowledged: u64,
    /// Bytes of the batches acknowledged, as sent (compressed, headers included).
    pub bytes_acknowledged: u64,
    /// Batches acknowledged.
    pub batches_acknowledged: u64,
    /// Batches sent again after a retriable error or a lost connection.
    pub retries: u64,
    /// Records whose delivery failed.
    pub records_failed: u64,
    /// Batches the broker refused as too large for the topic (MESSAGE_TOO_LARGE), split and
    /// sent again in smaller parts.
    pub batches_split: u64,
    /// Time the brokers' quotas throttled this producer for, in milliseconds, summed over
    /// their answers (`throttle_time_ms`; no request goes to a broker while it throttles).
    pub throttle_time_ms: u64,
}

/// The live counters behind [`ProducerStats`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    records_acknowledged: AtomicU64,
    bytes_acknowledged: AtomicU64,
    batches_acknowledged: AtomicU64,
    retries: AtomicU64,
    records_failed: AtomicU64,
    batches_split: AtomicU64,
    throttle_time_ms: AtomicU64,
}

impl Counters {
    pub(crate) fn acknowledged(&self, records: i32, bytes: usize) {
        let records = records.max(0) as u64;
        self.records_acknowledged
            .fetch_add(records, Ordering::Relaxed);
        self.bytes_acknowledged
            .fetch_add(bytes as u64, Ordering::Relaxed);
        self.batches_acknowledged.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn retried(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn split(&self) {
        self.batches_split.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn throttled(&self, throttle_time_ms: i32) {
        self.throttle_time_ms
            .fetch_add(throttle_time_ms.max(0) as u64, Ordering::Relaxed);
    }

    pub(crate) fn failed(&self, records: usize) {
        self.records_failed
            .fetch_add(records as u64, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> ProducerStats {
        ProducerStats {
            records_acknowledged: self.records_acknowledged.load(Ordering::Relaxed),
            bytes_acknowledged: self.bytes_acknowledged.load(Ordering::Relaxed),
            batches_acknowledged: self.batches_acknowledged.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            records_failed: self.records_failed.load(Ordering::Relaxed),
            batches_split: self.batches_split.load(Ordering::Relaxed),
            throttle_time_ms: self.throttle_time_ms.load(Ordering::Relaxed),
        }
    }
}
