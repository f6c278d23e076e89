//! Fetch: building requests, splitting responses per partition, and the header-only scan that
//! finds where the next fetch starts.
//!
//! The scan reads only each entry's header ([`EntryHeader`]), its magic byte and a v2 batch's
//! last offset delta, so the fetch loop can send the next request before any CRC check or decompression happens; the full
//! decode (on a worker) re-checks everything.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use krec_batch::layout::{self, EntryHeader};
use uuid::Uuid;

/// Fetch versions from this one on name topics by id (KIP-516).
pub const FIRST_VERSION_WITH_TOPIC_IDS: i16 = 13;

/// Fetch versions from this one on carry the consumer's rack and may name a preferred read
/// replica (KIP-392).
pub const FIRST_VERSION_WITH_RACK: i16 = 11;

/// Request-wide fetch settings.
#[derive(Clone, Debug)]
pub struct FetchParams {
    /// How long the broker may wait for `min_bytes` to accumulate.
    pub max_wait_ms: i32,
    /// Bytes the broker should wait for before answering.
    pub min_bytes: i32,
    /// Upper bound of record bytes in one response (the first batch is always returned whole).
    pub max_bytes: i32,
    /// Upper bound of record bytes per partition.
    pub partition_max_bytes: i32,
    /// Read only committed transactional data (isolation level 1).
    pub read_committed: bool,
    /// The consumer's rack (`client.rack`), sent from Fetch v11 on so the leader may name a
    /// follower in that rack to read from; empty for none.
    pub rack_id: String,
}

/// One partition to fetch.
#[derive(Clone, Copy, Debug)]
pub struct FetchTarget<'a> {
    /// Topic name.
    pub topic: &'a Arc<str>,
    /// Topic id (used from Fetch v13 on).
    pub topic_id: Uuid,
    /// Partition id.
    pub partition: i32,
    /// Offset to fetch from.
    pub offset: i64,
    /// Leader epoch the client believes current (-1 when unknown).
    pub leader_epoch: i32,
    /// The caller's count of repositionings (seeks, resets): a fetch session names a
    /// partition again when it changes, even at the same offset.
    pub generation: u64,
}

/// Builds a full (session-less) fetch request for `targets`, grouped by topic in order (the
/// tests' reference for what a session's requests must carry).
#[cfg(test)]
pub(crate) fn build_request(
    targets: &[FetchTarget<'_>],
    params: &FetchParams,
    version: i16,
) -> FetchRequest {
    let mut topics = TopicsBuilder::new(version);
    for target in targets {
        let partition = fetch_partition(
            target.partition,
            target.offset,
            target.leader_epoch,
            params.partition_max_bytes,
        );
        topics.push(target.topic, target.topic_id, partition);
    }
    request_with(params)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(topics.finish())
}

/// A request carrying `params` and nothing else yet.
pub(crate) fn request_with(params: &FetchParams) -> FetchRequest {
    FetchRequest::default()
        .with_max_wait_ms(params.max_wait_ms)
        .with_min_bytes(params.min_bytes)
        .with_max_bytes(params.max_bytes)
        .with_isolation_level(i8::from(params.read_committed))
        .with_rack_id(StrBytes::from_string(params.rack_id.clone()))
}

/// One partition of a request.
pub(crate) fn fetch_partition(
    partition: i32,
    offset: i64,
    leader_epoch: i32,
    max_bytes: i32,
) -> FetchPartition {
    FetchPartition::default()
        .with_partition(partition)
        .with_fetch_offset(offset)
        .with_current_leader_epoch(leader_epoch)
        .with_partition_max_bytes(max_bytes)
}

/// Gathers partitions into a request's topics, each topic once (by id from v13 on, by name
/// before), in the order topics first appear.
pub(crate) struct TopicsBuilder<'a> {
    version: i16,
    topics: Vec<FetchTopic>,
    /// Where each topic's entry is, by name.
    index: HashMap<&'a str, usize>,
}

impl<'a> TopicsBuilder<'a> {
    pub(crate) fn new(version: i16) -> Self {
        Self {
            version,
            topics: Vec::new(),
            index: HashMap::new(),
        }
    }

    pub(crate) fn push(&mut self, topic: &'a str, topic_id: Uuid, partition: FetchPartition) {
        let version = self.version;
        let topics = &mut self.topics;
        let at = *self.index.entry(topic).or_insert_with(|| {
            let mut entry = FetchTopic::default();
            if version >= FIRST_VERSION_WITH_TOPIC_IDS {
                entry.topic_id = topic_id;
            } else {
                entry.topic = TopicName(StrBytes::from_string(topic.to_owned()));
            }
            topics.push(entry);
            topics.len() - 1
        });
        topics[at].partitions.push(partition);
    }

    pub(crate) fn finish(self) -> Vec<FetchTopic> {
        self.topics
    }
}

/// An aborted transaction listed in a fetch response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortedTransaction {
    /// Producer id of the aborted transaction.
    pub producer_id: i64,
    /// First offset of the aborted transaction.
    pub first_offset: i64,
}

/// One partition of a fetch response.
#[derive(Clone, Debug)]
pub struct PartitionResponse {
    /// Topic name (resolved from the id for v13+).
    pub topic: Arc<str>,
    /// Partition id.
    pub partition: i32,
    /// Kafka error code (0 when fine).
    pub error_code: i16,
    /// High watermark.
    pub high_watermark: i64,
    /// Last stable offset (-1 when the broker does not know it).
    pub last_stable_offset: i64,
    /// Log start offset (-1 when not sent).
    pub log_start_offset: i64,
    /// Aborted transactions overlapping the returned data (read_committed only).
    pub aborted: Vec<AbortedTransaction>,
    /// The follower the leader wants this partition read from (-1: none). A leader that names
    /// one sends no records with it (KIP-392).
    pub preferred_read_replica: i32,
    /// The record batches: a slice of the response frame, never copied.
    pub records: Bytes,
}

impl PartitionResponse {
    /// A partition of a decoded response, named `topic`.
    pub(crate) fn from_wire(topic: Arc<str>, partition: PartitionData) -> Self {
        let aborted = partition
            .aborted_transactions
            .unwrap_or_default()
            .iter()
            .map(|a| AbortedTransaction {
                producer_id: a.producer_id.0,
                first_offset: a.first_offset,
            })
            .collect();
        Self {
            topic,
            partition: partition.partition_index,
            error_code: partition.error_code,
            high_watermark: partition.high_watermark,
            last_stable_offset: partition.last_stable_offset,
            log_start_offset: partition.log_start_offset,
            aborted,
            preferred_read_replica: partition.preferred_read_replica.0,
            records: partition.records.unwrap_or_default(),
        }
    }
}

/// What the header-only scan found in a partition's record bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scan {
    /// Bytes covered by complete batches (the rest is a partial trailing batch).
    pub complete_bytes: usize,
    /// Number of complete batches.
    pub batches: usize,
    /// Offset after the last complete batch, if there is one.
    pub next_offset: Option<i64>,
    /// A trailing batch that the response cut short.
    pub partial: Option<PartialBatch>,
}

/// A trailing batch cut short, with what its first bytes tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartialBatch {
    /// Its base offset, when its first 8 bytes arrived.
    pub base_offset: Option<i64>,
    /// Its whole size in bytes, when its entry header and magic byte arrived.
    pub size: Option<usize>,
}

/// A batch header that cannot be valid (the full decode would reject it too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanError {
    /// Byte position of the bad batch.
    pub position: usize,
    /// The batch's base offset field.
    pub offset: i64,
    /// The length field found.
    pub length: i32,
}

/// Walks batch headers only: where complete batches end and which offset comes next.
pub fn scan_batches(records: &[u8]) -> Result<Scan, ScanError> {
    let mut scan = Scan {
        complete_bytes: 0,
        batches: 0,
        next_offset: None,
        partial: None,
    };
    let mut position = 0usize;
    while position < records.len() {
        let rest = &records[position..];
        let (Some(entry), Some(magic)) = (EntryHeader::peek(rest), EntryHeader::peek_magic(rest))
        else {
            scan.partial = Some(PartialBatch {
                base_offset: EntryHeader::peek_base_offset(rest),
                size: None,
            });
            break;
        };
        let EntryHeader {
            base_offset: offset,
            length,
        } = entry;
        let min_length = if magic >= layout::magic::V2 {
            layout::v2::MIN_LENGTH
        } else {
            layout::legacy::V0_MIN_LENGTH
        };
        if length < min_length as i32 || magic > layout::magic::V2 {
            return Err(ScanError {
                position,
                offset,
                length,
            });
        }
        let size = layout::ENTRY_HEADER_SIZE + length as usize;
        if rest.len() < size {
            scan.partial = Some(PartialBatch {
                base_offset: Some(offset),
                size: Some(size),
            });
            break;
        }
        let next = if magic == layout::magic::V2 {
            // Inside the entry: `size` bytes, at least a v2 header's, are there.
            let delta = EntryHeader::peek_last_offset_delta(rest).unwrap_or(0);
            offset.saturating_add(i64::from(delta)).saturating_add(1)
        } else {
            // A legacy entry (even a compressed wrapper) carries the offset of its last message.
            offset.saturating_add(1)
        };
        scan.next_offset = Some(next);
        scan.batches += 1;
        position += size;
        scan.complete_bytes = position;
    }
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::FetchResponse;
    use krec_batch::layout::{ENTRY_HEADER_SIZE, MAGIC_AT};

    /// A v2 batch header with `records` bytes of body; only the fields the scan reads are real.
    fn v2_batch(base: i64, last_delta: i32, body: usize) -> Vec<u8> {
        let mut batch = Vec::new();
        batch.extend_from_slice(&base.to_be_bytes());
        batch.extend_from_slice(&(49 + body as i32).to_be_bytes());
        batch.extend_from_slice(&0i32.to_be_bytes()); // partition leader epoch
        batch.push(2); // magic
        batch.extend_from_slice(&0u32.to_be_bytes()); // crc
        batch.extend_from_slice(&0u16.to_be_bytes()); // attributes
        batch.extend_from_slice(&last_delta.to_be_bytes());
        batch.resize(ENTRY_HEADER_SIZE + 49 + body, 0);
        batch
    }

    #[test]
    fn complete_batches_give_the_next_offset() {
        let mut input = v2_batch(10, 4, 7);
        input.extend(v2_batch(15, 0, 3));
        let scan = scan_batches(&input).unwrap();
        assert_eq!(scan.batches, 2);
        assert_eq!(scan.next_offset, Some(16));
        assert_eq!(scan.complete_bytes, input.len());
        assert_eq!(scan.partial, None);
    }

    #[test]
    fn compacted_gap_advances_past_the_last_offset_delta() {
        // A compacted batch can claim offsets 0..=99 while holding fewer records.
        let scan = scan_batches(&v2_batch(0, 99, 10)).unwrap();
        assert_eq!(scan.next_offset, Some(100));
    }

    #[test]
    fn every_prefix_of_a_trailing_batch_is_partial() {
        let first = v2_batch(0, 1, 5);
        let second = v2_batch(2, 2, 20);
        for cut in 1..second.len() {
            let mut input = first.clone();
            input.extend_from_slice(&second[..cut]);
            let scan = scan_batches(&input).unwrap();
            assert_eq!(scan.batches, 1, "cut {cut}");
            assert_eq!(scan.next_offset, Some(2));
            assert_eq!(scan.complete_bytes, first.len());
            let partial = scan.partial.unwrap();
            assert_eq!(partial.base_offset, (cut >= 8).then_some(2), "cut {cut}");
            assert_eq!(
                partial.size,
                (cut > MAGIC_AT).then_some(second.len()),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn legacy_entries_advance_by_their_own_offset() {
        let mut message = Vec::new();
        message.extend_from_slice(&41i64.to_be_bytes());
        message.extend_from_slice(&20i32.to_be_bytes());
        message.extend_from_slice(&[0, 0, 0, 0, 1]); // crc, magic 1
        message.resize(ENTRY_HEADER_SIZE + 20, 0);
        let scan = scan_batches(&message).unwrap();
        assert_eq!(scan.next_offset, Some(42));
    }

    #[test]
    fn hostile_lengths_are_errors_not_allocations() {
        let mut input = v2_batch(5, 0, 0);
        input[8..12].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(
            scan_batches(&input),
            Err(ScanError {
                position: 0,
                offset: 5,
                length: -1
            })
        );
        let mut huge = v2_batch(5, 0, 0);
        huge[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
        let scan = scan_batches(&huge).unwrap();
        assert_eq!(
            scan.partial,
            Some(PartialBatch {
                base_offset: Some(5),
                size: Some(ENTRY_HEADER_SIZE + i32::MAX as usize),
            })
        );
        assert_eq!(scan.batches, 0);
    }

    proptest::proptest! {
        #[test]
        fn scan_never_panics_and_stays_inside_the_input(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            if let Ok(scan) = scan_batches(&bytes) {
                proptest::prop_assert!(scan.complete_bytes <= bytes.len());
                proptest::prop_assert_eq!(scan.batches == 0, scan.next_offset.is_none());
            }
        }

        #[test]
        fn cutting_valid_batches_anywhere_keeps_whole_batches_only(
            sizes in proptest::collection::vec(0usize..40, 1..6),
            cut_fraction in 0.0f64..1.0,
        ) {
            let mut input = Vec::new();
            let mut ends = Vec::new();
            let mut base = 0i64;
            for size in &sizes {
                input.extend(v2_batch(base, 2, *size));
                base += 3;
                ends.push((input.len(), base));
            }
            let cut = (input.len() as f64 * cut_fraction) as usize;
            let scan = scan_batches(&input[..cut]).unwrap();
            let whole: Vec<_> = ends.iter().filter(|(end, _)| *end <= cut).collect();
            proptest::prop_assert_eq!(scan.batches, whole.len());
            proptest::prop_assert_eq!(scan.complete_bytes, whole.last().map_or(0, |(end, _)| *end));
            proptest::prop_assert_eq!(scan.next_offset, whole.last().map(|(_, next)| *next));
            proptest::prop_assert_eq!(scan.partial.is_some(), cut > scan.complete_bytes);
        }
    }

    /// `response` read as the answer to a full request for `partitions` of topic `t`, as the
    /// fetch loop reads it.
    fn read_in_session(
        response: FetchResponse,
        version: i16,
        partitions: &[i32],
    ) -> Vec<PartitionResponse> {
        let t: Arc<str> = Arc::from("t");
        let wanted = partitions.iter().map(|&p| target(&t, Uuid::nil(), p, 0));
        let mut session = crate::fetch_session::FetchSession::new(false);
        session.request(wanted, &params(), version).unwrap();
        let answer = session.read_response(response);
        answer.partitions.into_iter().map(|(_, p)| p).collect()
    }

    #[test]
    fn records_read_are_slices_of_the_response_frame() {
        use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
        use kafka_protocol::protocol::{Decodable, Encodable};
        let records = v2_batch(0, 4, 100);
        let response =
            FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
                .with_topic(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(vec![PartitionData::default()
                    .with_partition_index(3)
                    .with_high_watermark(5)
                    .with_records(Some(Bytes::from(records.clone())))])]);
        let mut encoded = bytes::BytesMut::new();
        response.encode(&mut encoded, 12).unwrap();
        let frame = encoded.freeze();
        let decoded = FetchResponse::decode(&mut frame.clone(), 12).unwrap();
        let split = read_in_session(decoded, 12, &[3]);
        assert_eq!(split.len(), 1);
        assert_eq!((&*split[0].topic, split[0].partition), ("t", 3));
        assert_eq!(&split[0].records[..], &records[..]);
        let inside = frame.as_ptr_range();
        let slice = split[0].records.as_ptr_range();
        assert!(
            inside.start <= slice.start && slice.end <= inside.end,
            "the records must point into the frame, not into a copy"
        );
    }

    fn params() -> FetchParams {
        FetchParams {
            max_wait_ms: 100,
            min_bytes: 1,
            max_bytes: 1000,
            partition_max_bytes: 500,
            read_committed: true,
            rack_id: "rack-2".to_owned(),
        }
    }

    fn target(topic: &Arc<str>, topic_id: Uuid, partition: i32, offset: i64) -> FetchTarget<'_> {
        FetchTarget {
            topic,
            topic_id,
            partition,
            offset,
            leader_epoch: -1,
            generation: 0,
        }
    }

    #[test]
    fn request_uses_names_before_v13_and_ids_after() {
        let id = Uuid::from_u128(7);
        let t: Arc<str> = Arc::from("t");
        let targets = [
            FetchTarget {
                leader_epoch: 3,
                ..target(&t, id, 0, 5)
            },
            target(&t, id, 1, 9),
        ];
        let old = build_request(&targets, &params(), 12);
        assert_eq!(old.topics.len(), 1);
        assert_eq!(old.topics[0].topic.0.as_str(), "t");
        assert_eq!(old.topics[0].partitions[1].fetch_offset, 9);
        assert_eq!(old.isolation_level, 1);
        assert_eq!((old.session_id, old.session_epoch), (0, -1));
        let new = build_request(&targets, &params(), 13);
        assert_eq!(new.topics[0].topic_id, id);
        assert_eq!(new.topics[0].topic.0.as_str(), "");
        assert_eq!(new.topics[0].partitions[0].current_leader_epoch, 3);
    }

    #[test]
    fn the_rack_reaches_the_wire_from_v11_and_a_preferred_replica_comes_back() {
        use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
        use kafka_protocol::messages::BrokerId;
        use kafka_protocol::protocol::{Decodable, Encodable};
        let params = FetchParams {
            max_wait_ms: 100,
            min_bytes: 1,
            max_bytes: 1000,
            partition_max_bytes: 500,
            read_committed: false,
            rack_id: "rack-2".to_owned(),
        };
        for (version, sent) in [(10, ""), (11, "rack-2"), (12, "rack-2"), (13, "rack-2")] {
            let mut encoded = bytes::BytesMut::new();
            build_request(&[], &params, version)
                .encode(&mut encoded, version)
                .unwrap();
            let decoded = FetchRequest::decode(&mut encoded.freeze(), version).unwrap();
            assert_eq!(decoded.rack_id.as_str(), sent, "v{version}");
        }
        let response =
            FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
                .with_topic(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(vec![
                    PartitionData::default()
                        .with_partition_index(0)
                        .with_high_watermark(40)
                        .with_preferred_read_replica(BrokerId(2)),
                    PartitionData::default().with_partition_index(1),
                ])]);
        let mut encoded = bytes::BytesMut::new();
        response.encode(&mut encoded, 11).unwrap();
        let split = read_in_session(
            FetchResponse::decode(&mut encoded.freeze(), 11).unwrap(),
            11,
            &[0, 1],
        );
        assert_eq!(split[0].preferred_read_replica, 2);
        assert_eq!(split[0].high_watermark, 40);
        assert_eq!(split[1].preferred_read_replica, -1, "none named");
    }

    #[test]
    fn each_topic_appears_once_however_its_partitions_are_spread() {
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("b"));
        let (id_a, id_b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        // A rotated request: topic a's partitions come before and after topic b's.
        let targets = [
            target(&a, id_a, 2, 0),
            target(&b, id_b, 0, 0),
            target(&a, id_a, 0, 0),
            target(&a, id_a, 1, 0),
        ];
        let request = build_request(&targets, &params(), 13);
        let topics: Vec<(Uuid, Vec<i32>)> = request
            .topics
            .iter()
            .map(|t| {
                (
                    t.topic_id,
                    t.partitions.iter().map(|p| p.partition).collect(),
                )
            })
            .collect();
        assert_eq!(topics, vec![(id_a, vec![2, 0, 1]), (id_b, vec![0])]);
    }
}
