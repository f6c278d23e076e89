//! Where assigned partitions stand ([`PartitionPosition`]), and metrics snapshots taken from
//! anywhere ([`MetricsSource`]).

use std::sync::Arc;

use crate::cursor::CursorState;
use crate::metrics::MetricsSnapshot;
use crate::shared::Shared;
use crate::TopicPartition;

/// Where one assigned partition stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionPosition {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// Next offset to fetch (none while the start offset is being looked up).
    pub offset: Option<i64>,
    /// Last high watermark seen (none before the first fetch).
    pub high_watermark: Option<i64>,
    /// Last stable offset seen (none before the first fetch, or when the broker sent none).
    pub last_stable_offset: Option<i64>,
}

impl PartitionPosition {
    /// Records between the position and the end the consumer reads to (0 when unknown).
    pub fn lag(&self, read_committed: bool) -> i64 {
        let end = match self.last_stable_offset {
            Some(stable) if read_committed => Some(stable),
            _ => self.high_watermark,
        };
        match (end, self.offset) {
            (Some(end), Some(offset)) => (end - offset).max(0),
            _ => 0,
        }
    }
}

pub(crate) fn positions(shared: &Shared) -> Vec<PartitionPosition> {
    let state = shared.state();
    state
        .cursors
        .values()
        .map(|c| PartitionPosition {
            topic_partition: TopicPartition::new(c.topic.clone(), c.partition),
            offset: match c.state {
                CursorState::NeedsOffset(_) => None,
                _ => Some(c.offset),
            },
            // The wire's -1 means unknown.
            high_watermark: Some(c.high_watermark).filter(|&o| o >= 0),
            last_stable_offset: Some(c.last_stable_offset).filter(|&o| o >= 0),
        })
        .collect()
}

/// Takes [`MetricsSnapshot`]s of one consumer (or group member) from any task or thread, for
/// as long as it is kept (after the consumer is dropped, the last counts).
#[derive(Clone, Debug)]
pub struct MetricsSource {
    pub(crate) shared: Arc<Shared>,
}

impl MetricsSource {
    /// The counters and positions now.
    pub fn snapshot(&self) -> MetricsSnapshot {
        self.shared.metrics.snapshot(positions(&self.shared))
    }
}

#[cfg(test)]
mod tests {
    use super::PartitionPosition;
    use crate::TopicPartition;

    fn position(
        offset: Option<i64>,
        high_watermark: Option<i64>,
        last_stable_offset: Option<i64>,
    ) -> PartitionPosition {
        PartitionPosition {
            topic_partition: TopicPartition::new("t", 0),
            offset,
            high_watermark,
            last_stable_offset,
        }
    }

    #[test]
    fn lag_counts_to_the_end_the_consumer_reads_to() {
        assert_eq!(position(Some(10), Some(50), Some(40)).lag(false), 40);
        assert_eq!(position(Some(10), Some(50), Some(40)).lag(true), 30);
        // Reading committed data with no stable offset known yet: the high watermark.
        assert_eq!(position(Some(10), Some(50), None).lag(true), 40);
        // Unknown positions or ends report no lag rather than a made-up one.
        assert_eq!(position(None, Some(50), Some(40)).lag(false), 0);
        assert_eq!(position(Some(10), None, None).lag(true), 0);
        assert_eq!(position(Some(60), Some(50), Some(50)).lag(false), 0);
    }
}
