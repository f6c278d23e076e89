//! The per-broker fetch loop: one fetch in flight per broker, the next one sent as soon as a
//! response is applied to the cursors (before anything is decoded).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::FetchRequest;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::chunk::PartitionChunk;
use super::cursor::{apply_response, CursorState, ResponseContext};
use super::metrics::{BrokerCounters, ErrorKind};
use super::shared::{Backoff, Event, Shared};
use crate::Error;
use kafka_protocol::messages::{ApiKey, FetchResponse};
use krec_client::fetch::{
    build_request, split_response, FetchParams, FetchTarget, PartitionResponse,
};
use krec_client::{error_name, Connection, ConnectionSettings};

/// How long an idle loop sleeps when no wake-up comes.
const IDLE_POLL: Duration = Duration::from_millis(200);

/// One partition in the fetch in flight, with the cursor generation it was planned under.
struct Planned {
    target: FetchTarget,
    topic: Arc<str>,
    generation: u64,
    first: bool,
}

/// Fetches for every ready partition led by `node` until the consumer stops.
#[tracing::instrument(name = "fetch_loop", skip(shared))]
pub async fn run(shared: Arc<Shared>, node: i32) {
    let mut fetcher = Fetcher::new(shared, node);
    while !fetcher.shared.is_stopping() {
        match fetcher.fetch_once().await {
            Step::Continue => {}
            Step::Stop => return,
        }
    }
}

/// What the loop does after one step.
enum Step {
    Continue,
    Stop,
}

/// The state of one broker's fetch loop, kept from fetch to fetch.
struct Fetcher {
    shared: Arc<Shared>,
    node: i32,
    connection: Option<Connection>,
    connection_settings: ConnectionSettings,
    params: FetchParams,
    backoff: Backoff,
    failing: Failing,
    /// Which partition goes first in the next request.
    rotation: usize,
    response_slots: Option<Arc<Semaphore>>,
    metrics: Arc<BrokerCounters>,
}

/// A request answered: the partitions it asked for and the broker's answer.
struct Answered {
    planned: Vec<Planned>,
    address: String,
    version: i16,
    response: FetchResponse,
}

impl Fetcher {
    fn new(shared: Arc<Shared>, node: i32) -> Self {
        let config = &shared.config;
        let params = FetchParams {
            max_wait_ms: config.max_wait.as_millis().min(i32::MAX as u128) as i32,
            min_bytes: config.min_bytes,
            max_bytes: config.max_bytes,
            partition_max_bytes: config.partition_max_bytes,
            read_committed: config.read_committed,
        };
        // Reused response buffers are memory the budget does not count: at most half of it.
        let mut connection_settings = config.connection.clone();
        connection_settings.frame_buffer_bytes = connection_settings
            .frame_buffer_bytes
            .min(config.buffer_bytes / 2);
        let response_slots = config
            .max_held_responses
            .map(|held| Arc::new(Semaphore::new(held.max(1))));
        Fetcher {
            backoff: Backoff::new(config.backoff, config.max_backoff),
            metrics: shared.metrics.broker(node),
            shared,
            node,
            connection: None,
            connection_settings,
            params,
            failing: Failing::default(),
            rotation: 0,
            response_slots,
        }
    }

    /// Plans, sends and applies one fetch.
    async fn fetch_once(&mut self) -> Step {
        // Under `max_held_responses`, wait for the data of an earlier response to be dropped.
        let response_slot = match &self.response_slots {
            Some(slots) => match slots.clone().acquire_owned().await {
                Ok(slot) => Some(slot),
                Err(_) => return Step::Stop,
            },
            None => None,
        };
        let Some((planned, address)) = self.plan().await else {
            return Step::Continue;
        };
        let answered = match self.send(planned, address).await {
            Ok(answered) => answered,
            Err(step) => return step,
        };
        self.apply(answered, response_slot).await
    }

    /// The partitions to fetch and their leader's address; waits and gives none when this
    /// node leads nothing ready.
    async fn plan(&mut self) -> Option<(Vec<Planned>, String)> {
        let (mut planned, address) = ready_partitions(&self.shared, self.node);
        // Each partition takes its turn at the head of the request, the one place where the
        // broker returns a batch larger than the size limits (KIP-74).
        if !planned.is_empty() {
            let len = planned.len();
            planned.rotate_left(self.rotation % len);
            planned[0].first = true;
            self.rotation = self.rotation.wrapping_add(1);
        }
        let Some(address) = address.filter(|_| !planned.is_empty()) else {
            // Nothing led by this node: past connection failures no longer count.
            self.reset_failing();
            tokio::select! {
                _ = self.shared.fetch_wakeup.notified() => {}
                _ = tokio::time::sleep(IDLE_POLL) => {}
            }
            return None;
        };
        Some((planned, address))
    }

    /// Connects if needed and sends the fetch; a connection failure is retried (or ends the
    /// loop once failures have lasted too long).
    async fn send(&mut self, planned: Vec<Planned>, address: String) -> Result<Answered, Step> {
        if self
            .connection
            .as_ref()
            .is_none_or(|c| c.address() != address)
        {
            match Connection::connect(&address, &self.connection_settings).await {
                Ok(connected) => self.connection = Some(connected),
                Err(error) if error.is_security_failure() => {
                    self.shared.fail(error.into());
                    return Err(Step::Stop);
                }
                Err(error) => return Err(self.retry_or_give_up(error.into()).await),
            }
        }
        let Some(connected) = self.connection.as_mut() else {
            return Err(Step::Continue);
        };
        let version = match connected.versions().negotiate::<FetchRequest>(&address) {
            Ok(version) => cap_version(version, self.shared.config.max_fetch_version, connected),
            Err(error) => {
                self.shared.fail(error.into());
                return Err(Step::Stop);
            }
        };
        let targets: Vec<FetchTarget> = planned.iter().map(|p| p.target.clone()).collect();
        let request = build_request(&targets, &self.params, version);
        let timeout = self.shared.config.connection.request_timeout + self.shared.config.max_wait;
        let sent = Instant::now();
        let answer = connected.request_at(&request, version, timeout).await;
        self.metrics.fetched(answer.is_ok().then(|| sent.elapsed()));
        match answer {
            Ok(response) => Ok(Answered {
                planned,
                address,
                version,
                response,
            }),
            Err(error) if error.is_security_failure() => {
                self.shared.fail(error.into());
                Err(Step::Stop)
            }
            Err(error) => {
                self.connection = None;
                Err(self.retry_or_give_up(error.into()).await)
            }
        }
    }

    /// Applies a response to the cursors, hands its data and ends on as events, and honours
    /// the broker's throttle.
    async fn apply(
        &mut self,
        answered: Answered,
        response_slot: Option<OwnedSemaphorePermit>,
    ) -> Step {
        let Answered {
            planned,
            address,
            version,
            response,
        } = answered;
        self.reset_failing();
        self.backoff.reset();
        let shared = &self.shared;
        if response.error_code != 0 {
            // A whole-request error (sessions are not used, so this is rare): retry after a pause.
            tracing::warn!(broker = %address, error = %error_name(response.error_code), "fetch failed");
            shared.metrics.error(ErrorKind::Fetch);
            mark_stale(shared);
            tokio::time::sleep(self.backoff.next_delay()).await;
            return Step::Continue;
        }
        let throttle = Duration::from_millis(response.throttle_time_ms.max(0) as u64);
        let names = shared.state().topic_names.clone();
        let partitions = split_response(response, version, |id| {
            names.get(id).map(|name| name.to_string())
        });
        let fetched: usize = partitions.iter().map(|p| p.records.len()).sum();
        let budget = acquire_budget(shared, fetched).await;
        let response_slot = response_slot.map(Arc::new);
        let by_partition: HashMap<(&str, i32), &Planned> = planned
            .iter()
            .map(|p| ((&*p.topic, p.target.partition), p))
            .collect();
        let applied = apply_partitions(
            shared,
            self.node,
            &address,
            partitions,
            &by_partition,
            budget,
            response_slot,
        );
        shared
            .metrics
            .fetched_bytes(applied.events.iter().filter_map(Event::chunk_bytes));
        for event in applied.events {
            let _ = shared.events.send(event);
        }
        if let Some(error) = applied.fatal {
            shared.fail(error);
            return Step::Stop;
        }
        if applied.wake_coordinator {
            shared.coordinator_wakeup.notify_one();
        }
        if !throttle.is_zero() {
            tracing::debug!(broker = %address, ?throttle, "throttled by the broker");
            tokio::time::sleep(throttle).await;
        }
        Step::Continue
    }

    /// Past connection failures no longer count.
    fn reset_failing(&mut self) {
        self.failing = Failing::default();
        self.metrics.failing.set(None);
    }

    /// After a connection failure: asks for fresh metadata (the leader may have moved), waits,
    /// and stops once failures have lasted longer than the configured limit.
    async fn retry_or_give_up(&mut self, error: Error) -> Step {
        let shared = &self.shared;
        self.failing.attempts += 1;
        let since = *self.failing.since.get_or_insert_with(Instant::now);
        self.metrics.failing.set(Some(since));
        shared.metrics.error(ErrorKind::Connection);
        if since.elapsed() > shared.config.give_up_after {
            shared.fail(Error::RetriesExhausted {
                what: "fetching".to_owned(),
                attempts: self.failing.attempts,
                last: Box::new(error),
            });
            return Step::Stop;
        }
        let delay = self.backoff.next_delay();
        tracing::warn!(%error, ?delay, "fetch connection failed; reconnecting");
        mark_stale(shared);
        tokio::time::sleep(delay).await;
        Step::Continue
    }
}

/// What one response did: events to send, a fatal error, whether the coordinator must look.
#[derive(Default)]
struct AppliedResponse {
    events: Vec<Event>,
    fatal: Option<Error>,
    wake_coordinator: bool,
}

/// Applies each partition of a response to its cursor, under the state lock, skipping data
/// made stale by a seek, a leader change or a reset since planning.
fn apply_partitions(
    shared: &Shared,
    node: i32,
    address: &str,
    partitions: Vec<PartitionResponse>,
    by_partition: &HashMap<(&str, i32), &Planned>,
    mut budget: Option<OwnedSemaphorePermit>,
    response_slot: Option<Arc<OwnedSemaphorePermit>>,
) -> AppliedResponse {
    let mut applied = AppliedResponse::default();
    let mut state = shared.state();
    let read_committed = shared.config.read_committed;
    for partition in partitions {
        let Some(plan) = by_partition
            .get(&(partition.topic.as_str(), partition.partition))
            .copied()
        else {
            continue;
        };
        let key = (plan.topic.clone(), plan.target.partition);
        let Some(cursor) = state.cursors.get_mut(&key) else {
            continue;
        };
        if cursor.generation != plan.generation
            || cursor.offset != plan.target.offset
            || cursor.leader != Some(node)
            || cursor.state != CursorState::Ready
        {
            continue;
        }
        let context = ResponseContext {
            read_committed,
            reset: shared.config.offset_reset,
            broker: address,
            first_in_request: plan.first,
        };
        let outcome = match apply_response(cursor, partition, &context) {
            Ok(outcome) => outcome,
            Err(error) => {
                applied.fatal = Some(error);
                break;
            }
        };
        applied.wake_coordinator |= outcome.refresh_metadata || outcome.reset_offset;
        shared
            .metrics
            .partition_errors(outcome.refresh_metadata, outcome.reset_offset);
        if let Some(data) = outcome.data {
            let permit = take_budget(&mut budget, data.records.len());
            let chunk = PartitionChunk::new(
                plan.topic.clone(),
                plan.target.partition,
                plan.generation,
                data,
                read_committed,
                permit,
            );
            applied.events.push(Event::Chunk(
                chunk.with_response_slot(response_slot.clone()),
            ));
        }
        if outcome.reached_end {
            applied.events.push(Event::EndOfPartition {
                topic: plan.topic.clone(),
                partition: plan.target.partition,
                offset: cursor.offset,
                generation: plan.generation,
            });
        }
        if outcome.refresh_metadata {
            state.metadata_stale = true;
        }
    }
    applied
}

/// The negotiated Fetch version, lowered to `cap` when one is configured (never below what
/// the broker or kafka-protocol accept).
fn cap_version(negotiated: i16, cap: Option<i16>, connection: &Connection) -> i16 {
    let Some(cap) = cap else {
        return negotiated;
    };
    let broker_min = connection
        .versions()
        .range(ApiKey::Fetch as i16)
        .map_or(0, |(min, _)| min);
    let ours_min = <FetchRequest as kafka_protocol::protocol::Message>::VERSIONS.min;
    cap.clamp(broker_min.max(ours_min), negotiated)
}

/// The ready partitions led by `node`, and the node's address.
fn ready_partitions(shared: &Shared, node: i32) -> (Vec<Planned>, Option<String>) {
    let state = shared.state();
    let planned = state
        .cursors
        .values()
        .filter(|c| c.state == CursorState::Ready && c.leader == Some(node))
        .map(|c| Planned {
            target: FetchTarget {
                topic: c.topic.to_string(),
                topic_id: c.topic_id,
                partition: c.partition,
                offset: c.offset,
                leader_epoch: c.leader_epoch,
            },
            topic: c.topic.clone(),
            generation: c.generation,
            first: false,
        })
        .collect();
    (planned, state.metadata.brokers.get(&node).cloned())
}

fn mark_stale(shared: &Shared) {
    shared.state().metadata_stale = true;
    shared.coordinator_wakeup.notify_one();
}

/// Connection failures in a row: since when, and how many.
#[derive(Debug, Default)]
struct Failing {
    since: Option<Instant>,
    attempts: u32,
}

/// Waits until `bytes` of fetched data fit in the buffer budget (back-pressure).
async fn acquire_budget(shared: &Shared, bytes: usize) -> Option<OwnedSemaphorePermit> {
    if bytes == 0 {
        return None;
    }
    // A response larger than the whole budget waits for the budget to be empty, no longer.
    let wanted = bytes
        .min(shared.config.buffer_bytes)
        .clamp(1, u32::MAX as usize) as u32;
    shared.budget.clone().acquire_many_owned(wanted).await.ok()
}

/// Moves `bytes` of the response's permit into one chunk's permit.
fn take_budget(
    budget: &mut Option<OwnedSemaphorePermit>,
    bytes: usize,
) -> Option<OwnedSemaphorePermit> {
    let whole = budget.as_mut()?;
    if bytes < whole.num_permits() {
        whole.split(bytes)
    } else {
        budget.take()
    }
}
