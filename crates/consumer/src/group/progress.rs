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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cursor::ChunkData;
    use crate::TopicPartition;

    fn chunk(generation: u64, fetch_offset: i64, next_offset: i64) -> PartitionChunk {
        let data = ChunkData {
            fetch_offset,
            next_offset,
            high_watermark: next_offset,
            last_stable_offset: next_offset,
            aborted: Vec::new(),
            records: bytes::Bytes::new(),
        };
        PartitionChunk::new(Arc::from("t"), 0, generation, data, false, None)
    }

    #[test]
    fn marks_stay_within_the_chunk_and_a_lost_assignment_marks_nothing() {
        let written = Arc::new(WrittenOffsets::default());
        let ownership = Ownership::default();
        let progress = GroupProgress::new(written.clone(), ownership.clone());
        written.track("t", 0, Some(10));
        let (first, second) = (1 << 32, 2 << 32);
        progress.processed_before(&chunk(first, 10, 20), 15);
        assert_eq!(written.get("t", 0), Some(15), "cut short by a record limit");
        progress.processed_before(&chunk(first, 10, 20), 99);
        assert_eq!(written.get("t", 0), Some(20), "never past the chunk's end");
        progress.processed(&chunk(first, 20, 30));
        assert_eq!(written.get("t", 0), Some(30));
        ownership.lose([(TopicPartition::new("t", 0), first)]);
        assert!(!progress.owns(&chunk(first, 30, 40)));
        progress.processed(&chunk(first, 30, 40));
        assert_eq!(
            written.get("t", 0),
            Some(30),
            "fetched before the loss: not marked"
        );
        assert!(progress.owns(&chunk(second, 30, 40)));
        progress.processed(&chunk(second, 30, 40));
        assert_eq!(written.get("t", 0), Some(40), "assigned again since");
    }
}
