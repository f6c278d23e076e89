//! Where reading ends: `-e` (every partition at its end, alone or as a group member), and the
//! end of a bounded `-o` range.

use std::sync::Arc;
use std::time::Duration;

use krec_consumer::{Consumer, PartitionChunk, PartitionPosition, TopicPartition};

use crate::range::{self, RangeEnds, RangeWatch};
use crate::time::now_ms;
use crate::Error;

/// `-e` without a group: the partitions that have reached their end (each counts once, as in
/// kcat). Every partition consumed now must be among them; topics a pattern adds later count
/// from when they are added, and dropped (deleted) ones no longer count.
#[derive(Debug, Default)]
pub(super) struct EndWatch {
    reached: std::collections::BTreeSet<(Arc<str>, i32)>,
}

impl EndWatch {
    pub(super) fn reached(&mut self, topic: Arc<str>, partition: i32) {
        self.reached.insert((topic, partition));
    }

    /// Partitions that reached their end, dropped ones included.
    pub(super) fn count(&self) -> usize {
        self.reached.len()
    }

    pub(super) fn all_reached(&self, positions: &[PartitionPosition]) -> bool {
        positions.iter().all(|p| {
            let key = &p.topic_partition;
            self.reached.contains(&(key.topic.clone(), key.partition))
        })
    }
}

/// Which assigned partitions of a group member are at their end (for `-e`): a partition
/// leaves the set when it fetches more, and the check costs a look at the whole assignment
/// only once enough partitions are at their end.
#[derive(Debug, Default)]
pub(super) struct GroupEnds {
    at_end: std::collections::HashMap<Arc<str>, std::collections::HashSet<i32>>,
    count: usize,
}

impl GroupEnds {
    pub(super) fn fetched(&mut self, topic: &str, partition: i32) {
        if let Some(partitions) = self.at_end.get_mut(topic) {
            self.count -= usize::from(partitions.remove(&partition));
        }
    }

    pub(super) fn reached(&mut self, topic: Arc<str>, partition: i32) {
        self.count += usize::from(self.at_end.entry(topic).or_default().insert(partition));
    }

    /// Every partition of `assignment` (not empty) is at its end.
    pub(super) fn all_reached(
        &mut self,
        assignment: &std::collections::BTreeSet<TopicPartition>,
    ) -> bool {
        if assignment.is_empty() || self.count < assignment.len() {
            return false;
        }
        // Partitions revoked since they reached their end no longer count.
        let at_end = |key: &TopicPartition| {
            self.at_end
                .get(&*key.topic)
                .is_some_and(|p| p.contains(&key.partition))
        };
        let reached = assignment.iter().filter(|p| at_end(p)).count();
        if reached == assignment.len() {
            return true;
        }
        for (topic, partitions) in &mut self.at_end {
            partitions.retain(|&p| assignment.contains(&TopicPartition::new(topic.clone(), p)));
        }
        self.count = reached;
        false
    }
}

/// A bounded range: where each partition ends, and the partitions not there yet (none
/// without an end).
#[derive(Debug)]
pub(super) struct Ranges {
    /// Where each partition's range ends; the decode threads read it too.
    pub(super) ends: Arc<RangeEnds>,
    watch: Option<RangeWatch>,
}

impl Ranges {
    pub(super) fn new(ends: Arc<RangeEnds>, watch: Option<RangeWatch>) -> Self {
        Self { ends, watch }
    }

    /// The partition of `chunk`, if the chunk reaches the end of its range. The partition's
    /// name is copied only when this chunk ends its range.
    pub(super) fn passed_by(&self, chunk: &PartitionChunk) -> Option<(String, i32)> {
        let passed = self.watch.is_some()
            && self
                .ends
                .get(chunk.topic(), chunk.partition())
                .and_then(|end| end.offset)
                .is_some_and(|end| chunk.next_offset() >= end);
        passed.then(|| (chunk.topic().to_owned(), chunk.partition()))
    }

    /// The partition has passed its end: it is no longer fetched.
    pub(super) fn close(&mut self, consumer: &mut Consumer, topic: &str, partition: i32) {
        if let Some(watch) = self.watch.as_mut() {
            watch.close(consumer, topic, partition);
        }
    }

    /// Every partition has passed its end (never without an end).
    pub(super) fn is_done(&self) -> bool {
        self.watch.as_ref().is_some_and(RangeWatch::is_done)
    }

    /// The earliest end time not settled yet.
    pub(super) fn settle_at(&self) -> Option<i64> {
        range::next_unsettled(&self.ends)
    }

    /// Fixes the ends whose time has passed, and closes the partitions already past them.
    pub(super) async fn settle(&mut self, consumer: &mut Consumer) -> Result<(), Error> {
        range::settle_passed(consumer, &self.ends).await?;
        if let Some(watch) = self.watch.as_mut() {
            watch.close_reached(consumer, &self.ends);
        }
        Ok(())
    }
}

/// Sleeps until the wall clock reaches `ms` since the epoch, plus a second for records
/// stamped just before it to arrive (forever when there is none).
pub(super) async fn wait_until_ms(ms: Option<i64>) {
    let Some(ms) = ms else {
        return std::future::pending().await;
    };
    let wait = ms.saturating_sub(now_ms()).max(0) as u64 + 1_000;
    tokio::time::sleep(Duration::from_millis(wait)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_member_is_at_the_end_when_every_assigned_partition_is() {
        let assigned = |list: &[(&str, i32)]| -> std::collections::BTreeSet<TopicPartition> {
            list.iter()
                .map(|&(t, p)| TopicPartition::new(t, p))
                .collect()
        };
        let mut ends = GroupEnds::default();
        assert!(!ends.all_reached(&assigned(&[])), "nothing assigned yet");
        ends.reached(Arc::from("a"), 0);
        ends.reached(Arc::from("b"), 1);
        assert!(!ends.all_reached(&assigned(&[("a", 0), ("a", 1)])));
        // More came for a/0 after its end: it must reach the end again.
        ends.fetched("a", 0);
        ends.reached(Arc::from("a"), 1);
        assert!(!ends.all_reached(&assigned(&[("a", 0), ("a", 1)])));
        ends.reached(Arc::from("a"), 0);
        assert!(ends.all_reached(&assigned(&[("a", 0), ("a", 1)])));
        // b/1 was revoked: it no longer counts towards a later, larger assignment.
        let larger = assigned(&[("a", 0), ("a", 1), ("c", 0)]);
        assert!(!ends.all_reached(&larger));
        ends.reached(Arc::from("c"), 0);
        assert!(ends.all_reached(&larger));
    }
}
