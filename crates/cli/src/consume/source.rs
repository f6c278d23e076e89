//! Where `krec consume` reads from: partitions it assigns itself (named, every partition of
//! the topics, or a bounded range of them), those a consumer group gives it (`-G`), or the
//! records a share group hands it (`--share-group`). The run loop asks a [`Source`] for what
//! was fetched and tells it what happened; the source keeps what differs: the range, for a
//! group member the commits, for a share-group member the acknowledgements. `-e` is the
//! consumer's own (`stop_at_end`): the source ends when every partition is at its end.

use std::sync::Arc;

use krec_consumer::group::{GroupConsumer, GroupProgress, NoListener};
use krec_consumer::partitioner::Partitioner;
use krec_consumer::share::ShareCounters;
use krec_consumer::{
    Acknowledger, Consumer, ConsumerConfig, GroupEvent, MetricsSource, PartitionPosition,
    StartOffset, TopicPartition, TopicSubscription,
};

use super::ends::Ranges;
use super::share::{self, Summary};
use super::sink::OutputChunk;
use super::ConsumeArgs;
use crate::progress::OutputWorkers;
use crate::range::{self, OffsetRange, RangeEnds};
use crate::Error;

/// What `krec consume` reads from.
pub(super) enum Source {
    /// Partitions assigned by `krec consume` itself.
    Assigned(Assigned),
    /// A consumer group member (`-G`): the group assigns, written positions are committed.
    /// (Boxed: a group member is much larger than a consumer.)
    Member(Box<GroupConsumer>),
    /// A share group member (`--share-group`): records acquired for it, acknowledged once
    /// written.
    Shared(Box<share::Member>),
}

/// Partitions assigned by `krec consume` itself, without a group.
pub(super) struct Assigned {
    consumer: Consumer,
    /// A bounded `-o` range: where each partition ends, and those not there yet.
    ranges: Ranges,
}

impl Source {
    /// Connects and starts reading what `-t` and `-p` name, from `range`'s start (to its end,
    /// if it has one).
    pub(super) async fn assign(
        args: &ConsumeArgs,
        config: ConsumerConfig,
        subscription: TopicSubscription,
        range: OffsetRange,
    ) -> Result<Self, Error> {
        let mut consumer = Consumer::connect(config).await?;
        let range_ends = Arc::new(RangeEnds::default());
        let mut watch = None;
        if range.end.is_some() {
            let topics = bounded_topics(&consumer, args, &subscription).await?;
            watch = Some(range::assign_bounded(&mut consumer, &topics, range, &range_ends).await?);
        } else {
            start_consuming(&mut consumer, args, subscription, range.start).await?;
        }
        if args.exit_at_end && consumer.positions().is_empty() {
            tracing::warn!(topics = %args.topic, "nothing to read; exiting (-e)");
        }
        consumer.stop_at_end(args.exit_at_end);
        Ok(Self::Assigned(Assigned {
            consumer,
            ranges: Ranges::new(range_ends, watch),
        }))
    }

    /// Joins the group `config.group` describes; with `exit_at_end` (`-e`), ends once every
    /// assigned partition is at its end.
    pub(super) async fn join(config: ConsumerConfig, exit_at_end: bool) -> Result<Self, Error> {
        let mut group = GroupConsumer::join(config, NoListener).await?;
        group.stop_at_end(exit_at_end);
        Ok(Self::Member(Box::new(group)))
    }

    /// Joins share group `group`, reading `topics`.
    pub(super) async fn share(
        config: ConsumerConfig,
        group: &str,
        topics: &[String],
    ) -> Result<Self, Error> {
        let member = share::Member::join(config, group, topics).await?;
        Ok(Self::Shared(Box::new(member)))
    }

    /// The next chunk; `None` when the source has ended (`-e`: every partition at its end; a
    /// share group member: fetching stopped). Cancel-safe.
    pub(super) async fn next(&mut self) -> Result<Option<OutputChunk>, Error> {
        match self {
            Self::Assigned(assigned) => {
                let chunk = assigned.consumer.next_chunk().await?;
                Ok(chunk.map(OutputChunk::Read))
            }
            // Assignment changes are the group's own business here.
            Self::Member(group) => loop {
                match group.next_event().await? {
                    Some(GroupEvent::Chunk(chunk)) => return Ok(Some(OutputChunk::Read(chunk))),
                    Some(_) => continue,
                    None => return Ok(None),
                }
            },
            Self::Shared(member) => Ok(member.next().await.map(OutputChunk::Shared)),
        }
    }

    /// Where every partition's fetching stands (none for a share group: it has no positions).
    pub(super) fn positions(&self) -> Vec<PartitionPosition> {
        match self {
            Self::Assigned(assigned) => assigned.consumer.positions(),
            Self::Member(group) => group.positions(),
            Self::Shared(_) => Vec::new(),
        }
    }

    /// The consumer's counters, for `--metrics`.
    pub(super) fn metrics_source(&self) -> MetricsSource {
        match self {
            Self::Assigned(assigned) => assigned.consumer.metrics_source(),
            Self::Member(group) => group.metrics_source(),
            Self::Shared(member) => member.metrics_source(),
        }
    }

    /// For a share group member: its acknowledgement counters, for `--metrics`.
    pub(super) fn share_counters(&self) -> Option<Arc<ShareCounters>> {
        match self {
            Self::Shared(member) => Some(member.counters()),
            _ => None,
        }
    }

    /// For a group member: where the sink marks what it wrote, so only that is committed,
    /// and asks which chunks are still its own to write.
    pub(super) fn group_progress(&self) -> Option<GroupProgress> {
        match self {
            Self::Member(group) => Some(group.progress()),
            _ => None,
        }
    }

    /// For a share group member: where the sink acknowledges what it wrote.
    pub(super) fn acknowledger(&self) -> Option<Acknowledger> {
        match self {
            Self::Shared(member) => Some(member.acknowledger()),
            _ => None,
        }
    }

    /// Where bounded ranges end (none for a group member).
    pub(super) fn range_ends(&self) -> Arc<RangeEnds> {
        match self {
            Self::Assigned(assigned) => assigned.ranges.ends.clone(),
            _ => Arc::default(),
        }
    }

    /// Hands a fetched chunk to its partition's decode thread; a partition whose range this
    /// chunk finishes is no longer fetched.
    pub(super) fn hand_out(
        &mut self,
        chunk: OutputChunk,
        workers: &mut OutputWorkers<OutputChunk>,
    ) -> Result<(), Error> {
        let (Self::Assigned(assigned), OutputChunk::Read(read)) = (&mut *self, &chunk) else {
            return workers.submit(chunk);
        };
        let passed = assigned.ranges.passed_by(read);
        workers.submit(chunk)?;
        if let Some((topic, partition)) = passed {
            assigned
                .ranges
                .close(&mut assigned.consumer, &topic, partition);
        }
        Ok(())
    }

    /// Every partition of a bounded range has passed its end.
    pub(super) fn ranges_read(&self) -> bool {
        match self {
            Self::Assigned(assigned) => assigned.ranges.is_done(),
            _ => false,
        }
    }

    /// A decode thread wrote past the end of the partition's range.
    pub(super) fn range_passed(&mut self, topic: &str, partition: i32) {
        if let Self::Assigned(assigned) = self {
            assigned
                .ranges
                .close(&mut assigned.consumer, topic, partition);
        }
    }

    /// The earliest range end time not settled yet.
    pub(super) fn settle_at(&self) -> Option<i64> {
        match self {
            Self::Assigned(assigned) => assigned.ranges.settle_at(),
            _ => None,
        }
    }

    /// Fixes the ends of the ranges whose end time has passed.
    pub(super) async fn settle(&mut self) -> Result<(), Error> {
        match self {
            Self::Assigned(assigned) => assigned.ranges.settle(&mut assigned.consumer).await,
            _ => Ok(()),
        }
    }

    /// Stops fetching; what was handed out can still be written (and marked).
    pub(super) fn stop_fetching(&mut self) {
        match self {
            Self::Assigned(assigned) => assigned.consumer.stop_fetching(),
            Self::Member(group) => group.stop_fetching(),
            Self::Shared(member) => member.stop_fetching(),
        }
    }

    /// Once everything handed out is written: ends the brokers' fetch sessions (bounded); a
    /// group member commits what was written and leaves; a share group member releases what
    /// it did not acknowledge, leaves, and says what it acknowledged.
    pub(super) async fn close(self) -> Result<Option<Summary>, Error> {
        match self {
            Self::Assigned(assigned) => {
                assigned.consumer.close().await;
                Ok(None)
            }
            Self::Member(group) => {
                group.close().await?;
                Ok(None)
            }
            Self::Shared(member) => member.close().await.map(Some),
        }
    }
}

/// `partitions` of `topic`, in the consumer's shape.
fn topic_partitions(topic: &str, partitions: &[i32]) -> Vec<TopicPartition> {
    let topic: std::sync::Arc<str> = std::sync::Arc::from(topic);
    partitions
        .iter()
        .map(|&partition| TopicPartition::new(topic.clone(), partition))
        .collect()
}

/// With `--key` and `--partitioner`, only the partition that partitioner sends the key to;
/// otherwise all of `partitions`.
fn key_partition(args: &ConsumeArgs, partitions: Vec<i32>) -> Result<Vec<i32>, Error> {
    let Some(partitioner) = &args.partitioner else {
        return Ok(partitions);
    };
    let partitioner = partitioner
        .parse::<Partitioner>()
        .map_err(krec_consumer::Error::from)?;
    let filter = args.format.filter.filter()?;
    let Some(key) = filter.as_ref().and_then(|filter| filter.key()) else {
        return Err(Error::InvalidArgument {
            what: "--partitioner",
            detail: "it finds the partition of a --key; give --key too".to_owned(),
        });
    };
    let partition = partitioner.partition(key, partitions.len() as i32);
    eprintln!(
        "krec consume: reading partition {partition} only: {partitioner:?} sends the key there \
         among {} partitions",
        partitions.len()
    );
    Ok(vec![partition])
}

/// The topics of a bounded range and their partitions: `-p`'s, the `--key`'s, or all.
async fn bounded_topics(
    consumer: &Consumer,
    args: &ConsumeArgs,
    subscription: &TopicSubscription,
) -> Result<Vec<(String, Vec<i32>)>, Error> {
    let mut topics = Vec::new();
    for topic in subscription.names() {
        let partitions = if args.read.partitions.is_empty() {
            key_partition(args, consumer.partitions(topic).await?)?
        } else {
            args.read.partitions.clone()
        };
        topics.push((topic.clone(), partitions));
    }
    Ok(topics)
}

/// Starts reading what `-t` names: the `-p` partitions of its one topic, or every partition
/// of every topic it takes, followed as the patterns match other topics.
async fn start_consuming(
    consumer: &mut Consumer,
    args: &ConsumeArgs,
    subscription: TopicSubscription,
    start: StartOffset,
) -> Result<(), Error> {
    match subscription.names() {
        [topic] if !args.read.partitions.is_empty() => {
            let partitions = topic_partitions(topic, &args.read.partitions);
            consumer.assign(&partitions, start).await?;
        }
        [topic] if args.partitioner.is_some() && !subscription.has_patterns() => {
            let partitions = key_partition(args, consumer.partitions(topic).await?)?;
            consumer
                .assign(&topic_partitions(topic, &partitions), start)
                .await?;
        }
        _ => consumer.subscribe(subscription, start).await?,
    }
    Ok(())
}
