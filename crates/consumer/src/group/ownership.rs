//! Whether a chunk handed out earlier still belongs to the member: the check a writer makes
//! before its records go out, so that a partition lost meanwhile (and perhaps read by another
//! member already) is not written on from data fetched before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::assignor::TopicPartition;
use crate::PartitionChunk;

/// Which chunks handed out are still the member's ([`super::GroupProgress::owns`]).
///
/// [`Ownership::owns`] is false for a chunk fetched under an assignment of its partition that
/// was lost since ([`super::GroupEvent::Lost`]). A partition revoked in a rebalance stays
/// owned until the member lets it go, after what was handed out is written, so its chunks
/// pass.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ownership {
    lost: Arc<Mutex<LostGenerations>>,
}

/// Per topic and partition lost, the last cursor generation it was lost under.
type LostGenerations = HashMap<Arc<str>, HashMap<i32, u64>>;

impl Ownership {
    /// Partitions lost, each with the cursor generation it was read under: chunks of that
    /// generation or an earlier one are no longer owned.
    pub(crate) fn lose(&self, partitions: impl IntoIterator<Item = (TopicPartition, u64)>) {
        let mut lost = self.lock();
        for (TopicPartition { topic, partition }, generation) in partitions {
            let entry = lost.entry(topic).or_default().entry(partition).or_default();
            *entry = (*entry).max(generation);
        }
    }

    /// False once the chunk's partition was lost, even if it was assigned again since: its
    /// records must not be written, nor marked written. One short lock per call.
    pub(crate) fn owns(&self, chunk: &PartitionChunk) -> bool {
        self.lock()
            .get(chunk.topic())
            .and_then(|partitions| partitions.get(&chunk.partition()))
            .is_none_or(|&lost| chunk.generation() > lost)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LostGenerations> {
        // Plain numbers: a panic elsewhere leaves nothing half-updated.
        self.lost
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cursor::ChunkData;

    fn chunk(partition: i32, generation: u64) -> PartitionChunk {
        let data = ChunkData {
            fetch_offset: 0,
            next_offset: 0,
            high_watermark: 0,
            last_stable_offset: 0,
            aborted: Vec::new(),
            records: bytes::Bytes::new(),
        };
        PartitionChunk::new(Arc::from("t"), partition, generation, data, false, None)
    }

    #[test]
    fn chunks_of_a_lost_assignment_are_not_owned_and_those_of_a_later_one_are() {
        let ownership = Ownership::default();
        let (first, seeked, second) = (1 << 32, (1 << 32) + 1, 2 << 32);
        assert!(ownership.owns(&chunk(0, first)), "nothing lost yet");
        ownership.lose([(TopicPartition::from(("t", 0)), seeked)]);
        assert!(
            !ownership.owns(&chunk(0, first)),
            "fetched before a seek, then lost"
        );
        assert!(!ownership.owns(&chunk(0, seeked)));
        assert!(
            ownership.owns(&chunk(0, second)),
            "assigned again after the loss"
        );
        assert!(
            ownership.owns(&chunk(1, first)),
            "another partition, never lost"
        );
        // A later loss of the same partition covers the later assignment too.
        ownership.lose([(TopicPartition::from(("t", 0)), second)]);
        assert!(!ownership.owns(&chunk(0, second)));
        ownership.lose([(TopicPartition::from(("t", 0)), first)]);
        assert!(
            !ownership.owns(&chunk(0, second)),
            "generations lost never go back"
        );
    }
}
