//! Per-partition cursors and what one fetch response does to them.
//!
//! [`apply_response`] is a pure function of the cursor and the partition's response, so every
//! offset rule (contiguity, partial trailing batches, compacted gaps, errors) is unit-tested
//! without a network.
//!
//! Rack-aware reading (KIP-392): a leader may answer with the follower to read a partition
//! from; the cursor keeps it as its [`ReadReplica`] and [`Cursor::fetch_node`] names it until
//! its lease ends, an error or lost connection sends the partition back to the leader, or the
//! leader changes. A follower's high watermark lags the leader's, so it may only raise the end
//! the leader reported, never lower it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use uuid::Uuid;

use super::config::{OffsetReset, StartOffset};
use crate::Error;
use krec_client::fetch::{scan_batches, AbortedTransaction, PartitionResponse};
use krec_client::{codes, error_name, Error as ClientError};

/// Fetches in a row that may return only a cut batch before the consumer gives up: Kafka
/// always returns at least one whole batch (KIP-74), so more than this means a broken broker.
const MAX_STALLED_FETCHES: u32 = 5;

/// What a partition is waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CursorState {
    /// Its start offset must be looked up (ListOffsets) before fetching.
    NeedsOffset(StartOffset),
    /// Its leader must be looked up (Metadata) before fetching.
    NeedsLeader,
    /// It can be fetched from `offset` at `leader`.
    Ready,
}

/// One assigned partition.
#[derive(Clone, Debug)]
pub(crate) struct Cursor {
    /// Topic name.
    pub(crate) topic: Arc<str>,
    /// Partition id.
    pub(crate) partition: i32,
    /// Topic id (for Fetch v13+).
    pub(crate) topic_id: Uuid,
    /// What the cursor waits for.
    pub(crate) state: CursorState,
    /// The next offset to fetch (and to deliver).
    pub(crate) offset: i64,
    /// Node id of the leader, when known.
    pub(crate) leader: Option<i32>,
    /// Leader epoch from the last metadata, -1 when unknown.
    pub(crate) leader_epoch: i32,
    /// Bumped by every seek, so data fetched for an older position is dropped.
    pub(crate) generation: u64,
    /// Last high watermark seen.
    pub(crate) high_watermark: i64,
    /// Last stable offset seen.
    pub(crate) last_stable_offset: i64,
    /// True while the cursor sits at the end of the partition.
    pub(crate) at_end: bool,
    /// Fetches in a row without a complete batch.
    pub(crate) stalled_fetches: u32,
    /// The follower the leader named to read from (KIP-392), while it is followed.
    pub(crate) read_replica: Option<ReadReplica>,
}

/// A follower named by the leader as the partition's preferred read replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReadReplica {
    /// Its node id.
    pub(crate) node: i32,
    /// When the leader is to be asked again (`None`: a lease too long for the clock to hold).
    pub(crate) until: Option<Instant>,
}

impl Cursor {
    /// A cursor that first looks up `start`.
    pub(crate) fn new(topic: Arc<str>, partition: i32, start: StartOffset) -> Self {
        // An absolute offset needs no lookup; the broker's OFFSET_OUT_OF_RANGE checks it.
        let (state, offset) = match start {
            StartOffset::Offset(offset) => (CursorState::NeedsLeader, offset),
            other => (CursorState::NeedsOffset(other), -1),
        };
        Self {
            topic,
            partition,
            topic_id: Uuid::nil(),
            state,
            offset,
            leader: None,
            leader_epoch: -1,
            generation: 0,
            high_watermark: -1,
            last_stable_offset: -1,
            at_end: false,
            stalled_fetches: 0,
            read_replica: None,
        }
    }

    /// The node to fetch from at `now`: the preferred read replica while its lease lasts,
    /// else the leader.
    pub(crate) fn fetch_node(&self, now: Instant) -> Option<i32> {
        match self.following(now) {
            Some(replica) => Some(replica.node),
            None => self.leader,
        }
    }

    /// The follower read from at `now`, if any.
    fn following(&self, now: Instant) -> Option<ReadReplica> {
        self.read_replica
            .filter(|replica| replica.until.is_none_or(|until| now < until))
            .filter(|replica| Some(replica.node) != self.leader)
    }

    /// Sends the partition back to its leader if it is read from `node` as a follower (the
    /// connection to `node` failed); true if it was.
    pub(crate) fn leave_follower(&mut self, node: i32) -> bool {
        let left = self
            .read_replica
            .is_some_and(|replica| replica.node == node);
        if left {
            self.read_replica = None;
        }
        left
    }

    /// The offset where the partition currently ends for this consumer.
    pub(crate) fn end_offset(&self, read_committed: bool) -> i64 {
        if read_committed && self.last_stable_offset >= 0 {
            self.last_stable_offset
        } else {
            self.high_watermark
        }
    }
}

/// Record bytes of one partition, ready for decoding: complete batches only.
#[derive(Clone, Debug)]
pub(crate) struct ChunkData {
    /// The first offset to deliver (records before it in the first batch are skipped).
    pub(crate) fetch_offset: i64,
    /// Offset after the last complete batch: where the next fetch started.
    pub(crate) next_offset: i64,
    /// High watermark in the response.
    pub(crate) high_watermark: i64,
    /// Last stable offset in the response.
    pub(crate) last_stable_offset: i64,
    /// Aborted transactions listed in the response.
    pub(crate) aborted: Vec<AbortedTransaction>,
    /// Complete batches, a slice of the response frame.
    pub(crate) records: Bytes,
}

/// What applying one partition response changed.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// Data to hand to the decoder, if the response moved the cursor.
    pub(crate) data: Option<ChunkData>,
    /// The cursor reached the end of the partition with this response.
    pub(crate) reached_end: bool,
    /// The leader must be looked up again.
    pub(crate) refresh_metadata: bool,
    /// The start offset must be looked up again (reset policy).
    pub(crate) reset_offset: bool,
    /// The node to fetch from changed (to a follower, or back to the leader).
    pub(crate) moved: bool,
}

/// How a response is to be read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResponseContext<'a> {
    /// The consumer reads committed data only (ends at the last stable offset).
    pub(crate) read_committed: bool,
    /// What to do on OFFSET_OUT_OF_RANGE.
    pub(crate) reset: OffsetReset,
    /// The broker that answered, for errors and logs.
    pub(crate) broker: &'a str,
    /// The partition is the first of the answer with record bytes. The broker reads
    /// partitions in the order it answers them, and only the first one it returns records
    /// for is guaranteed a whole batch however large (KIP-74); later ones may get a cut
    /// batch or nothing until their turn, which is normal, not a stall.
    pub(crate) first_with_records: bool,
    /// The time the response is applied at (read replicas' leases).
    pub(crate) now: Instant,
    /// How long a read replica named by the leader is followed.
    pub(crate) replica_lease: Duration,
    /// The brokers in the last metadata: a read replica not among them is not followed.
    pub(crate) brokers: &'a HashMap<i32, String>,
}

/// Applies a partition's fetch response to its cursor (the response is for `cursor.offset`).
pub(crate) fn apply_response(
    cursor: &mut Cursor,
    response: PartitionResponse,
    context: &ResponseContext<'_>,
) -> Result<Applied, Error> {
    let from_follower = cursor.following(context.now).is_some();
    if response.error_code != 0 {
        if from_follower {
            if let Some(applied) = leave_failing_follower(cursor, &response, context) {
                return Ok(applied);
            }
        }
        return apply_error(cursor, &response, context);
    }
    let ResponseContext {
        read_committed,
        first_with_records,
        ..
    } = *context;
    let mut applied = Applied::default();
    if from_follower {
        // A follower learns the leader's high watermark late: it may raise the end, not lower it.
        cursor.high_watermark = cursor.high_watermark.max(response.high_watermark);
        cursor.last_stable_offset = cursor.last_stable_offset.max(response.last_stable_offset);
    } else {
        cursor.high_watermark = response.high_watermark;
        cursor.last_stable_offset = response.last_stable_offset;
        applied.moved = follow_read_replica(cursor, response.preferred_read_replica, context);
    }
    let scan = scan_batches(&response.records).map_err(|bad| Error::MalformedBatch {
        topic: cursor.topic.to_string(),
        partition: cursor.partition,
        fetch_offset: cursor.offset,
        position: bad.position,
        offset: bad.offset,
        length: bad.length,
    })?;
    match scan.next_offset {
        Some(next) if next > cursor.offset => {
            applied.data = Some(ChunkData {
                fetch_offset: cursor.offset,
                next_offset: next,
                high_watermark: response.high_watermark,
                last_stable_offset: response.last_stable_offset,
                aborted: response.aborted,
                records: response.records.slice(..scan.complete_bytes),
            });
            cursor.offset = next;
            cursor.stalled_fetches = 0;
            cursor.at_end = false;
        }
        _ if first_with_records && (scan.partial.is_some() || scan.next_offset.is_some()) => {
            // Only a cut batch, or batches wholly before the fetch offset: nothing to deliver.
            cursor.stalled_fetches += 1;
            if cursor.stalled_fetches >= MAX_STALLED_FETCHES {
                return Err(Error::NoProgress {
                    topic: cursor.topic.to_string(),
                    partition: cursor.partition,
                    offset: cursor.offset,
                    attempts: cursor.stalled_fetches,
                    needed: scan.partial.and_then(|partial| partial.size),
                });
            }
        }
        _ => {}
    }
    let end = cursor.end_offset(read_committed);
    if end >= 0 && cursor.offset >= end && !cursor.at_end {
        cursor.at_end = true;
        applied.reached_end = true;
    }
    Ok(applied)
}

/// The leader named a follower to read from: follow it if the metadata knows it.
fn follow_read_replica(cursor: &mut Cursor, node: i32, context: &ResponseContext<'_>) -> bool {
    if node < 0 || Some(node) == cursor.leader {
        return false;
    }
    if !context.brokers.contains_key(&node) {
        tracing::debug!(topic = %cursor.topic, partition = cursor.partition, node,
            "preferred read replica not in the metadata; staying on the leader");
        return false;
    }
    tracing::debug!(topic = %cursor.topic, partition = cursor.partition, node,
        "reading from the preferred read replica");
    cursor.read_replica = Some(ReadReplica {
        node,
        until: context.now.checked_add(context.replica_lease),
    });
    true
}

/// A follower answered with an error that the leader may not have: read from the leader
/// again at the same offset. A follower can be behind or no longer a replica, so its
/// OFFSET_OUT_OF_RANGE is no reason to apply the reset policy (as in the Java client).
fn leave_failing_follower(
    cursor: &mut Cursor,
    response: &PartitionResponse,
    context: &ResponseContext<'_>,
) -> Option<Applied> {
    let code = response.error_code;
    let out_of_range = code == codes::OFFSET_OUT_OF_RANGE;
    if !out_of_range && !codes::needs_metadata_refresh(code) {
        return None;
    }
    tracing::info!(
        topic = %cursor.topic, partition = cursor.partition, offset = cursor.offset,
        broker = context.broker, error = %error_name(code),
        "follower fetch failed: reading from the leader again"
    );
    cursor.read_replica = None;
    Some(Applied {
        moved: true,
        refresh_metadata: !out_of_range,
        ..Applied::default()
    })
}

/// A partition answered with an error code: reset the offset, look up the leader again, or
/// fail.
fn apply_error(
    cursor: &mut Cursor,
    response: &PartitionResponse,
    context: &ResponseContext<'_>,
) -> Result<Applied, Error> {
    let mut applied = Applied::default();
    match response.error_code {
        codes::OFFSET_OUT_OF_RANGE => {
            let restart = match context.reset {
                OffsetReset::Earliest => StartOffset::Beginning,
                OffsetReset::Latest => StartOffset::End,
                OffsetReset::Fail => {
                    return Err(Error::OffsetOutOfRange {
                        topic: cursor.topic.to_string(),
                        partition: cursor.partition,
                        offset: cursor.offset,
                        log_start: Some(response.log_start_offset).filter(|&o| o >= 0),
                        high_watermark: Some(response.high_watermark).filter(|&o| o >= 0),
                    })
                }
            };
            tracing::warn!(
                topic = %cursor.topic, partition = cursor.partition, offset = cursor.offset,
                log_start = response.log_start_offset, high_watermark = response.high_watermark,
                policy = ?context.reset, "offset out of range: resetting"
            );
            cursor.state = CursorState::NeedsOffset(restart);
            applied.reset_offset = true;
            Ok(applied)
        }
        code if codes::needs_metadata_refresh(code) => {
            tracing::info!(
                topic = %cursor.topic, partition = cursor.partition, broker = context.broker,
                error = %error_name(code), "fetch error: looking up the leader again"
            );
            cursor.state = CursorState::NeedsLeader;
            applied.refresh_metadata = true;
            Ok(applied)
        }
        code => Err(ClientError::Broker {
            broker: context.broker.to_owned(),
            api: "Fetch",
            topic: Some(cursor.topic.to_string()),
            partition: Some(cursor.partition),
            code,
            name: error_name(code),
        }
        .into()),
    }
}

#[cfg(test)]
mod tests;
