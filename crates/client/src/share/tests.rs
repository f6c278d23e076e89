use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::share_fetch_response::{
    AcquiredRecords, PartitionData, ShareFetchableTopicResponse,
};
use kafka_protocol::messages::{ApiKey, ShareFetchResponse};
use kafka_protocol::protocol::Encodable;
use uuid::Uuid;

use super::*;
use crate::connection::decode_body;

fn acquired(first: i64, last: i64, delivery_count: i16) -> AcquiredRecords {
    AcquiredRecords::default()
        .with_first_offset(first)
        .with_last_offset(last)
        .with_delivery_count(delivery_count)
}

fn frame(records: &[u8], ranges: Vec<AcquiredRecords>) -> Bytes {
    let response = ShareFetchResponse::default()
        .with_acquisition_lock_timeout_ms(15_000)
        .with_responses(vec![ShareFetchableTopicResponse::default()
            .with_topic_id(Uuid::from_u128(9))
            .with_partitions(vec![PartitionData::default()
                .with_partition_index(2)
                .with_acknowledge_error_code(121)
                .with_records(Some(Bytes::copy_from_slice(records)))
                .with_acquired_records(ranges)])]);
    let mut body = BytesMut::new();
    response.encode(&mut body, 1).unwrap();
    body.freeze()
}

fn decode(body: Bytes) -> Result<ShareFetchAnswer, String> {
    let response: ShareFetchResponse = decode_body(ApiKey::ShareFetch as i16, 1, body)?;
    fetch_answer(response)
}

#[test]
fn records_are_a_slice_of_the_frame_with_their_acquired_ranges() {
    let records = vec![7u8; 300];
    let body = frame(&records, vec![acquired(10, 19, 1), acquired(25, 25, 3)]);
    let answer = decode(body.clone()).unwrap();
    assert_eq!(answer.acquisition_lock_timeout, Duration::from_secs(15));
    let partition = &answer.partitions[0];
    assert_eq!(
        (partition.topic_id, partition.partition),
        (Uuid::from_u128(9), 2)
    );
    assert_eq!(partition.acknowledge_error_code, 121);
    assert_eq!(&partition.records[..], &records[..]);
    let inside = body.as_ptr_range();
    let slice = partition.records.as_ptr_range();
    assert!(
        inside.start <= slice.start && slice.end <= inside.end,
        "not a copy"
    );
    assert_eq!(
        partition.acquired,
        vec![
            AcquiredRange {
                first_offset: 10,
                last_offset: 19,
                delivery_count: 1
            },
            AcquiredRange {
                first_offset: 25,
                last_offset: 25,
                delivery_count: 3
            },
        ]
    );
}

#[test]
fn malformed_acquired_ranges_are_typed_errors() {
    let cases = [
        (vec![acquired(5, 4, 1)], "empty"),
        (vec![acquired(-3, 4, 1)], "negative"),
        (vec![acquired(0, 9, 1), acquired(9, 12, 1)], "overlaps"),
        (vec![acquired(10, 12, 1), acquired(0, 3, 1)], "precedes"),
        (vec![acquired(0, 3, 0)], "delivery count"),
    ];
    for (ranges, expected) in cases {
        let error = decode(frame(b"", ranges)).unwrap_err();
        assert!(error.contains(expected), "{error}");
    }
}

#[test]
fn every_cut_of_a_share_fetch_answer_is_refused_without_panic() {
    let body = frame(&[1u8; 40], vec![acquired(0, 3, 1)]);
    for cut in 0..body.len() {
        assert!(decode(body.slice(..cut)).is_err(), "cut at {cut}");
    }
}

#[test]
fn acknowledge_types_have_kafkas_codes() {
    let codes: Vec<i8> = [
        AcknowledgeType::Accept,
        AcknowledgeType::Release,
        AcknowledgeType::Reject,
    ]
    .iter()
    .map(|t| t.code())
    .collect();
    assert_eq!(codes, vec![1, 2, 3]);
    assert!(share_codes::is_session_error(
        share_codes::SHARE_SESSION_NOT_FOUND
    ));
    assert!(!share_codes::is_session_error(
        share_codes::INVALID_RECORD_STATE
    ));
}

#[test]
fn partitions_are_grouped_by_topic_in_the_order_topics_are_met() {
    let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
    let forgotten = [(a, 0), (b, 5), (a, 2)];
    let grouped = by_topic(forgotten.iter(), |(id, _)| *id, |(_, p)| *p);
    assert_eq!(grouped, [(a, vec![0, 2]), (b, vec![5])]);
}
