//! The accumulator, as the Java client's RecordAccumulator: per partition an open batch (a
//! `BatchWriter`) that `send` appends to, and the finished batches not yet acknowledged, in
//! sequence order. The senders drain it (`drain`), the metadata task routes it.
//!
//! One lock guards it all; `send` holds it for one append (and, when a batch fills, for
//! finishing that batch).

mod copied;
mod drain;
mod transaction;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use krec_batch::{Append, BatchWriter, Codec, WriteConfig};
use krec_client::metadata::ClusterMetadata;
use krec_client::partitioner::{
    Partitioning, RandomSource, SeededRandom, StickyPartitioner, Unkeyed,
};
use tokio::sync::Semaphore;
use uuid::Uuid;

use crate::delivery::{BatchCompletion, Delivery};
use crate::identity::Identity;
use crate::record::ProducerRecord;
use crate::stats::Counters;
use crate::{Error, ProducerConfig};

pub(crate) use drain::{Request, Sent};

/// The settings the accumulator works with.
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    pub(crate) write: WriteConfig,
    pub(crate) max_batch_records: Option<u32>,
    pub(crate) codec: Codec,
    pub(crate) linger: Duration,
    pub(crate) delivery_timeout: Duration,
    pub(crate) retries: u32,
    pub(crate) retry_backoff: Duration,
    pub(crate) partitioning: Partitioning,
    /// Batches of one partition in flight at once (`max.in.flight.requests.per.connection`).
    pub(crate) max_in_flight: usize,
}

impl Limits {
    pub(crate) fn new(config: &ProducerConfig) -> Self {
        Limits {
            write: config.write.clone(),
            max_batch_records: config.max_batch_records,
            codec: config.codec,
            linger: config.linger,
            delivery_timeout: config.delivery_timeout,
            retries: config.retries.max(0) as u32,
            retry_backoff: config.retry_backoff,
            partitioning: config.partitioning,
            max_in_flight: config.max_in_flight.max(1) as usize,
        }
    }
}

/// Where a topic stands in the metadata.
#[derive(Debug)]
pub(crate) enum Route {
    /// Its partitions and leaders are known.
    Known,
    /// Not (yet) in the metadata: asked for at the next refresh.
    Unknown,
    /// The cluster refused to describe it.
    Refused(String),
}

/// Every partition's batches, the producer's identity, and what the senders need to know.
#[derive(Debug)]
pub(crate) struct Accumulator {
    limits: Limits,
    topics: HashMap<Arc<str>, TopicState>,
    /// Topics `send` waits for that the metadata does not have yet, until when the last
    /// waiting `send` gives up (then they are no longer asked for).
    unknown: HashMap<Arc<str>, Instant>,
    /// Topics the cluster refused to describe, with its answer.
    refused: HashMap<Arc<str>, String>,
    /// `host:port` by broker id.
    brokers: HashMap<i32, String>,
    identity: Identity,
    /// Batches in flight, every broker together (an epoch bump waits for none).
    in_flight: usize,
    bump_pending: bool,
    /// `flush` calls under way: while any is, every open batch is ready.
    flushing: usize,
    /// Why the producer stopped (closed, dropped, fatal): nothing is appended after.
    stopped: Option<String>,
    memory: Arc<Semaphore>,
    counters: Arc<Counters>,
}

#[derive(Debug)]
struct TopicState {
    name: Arc<str>,
    topic_id: Uuid,
    partitions: Vec<PartitionQueue>,
    sticky: StickyPartitioner,
    random: SeededRandom,
    round_robin: u32,
}

/// One partition: its leader, its open batch and its finished batches, oldest first. The
/// oldest `in_flight` are in flight, all to one broker; when one must be sent again nothing
/// more is sent until every one is back, then all go again in order: retries never reorder.
#[derive(Debug)]
struct PartitionQueue {
    leader: i32,
    writer: Option<BatchWriter>,
    open: Option<OpenBatch>,
    closed: VecDeque<ClosedBatch>,
    in_flight: usize,
    /// The broker the batches in flight went to.
    in_flight_to: i32,
    /// A batch must be sent again: wait for those in flight, then resend from the oldest.
    resend: bool,
    /// The broker acknowledged a batch of the partition from this producer id: it has the
    /// producer's sequences, and refuses a batch that skips one. Until then it takes any
    /// first sequence, so a later batch could pass an earlier one being retried: one batch in
    /// flight at a time.
    acknowledged: bool,
    /// No retry before this.
    retry_at: Option<Instant>,
}

#[derive(Debug)]
struct OpenBatch {
    completion: Arc<BatchCompletion>,
    created: Instant,
    /// `buffer.memory` bytes its records hold.
    held: u64,
}

#[derive(Debug)]
struct ClosedBatch {
    bytes: Bytes,
    completion: Arc<BatchCompletion>,
    created: Instant,
    held: u64,
    records: i32,
    retries: u32,
    last_error: Option<String>,
    /// A batch of `send_batch`, sent whole or not at all (never split).
    copied: bool,
}

/// A record appended: its future, and whether the senders must look again (a batch filled
/// or a new one started its linger).
pub(crate) struct Appended {
    pub(crate) delivery: Delivery,
    pub(crate) wake_senders: bool,
}

impl Accumulator {
    pub(crate) fn new(
        limits: Limits,
        identity: Identity,
        memory: Arc<Semaphore>,
        counters: Arc<Counters>,
    ) -> Self {
        Accumulator {
            limits,
            topics: HashMap::new(),
            unknown: HashMap::new(),
            refused: HashMap::new(),
            brokers: HashMap::new(),
            identity,
            in_flight: 0,
            bump_pending: false,
            flushing: 0,
            stopped: None,
            memory,
            counters,
        }
    }

    /// Whether the topic can take records now; an unknown one is asked for at each metadata
    /// refresh until `until`. A refusal is answered once: the next `send` asks again.
    pub(crate) fn route(&mut self, topic: &str, until: Instant) -> Route {
        if self.topics.contains_key(topic) {
            return Route::Known;
        }
        if let Some(answer) = self.refused.remove(topic) {
            return Route::Refused(answer);
        }
        match self.unknown.get_mut(topic) {
            Some(deadline) => *deadline = (*deadline).max(until),
            None => {
                self.unknown.insert(Arc::from(topic), until);
            }
        }
        Route::Unknown
    }

    /// The topics the next metadata request asks for.
    pub(crate) fn wanted_topics(&self) -> Vec<String> {
        let known = self.topics.keys();
        known
            .chain(self.unknown.keys())
            .map(|t| t.to_string())
            .collect()
    }

    /// Whether a topic `send` waits for is still missing (the metadata task then asks again
    /// soon instead of at `metadata.max.age.ms`).
    pub(crate) fn has_unknown_topics(&self) -> bool {
        !self.unknown.is_empty()
    }

    /// Whether a partition holds records but has no leader (it moved, or its broker went
    /// away): no sender drains it, so the metadata task asks again soon, as for a topic.
    pub(crate) fn has_leaderless_records(&self) -> bool {
        let held = |q: &PartitionQueue| q.open.is_some() || !q.closed.is_empty();
        (self.topics.values())
            .any(|state| (state.partitions.iter()).any(|q| q.leader < 0 && held(q)))
    }

    /// Takes in new metadata: brokers, topics, partition counts and leaders. Returns the
    /// broker ids seen for the first time.
    pub(crate) fn apply_metadata(&mut self, metadata: &ClusterMetadata) -> Vec<i32> {
        let now = Instant::now();
        self.unknown.retain(|_, until| *until > now);
        let mut new_brokers = Vec::new();
        for (id, address) in &metadata.brokers {
            if self.brokers.insert(*id, address.clone()).is_none() {
                new_brokers.push(*id);
            }
        }
        for name in self.wanted_topics() {
            let topic = match metadata.topic(&name) {
                Ok(topic) => topic,
                Err(krec_client::Error::UnknownTopic { .. }) => continue,
                Err(refusal) => {
                    let name: Arc<str> = Arc::from(name.as_str());
                    self.unknown.remove(&name);
                    self.refused.insert(name, refusal.to_string());
                    continue;
                }
            };
            // A topic being created has no partitions yet (LEADER_NOT_AVAILABLE): wait on.
            if topic.error_code != 0 || topic.partitions.is_empty() {
                continue;
            }
            let key: Arc<str> = Arc::from(name.as_str());
            self.unknown.remove(&key);
            let batch_size = self.limits.write.batch_size;
            let state = self
                .topics
                .entry(key.clone())
                .or_insert_with(|| TopicState {
                    name: key,
                    topic_id: topic.topic_id,
                    partitions: Vec::new(),
                    sticky: StickyPartitioner::new(batch_size),
                    random: SeededRandom::from_entropy(),
                    round_robin: 0,
                });
            state.topic_id = topic.topic_id;
            for partition in &topic.partitions {
                let at = partition.partition.max(0) as usize;
                while state.partitions.len() <= at {
                    state.partitions.push(PartitionQueue::new());
                }
                state.partitions[at].leader = partition.leader;
            }
        }
        new_brokers
    }

    /// The broker's `host:port`.
    pub(crate) fn broker_address(&self, node: i32) -> Option<String> {
        self.brokers.get(&node).cloned()
    }

    /// Points the partition at a new leader (a NOT_LEADER answer's hint), or at none until
    /// the next metadata (-1).
    pub(crate) fn set_leader(&mut self, topic: &str, partition: i32, leader: i32) {
        let known = leader < 0 || self.brokers.contains_key(&leader);
        if let Some(queue) = self.queue_mut(topic, partition) {
            queue.leader = if known { leader } else { -1 };
        }
    }

    fn queue_mut(&mut self, topic: &str, partition: i32) -> Option<&mut PartitionQueue> {
        let state = self.topics.get_mut(topic)?;
        state.partitions.get_mut(usize::try_from(partition).ok()?)
    }

    /// Appends the record to its partition's open batch; `None` when the topic is not in the
    /// metadata (yet). `held` bytes of `buffer.memory` were taken for it and go with the batch.
    /// `now` is when a batch it starts was created (read from the clock only then if `None`).
    pub(crate) fn append(
        &mut self,
        record: &ProducerRecord<'_>,
        timestamp: i64,
        held: u64,
        now: Option<Instant>,
    ) -> Result<Option<Appended>, Error> {
        if let Some(reason) = &self.stopped {
            return Err(Error::Stopped {
                reason: reason.clone(),
            });
        }
        let Some(state) = self.topics.get_mut(record.topic()) else {
            return Ok(None);
        };
        let (partition, sticky) = choose_partition(state, &self.limits.partitioning, record)?;
        // Split borrows: the topic's name is borrowed, cloned only when a batch starts.
        let TopicState {
            name: topic,
            partitions,
            sticky: sticky_partitioner,
            ..
        } = state;
        let queue = &mut partitions[partition as usize];
        let started = queue.open.is_none();
        let mut closer = Closer {
            limits: &self.limits,
            identity: &mut self.identity,
            memory: &self.memory,
            counters: &self.counters,
            topic,
            partition,
        };
        let (offset_delta, filled) = queue.append(record, timestamp, &mut closer)?;
        let open = queue.open.get_or_insert_with(|| OpenBatch {
            completion: BatchCompletion::new(topic.clone(), partition),
            created: now.unwrap_or_else(Instant::now),
            held: 0,
        });
        open.held += held;
        let delivery = Delivery::new(open.completion.clone(), offset_delta, timestamp);
        let full_now = queue.is_full(closer.limits);
        if full_now {
            queue.close_open(&mut closer);
        }
        if sticky {
            sticky_partitioner.record_appended(held as usize, filled || full_now);
        }
        Ok(Some(Appended {
            delivery,
            wake_senders: started || filled || full_now,
        }))
    }

    /// Starts a flush: every open batch is ready until [`flush_end`](Self::flush_end); the
    /// completions of every batch not yet acknowledged, to wait for.
    pub(crate) fn flush_begin(&mut self) -> Vec<Arc<BatchCompletion>> {
        self.flushing += 1;
        let mut pending = Vec::new();
        for state in self.topics.values() {
            for queue in &state.partitions {
                pending.extend(queue.closed.iter().map(|b| b.completion.clone()));
                pending.extend(queue.open.iter().map(|b| b.completion.clone()));
            }
        }
        pending
    }

    pub(crate) fn flush_end(&mut self) {
        self.flushing = self.flushing.saturating_sub(1);
    }

    /// Stops the producer: every record not yet acknowledged fails with `reason`.
    pub(crate) fn stop(&mut self, reason: &str) {
        if self.stopped.is_none() {
            self.stopped = Some(reason.to_owned());
        }
        let error = Error::Stopped {
            reason: reason.to_owned(),
        };
        self.fail_unsent(&error, false);
        self.in_flight = 0;
    }

    /// Fails with `error` every open batch and every closed one not in flight (with
    /// `keep_in_flight`; otherwise those too, and the queues forget them), and releases their
    /// memory.
    pub(crate) fn fail_unsent(&mut self, error: &Error, keep_in_flight: bool) {
        let (mut held, mut records) = (0, 0);
        for state in self.topics.values_mut() {
            for queue in &mut state.partitions {
                if let Some(open) = queue.open.take() {
                    records += queue.writer.as_ref().map_or(0, BatchWriter::record_count);
                    if let Some(writer) = queue.writer.as_mut() {
                        writer.reset();
                    }
                    held += open.held;
                    open.completion.complete(Err(error.clone()));
                }
                let from = if keep_in_flight { queue.in_flight } else { 0 };
                for batch in queue.closed.drain(from..) {
                    records += batch.records.max(0) as usize;
                    held += batch.held;
                    batch.completion.complete(Err(error.clone()));
                }
                if !keep_in_flight {
                    queue.in_flight = 0;
                }
                if queue.in_flight == 0 {
                    queue.resend = false;
                }
            }
        }
        self.counters.failed(records);
        self.release(held);
    }

    fn release(&self, held: u64) {
        if held > 0 {
            self.memory.add_permits(held as usize);
        }
    }
}

/// The record's partition: its own, the key's hash, or the rule for records without a key;
/// and whether the sticky partitioner chose it (it then counts the record).
fn choose_partition(
    state: &mut TopicState,
    partitioning: &Partitioning,
    record: &ProducerRecord<'_>,
) -> Result<(i32, bool), Error> {
    let count = state.partitions.len() as i32;
    if let Some(partition) = record.partition {
        if !(0..count).contains(&partition) {
            return Err(Error::UnknownPartition {
                topic: record.topic().to_owned(),
                partition,
                count,
            });
        }
        return Ok((partition, false));
    }
    if count == 0 {
        return Err(Error::UnknownTopic {
            topic: record.topic().to_owned(),
            detail: "the metadata lists no partition".to_owned(),
        });
    }
    if let Some(partition) = partitioning.keyed_partition(record.key_bytes(), count) {
        return Ok((partition, false));
    }
    let unkeyed = partitioning.unkeyed();
    let partition = match unkeyed {
        Unkeyed::RoundRobin => {
            state.round_robin = state.round_robin.wrapping_add(1);
            (state.round_robin % count as u32) as i32
        }
        Unkeyed::Random => (state.random.next_u32() % count as u32) as i32,
        _ if partitioning.is_adaptive() => {
            let partitions = &state.partitions;
            state
                .sticky
                .current_partition_adaptive(|| queued_batches(partitions), count)
        }
        _ => {
            // Partitions with a leader, as Java's; collected only when one has none.
            let leaderless = state.partitions.iter().any(|q| q.leader < 0);
            let available: Vec<i32> = if leaderless {
                (0..count)
                    .filter(|&p| state.partitions[p as usize].leader >= 0)
                    .collect()
            } else {
                Vec::new()
            };
            state.sticky.current_partition(&available, count)
        }
    };
    Ok((partition, unkeyed == Unkeyed::UniformSticky))
}

/// The partitions with a leader and the batches waiting for each (not yet sent, the open one
/// included), as Java's adaptive partitioner counts its queues.
fn queued_batches(partitions: &[PartitionQueue]) -> Vec<(i32, usize)> {
    (0i32..)
        .zip(partitions)
        .filter(|(_, queue)| queue.leader >= 0)
        .map(|(partition, queue)| {
            let waiting = queue.closed.len().saturating_sub(queue.in_flight);
            (partition, waiting + usize::from(queue.open.is_some()))
        })
        .collect()
}

impl PartitionQueue {
    fn new() -> Self {
        PartitionQueue {
            leader: -1,
            writer: None,
            open: None,
            closed: VecDeque::new(),
            in_flight: 0,
            in_flight_to: -1,
            resend: false,
            acknowledged: false,
            retry_at: None,
        }
    }

    /// Appends to the open batch, finishing it first when it is full. Returns the record's
    /// offset delta and whether a full batch was finished.
    fn append(
        &mut self,
        record: &ProducerRecord<'_>,
        timestamp: i64,
        closer: &mut Closer<'_>,
    ) -> Result<(i32, bool), Error> {
        let (topic, partition) = (closer.topic, closer.partition);
        let mut filled = false;
        loop {
            let write = closer.limits.write.clone();
            let writer = self.writer.get_or_insert_with(|| BatchWriter::new(write));
            let appended = writer.try_append(
                timestamp,
                record.key_bytes(),
                record.value_bytes(),
                &record.headers[..],
            );
            match appended {
                Ok(Append::Appended { offset_delta }) => return Ok((offset_delta, filled)),
                Ok(Append::Full) => {
                    self.close_open(closer);
                    filled = true;
                }
                Err(krec_batch::Error::RecordTooLarge { size, limit }) => {
                    return Err(Error::RecordTooLarge {
                        topic: topic.to_string(),
                        size,
                        key: "max.request.size",
                        limit: limit as u64,
                    })
                }
                Err(other) => {
                    return Err(Error::Refused {
                        topic: topic.to_string(),
                        partition,
                        detail: format!("the record could not be written: {other}"),
                        retries: 0,
                    })
                }
            }
        }
    }

    /// Whether the open batch takes no more records (`batch.num.messages`).
    fn is_full(&self, limits: &Limits) -> bool {
        let records = self.writer.as_ref().map_or(0, BatchWriter::record_count);
        limits
            .max_batch_records
            .is_some_and(|max| records >= max as usize)
    }

    /// Finishes the open batch: its sequences are taken now, so its bytes never change on a
    /// retry (but for a re-stamp after an epoch bump).
    fn close_open(&mut self, closer: &mut Closer<'_>) {
        let (Some(open), Some(writer)) = (self.open.take(), self.writer.as_mut()) else {
            return;
        };
        let records = writer.record_count() as i32;
        let fields = closer
            .identity
            .next_batch(closer.topic, closer.partition, records);
        match writer.finish_owned(fields, closer.limits.codec) {
            Ok(batch) => self.closed.push_back(ClosedBatch {
                bytes: Bytes::from_owner(batch),
                completion: open.completion,
                created: open.created,
                held: open.held,
                records,
                retries: 0,
                last_error: None,
                copied: false,
            }),
            Err(error) => {
                writer.reset();
                closer.counters.failed(records as usize);
                closer.memory.add_permits(open.held as usize);
                open.completion.complete(Err(Error::Refused {
                    topic: closer.topic.to_string(),
                    partition: closer.partition,
                    detail: format!("the batch could not be written: {error}"),
                    retries: 0,
                }));
            }
        }
    }
}

/// What finishing a partition's open batch needs from the accumulator.
struct Closer<'a> {
    limits: &'a Limits,
    identity: &'a mut Identity,
    memory: &'a Semaphore,
    counters: &'a Counters,
    topic: &'a Arc<str>,
    partition: i32,
}

#[cfg(test)]
mod tests;
