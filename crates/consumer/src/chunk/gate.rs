//! Which of a walk's batches a chunk delivers: not those wholly before the fetch offset, not
//! aborted transactions under `read_committed`; and where the walk has got to.

use krec_batch::layout::{self, v2};
use krec_batch::{Batch, BatchSummary, ControlKind};

use super::PartitionChunk;
use crate::Error;
use krec_client::fetch::AbortedTransaction;

/// Which of the walk's batches are delivered, and what the walk has passed: a field of its
/// own, so it can be consulted while the walk lends a batch.
pub(super) struct BatchGate<'a> {
    chunk: &'a PartitionChunk,
    /// The fetch response's aborted transactions not reached yet, the next one last.
    pending: Vec<AbortedTransaction>,
    /// Producers whose transaction is aborted at the walk's position.
    producers: Vec<i64>,
    /// `next_offset` of the last batch walked.
    pub(super) last_next_offset: Option<i64>,
    /// Records hidden so far because their transaction was aborted.
    pub(super) aborted_records: u64,
}

/// What the gate reads of a batch, from a decoded batch or from its summary.
pub(super) struct GateInput {
    producer_id: i64,
    last_offset: i64,
    next_offset: i64,
    record_count: u32,
    transactional: bool,
    control: bool,
    /// A control batch holding an ABORT marker.
    aborts: bool,
}

impl GateInput {
    pub(super) fn of_batch(batch: &Batch<'_>, chunk: &PartitionChunk) -> Result<Self, Error> {
        let mut aborts = false;
        // Markers matter only to the aborted-transaction filter.
        if chunk.read_committed && batch.is_control() {
            for control in batch.control_records() {
                let control = control.map_err(|e| chunk.decode_error(e))?;
                aborts |= control.kind == ControlKind::Abort;
            }
        }
        Ok(Self {
            producer_id: batch.producer_id(),
            last_offset: batch.last_offset(),
            next_offset: batch.next_offset(),
            record_count: batch.record_count(),
            transactional: batch.is_transactional(),
            control: batch.is_control(),
            aborts,
        })
    }

    pub(super) fn of_summary(summary: &BatchSummary) -> Self {
        Self {
            producer_id: summary.producer_id,
            last_offset: summary.last_offset,
            next_offset: summary.last_offset + 1,
            record_count: summary.data_records,
            transactional: summary.transactional,
            control: summary.control,
            aborts: summary.marker == Some(ControlKind::Abort),
        }
    }
}

impl<'c> BatchGate<'c> {
    pub(super) fn new(chunk: &'c PartitionChunk) -> Self {
        let mut pending = chunk.data.aborted.clone();
        // Popped from the back in first-offset order.
        pending.sort_by_key(|a| std::cmp::Reverse(a.first_offset));
        BatchGate {
            chunk,
            pending,
            producers: Vec::new(),
            last_next_offset: None,
            aborted_records: 0,
        }
    }

    /// Notes that the walk passed `batch`; whether it is delivered: not when its transaction
    /// was aborted (counted), nor when it lies wholly before the fetch offset.
    pub(super) fn admit(&mut self, batch: &GateInput) -> Result<bool, Error> {
        self.last_next_offset = Some(batch.next_offset);
        if self.is_aborted(batch) {
            self.aborted_records += u64::from(batch.record_count);
            return Ok(false);
        }
        Ok(batch.next_offset > self.chunk.data.fetch_offset)
    }

    /// Notes a corrupt batch stepped over; under `read_committed`, the producer whose aborted
    /// transaction it ended, if any. The batch's header is unverified (its CRC or records
    /// failed), but when it names a control batch of a producer aborted here, the fetch
    /// response's list (aborted transactions only) says it can only be that producer's ABORT
    /// marker: lost, it would hide the producer's later committed records.
    pub(super) fn pass_corrupt(&mut self, entry: &[u8], last_offset: i64) -> Option<i64> {
        if !self.chunk.read_committed
            || entry.len() < v2::HEADER_SIZE
            || entry[layout::MAGIC_AT] != layout::magic::V2
        {
            return None;
        }
        self.reach(last_offset);
        let field = |at: usize, len: usize| &entry[at..at + len];
        let attributes = i16::from_be_bytes(field(v2::ATTRIBUTES_AT, 2).try_into().ok()?);
        let producer_id = i64::from_be_bytes(field(v2::PRODUCER_ID_AT, 8).try_into().ok()?);
        let control = attributes & v2::attributes::CONTROL != 0;
        let aborted = self.producers.contains(&producer_id);
        if !(control && aborted) {
            return None;
        }
        self.producers.retain(|p| *p != producer_id);
        Some(producer_id)
    }

    /// Producers whose aborted transaction starts at or before `last_offset` join the aborted.
    fn reach(&mut self, last_offset: i64) {
        while let Some(next) = self.pending.last() {
            if next.first_offset > last_offset {
                break;
            }
            if !self.producers.contains(&next.producer_id) {
                self.producers.push(next.producer_id);
            }
            self.pending.pop();
        }
    }

    /// Whether `batch` belongs to an aborted transaction, following the fetch response's
    /// aborted list the way Kafka's Java consumer does: a producer becomes aborted once the
    /// walk passes the first offset of one of its aborted transactions, and stops being
    /// aborted at its ABORT marker.
    fn is_aborted(&mut self, batch: &GateInput) -> bool {
        let producer_id = batch.producer_id;
        if !self.chunk.read_committed || producer_id < 0 {
            return false;
        }
        self.reach(batch.last_offset);
        if batch.control {
            if batch.aborts {
                self.producers.retain(|p| *p != producer_id);
            }
            return false;
        }
        batch.transactional && self.producers.contains(&producer_id)
    }
}
