//! The coordinator task: looks up leaders (Metadata) and start offsets (ListOffsets) for the
//! cursors that need them, and starts a fetch loop for every node fetched from (leaders, and
//! followers named as preferred read replicas).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex as AsyncMutex;

use super::config::StartOffset;
use super::cursor::CursorState;
use super::fetch_loop;
use super::metrics::ErrorKind;
use super::shared::{Backoff, Shared};
use crate::Error;
use krec_client::metadata::{ClusterMetadata, MetadataClient};
use krec_client::offsets::{list_offsets, ListedOffset, OffsetQuery};
use krec_client::{codes, error_name, Connection, Error as ClientError};

/// Metadata answers in a row without an assigned topic before it is reported unknown.
const UNKNOWN_TOPIC_ANSWERS: u32 = 10;

/// How often the coordinator looks at the cursors when nothing wakes it.
const IDLE_POLL: Duration = Duration::from_millis(500);

/// Runs until the consumer stops or a fatal error is reported.
#[tracing::instrument(name = "coordinator", skip_all)]
pub async fn run(shared: Arc<Shared>, metadata: Arc<AsyncMutex<MetadataClient>>) {
    let mut backoff = Backoff::new(shared.config.backoff, shared.config.max_backoff);
    let mut connections: HashMap<i32, Connection> = HashMap::new();
    let mut failing_since: Option<Instant> = None;
    let mut failed_attempts = 0u32;
    let mut unknown_topic_answers = 0u32;
    while !shared.is_stopping() {
        let work = pending_work(&shared);
        if !work.metadata && !work.offsets {
            // A fetch loop may have sent a partition to a follower that has no loop yet.
            if start_fetch_loops(&shared) {
                shared.fetch_wakeup.notify_waiters();
            }
            tokio::select! {
                _ = shared.coordinator_wakeup.notified() => {}
                _ = tokio::time::sleep(IDLE_POLL) => {}
            }
            continue;
        }
        let result = async {
            if work.metadata {
                let fresh = metadata.lock().await.fetch(&work.topics).await?;
                apply_metadata(&shared, fresh)?;
            }
            resolve_offsets(&shared, &mut connections).await
        }
        .await;
        match result {
            Ok(()) => unknown_topic_answers = 0,
            // A broker that has just restarted can answer from metadata that is not caught up
            // yet: a topic that was there is believed gone only if the answer persists.
            Err(error @ Error::Client(ClientError::UnknownTopic { .. }))
                if unknown_topic_answers < UNKNOWN_TOPIC_ANSWERS =>
            {
                unknown_topic_answers += 1;
                tracing::warn!(%error, "topic missing from metadata; asking again");
            }
            Err(error) if is_retriable(&error) => {
                failed_attempts += 1;
                let since = *failing_since.get_or_insert_with(Instant::now);
                shared.metrics.lookup_failing.set(Some(since));
                shared.metrics.error(ErrorKind::Lookup);
                if since.elapsed() > shared.config.give_up_after {
                    return shared.fail(Error::RetriesExhausted {
                        what: "looking up leaders and offsets".to_owned(),
                        attempts: failed_attempts,
                        last: Box::new(error),
                    });
                }
                tracing::warn!(%error, "metadata or offset lookup failed; retrying");
            }
            Err(error) => return shared.fail(error),
        }
        start_fetch_loops(&shared);
        shared.fetch_wakeup.notify_waiters();
        let still = pending_work(&shared);
        if still.metadata || still.offsets {
            tokio::time::sleep(backoff.next_delay()).await;
        } else {
            backoff.reset();
            failing_since = None;
            shared.metrics.lookup_failing.set(None);
            failed_attempts = 0;
        }
    }
}

struct Work {
    metadata: bool,
    offsets: bool,
    topics: Vec<String>,
}

fn pending_work(shared: &Shared) -> Work {
    let state = shared.state();
    let mut topics: Vec<String> = Vec::new();
    let mut metadata = state.metadata_stale;
    let mut offsets = false;
    for cursor in state.cursors.values() {
        if topics.last().map(String::as_str) != Some(&*cursor.topic) {
            topics.push(cursor.topic.to_string());
        }
        match cursor.state {
            CursorState::NeedsLeader => metadata = true,
            CursorState::NeedsOffset(_) if cursor.leader.is_none() => metadata = true,
            CursorState::NeedsOffset(_) => offsets = true,
            CursorState::Ready => {}
        }
    }
    Work {
        metadata,
        offsets,
        topics,
    }
}

/// Connection failures and timeouts go away when the broker comes back; the rest do not.
fn is_retriable(error: &Error) -> bool {
    let Error::Client(error) = error else {
        return false;
    };
    if error.is_security_failure() {
        return false;
    }
    error.is_connection_failure()
        || matches!(error, ClientError::NoBroker { .. })
        || matches!(error, ClientError::Broker { code, .. } if codes::needs_metadata_refresh(*code))
}

/// Takes leaders, epochs and topic ids from fresh metadata.
fn apply_metadata(shared: &Shared, metadata: ClusterMetadata) -> Result<(), Error> {
    let mut state = shared.state();
    let mut stale = false;
    let mut vanished = false;
    let state = &mut *state;
    for cursor in state.cursors.values_mut() {
        let topic = match metadata.topic(&cursor.topic) {
            Ok(topic) => topic,
            // A topic only a pattern matched may have been deleted: the subscription drops it.
            Err(ClientError::UnknownTopic { .. })
                if state.matched_topics.contains(&cursor.topic) =>
            {
                vanished = true;
                stale = true;
                continue;
            }
            Err(error) => return Err(error.into()),
        };
        if !topic.topic_id.is_nil() {
            cursor.topic_id = topic.topic_id;
            state
                .topic_names
                .insert(topic.topic_id, cursor.topic.clone());
        }
        let Some(partition) = metadata.partition(&cursor.topic, cursor.partition) else {
            if topic.partitions.is_empty() {
                // A topic still being created has no partitions yet.
                stale = true;
                continue;
            }
            return Err(Error::UnknownPartition {
                topic: cursor.topic.to_string(),
                partition: cursor.partition,
                count: topic.partitions.len(),
            });
        };
        if partition.leader < 0 {
            tracing::debug!(topic = %cursor.topic, partition = cursor.partition,
                error = %error_name(partition.error_code), "no leader yet");
            if cursor.state == CursorState::Ready {
                cursor.state = CursorState::NeedsLeader;
            }
            stale = true;
            continue;
        }
        if let Some(from) = cursor.leader.filter(|&from| from != partition.leader) {
            tracing::info!(topic = %cursor.topic, partition = cursor.partition,
                from, to = partition.leader, epoch = partition.leader_epoch,
                "partition leader changed");
        }
        // A new leader (or epoch) names its own read replica; a node gone from the cluster
        // is not read from (the Java client does the same).
        let leader_moved = cursor.leader != Some(partition.leader)
            || cursor.leader_epoch != partition.leader_epoch;
        if cursor
            .read_replica
            .is_some_and(|replica| leader_moved || !metadata.brokers.contains_key(&replica.node))
        {
            cursor.read_replica = None;
        }
        cursor.leader = Some(partition.leader);
        cursor.leader_epoch = partition.leader_epoch;
        if cursor.state == CursorState::NeedsLeader {
            cursor.state = CursorState::Ready;
        }
    }
    state.metadata = metadata;
    state.metadata_stale = stale;
    if vanished {
        shared.subscription_wakeup.notify_one();
    }
    Ok(())
}

/// One partition waiting for its start offset.
struct Pending {
    partition: i32,
    leader_epoch: i32,
    start: StartOffset,
    generation: u64,
}

/// The partitions waiting for a start offset, by leader and topic.
type PendingByLeader = BTreeMap<(i32, Arc<str>), Vec<Pending>>;

/// Looks up start offsets for every cursor that needs one, leader by leader.
async fn resolve_offsets(
    shared: &Shared,
    connections: &mut HashMap<i32, Connection>,
) -> Result<(), Error> {
    let (groups, addresses) = pending_by_leader(shared);
    let read_committed = shared.config.read_committed;
    for ((leader, topic), pending) in groups {
        let Some(address) = addresses.get(&leader) else {
            shared.state().metadata_stale = true;
            continue;
        };
        let connection = match connections.entry(leader) {
            std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::hash_map::Entry::Vacant(entry) => {
                entry.insert(Connection::connect(address, &shared.config.connection).await?)
            }
        };
        let lookup = lookup_starts(connection, &topic, &pending, read_committed).await;
        let resolved = match lookup {
            Ok(resolved) => resolved,
            Err(error) => {
                connections.remove(&leader);
                return Err(error);
            }
        };
        apply_starts(shared, address, &topic, &pending, resolved)?;
    }
    Ok(())
}

/// The cursors that need a start offset, grouped by leader and topic (one ListOffsets
/// each), and the brokers' addresses.
fn pending_by_leader(shared: &Shared) -> (PendingByLeader, HashMap<i32, String>) {
    let mut groups = PendingByLeader::new();
    let state = shared.state();
    for cursor in state.cursors.values() {
        if let CursorState::NeedsOffset(start) = cursor.state {
            if let Some(leader) = cursor.leader {
                groups
                    .entry((leader, cursor.topic.clone()))
                    .or_default()
                    .push(Pending {
                        partition: cursor.partition,
                        leader_epoch: cursor.leader_epoch,
                        start,
                        generation: cursor.generation,
                    });
            }
        }
    }
    (groups, state.metadata.brokers.clone())
}

/// Moves each pending cursor still of the same generation to its resolved start offset;
/// an error that needs new metadata leaves the cursor waiting for its leader.
fn apply_starts(
    shared: &Shared,
    address: &str,
    topic: &Arc<str>,
    pending: &[Pending],
    resolved: Vec<Result<i64, i16>>,
) -> Result<(), Error> {
    let mut state = shared.state();
    for (pending, outcome) in pending.iter().zip(resolved) {
        let Some(cursor) = state.cursors.get_mut(&(topic.clone(), pending.partition)) else {
            continue;
        };
        if cursor.generation != pending.generation {
            continue;
        }
        match outcome {
            Ok(offset) => {
                tracing::debug!(topic = %topic, partition = pending.partition, offset,
                    start = ?pending.start, "start offset resolved");
                cursor.offset = offset;
                cursor.state = CursorState::Ready;
                cursor.at_end = false;
                cursor.stalled_fetches = 0;
            }
            Err(code) if codes::needs_metadata_refresh(code) => {
                cursor.leader = None;
                state.metadata_stale = true;
            }
            Err(code) => {
                return Err(ClientError::Broker {
                    broker: address.to_owned(),
                    api: "ListOffsets",
                    topic: Some(topic.to_string()),
                    partition: Some(pending.partition),
                    code,
                    name: error_name(code),
                }
                .into())
            }
        }
    }
    Ok(())
}

/// The start offset of each pending partition, or the Kafka error code that prevented it.
async fn lookup_starts(
    connection: &mut Connection,
    topic: &str,
    pending: &[Pending],
    read_committed: bool,
) -> Result<Vec<Result<i64, i16>>, Error> {
    let ask = |query: fn(StartOffset) -> OffsetQuery| -> Vec<(i32, i32, OffsetQuery)> {
        pending
            .iter()
            .map(|p| (p.partition, p.leader_epoch, query(p.start)))
            .collect()
    };
    let earliest = list_offsets(
        connection,
        topic,
        &ask(|_| OffsetQuery::Earliest),
        read_committed,
    )
    .await?;
    let latest = list_offsets(
        connection,
        topic,
        &ask(|_| OffsetQuery::Latest),
        read_committed,
    )
    .await?;
    let by_time = if pending
        .iter()
        .any(|p| matches!(p.start, StartOffset::Timestamp(_)))
    {
        let query = |start| match start {
            StartOffset::Timestamp(ms) => OffsetQuery::Timestamp(ms),
            _ => OffsetQuery::Latest,
        };
        list_offsets(connection, topic, &ask(query), read_committed).await?
    } else {
        Vec::new()
    };
    let find = |listed: &[ListedOffset], partition: i32| -> Result<i64, i16> {
        match listed.iter().find(|l| l.partition == partition) {
            Some(l) if l.error_code == 0 => Ok(l.offset),
            Some(l) => Err(l.error_code),
            None => Err(codes::UNKNOWN_TOPIC_OR_PARTITION),
        }
    };
    Ok(pending
        .iter()
        .map(|p| {
            let earliest = find(&earliest, p.partition)?;
            let latest = find(&latest, p.partition)?;
            Ok(match p.start {
                StartOffset::Beginning => earliest,
                StartOffset::End => latest,
                StartOffset::Offset(offset) => offset,
                StartOffset::FromEnd(count) => latest.saturating_sub(count).max(earliest),
                StartOffset::Timestamp(_) => match find(&by_time, p.partition)? {
                    -1 => latest,
                    offset => offset,
                },
            })
        })
        .collect())
}

/// Starts a fetch loop for each node fetched from that has none; true if it started one.
fn start_fetch_loops(shared: &Arc<Shared>) -> bool {
    // None once the consumer is closing: no loop starts then.
    let Some(token) = shared.fetch_loop_token() else {
        return false;
    };
    let mut state = shared.state();
    let now = Instant::now();
    let nodes: Vec<i32> = state
        .cursors
        .values()
        .flat_map(|c| [c.leader, c.fetch_node(now)])
        .flatten()
        .collect();
    let mut started = false;
    for node in nodes {
        if state.fetch_loops.insert(node) {
            tracing::debug!(node, "starting a fetch loop");
            let task = tokio::spawn(fetch_loop::run(shared.clone(), node, token.clone()));
            shared.track(task);
            started = true;
        }
    }
    started
}
