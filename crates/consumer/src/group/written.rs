//! What has left the sink: per assigned partition, the offset after the last record written
//! out. Only these offsets are ever committed (at-least-once).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use super::assignor::TopicPartition;

/// Written-out positions of the assigned partitions, shared by the threads that write records
/// and the task that commits them.
#[derive(Debug, Default)]
pub(crate) struct WrittenOffsets {
    /// Per tracked partition, its written position once known.
    positions: Mutex<HashMap<String, HashMap<i32, Option<i64>>>>,
}

impl WrittenOffsets {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashMap<i32, Option<i64>>>> {
        // Positions are plain numbers: a panic elsewhere leaves nothing half-updated.
        self.positions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records that everything before `next_offset` of the partition has been written out.
    /// Positions only move forward; a partition not assigned (any more) is ignored, so a late
    /// writer cannot resurrect a revoked partition.
    pub(crate) fn mark(&self, topic: &str, partition: i32, next_offset: i64) {
        let mut positions = self.lock();
        if let Some(position) = positions
            .get_mut(topic)
            .and_then(|partitions| partitions.get_mut(&partition))
        {
            *position = Some(position.map_or(next_offset, |at| at.max(next_offset)));
        }
    }

    /// The written position of a partition, if it is assigned and known.
    pub(crate) fn get(&self, topic: &str, partition: i32) -> Option<i64> {
        self.lock()
            .get(topic)
            .and_then(|partitions| partitions.get(&partition))
            .copied()
            .flatten()
    }

    /// Starts tracking a newly assigned partition at its start offset (none while unknown).
    pub(crate) fn track(&self, topic: &str, partition: i32, start: Option<i64>) {
        self.lock()
            .entry(topic.to_owned())
            .or_default()
            .insert(partition, start);
    }

    /// Stops tracking partitions that were revoked.
    pub(crate) fn forget(&self, partitions: &[TopicPartition]) {
        let mut positions = self.lock();
        for TopicPartition { topic, partition } in partitions {
            if let Some(by_partition) = positions.get_mut(&**topic) {
                by_partition.remove(partition);
                if by_partition.is_empty() {
                    positions.remove(&**topic);
                }
            }
        }
    }

    /// The known positions of `partitions` (unknown ones left out).
    pub(crate) fn snapshot<'a>(
        &self,
        partitions: impl IntoIterator<Item = &'a TopicPartition>,
    ) -> BTreeMap<TopicPartition, i64> {
        let positions = self.lock();
        partitions
            .into_iter()
            .filter_map(|key| {
                let offset = (*positions.get(&*key.topic)?.get(&key.partition)?)?;
                Some((key.clone(), offset))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_move_forward_only_and_only_for_tracked_partitions() {
        let written = WrittenOffsets::default();
        written.mark("t", 0, 10);
        assert_eq!(
            written.get("t", 0),
            None,
            "untracked partitions are ignored"
        );
        written.track("t", 0, Some(5));
        written.mark("t", 0, 10);
        written.mark("t", 0, 7);
        assert_eq!(written.get("t", 0), Some(10));
        written.track("t", 1, None);
        let all = [
            TopicPartition::from(("t", 0)),
            TopicPartition::from(("t", 1)),
        ];
        assert_eq!(
            written.snapshot(&all),
            BTreeMap::from([(TopicPartition::from(("t", 0)), 10)])
        );
        written.forget(&all[..1]);
        written.mark("t", 0, 20);
        assert_eq!(written.get("t", 0), None);
    }
}
