//! The per-broker fetch loop: one fetch in flight per broker, the next one sent as soon as a
//! response is applied to the cursors (before anything is decoded).
//!
//! Each loop keeps its broker's KIP-227 fetch session ([`FetchSession`]): after the first
//! (full) request, a request names only the partitions whose position changed, and the
//! answer leaves out the partitions with nothing new. When the consumer closes, the loop
//! ends the session on the broker.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::chunk::PartitionChunk;
use super::cursor::{apply_response, ChunkData, Cursor, CursorState, ResponseContext};
use super::metrics::{BrokerCounters, ErrorKind};
use super::shared::{Backoff, Event, LoopToken, Shared};
use crate::{ConsumerConfig, Error};
use krec_client::fetch::{FetchParams, FetchTarget, PartitionResponse};
use krec_client::fetch_session::{FetchSession, SessionAnswer, SessionPartition};
use krec_client::wire::{FetchRequest, FetchResponse, Message};
use krec_client::{codes, error_name, Connection, ConnectionSettings};

/// How long an idle loop sleeps when no wake-up comes.
const IDLE_POLL: Duration = Duration::from_millis(200);

/// Fetches for every ready partition fetched from `node` (its leader or its preferred read
/// replica) until the consumer stops; when it closes, ends the fetch session first. `_token` tells the closing consumer the loop runs.
#[tracing::instrument(name = "fetch_loop", skip(shared, _token))]
pub async fn run(shared: Arc<Shared>, node: i32, _token: LoopToken) {
    let mut closing = shared.closing.subscribe();
    let mut fetcher = Fetcher::new(shared, node);
    while !fetcher.shared.is_stopping() {
        if *closing.borrow() {
            return fetcher.close_session().await;
        }
        // A fetch abandoned for the close may leave its answer unread: `close_session` knows.
        let step = tokio::select! {
            biased;
            _ = closing.wait_for(|closing| *closing) => continue,
            step = fetcher.fetch_once() => step,
        };
        if let Step::Stop = step {
            return;
        }
    }
}

/// Whether `cursor` is fetched by the loop of `node` (the one node filter of planning and
/// of applying answers): led by it, or read from it as a follower.
fn fetches_from(cursor: &Cursor, node: i32, now: Instant) -> bool {
    cursor.state == CursorState::Ready && cursor.fetch_node(now) == Some(node)
}

/// The record bytes one fetch may ask for. Under `max_held_responses`, the held responses
/// and the one being read must all fit the connection's reused buffers, or every response
/// of many partitions is read into fresh memory (a page fault per page; BENCHMARKS.md,
/// "Many partitions"); still at least one partition's worth.
fn response_bytes(config: &ConsumerConfig, connection: &ConnectionSettings) -> i32 {
    let Some(held) = config.max_held_responses else {
        return config.max_bytes;
    };
    // A sixteenth of each frame left for what is not records (the partitions' headers).
    let reused = connection.largest_reused_frame(held.max(1) + 1) / 16 * 15;
    let reused = i32::try_from(reused).unwrap_or(i32::MAX);
    config.max_bytes.min(reused.max(config.partition_max_bytes))
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
    session: FetchSession,
    /// A request is on the wire: dropping the fetch now leaves its answer unread.
    awaiting_answer: bool,
    backoff: Backoff,
    failing: Failing,
    response_slots: Option<Arc<Semaphore>>,
    metrics: Arc<BrokerCounters>,
}

impl Fetcher {
    fn new(shared: Arc<Shared>, node: i32) -> Self {
        let config = &shared.config;
        // Reused response buffers are memory the budget does not count: at most half of it.
        let mut connection_settings = config.connection.clone();
        connection_settings.frame_buffer_bytes = connection_settings
            .frame_buffer_bytes
            .min(config.buffer_bytes / 2);
        let params = FetchParams {
            max_wait_ms: config.max_wait.as_millis().min(i32::MAX as u128) as i32,
            min_bytes: config.min_bytes,
            max_bytes: response_bytes(config, &connection_settings),
            partition_max_bytes: config.partition_max_bytes,
            read_committed: config.read_committed,
            rack_id: config.client_rack.clone().unwrap_or_default(),
        };
        let response_slots = config
            .max_held_responses
            .map(|held| Arc::new(Semaphore::new(held.max(1))));
        Fetcher {
            backoff: Backoff::new(config.backoff, config.max_backoff),
            session: FetchSession::new(config.fetch_sessions),
            metrics: shared.metrics.broker(node),
            shared,
            node,
            connection: None,
            connection_settings,
            params,
            awaiting_answer: false,
            failing: Failing::default(),
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
        let Some(address) = self.wait_for_work().await else {
            return Step::Continue;
        };
        let version = match self.connect(&address).await {
            Ok(version) => version,
            Err(step) => return step,
        };
        let Some(request) = self.plan(version) else {
            return Step::Continue;
        };
        let response = match self.send(&request, version).await {
            Ok(response) => response,
            Err(step) => return step,
        };
        self.apply(response, &address, response_slot).await
    }

    /// The node's address when it has partitions to fetch; otherwise waits for a wake-up and
    /// gives none.
    async fn wait_for_work(&mut self) -> Option<String> {
        let address = {
            let state = self.shared.state();
            let (node, now) = (self.node, Instant::now());
            let busy = state.cursors.values().any(|c| fetches_from(c, node, now));
            busy.then(|| state.metadata.brokers.get(&node).cloned())
                .flatten()
        };
        if address.is_none() {
            // Nothing to fetch here: past connection failures no longer count.
            self.reset_failing();
            tokio::select! {
                _ = self.shared.fetch_wakeup.notified() => {}
                _ = tokio::time::sleep(IDLE_POLL) => {}
            }
        }
        address
    }

    /// Connects to `address` unless connected there; the Fetch version to use.
    async fn connect(&mut self, address: &str) -> Result<i16, Step> {
        if self
            .connection
            .as_ref()
            .is_none_or(|c| c.address() != address)
        {
            // A new connection: whatever the broker holds of the session is in doubt.
            self.session.connection_lost();
            self.connection = None;
            match Connection::connect(address, &self.connection_settings).await {
                Ok(connected) => self.connection = Some(connected),
                Err(error) if error.is_security_failure() => {
                    self.shared.fail(error.into());
                    return Err(Step::Stop);
                }
                Err(error) => return Err(self.retry_or_give_up(error.into()).await),
            }
        }
        let Some(connected) = self.connection.as_ref() else {
            return Err(Step::Continue);
        };
        match fetch_version(connected, self.shared.config.max_fetch_version) {
            Ok(version) => Ok(version),
            Err(error) => {
                self.shared.fail(error);
                Err(Step::Stop)
            }
        }
    }

    /// The next request of the session for the partitions fetched here, or none when no
    /// partition is left to fetch.
    fn plan(&mut self, version: i16) -> Option<FetchRequest> {
        let state = self.shared.state();
        let (node, now) = (self.node, Instant::now());
        let wanted = state
            .cursors
            .values()
            .filter(|c| fetches_from(c, node, now))
            .map(|c| FetchTarget {
                topic: &c.topic,
                topic_id: c.topic_id,
                partition: c.partition,
                offset: c.offset,
                leader_epoch: c.leader_epoch,
                generation: c.generation,
            });
        self.session.request(wanted, &self.params, version)
    }

    /// Sends the fetch; a connection failure is retried (or ends the loop once failures have
    /// lasted too long).
    async fn send(&mut self, request: &FetchRequest, version: i16) -> Result<FetchResponse, Step> {
        let Some(connected) = self.connection.as_mut() else {
            return Err(Step::Continue);
        };
        let timeout = self.shared.config.connection.request_timeout + self.shared.config.max_wait;
        self.awaiting_answer = true;
        let sent = Instant::now();
        let result = connected.request_at(request, version, timeout).await;
        self.awaiting_answer = false;
        self.metrics.fetched(result.is_ok().then(|| sent.elapsed()));
        match result {
            Ok(response) => Ok(response),
            Err(error) if error.is_security_failure() => {
                self.shared.fail(error.into());
                Err(Step::Stop)
            }
            Err(error) => {
                self.connection = None;
                self.session.connection_lost();
                Err(self.retry_or_give_up(error.into()).await)
            }
        }
    }

    /// Applies a response to the cursors, hands its data and ends on as events, and honours
    /// the broker's throttle.
    async fn apply(
        &mut self,
        response: FetchResponse,
        address: &str,
        response_slot: Option<OwnedSemaphorePermit>,
    ) -> Step {
        self.reset_failing();
        self.backoff.reset();
        let answer = self.session.read_response(response);
        let shared = &self.shared;
        if answer.error_code != 0 {
            if codes::is_fetch_session_error(answer.error_code) {
                // The session starts over with the next request, a full one: no pause.
                return Step::Continue;
            }
            tracing::warn!(broker = %address, error = %error_name(answer.error_code), "fetch failed");
            shared.metrics.error(ErrorKind::Fetch);
            mark_stale(shared);
            tokio::time::sleep(self.backoff.next_delay()).await;
            return Step::Continue;
        }
        // Capped: the broker delays an early request itself (KIP-219), so a throttle of hours
        // from a broken broker must not park the loop for hours.
        let throttle = Duration::from_millis(answer.throttle_time_ms.max(0) as u64)
            .min(self.shared.config.max_backoff);
        let fetched: usize = answer.partitions.iter().map(|(_, p)| p.records.len()).sum();
        let budget = acquire_budget(shared, fetched).await;
        let response_slot = response_slot.map(Arc::new);
        let applied = apply_answer(
            shared,
            self.node,
            address,
            self.session.partitions(),
            answer,
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
        leave_follower(shared, self.node);
        mark_stale(shared);
        tokio::time::sleep(delay).await;
        Step::Continue
    }

    /// Ends the broker's fetch session (epoch -1), on a fresh connection if a fetch was
    /// abandoned mid-request. Best effort: the closing consumer bounds the time it takes.
    async fn close_session(&mut self) {
        if self.session.id() == 0 {
            return;
        }
        if self.awaiting_answer {
            self.connection = None;
        }
        if self.connection.is_none() {
            let address = self
                .shared
                .state()
                .metadata
                .brokers
                .get(&self.node)
                .cloned();
            let Some(address) = address else {
                return;
            };
            match Connection::connect(&address, &self.connection_settings).await {
                Ok(connected) => self.connection = Some(connected),
                Err(error) => {
                    tracing::debug!(%error, "cannot reach the broker to close the fetch session");
                    return;
                }
            }
        }
        let Some(connected) = self.connection.as_mut() else {
            return;
        };
        let Ok(version) = fetch_version(connected, self.shared.config.max_fetch_version) else {
            return;
        };
        let session = self.session.id();
        let Some(request) = self.session.close_request(&self.params, version) else {
            return;
        };
        let timeout = self.shared.config.connection.request_timeout;
        match connected.request_at(&request, version, timeout).await {
            Ok(response) if response.error_code == 0 => {
                tracing::debug!(session, "fetch session closed");
            }
            Ok(response) => {
                tracing::debug!(session, error = %error_name(response.error_code),
                    "closing the fetch session failed");
            }
            Err(error) => tracing::debug!(session, %error, "closing the fetch session failed"),
        }
    }
}

/// What one response did: events to send, a fatal error, whether the coordinator must look.
#[derive(Default)]
struct AppliedResponse {
    events: Vec<Event>,
    fatal: Option<Error>,
    wake_coordinator: bool,
}

/// Applies each partition of an answer to its cursor, under the state lock, skipping data
/// made stale by a seek, a leader change or a reset since planning; then lets the named
/// partitions the answer left out (nothing new) see whether they are at their end.
fn apply_answer(
    shared: &Shared,
    node: i32,
    address: &str,
    sent: &[SessionPartition],
    answer: SessionAnswer,
    mut budget: Option<OwnedSemaphorePermit>,
    response_slot: Option<Arc<OwnedSemaphorePermit>>,
) -> AppliedResponse {
    let mut applied = AppliedResponse::default();
    let mut state = shared.state();
    let state = &mut *state;
    let now = Instant::now();
    let mut context = ResponseContext {
        read_committed: shared.config.read_committed,
        reset: shared.config.offset_reset,
        broker: address,
        first_with_records: false,
        now,
        replica_lease: shared.config.preferred_replica_lease,
        brokers: &state.metadata.brokers,
    };
    let mut records_seen = false;
    for (at, partition) in answer.partitions {
        // The broker reads partitions in the order it answers them; only the first one it
        // returns records for gets a whole batch however large (KIP-74).
        context.first_with_records = !records_seen && !partition.records.is_empty();
        records_seen |= !partition.records.is_empty();
        let entry = &sent[at];
        let Some(cursor) = current_cursor(&mut state.cursors, entry, node, now) else {
            continue;
        };
        let outcome = match apply_response(cursor, partition, &context) {
            Ok(outcome) => outcome,
            Err(error) => {
                applied.fatal = Some(error);
                return applied;
            }
        };
        let offset = cursor.offset;
        if outcome.moved {
            // The node it moved to may need its fetch loop started, or woken.
            applied.wake_coordinator = true;
            shared.fetch_wakeup.notify_waiters();
        }
        applied.wake_coordinator |= outcome.refresh_metadata || outcome.reset_offset;
        state.metadata_stale |= outcome.refresh_metadata;
        shared
            .metrics
            .partition_errors(outcome.refresh_metadata, outcome.reset_offset);
        if let Some(data) = outcome.data {
            let permit = take_budget(&mut budget, data.records.len());
            let chunk = chunk_of(shared, entry, data, context.read_committed, permit);
            applied.events.push(Event::Chunk(
                chunk.with_response_slot(response_slot.clone()),
            ));
        }
        if outcome.reached_end {
            applied.events.push(end_of_partition(entry, offset));
        }
    }
    context.first_with_records = false;
    let cursors = &mut state.cursors;
    for at in answer.unchanged {
        let entry = &sent[at];
        if let Some(end) = unchanged_end(cursors, entry, node, &context) {
            applied.events.push(end);
        }
    }
    applied
}

/// The chunk of records fetched for `entry`, holding `permit` of the byte budget.
fn chunk_of(
    shared: &Shared,
    entry: &SessionPartition,
    data: ChunkData,
    read_committed: bool,
    permit: Option<OwnedSemaphorePermit>,
) -> PartitionChunk {
    PartitionChunk::new(
        entry.topic.clone(),
        entry.partition,
        entry.generation,
        data,
        read_committed,
        permit,
    )
    .with_decode(shared.decode.clone())
    .with_metrics(shared.metrics.clone())
}

/// For a partition the answer left out: its end-of-partition event if the ends the broker
/// last sent in this session put its cursor at the end.
fn unchanged_end(
    cursors: &mut BTreeMap<(Arc<str>, i32), Cursor>,
    entry: &SessionPartition,
    node: i32,
    context: &ResponseContext<'_>,
) -> Option<Event> {
    let cursor = current_cursor(cursors, entry, node, context.now)?;
    // An empty answer at those ends.
    let unchanged = PartitionResponse {
        topic: entry.topic.clone(),
        partition: entry.partition,
        error_code: 0,
        high_watermark: entry.high_watermark,
        last_stable_offset: entry.last_stable_offset,
        log_start_offset: -1,
        aborted: Vec::new(),
        preferred_read_replica: -1,
        records: Bytes::new(),
    };
    let reached_end =
        apply_response(cursor, unchanged, context).is_ok_and(|outcome| outcome.reached_end);
    reached_end.then(|| end_of_partition(entry, cursor.offset))
}

/// The cursor `entry` was fetched for, unless a seek, a reset or a leader change since the
/// request made the answer stale.
fn current_cursor<'s>(
    cursors: &'s mut BTreeMap<(Arc<str>, i32), Cursor>,
    entry: &SessionPartition,
    node: i32,
    now: Instant,
) -> Option<&'s mut Cursor> {
    let cursor = cursors.get_mut(&(entry.topic.clone(), entry.partition))?;
    let current = cursor.generation == entry.generation
        && cursor.offset == entry.fetch_offset
        && fetches_from(cursor, node, now);
    current.then_some(cursor)
}

/// The event of `entry`'s partition reaching its end at `offset`.
fn end_of_partition(entry: &SessionPartition, offset: i64) -> Event {
    Event::EndOfPartition {
        topic: entry.topic.clone(),
        partition: entry.partition,
        offset,
        generation: entry.generation,
    }
}

/// The Fetch version to use on `connection`: the negotiated one, lowered to `cap` when one
/// is configured (never below what the broker or kafka-protocol accept).
fn fetch_version(connection: &Connection, cap: Option<i16>) -> Result<i16, Error> {
    let negotiated = connection
        .versions()
        .negotiate::<FetchRequest>(connection.address())?;
    let Some(cap) = cap else {
        return Ok(negotiated);
    };
    let broker_min = connection
        .versions()
        .range(ApiKey::Fetch as i16)
        .map_or(0, |(min, _)| min);
    let ours_min = <FetchRequest as Message>::VERSIONS.min;
    Ok(cap.clamp(broker_min.max(ours_min), negotiated))
}

/// `node` cannot be reached: partitions read from it as a follower go back to their leaders.
fn leave_follower(shared: &Shared, node: i32) {
    let mut state = shared.state();
    let mut left = 0;
    for cursor in state.cursors.values_mut() {
        left += usize::from(cursor.leave_follower(node));
    }
    if left > 0 {
        tracing::info!(
            node,
            partitions = left,
            "follower unreachable: reading from the leaders"
        );
        shared.fetch_wakeup.notify_waiters();
    }
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
pub(crate) fn take_budget(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_responses_are_asked_for_no_more_than_the_reused_buffers_hold() {
        let mut config = ConsumerConfig::new(vec!["b:1".to_owned()]);
        let mut connection = config.connection.clone();
        connection.frame_buffer_bytes = 64 << 20;
        assert_eq!(
            response_bytes(&config, &connection),
            config.max_bytes,
            "no limit held"
        );
        config.max_held_responses = Some(3);
        let asked = response_bytes(&config, &connection) as usize;
        assert!(
            4 * (asked + asked / 8) <= 64 << 20,
            "four responses of {asked} B must fit the buffers"
        );
        assert!(asked >= 8 << 20, "{asked}");
        connection.frame_buffer_bytes = 0;
        assert_eq!(
            response_bytes(&config, &connection),
            config.partition_max_bytes,
            "at least one partition's worth"
        );
    }
}
