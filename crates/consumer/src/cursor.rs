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
mod tests {
    use super::*;
    use krec_batch::encode::BatchBuilder;

    /// Nodes 1, 2 and 3.
    fn brokers() -> &'static HashMap<i32, String> {
        static BROKERS: std::sync::OnceLock<HashMap<i32, String>> = std::sync::OnceLock::new();
        BROKERS.get_or_init(|| (1..=3).map(|node| (node, format!("b:{node}"))).collect())
    }

    fn context(read_committed: bool, reset: OffsetReset) -> ResponseContext<'static> {
        ResponseContext {
            read_committed,
            reset,
            broker: "b:1",
            first_with_records: true,
            now: Instant::now(),
            replica_lease: Duration::from_secs(300),
            brokers: brokers(),
        }
    }

    /// A cursor led by node 1 and read from node 2, which the leader said ends at `leader_end`.
    fn following_2(offset: i64, leader_end: i64) -> Cursor {
        let mut cursor = cursor_at(offset);
        cursor.leader = Some(1);
        cursor.high_watermark = leader_end;
        cursor.last_stable_offset = leader_end;
        cursor.read_replica = Some(ReadReplica {
            node: 2,
            until: Some(Instant::now() + Duration::from_secs(300)),
        });
        cursor
    }

    fn cursor_at(offset: i64) -> Cursor {
        let mut cursor = Cursor::new(Arc::from("t"), 0, StartOffset::Offset(offset));
        cursor.state = CursorState::Ready;
        cursor
    }

    fn response(records: Vec<u8>, high_watermark: i64, error_code: i16) -> PartitionResponse {
        PartitionResponse {
            topic: "t".into(),
            partition: 0,
            error_code,
            high_watermark,
            last_stable_offset: high_watermark,
            log_start_offset: 0,
            aborted: Vec::new(),
            preferred_read_replica: -1,
            records: Bytes::from(records),
        }
    }

    fn redirect(high_watermark: i64, node: i32) -> PartitionResponse {
        PartitionResponse {
            preferred_read_replica: node,
            ..response(Vec::new(), high_watermark, 0)
        }
    }

    fn batch(base: i64, count: usize) -> Vec<u8> {
        let mut builder = BatchBuilder::new(base);
        for i in 0..count {
            builder = builder.record(None, Some(format!("v{i}").as_bytes()), &[]);
        }
        builder.build()
    }

    #[test]
    fn offsets_are_contiguous_across_fetches_with_a_partial_tail() {
        let mut cursor = cursor_at(0);
        let first = batch(0, 3);
        let second = batch(3, 2);
        let mut bytes = first.clone();
        bytes.extend_from_slice(&second[..second.len() - 1]);
        let applied = apply_response(
            &mut cursor,
            response(bytes, 5, 0),
            &context(false, OffsetReset::Fail),
        )
        .unwrap();
        let data = applied.data.unwrap();
        assert_eq!((data.fetch_offset, data.next_offset), (0, 3));
        assert_eq!(
            data.records.len(),
            first.len(),
            "the cut batch is not delivered"
        );
        assert_eq!(
            cursor.offset, 3,
            "the cut batch is fetched again from its base offset"
        );
        assert!(!applied.reached_end);

        let applied = apply_response(
            &mut cursor,
            response(second, 5, 0),
            &context(false, OffsetReset::Fail),
        )
        .unwrap();
        assert_eq!(applied.data.unwrap().fetch_offset, 3);
        assert_eq!(cursor.offset, 5);
        assert!(applied.reached_end);
    }

    #[test]
    fn compacted_gap_and_empty_batch_advance_the_offset() {
        let mut cursor = cursor_at(10);
        let empty = BatchBuilder::new(10).last_offset_delta(9).build();
        let applied = apply_response(
            &mut cursor,
            response(empty, 30, 0),
            &context(false, OffsetReset::Fail),
        )
        .unwrap();
        assert_eq!(applied.data.unwrap().next_offset, 20);
        assert_eq!(cursor.offset, 20);
    }

    #[test]
    fn only_a_cut_batch_stalls_then_fails_instead_of_looping() {
        let mut cursor = cursor_at(0);
        let whole = batch(0, 4);
        for attempt in 1..MAX_STALLED_FETCHES {
            let cut = response(whole[..whole.len() / 2].to_vec(), 4, 0);
            let applied =
                apply_response(&mut cursor, cut, &context(false, OffsetReset::Fail)).unwrap();
            assert!(applied.data.is_none());
            assert_eq!(cursor.stalled_fetches, attempt);
            assert_eq!(cursor.offset, 0);
        }
        let cut = response(whole[..whole.len() / 2].to_vec(), 4, 0);
        let error =
            apply_response(&mut cursor, cut, &context(false, OffsetReset::Fail)).unwrap_err();
        assert!(
            matches!(error, Error::NoProgress { offset: 0, needed: Some(n), .. } if n == whole.len())
        );
        let message = error.to_string();
        let needs = format!(
            "(the batch needs {} bytes; raise fetch.max.bytes)",
            whole.len()
        );
        assert!(message.ends_with(&needs), "{message}");
    }

    #[test]
    fn leader_errors_ask_for_metadata_and_keep_the_offset() {
        for code in [
            codes::NOT_LEADER_OR_FOLLOWER,
            codes::UNKNOWN_TOPIC_OR_PARTITION,
            codes::FENCED_LEADER_EPOCH,
            codes::UNKNOWN_LEADER_EPOCH,
        ] {
            let mut cursor = cursor_at(7);
            let applied = apply_response(
                &mut cursor,
                response(Vec::new(), 9, code),
                &context(false, OffsetReset::Fail),
            )
            .unwrap();
            assert!(applied.refresh_metadata, "{code}");
            assert_eq!(cursor.state, CursorState::NeedsLeader);
            assert_eq!(cursor.offset, 7);
        }
    }

    #[test]
    fn out_of_range_follows_the_reset_policy() {
        let mut cursor = cursor_at(100);
        let out = || response(Vec::new(), 50, codes::OFFSET_OUT_OF_RANGE);
        apply_response(&mut cursor, out(), &context(false, OffsetReset::Earliest)).unwrap();
        assert_eq!(
            cursor.state,
            CursorState::NeedsOffset(StartOffset::Beginning)
        );
        let mut cursor = cursor_at(100);
        apply_response(&mut cursor, out(), &context(false, OffsetReset::Latest)).unwrap();
        assert_eq!(cursor.state, CursorState::NeedsOffset(StartOffset::End));
        let mut cursor = cursor_at(100);
        let error =
            apply_response(&mut cursor, out(), &context(false, OffsetReset::Fail)).unwrap_err();
        assert!(matches!(
            error,
            Error::OffsetOutOfRange {
                offset: 100,
                high_watermark: Some(50),
                ..
            }
        ));
    }

    #[test]
    fn other_errors_are_reported_with_their_name() {
        let mut cursor = cursor_at(0);
        let error = apply_response(
            &mut cursor,
            response(Vec::new(), 0, 29),
            &context(false, OffsetReset::Fail),
        )
        .unwrap_err();
        assert!(
            matches!(&error, Error::Client(ClientError::Broker { code: 29, broker, .. }) if broker == "b:1"),
            "{error}"
        );
    }

    #[test]
    fn read_committed_ends_at_the_last_stable_offset() {
        let mut cursor = cursor_at(0);
        let mut partial = response(batch(0, 2), 10, 0);
        partial.last_stable_offset = 2;
        let applied = apply_response(
            &mut cursor,
            partial.clone(),
            &context(true, OffsetReset::Fail),
        )
        .unwrap();
        assert!(applied.reached_end, "read_committed stops at the LSO");
        let mut cursor = cursor_at(0);
        let applied =
            apply_response(&mut cursor, partial, &context(false, OffsetReset::Fail)).unwrap();
        assert!(
            !applied.reached_end,
            "read_uncommitted goes on to the high watermark"
        );
    }

    #[test]
    fn empty_partition_reaches_its_end_once() {
        let mut cursor = cursor_at(0);
        let applied = apply_response(
            &mut cursor,
            response(Vec::new(), 0, 0),
            &context(false, OffsetReset::Fail),
        )
        .unwrap();
        assert!(applied.reached_end);
        let again = apply_response(
            &mut cursor,
            response(Vec::new(), 0, 0),
            &context(false, OffsetReset::Fail),
        )
        .unwrap();
        assert!(!again.reached_end);
    }

    #[test]
    fn a_named_read_replica_is_fetched_from_until_its_lease_ends() {
        let mut cursor = cursor_at(0);
        cursor.leader = Some(1);
        let context = context(false, OffsetReset::Fail);
        let applied = apply_response(&mut cursor, redirect(50, 2), &context).unwrap();
        assert!(applied.moved && applied.data.is_none());
        assert_eq!(cursor.fetch_node(context.now), Some(2));
        assert_eq!((cursor.offset, cursor.high_watermark), (0, 50));
        assert!(!applied.reached_end);
        let expired = context.now + context.replica_lease;
        assert_eq!(cursor.fetch_node(expired), Some(1), "the lease ended");
        // Once it has, the answer comes from the leader: its high watermark is taken as it is.
        let late = ResponseContext {
            now: expired,
            ..context
        };
        apply_response(&mut cursor, response(Vec::new(), 40, 0), &late).unwrap();
        assert_eq!(cursor.high_watermark, 40);
    }

    #[test]
    fn a_lease_too_long_for_the_clock_does_not_panic_and_lasts() {
        let mut cursor = cursor_at(0);
        cursor.leader = Some(1);
        let context = ResponseContext {
            replica_lease: Duration::MAX,
            ..context(false, OffsetReset::Fail)
        };
        apply_response(&mut cursor, redirect(5, 3), &context).unwrap();
        let later = context.now + Duration::from_secs(1 << 30);
        assert_eq!(cursor.fetch_node(later), Some(3));
    }

    #[test]
    fn a_read_replica_missing_from_the_metadata_or_the_leader_itself_is_not_followed() {
        for node in [7, 1, -1] {
            let mut cursor = cursor_at(0);
            cursor.leader = Some(1);
            let context = context(false, OffsetReset::Fail);
            let applied = apply_response(&mut cursor, redirect(50, node), &context).unwrap();
            assert!(!applied.moved, "node {node}");
            assert_eq!(cursor.fetch_node(context.now), Some(1), "node {node}");
        }
    }

    #[test]
    fn a_lagging_follower_high_watermark_does_not_end_the_partition_early() {
        let mut cursor = following_2(0, 5);
        let context = context(false, OffsetReset::Fail);
        // The follower has applied records 0..3 but still reports the end as 3.
        let applied = apply_response(&mut cursor, response(batch(0, 3), 3, 0), &context).unwrap();
        assert_eq!(cursor.offset, 3);
        assert_eq!(cursor.high_watermark, 5, "the leader's end stands");
        assert!(!applied.reached_end, "records 3 and 4 are still to come");
        let applied = apply_response(&mut cursor, response(batch(3, 2), 5, 0), &context).unwrap();
        assert!(applied.reached_end);
        // A follower that has learnt of newer records raises the end.
        let mut cursor = following_2(0, 5);
        apply_response(&mut cursor, response(batch(0, 3), 9, 0), &context).unwrap();
        assert_eq!((cursor.high_watermark, cursor.last_stable_offset), (9, 9));
    }

    #[test]
    fn a_follower_out_of_range_goes_back_to_the_leader_without_a_reset() {
        for reset in [
            OffsetReset::Fail,
            OffsetReset::Earliest,
            OffsetReset::Latest,
        ] {
            let mut cursor = following_2(100, 120);
            let context = context(false, reset);
            let out = response(Vec::new(), 90, codes::OFFSET_OUT_OF_RANGE);
            let applied = apply_response(&mut cursor, out, &context).unwrap();
            assert!(applied.moved && !applied.reset_offset, "{reset:?}");
            assert_eq!(cursor.state, CursorState::Ready);
            assert_eq!(cursor.offset, 100, "the same offset, at the leader");
            assert_eq!(cursor.fetch_node(context.now), Some(1));
            assert_eq!(
                cursor.high_watermark, 120,
                "the follower's answer is not the end"
            );
        }
    }

    #[test]
    fn follower_errors_send_the_partition_to_the_leader_and_refresh_metadata() {
        for code in [
            codes::NOT_LEADER_OR_FOLLOWER,
            codes::REPLICA_NOT_AVAILABLE,
            codes::FENCED_LEADER_EPOCH,
            codes::UNKNOWN_TOPIC_OR_PARTITION,
        ] {
            let mut cursor = following_2(7, 9);
            let context = context(false, OffsetReset::Fail);
            let applied =
                apply_response(&mut cursor, response(Vec::new(), 9, code), &context).unwrap();
            assert!(applied.moved && applied.refresh_metadata, "{code}");
            assert_eq!(cursor.state, CursorState::Ready, "{code}");
            assert_eq!(
                (cursor.offset, cursor.fetch_node(context.now)),
                (7, Some(1))
            );
        }
        // An error the leader would give too is still an error.
        let mut cursor = following_2(7, 9);
        let denied = response(Vec::new(), 9, 29);
        assert!(apply_response(&mut cursor, denied, &context(false, OffsetReset::Fail)).is_err());
    }

    #[test]
    fn a_follower_names_no_read_replica_and_an_unreachable_one_is_left() {
        let mut cursor = following_2(0, 5);
        let context = context(false, OffsetReset::Fail);
        let applied = apply_response(&mut cursor, redirect(5, 3), &context).unwrap();
        assert!(!applied.moved);
        assert_eq!(cursor.fetch_node(context.now), Some(2));
        assert!(!cursor.leave_follower(3));
        assert!(cursor.leave_follower(2));
        assert_eq!(cursor.fetch_node(context.now), Some(1));
        assert!(!cursor.leave_follower(2), "only once");
    }
}
