//! The per-broker fetch loop: one fetch in flight per broker, the next one sent as soon as a
//! response is applied to the cursors (before anything is decoded).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::FetchRequest;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::chunk::PartitionChunk;
use super::cursor::{apply_response, CursorState, ResponseContext};
use super::shared::{Backoff, Event, Shared};
use crate::Error;
use krec_client::fetch::{build_request, split_response, FetchParams, FetchTarget};
use krec_client::{error_name, Connection};

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
    let mut connection: Option<Connection> = None;
    let mut backoff = Backoff::new(shared.config.backoff, shared.config.max_backoff);
    let mut failing = Failing::default();
    let params = FetchParams {
        max_wait_ms: shared.config.max_wait.as_millis().min(i32::MAX as u128) as i32,
        min_bytes: shared.config.min_bytes,
        max_bytes: shared.config.max_bytes,
        partition_max_bytes: shared.config.partition_max_bytes,
        read_committed: shared.config.read_committed,
    };
    let mut rotation = 0usize;
    // Reused response buffers are memory the budget does not count: at most half of it.
    let mut connection_settings = shared.config.connection.clone();
    connection_settings.frame_pool_bytes = connection_settings
        .frame_pool_bytes
        .min(shared.config.buffer_bytes / 2);
    let response_slots = shared
        .config
        .max_held_responses
        .map(|held| Arc::new(Semaphore::new(held.max(1))));
    while !shared.is_stopping() {
        // Under `max_held_responses`, wait for the data of an earlier response to be dropped.
        let response_slot = match &response_slots {
            Some(slots) => match slots.clone().acquire_owned().await {
                Ok(slot) => Some(slot),
                Err(_) => return,
            },
            None => None,
        };
        let (mut planned, address) = plan(&shared, node);
        // Each partition takes its turn at the head of the request, the one place where the
        // broker returns a batch larger than the size limits (KIP-74).
        if !planned.is_empty() {
            let len = planned.len();
            planned.rotate_left(rotation % len);
            planned[0].first = true;
            rotation = rotation.wrapping_add(1);
        }
        let Some(address) = address.filter(|_| !planned.is_empty()) else {
            // Nothing led by this node: past connection failures no longer count.
            failing = Failing::default();
            tokio::select! {
                _ = shared.fetch_wakeup.notified() => {}
                _ = tokio::time::sleep(IDLE_POLL) => {}
            }
            continue;
        };
        if connection.as_ref().is_none_or(|c| c.address() != address) {
            match Connection::connect(&address, &connection_settings).await {
                Ok(connected) => connection = Some(connected),
                Err(error) => {
                    if retry_or_give_up(&shared, &mut failing, &mut backoff, error.into()).await {
                        continue;
                    }
                    return;
                }
            }
        }
        let Some(connected) = connection.as_mut() else {
            continue;
        };
        let version = match connected.versions().negotiate::<FetchRequest>(&address) {
            Ok(version) => cap_version(version, shared.config.max_fetch_version, connected),
            Err(error) => return shared.fail(error.into()),
        };
        let targets: Vec<FetchTarget> = planned.iter().map(|p| p.target.clone()).collect();
        let request = build_request(&targets, &params, version);
        let timeout = shared.config.connection.request_timeout + shared.config.max_wait;
        let response = match connected.request_at(&request, version, timeout).await {
            Ok(response) => response,
            Err(error) => {
                connection = None;
                if retry_or_give_up(&shared, &mut failing, &mut backoff, error.into()).await {
                    continue;
                }
                return;
            }
        };
        failing = Failing::default();
        backoff.reset();
        if response.error_code != 0 {
            // A whole-request error (sessions are not used, so this is rare): retry after a pause.
            tracing::warn!(broker = %address, error = %error_name(response.error_code), "fetch failed");
            mark_stale(&shared);
            tokio::time::sleep(backoff.next_delay()).await;
            continue;
        }
        let throttle = Duration::from_millis(response.throttle_time_ms.max(0) as u64);
        let names = shared.state().topic_names.clone();
        let partitions = split_response(response, version, |id| {
            names.get(id).map(|name| name.to_string())
        });
        let fetched: usize = partitions.iter().map(|p| p.records.len()).sum();
        let mut budget = acquire_budget(&shared, fetched).await;
        let response_slot = response_slot.map(Arc::new);
        let mut events = Vec::new();
        let mut fatal = None;
        let mut wake_coordinator = false;
        let by_partition: HashMap<(&str, i32), &Planned> = planned
            .iter()
            .map(|p| ((&*p.topic, p.target.partition), p))
            .collect();
        {
            let mut state = shared.state();
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
                // A seek, a leader change or a reset since planning makes this data stale.
                if cursor.generation != plan.generation
                    || cursor.offset != plan.target.offset
                    || cursor.leader != node
                    || cursor.state != CursorState::Ready
                {
                    continue;
                }
                let read_committed = shared.config.read_committed;
                let context = ResponseContext {
                    read_committed,
                    reset: shared.config.offset_reset,
                    broker: &address,
                    first_in_request: plan.first,
                };
                match apply_response(cursor, partition, &context) {
                    Ok(applied) => {
                        wake_coordinator |= applied.refresh_metadata || applied.reset_offset;
                        if let Some(data) = applied.data {
                            let permit = take_budget(&mut budget, data.records.len());
                            events.push(Event::Chunk(
                                PartitionChunk::new(
                                    plan.topic.clone(),
                                    plan.target.partition,
                                    plan.generation,
                                    data,
                                    read_committed,
                                    permit,
                                )
                                .with_response_slot(response_slot.clone()),
                            ));
                        }
                        if applied.reached_end {
                            events.push(Event::EndOfPartition {
                                topic: plan.topic.clone(),
                                partition: plan.target.partition,
                                offset: cursor.offset,
                                generation: plan.generation,
                            });
                        }
                        if applied.refresh_metadata {
                            state.metadata_stale = true;
                        }
                    }
                    Err(error) => {
                        fatal = Some(error);
                        break;
                    }
                }
            }
        }
        for event in events {
            let _ = shared.events.send(event);
        }
        if let Some(error) = fatal {
            return shared.fail(error);
        }
        if wake_coordinator {
            shared.coordinator_wakeup.notify_one();
        }
        if !throttle.is_zero() {
            tracing::debug!(broker = %address, ?throttle, "throttled by the broker");
            tokio::time::sleep(throttle).await;
        }
    }
}

/// The negotiated Fetch version, lowered to `cap` when one is configured (never below what
/// the broker or kafka-protocol accept).
fn cap_version(negotiated: i16, cap: Option<i16>, connection: &Connection) -> i16 {
    let Some(cap) = cap else {
        return negotiated;
    };
    let broker_min = connection.versions().range(1).map_or(0, |(min, _)| min);
    let ours_min = <FetchRequest as kafka_protocol::protocol::Message>::VERSIONS.min;
    cap.clamp(broker_min.max(ours_min), negotiated)
}

/// The ready partitions led by `node`, and the node's address.
fn plan(shared: &Shared, node: i32) -> (Vec<Planned>, Option<String>) {
    let state = shared.state();
    let planned = state
        .cursors
        .values()
        .filter(|c| c.state == CursorState::Ready && c.leader == node)
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

/// After a connection failure: asks for fresh metadata (the leader may have moved), waits,
/// and returns false once failures have lasted longer than the configured limit.
async fn retry_or_give_up(
    shared: &Shared,
    failing: &mut Failing,
    backoff: &mut Backoff,
    error: Error,
) -> bool {
    failing.attempts += 1;
    let since = *failing.since.get_or_insert_with(Instant::now);
    if since.elapsed() > shared.config.give_up_after {
        shared.fail(Error::RetriesExhausted {
            what: "fetching".to_owned(),
            attempts: failing.attempts,
            last: Box::new(error),
        });
        return false;
    }
    let delay = backoff.next_delay();
    tracing::warn!(%error, ?delay, "fetch connection failed; reconnecting");
    mark_stale(shared);
    tokio::time::sleep(delay).await;
    true
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
