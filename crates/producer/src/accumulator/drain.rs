//! The senders' side of the accumulator: drain a broker's ready batches into one request,
//! take in the answers (acknowledge, retry in order, bump the epoch, fail), expire batches
//! past `delivery.timeout.ms`.

mod split;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use krec_client::produce::{
    Appended as BrokerAppended, ProduceError, ProduceErrorKind, ProducePartition, ProduceTopic,
};
use krec_client::producer_id::ProducerIdentity;
use krec_client::transaction::txn_codes::INVALID_PRODUCER_EPOCH;
use krec_client::TopicPartition;

use super::{Accumulator, ClosedBatch, Closer, PartitionQueue, TopicState};
use crate::delivery::{BatchAck, BatchCompletion};
use crate::Error;

/// One Produce request's batches: at most one per partition.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) topics: Vec<ProduceTopic>,
    pub(crate) sent: Vec<Sent>,
}

/// A batch in flight, known by its completion.
#[derive(Debug)]
pub(crate) struct Sent {
    completion: Arc<BatchCompletion>,
}

/// What a sender does after an answer.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Followup {
    /// Some partition's leader must be looked up again.
    pub(crate) refresh_metadata: bool,
}

/// What the broker's answer means for one batch.
enum Outcome {
    Acknowledged(BatchAck),
    Retry {
        detail: String,
        refresh: bool,
    },
    Bump {
        detail: String,
    },
    /// MESSAGE_TOO_LARGE: split the batch, or fail it when it holds one record.
    TooLarge {
        detail: String,
    },
    Fail {
        detail: String,
        stops_producer: bool,
    },
}

impl Accumulator {
    /// The ready batches of the partitions `node` leads, one per partition and at most
    /// `max_bytes` together (one batch at least), and when to look again if none is ready.
    pub(crate) fn drain(
        &mut self,
        node: i32,
        max_bytes: usize,
        now: Instant,
    ) -> (Option<Request>, Option<Instant>) {
        if self.stopped.is_some() {
            return (None, None);
        }
        if self.bump_pending {
            if self.in_flight > 0 {
                return (None, None);
            }
            self.bump_epoch();
        }
        if self.identity.awaits_new_id() {
            self.fail_doomed_transaction();
            return (None, None);
        }
        let mut wakeup: Option<Instant> = None;
        let mut request = Request {
            topics: Vec::new(),
            sent: Vec::new(),
        };
        let mut bytes = 0usize;
        let topics: Vec<Arc<str>> = self.topics.keys().cloned().collect();
        for topic in topics {
            let mut partitions = Vec::new();
            let count = self.topics.get(&topic).map_or(0, |s| s.partitions.len());
            for partition in 0..count as i32 {
                let Some(batch) = self.ready_batch(&topic, partition, node, now, &mut wakeup)
                else {
                    continue;
                };
                if bytes > 0 && bytes + batch.len() > max_bytes {
                    continue;
                }
                let Some(queue) = self.queue_mut(&topic, partition) else {
                    continue;
                };
                let Some(next) = queue.closed.get(queue.in_flight) else {
                    continue;
                };
                let completion = next.completion.clone();
                queue.in_flight += 1;
                queue.in_flight_to = node;
                bytes += batch.len();
                request.sent.push(Sent { completion });
                partitions.push(ProducePartition { partition, batch });
                self.in_flight += 1;
            }
            if !partitions.is_empty() {
                let topic_id = self
                    .topics
                    .get(&topic)
                    .map(|s| s.topic_id)
                    .unwrap_or_default();
                request.topics.push(ProduceTopic {
                    name: topic,
                    topic_id,
                    partitions,
                });
            }
        }
        let request = (!request.sent.is_empty()).then_some(request);
        (request, wakeup)
    }

    /// The partition's next batch to send when `node` leads it and it is ready (closing the
    /// open batch if its time came); else notes in `wakeup` when it may be.
    fn ready_batch(
        &mut self,
        topic: &Arc<str>,
        partition: i32,
        node: i32,
        now: Instant,
        wakeup: &mut Option<Instant>,
    ) -> Option<bytes::Bytes> {
        let linger = self.limits.linger;
        let closing = self.flushing > 0;
        let max_in_flight = self.limits.max_in_flight;
        let idempotent = self.identity.is_idempotent();
        self.expire_partition(topic, partition, now);
        let state = self.topics.get_mut(topic)?;
        let queue = state.partitions.get_mut(partition as usize)?;
        // A broker with no state for an idempotent producer takes any first sequence: one
        // batch until acknowledged, so two cannot land reordered after a retry.
        let max_in_flight = if queue.acknowledged || !idempotent {
            max_in_flight
        } else {
            1
        };
        let busy = queue.in_flight > 0 && (queue.resend || queue.in_flight_to != node);
        if queue.leader != node || busy || queue.in_flight >= max_in_flight {
            return None;
        }
        if let Some(at) = queue.retry_at {
            if at > now {
                note(wakeup, at);
                return None;
            }
            queue.retry_at = None;
        }
        queue.resend = false;
        if queue.closed.len() == queue.in_flight {
            let open = queue.open.as_ref()?;
            let due = open.created + linger;
            if due > now && !closing {
                note(wakeup, due);
                return None;
            }
            let mut closer = Closer {
                limits: &self.limits,
                identity: &mut self.identity,
                memory: &self.memory,
                counters: &self.counters,
                topic,
                partition,
            };
            queue.close_open(&mut closer);
        }
        queue
            .closed
            .get(queue.in_flight)
            .map(|batch| batch.bytes.clone())
    }

    /// Fails the partition's batches past `delivery.timeout.ms` that are not in flight.
    fn expire_partition(&mut self, topic: &Arc<str>, partition: i32, now: Instant) {
        let timeout = self.limits.delivery_timeout;
        let idempotent = self.identity.is_idempotent();
        let Some(queue) = self.queue_mut(topic, partition) else {
            return;
        };
        let mut expired = Vec::new();
        while queue.in_flight == 0 {
            match queue.closed.front() {
                Some(batch) if batch.created + timeout <= now => {
                    expired.extend(queue.closed.pop_front());
                }
                _ => break,
            }
        }
        if let Some(open) = queue.open.as_ref() {
            if open.created + timeout <= now && queue.closed.is_empty() && queue.in_flight == 0 {
                let mut closer = self.closer_for(topic, partition);
                if let Some(queue) = closer.0 {
                    queue.close_open(&mut closer.1);
                    expired.extend(queue.closed.pop_front());
                }
            }
        }
        if expired.is_empty() {
            return;
        }
        // Their sequences were taken: the partition's next batches need a new epoch.
        self.bump_pending |= idempotent;
        for batch in expired {
            let error = Error::DeliveryTimeout {
                topic: topic.to_string(),
                partition,
                timeout_ms: timeout.as_millis() as u64,
                retries: batch.retries,
                last: batch
                    .last_error
                    .clone()
                    .unwrap_or_else(|| "never sent (no leader or no connection)".to_owned()),
            };
            self.settle(batch, Err(error));
        }
    }

    fn closer_for<'a>(
        &'a mut self,
        topic: &'a Arc<str>,
        partition: i32,
    ) -> (Option<&'a mut PartitionQueue>, Closer<'a>) {
        let queue = self
            .topics
            .get_mut(topic)
            .and_then(|s| s.partitions.get_mut(partition as usize));
        let closer = Closer {
            limits: &self.limits,
            identity: &mut self.identity,
            memory: &self.memory,
            counters: &self.counters,
            topic,
            partition,
        };
        (queue, closer)
    }

    /// Fails what is past `delivery.timeout.ms` in every partition (those without a leader
    /// too, which no sender drains).
    pub(crate) fn expire(&mut self, now: Instant) {
        let mut partitions = Vec::new();
        for (topic, state) in &self.topics {
            partitions.extend((0..state.partitions.len() as i32).map(|p| (topic.clone(), p)));
        }
        for (topic, partition) in partitions {
            self.expire_partition(&topic, partition, now);
        }
    }

    /// KIP-360, once nothing is in flight: the next epoch, and every batch not yet
    /// acknowledged re-stamped with it and new sequences from 0, in order. At the last epoch
    /// nothing goes out until a sender brings a new producer id.
    fn bump_epoch(&mut self) {
        self.bump_pending = false;
        if self.identity.bump_epoch().is_err() {
            tracing::info!(
                identity = ?self.identity.current(),
                "the producer epoch is exhausted; asking for a new producer id"
            );
            return;
        }
        self.restamp_waiting();
        tracing::info!(identity = ?self.identity.current(), "bumped the producer epoch");
    }

    /// Whether the caller is the one to ask InitProducerId for a new producer id (the epoch
    /// is exhausted and nobody asks yet); it then answers with
    /// [`reset_producer_id`](Self::reset_producer_id) or [`new_producer_id_not_given`](Self::new_producer_id_not_given).
    pub(crate) fn ask_new_producer_id(&mut self) -> bool {
        self.stopped.is_none() && self.identity.ask_new_id()
    }

    /// The InitProducerId failed for now: the next sender to look asks again.
    pub(crate) fn new_producer_id_not_given(&mut self) {
        self.identity.new_id_not_given();
    }

    /// A new producer id after an exhausted epoch: every batch not yet acknowledged is
    /// re-stamped with it from sequence 0, in order; the broker knows no sequence of it yet.
    pub(crate) fn reset_producer_id(&mut self, identity: ProducerIdentity) {
        self.identity.reset_producer_id(identity);
        // Every sequence starts over: a bump still pending is done. Left pending, it would hold
        // a transactional producer's next transaction for an epoch that never comes.
        self.bump_pending = false;
        for state in self.topics.values_mut() {
            for queue in &mut state.partitions {
                queue.acknowledged = false;
            }
        }
        self.restamp_waiting();
        tracing::info!(identity = ?self.identity.current(), "took a new producer id");
    }

    /// Every batch not yet acknowledged takes the current producer fields and new sequences
    /// from 0, partition by partition in order (nothing is in flight).
    fn restamp_waiting(&mut self) {
        for (topic, state) in &mut self.topics {
            for (partition, queue) in state.partitions.iter_mut().enumerate() {
                for batch in &mut queue.closed {
                    let fields = self
                        .identity
                        .next_batch(topic, partition as i32, batch.records);
                    let mut bytes = batch.bytes.to_vec();
                    if krec_batch::restamp(&mut bytes, 0, fields).is_ok() {
                        batch.bytes = bytes::Bytes::from(bytes);
                    }
                }
            }
        }
    }

    /// Takes in a Produce answer for the batches of `sent`.
    pub(crate) fn on_answer(
        &mut self,
        sent: Vec<Sent>,
        answers: Vec<(TopicPartition, Result<BrokerAppended, ProduceError>)>,
        broker: &str,
        now: Instant,
    ) -> Followup {
        let mut followup = Followup::default();
        for batch in sent {
            self.in_flight = self.in_flight.saturating_sub(1);
            let (topic, partition) = (batch.completion.topic(), batch.completion.partition());
            let answer = answers
                .iter()
                .find(|(tp, _)| *tp.topic == **topic && tp.partition == partition);
            let outcome = match answer {
                None => Outcome::Acknowledged(BatchAck {
                    base_offset: -1,
                    log_append_time: None,
                }),
                Some((_, Ok(appended))) => Outcome::Acknowledged(BatchAck {
                    base_offset: appended.base_offset,
                    log_append_time: appended.log_append_time_ms,
                }),
                Some((_, Err(error))) => self.classify(error, broker),
            };
            if let Outcome::Retry { refresh: true, .. } = outcome {
                followup.refresh_metadata = true;
                let hint = answer.and_then(|(_, r)| r.as_ref().err()?.current_leader);
                let leader = hint.map_or(-1, |h| h.leader_id);
                let topic = topic.clone();
                self.set_leader(&topic, partition, leader);
            }
            self.apply(&batch.completion, outcome, now);
        }
        followup
    }

    /// A broker's quota throttled the producer for `throttle_time_ms` (counted in the stats).
    pub(crate) fn throttled(&self, throttle_time_ms: i32) {
        self.counters.throttled(throttle_time_ms);
    }

    /// The connection broke (or never opened): every batch of the request is sent again.
    pub(crate) fn on_lost(&mut self, sent: Vec<Sent>, reason: &str, now: Instant) {
        for batch in sent {
            self.in_flight = self.in_flight.saturating_sub(1);
            let outcome = Outcome::Retry {
                detail: reason.to_owned(),
                refresh: true,
            };
            self.apply(&batch.completion, outcome, now);
        }
    }

    fn classify(&self, error: &ProduceError, broker: &str) -> Outcome {
        let detail = format!("broker {broker}: {error}");
        let idempotent = self.identity.is_idempotent();
        if idempotent && error.is_duplicate() {
            return Outcome::Acknowledged(BatchAck {
                base_offset: -1,
                log_append_time: None,
            });
        }
        if idempotent && error.needs_epoch_bump() {
            return Outcome::Bump { detail };
        }
        if error.kind == ProduceErrorKind::MessageTooLarge {
            return Outcome::TooLarge { detail };
        }
        if error.is_retriable() {
            return Outcome::Retry {
                refresh: error.needs_metadata_refresh(),
                detail,
            };
        }
        // In a transaction, INVALID_PRODUCER_EPOCH may be the coordinator's own bump after
        // aborting a timed-out transaction: only the transaction is doomed, as in Java; the
        // abort's EndTxn says whether the producer was fenced.
        let timed_out = self.identity.is_transactional() && error.code == INVALID_PRODUCER_EPOCH;
        let stops_producer = !timed_out
            && matches!(
                error.kind,
                ProduceErrorKind::ProducerFenced | ProduceErrorKind::ClusterAuthorizationFailed
            );
        Outcome::Fail {
            detail,
            stops_producer,
        }
    }

    /// Applies an outcome to a batch in flight (if it is still there: a stopped producer has
    /// failed it already). An answer that asks for a resend marks the partition: nothing more
    /// goes out until every batch in flight is back, then all go again from the oldest.
    fn apply(&mut self, completion: &Arc<BatchCompletion>, outcome: Outcome, now: Instant) {
        if let Outcome::TooLarge { detail } = outcome {
            self.split_or_fail(completion, detail);
            return;
        }
        let retries_allowed = self.limits.retries;
        let backoff = self.limits.retry_backoff;
        let idempotent = self.identity.is_idempotent();
        let transactional = self.identity.is_transactional();
        let (topic, partition) = (completion.topic().clone(), completion.partition());
        let Some((queue, at)) = answered(&mut self.topics, completion) else {
            return;
        };
        let (detail, stops_producer) = match outcome {
            Outcome::Acknowledged(ack) => {
                queue.acknowledged = true;
                if let Some(batch) = queue.closed.remove(at) {
                    self.counters.acknowledged(batch.records, batch.bytes.len());
                    self.settle(batch, Ok(ack));
                }
                return;
            }
            // Out of step at the oldest batch: a new epoch. Behind an older batch sent again,
            // the gap is that batch's: resend in order.
            Outcome::Bump { detail } if at == 0 && !transactional => {
                self.bump_pending = true;
                queue.resend = true;
                if let Some(batch) = queue.closed.get_mut(at) {
                    batch.retries += 1;
                    batch.last_error = Some(detail);
                }
                self.counters.retried();
                return;
            }
            // A transaction's gap dooms it, as in Java: its abort brings the next epoch.
            Outcome::Bump { detail } if at == 0 => (detail, false),
            Outcome::Retry { detail, .. } | Outcome::Bump { detail } => {
                let Some(batch) = queue.closed.get_mut(at) else {
                    return;
                };
                if batch.retries < retries_allowed {
                    batch.retries += 1;
                    batch.last_error = Some(detail);
                    queue.resend = true;
                    queue.retry_at = Some(now + backoff);
                    self.counters.retried();
                    return;
                }
                (detail, false)
            }
            Outcome::Fail {
                detail,
                stops_producer,
            } => (detail, stops_producer),
            Outcome::TooLarge { detail } => (detail, false),
        };
        if let Some(batch) = queue.closed.remove(at) {
            let error = Error::Refused {
                topic: topic.to_string(),
                partition,
                detail: detail.clone(),
                retries: batch.retries,
            };
            self.settle(batch, Err(error));
        }
        // The failed batch's sequences are gone: the partition's next batches need a new epoch.
        self.bump_pending |= idempotent;
        if stops_producer {
            self.stop(&detail);
        }
    }

    /// MESSAGE_TOO_LARGE for a batch in flight: one of several records is split in its place
    /// and the partition resends from its oldest batch once nothing is in flight (the parts
    /// keep the batch's sequences, the batches after it keep theirs); a single record fails.
    fn split_or_fail(&mut self, completion: &Arc<BatchCompletion>, detail: String) {
        let idempotent = self.identity.is_idempotent();
        let (topic, partition) = (completion.topic().clone(), completion.partition());
        let Some((queue, at)) = answered(&mut self.topics, completion) else {
            return;
        };
        let mut detail = detail;
        if queue.closed[at].copied {
            detail.push_str(super::copied::NOT_SPLIT);
        } else if queue.closed[at].records > 1 {
            match split::split_batch(&queue.closed[at], &self.limits) {
                Ok(parts) => {
                    tracing::debug!(%topic, partition, parts = parts.len(), %detail, "split a batch");
                    queue.closed.remove(at);
                    for (offset, part) in parts.into_iter().enumerate() {
                        queue.closed.insert(at + offset, part);
                    }
                    queue.resend = true;
                    self.counters.split();
                    return;
                }
                Err(error) => detail = format!("{detail}; splitting the batch failed: {error}"),
            }
        }
        if let Some(batch) = queue.closed.remove(at) {
            let error = Error::MessageTooLarge {
                topic: topic.to_string(),
                partition,
                size: batch.bytes.len() as u64,
                records: batch.records,
                detail,
            };
            self.settle(batch, Err(error));
        }
        // The batch's sequences are gone: the partition's next batches need a new epoch.
        self.bump_pending |= idempotent;
    }

    /// Resolves a batch's records and gives its bytes back to `buffer.memory`.
    fn settle(&self, batch: ClosedBatch, outcome: Result<BatchAck, Error>) {
        if outcome.is_err() {
            self.counters.failed(batch.records.max(0) as usize);
        }
        batch.completion.complete(outcome);
        self.release(batch.held);
    }
}

/// The queue of a batch whose answer came and the batch's place in it (one fewer in flight
/// there); `None` when it is gone (a stopped producer failed it already).
fn answered<'a>(
    topics: &'a mut HashMap<Arc<str>, TopicState>,
    completion: &Arc<BatchCompletion>,
) -> Option<(&'a mut PartitionQueue, usize)> {
    let state = topics.get_mut(completion.topic())?;
    let queue = state.partitions.get_mut(completion.partition() as usize)?;
    let at = (queue.closed.iter()).position(|b| Arc::ptr_eq(&b.completion, completion))?;
    queue.in_flight = queue.in_flight.saturating_sub(1);
    Some((queue, at))
}

fn note(wakeup: &mut Option<Instant>, at: Instant) {
    *wakeup = Some(wakeup.map_or(at, |w| w.min(at)));
}
