//! [`GroupProgress`]: the one way a group member says what it has processed, from the task
//! that polls or from the threads that write records out.

use std::sync::Arc;

use super::ownership::Ownership;
use super::written::WrittenOffsets;
use crate::PartitionChunk;

/// Marks chunks processed: the only offsets a group member commits (at-least-once). Cheap to
/// clone, for any task or thread; from [`super::GroupConsumer::progress`].
///
/// Mark a chunk once its records have been handled, in order per partition. A chunk fetched
/// under an assignment lost since ([`super::GroupEvent::Lost`]) is not the member's any more:
/// [`GroupProgress::owns`] says so before its records are written, and marking it does
/// nothing.
#[derive(Clone, Debug)]
pub struct GroupProgress {
    written: Arc<WrittenOffsets>,
    ownership: Ownership,
}

impl GroupProgress {
    pub(crate) fn new(written: Arc<WrittenOffsets>, ownership: Ownership) -> Self {
        Self { written, ownership }
    }

    /// Marks all of `chunk` processed: its partition is committable up to the chunk's end
    /// ([`PartitionChunk::next_offset`]).
    pub fn processed(&self, chunk: &PartitionChunk) {
        self.processed_before(chunk, chunk.next_offset());
    }

    /// Marks the records of `chunk` before `next_offset` processed, for a chunk handled only
    /// in part (a record limit reached in its middle): the rest will be read again after a
    /// restart. `next_offset` is kept within the chunk.
    pub fn processed_before(&self, chunk: &PartitionChunk, next_offset: i64) {
        if !self.owns(chunk) {
            return;
        }
        let next_offset = next_offset.clamp(chunk.fetch_offset(), chunk.next_offset());
        self.written
            .mark(chunk.topic(), chunk.partition(), next_offset);
    }

    /// False once `chunk`'s partition was lost after the chunk was fetched, even if it was
    /// assigned again since: another member may be reading it, so its records must not be
    /// written. One short lock per call.
    pub fn owns(&self, chunk: &PartitionChunk) -> bool {
        self.ownership.owns(chunk)
    }
}
