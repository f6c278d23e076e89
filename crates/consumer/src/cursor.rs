//! Per-partition cursors and what one fetch response does to them.
//!
//! [`apply_response`] is a pure function of the cursor and the partition's response, so every
//! offset rule (contiguity, partial trailing batches, compacted gaps, errors) is unit-tested
//! without a network.

use std::sync::Arc;

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
pub enum CursorState {
    /// Its start offset must be looked up (ListOffsets) before fetching.
    NeedsOffset(StartOffset),
    /// Its leader must be looked up (Metadata) before fetching.
    NeedsLeader,
    /// It can be fetched from `offset` at `leader`.
    Ready,
}

/// One assigned partition.
#[derive(Clone, Debug)]
pub struct Cursor {
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition id.
    pub partition: i32,
    /// Topic id (for Fetch v13+).
    pub topic_id: Uuid,
    /// What the cursor waits for.
    pub state: CursorState,
    /// The next offset to fetch (and to deliver).
    pub offset: i64,
    /// Node id of the leader, when known.
    pub leader: Option<i32>,
    /// Leader epoch from the last metadata, -1 when unknown.
    pub leader_epoch: i32,
    /// Bumped by every seek, so data fetched for an older position is dropped.
    pub generation: u64,
    /// Last high watermark seen.
    pub high_watermark: i64,
    /// Last stable offset seen.
    pub last_stable_offset: i64,
    /// True while the cursor sits at the end of the partition.
    pub at_end: bool,
    /// Fetches in a row without a complete batch.
    pub stalled_fetches: u32,
}

impl Cursor {
    /// A cursor that first looks up `start`.
    pub fn new(topic: Arc<str>, partition: i32, start: StartOffset) -> Self {
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
        }
    }

    /// The offset where the partition currently ends for this consumer.
    pub fn end_offset(&self, read_committed: bool) -> i64 {
        if read_committed && self.last_stable_offset >= 0 {
            self.last_stable_offset
        } else {
            self.high_watermark
        }
    }
}

/// Record bytes of one partition, ready for decoding: complete batches only.
#[derive(Clone, Debug)]
pub struct ChunkData {
    /// The first offset to deliver (records before it in the first batch are skipped).
    pub fetch_offset: i64,
    /// Offset after the last complete batch: where the next fetch started.
    pub next_offset: i64,
    /// High watermark in the response.
    pub high_watermark: i64,
    /// Last stable offset in the response.
    pub last_stable_offset: i64,
    /// Aborted transactions listed in the response.
    pub aborted: Vec<AbortedTransaction>,
    /// Complete batches, a slice of the response frame.
    pub records: Bytes,
}

/// What applying one partition response changed.
#[derive(Debug, Default)]
pub struct Applied {
    /// Data to hand to the decoder, if the response moved the cursor.
    pub data: Option<ChunkData>,
    /// The cursor reached the end of the partition with this response.
    pub reached_end: bool,
    /// The leader must be looked up again.
    pub refresh_metadata: bool,
    /// The start offset must be looked up again (reset policy).
    pub reset_offset: bool,
}

/// How a response is to be read.
#[derive(Clone, Copy, Debug)]
pub struct ResponseContext<'a> {
    /// The consumer reads committed data only (ends at the last stable offset).
    pub read_committed: bool,
    /// What to do on OFFSET_OUT_OF_RANGE.
    pub reset: OffsetReset,
    /// The broker that answered, for errors and logs.
    pub broker: &'a str,
    /// The partition is the first of the answer with record bytes. The broker reads
    /// partitions in the order it answers them, and only the first one it returns records
    /// for is guaranteed a whole batch however large (KIP-74); later ones may get a cut
    /// batch or nothing until their turn, which is normal, not a stall.
    pub first_with_records: bool,
}

/// Applies a partition's fetch response to its cursor (the response is for `cursor.offset`).
pub fn apply_response(
    cursor: &mut Cursor,
    response: PartitionResponse,
    context: &ResponseContext<'_>,
) -> Result<Applied, Error> {
    if response.error_code != 0 {
        return apply_error(cursor, &response, context);
    }
    let ResponseContext {
        read_committed,
        first_with_records,
        ..
    } = *context;
    let mut applied = Applied::default();
    cursor.high_watermark = response.high_watermark;
    cursor.last_stable_offset = response.last_stable_offset;
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

    fn context(read_committed: bool, reset: OffsetReset) -> ResponseContext<'static> {
        ResponseContext {
            read_committed,
            reset,
            broker: "b:1",
            first_with_records: true,
        }
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
            records: Bytes::from(records),
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
        let needs = format!("(the batch needs {} bytes; raise --max-bytes)", whole.len());
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
}
