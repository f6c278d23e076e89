//! [`TopicPartition`]: the one name of a partition of a topic, in krec-client's API and in the
//! crates above it (krec-consumer re-exports it).

use std::fmt;
use std::sync::Arc;

/// A partition of a topic. Cheap to clone (the name is shared); ordered by topic, then
/// partition; printed as `topic/partition`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition id.
    pub partition: i32,
}

impl TopicPartition {
    /// The partition `partition` of `topic`.
    pub fn new(topic: impl Into<Arc<str>>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }
}

impl From<(&str, i32)> for TopicPartition {
    fn from((topic, partition): (&str, i32)) -> Self {
        Self::new(topic, partition)
    }
}

impl From<(String, i32)> for TopicPartition {
    fn from((topic, partition): (String, i32)) -> Self {
        Self::new(topic, partition)
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.topic, self.partition)
    }
}

impl fmt::Debug for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::TopicPartition;

    #[test]
    fn orders_by_topic_then_partition_and_prints_with_a_slash() {
        let mut all = vec![
            TopicPartition::new("b", 0),
            TopicPartition::new("a", 10),
            TopicPartition::new("a", 2),
        ];
        all.sort();
        assert_eq!(format!("{all:?}"), "[a/2, a/10, b/0]");
    }
}
