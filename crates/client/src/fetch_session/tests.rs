//! The session state machine, request by request, without a broker.

use super::*;
use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::protocol::{Decodable, Encodable};

const SESSION: i32 = 42;

fn params() -> FetchParams {
    FetchParams {
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: 1 << 20,
        partition_max_bytes: 1 << 16,
        read_committed: false,
        rack_id: "rack-3".to_owned(),
    }
}

/// Topics `a` (id 1) and `b` (id 2).
struct Topics {
    a: Arc<str>,
    b: Arc<str>,
}

fn topics() -> Topics {
    Topics {
        a: Arc::from("a"),
        b: Arc::from("b"),
    }
}

fn id_of(topic: &str) -> Uuid {
    Uuid::from_u128(match topic {
        "a" => 1,
        "b" => 2,
        _ => 99,
    })
}

/// `(topic, partition, offset)` at generation 0.
fn want<'a>(list: &[(&'a Arc<str>, i32, i64)]) -> Vec<FetchTarget<'a>> {
    list.iter()
        .map(|&(topic, partition, offset)| FetchTarget {
            topic,
            topic_id: id_of(topic),
            partition,
            offset,
            leader_epoch: 0,
            generation: 0,
        })
        .collect()
}

/// A response naming `(topic, partition, high watermark, record bytes)` in this order.
fn answer(session_id: i32, version: i16, parts: &[(&str, i32, i64, usize)]) -> FetchResponse {
    let mut responses: Vec<FetchableTopicResponse> = Vec::new();
    let mut last: Option<&str> = None;
    for &(topic, partition, high_watermark, records) in parts {
        if last != Some(topic) {
            let mut entry = FetchableTopicResponse::default();
            if version >= FIRST_VERSION_WITH_TOPIC_IDS {
                entry.topic_id = id_of(topic);
            } else {
                entry.topic = TopicName(StrBytes::from_string(topic.to_owned()));
            }
            responses.push(entry);
            last = Some(topic);
        }
        responses.last_mut().unwrap().partitions.push(
            PartitionData::default()
                .with_partition_index(partition)
                .with_high_watermark(high_watermark)
                .with_last_stable_offset(high_watermark)
                .with_records(Some(Bytes::from(vec![0u8; records]))),
        );
    }
    FetchResponse::default()
        .with_session_id(session_id)
        .with_responses(responses)
}

/// `(topic id or name, partitions)` of a request, in order.
fn named(request: &FetchRequest) -> Vec<(String, Vec<(i32, i64)>)> {
    request
        .topics
        .iter()
        .map(|t| {
            let topic = if t.topic_id.is_nil() {
                t.topic.0.to_string()
            } else {
                t.topic_id.to_string()
            };
            let parts = t
                .partitions
                .iter()
                .map(|p| (p.partition, p.fetch_offset))
                .collect();
            (topic, parts)
        })
        .collect()
}

fn forgotten(request: &FetchRequest) -> Vec<(String, Vec<i32>)> {
    request
        .forgotten_topics_data
        .iter()
        .map(|t| {
            let topic = if t.topic_id.is_nil() {
                t.topic.0.to_string()
            } else {
                t.topic_id.to_string()
            };
            (topic, t.partitions.clone())
        })
        .collect()
}

fn id(topic: &str) -> String {
    id_of(topic).to_string()
}

/// A session at v13 opened by a full fetch of a/0@10, a/1@20, b/0@30.
fn open_session<'t>(t: &'t Topics) -> (FetchSession, Vec<FetchTarget<'t>>) {
    let mut session = FetchSession::new(true);
    let wanted = want(&[(&t.a, 0, 10), (&t.a, 1, 20), (&t.b, 0, 30)]);
    let request = session.request(wanted.clone(), &params(), 13).unwrap();
    assert_eq!((request.session_id, request.session_epoch), (0, 0));
    let read = session.read_response(answer(
        SESSION,
        13,
        &[("a", 0, 10, 0), ("a", 1, 25, 0), ("b", 0, 30, 0)],
    ));
    assert!(!read.mismatched);
    assert_eq!(read.partitions.len(), 3);
    (session, wanted)
}

#[test]
fn epochs_count_from_one_and_wrap_past_the_largest() {
    assert_eq!(next_epoch(0), 1);
    assert_eq!(next_epoch(1), 2);
    assert_eq!(next_epoch(i32::MAX - 1), i32::MAX);
    assert_eq!(next_epoch(i32::MAX), 1);
    assert_eq!(next_epoch(-1), -1);

    let t = topics();
    let (mut session, wanted) = open_session(&t);
    assert_eq!((session.id(), session.epoch()), (SESSION, 1));
    session.epoch = i32::MAX - 1;
    for expected in [i32::MAX - 1, i32::MAX, 1, 2] {
        let request = session.request(wanted.clone(), &params(), 13).unwrap();
        assert_eq!(request.session_epoch, expected);
        session.read_response(answer(SESSION, 13, &[]));
    }
}

#[test]
fn the_first_request_is_full_and_its_answer_opens_the_session() {
    let t = topics();
    let mut session = FetchSession::new(true);
    let wanted = want(&[(&t.a, 0, 10), (&t.a, 1, 20), (&t.b, 0, 30)]);
    let full = session.request(wanted.clone(), &params(), 13).unwrap();
    assert_eq!(
        named(&full),
        vec![(id("a"), vec![(0, 10), (1, 20)]), (id("b"), vec![(0, 30)])]
    );
    session.read_response(answer(
        SESSION,
        13,
        &[("a", 0, 10, 0), ("a", 1, 25, 0), ("b", 0, 30, 0)],
    ));
    assert_eq!(session.partitions()[1].high_watermark, 25);
    // Nothing moved: the next request names nothing, the broker fetches all three.
    let next = session.request(wanted, &params(), 13).unwrap();
    assert_eq!((next.session_id, next.session_epoch), (SESSION, 1));
    assert!(next.topics.is_empty());
    assert!(next.forgotten_topics_data.is_empty());
}

#[test]
fn only_changed_partitions_are_named_and_removed_ones_forgotten() {
    for version in [12, 13] {
        let t = topics();
        let mut session = FetchSession::new(true);
        let wanted = want(&[(&t.a, 0, 10), (&t.a, 1, 20), (&t.b, 0, 30)]);
        session.request(wanted, &params(), version).unwrap();
        session.read_response(answer(
            SESSION,
            version,
            &[("a", 0, 10, 0), ("a", 1, 20, 0), ("b", 0, 30, 0)],
        ));
        // a/0 got data (offset 10 -> 15), a/1 is gone, b/0 was seeked to the same offset,
        // b/1 is new.
        let mut wanted = want(&[(&t.a, 0, 15), (&t.b, 0, 30), (&t.b, 1, 0)]);
        wanted[1].generation = 1;
        let request = session.request(wanted, &params(), version).unwrap();
        let name = |topic: &str| {
            if version >= 13 {
                id(topic)
            } else {
                topic.to_owned()
            }
        };
        assert_eq!(
            named(&request),
            vec![
                (name("a"), vec![(0, 15)]),
                (name("b"), vec![(0, 30), (1, 0)])
            ],
            "v{version}"
        );
        assert_eq!(
            forgotten(&request),
            vec![(name("a"), vec![1])],
            "v{version}"
        );
        // An incremental request still tells the leader the rack (KIP-392).
        assert_eq!(request.rack_id.as_str(), "rack-3");
        let keys: Vec<(&str, i32)> = session
            .partitions()
            .iter()
            .map(|p| (&*p.topic, p.partition))
            .collect();
        assert_eq!(keys, vec![("a", 0), ("b", 0), ("b", 1)]);
    }
}

#[test]
fn named_partitions_left_out_of_an_answer_are_unchanged() {
    let t = topics();
    let (mut session, _) = open_session(&t);
    let moved = want(&[(&t.a, 0, 10), (&t.a, 1, 25), (&t.b, 0, 30)]);
    let request = session.request(moved, &params(), 13).unwrap();
    assert_eq!(named(&request), vec![(id("a"), vec![(1, 25)])]);
    // Only b/0 is in the answer (new data): a/1 was named and left out, a/0 was not named.
    let read = session.read_response(answer(SESSION, 13, &[("b", 0, 40, 100)]));
    assert_eq!(read.partitions.len(), 1);
    assert_eq!(read.partitions[0].0, 2, "b/0 is the third entry");
    assert_eq!(read.partitions[0].1.records.len(), 100);
    assert_eq!(read.unchanged, vec![1], "a/1 had nothing new");
    assert_eq!(session.partitions()[2].high_watermark, 40);
    assert_eq!(session.epoch(), 2);
}

#[test]
fn a_throttled_answer_settles_nothing() {
    let t = topics();
    let (mut session, _) = open_session(&t);
    let moved = want(&[(&t.a, 0, 10), (&t.a, 1, 25), (&t.b, 0, 30)]);
    session.request(moved.clone(), &params(), 13).unwrap();
    let read = session.read_response(answer(SESSION, 13, &[]).with_throttle_time_ms(100));
    assert!(read.unchanged.is_empty(), "nothing was read");
    assert_eq!(read.throttle_time_ms, 100);
    // a/1 is not named again (the broker has its offset), but still awaits an answer.
    let request = session.request(moved, &params(), 13).unwrap();
    assert!(request.topics.is_empty());
    let read = session.read_response(answer(SESSION, 13, &[]));
    assert_eq!(read.unchanged, vec![1]);
}

#[test]
fn session_errors_start_over() {
    let t = topics();
    for (code, next_id) in [
        (codes::FETCH_SESSION_ID_NOT_FOUND, 0),
        (codes::INVALID_FETCH_SESSION_EPOCH, SESSION),
        (codes::FETCH_SESSION_TOPIC_ID_ERROR, SESSION),
    ] {
        let (mut session, wanted) = open_session(&t);
        session.request(wanted.clone(), &params(), 13).unwrap();
        let read = session.read_response(
            FetchResponse::default()
                .with_error_code(code)
                .with_session_id(0),
        );
        assert_eq!(read.error_code, code);
        assert!(read.partitions.is_empty());
        // A full request: with the old id when the broker still has it (it drops it and
        // starts another), without when it has none.
        let request = session.request(wanted, &params(), 13).unwrap();
        assert_eq!(
            (request.session_id, request.session_epoch),
            (next_id, 0),
            "{code}"
        );
        assert_eq!(named(&request).iter().map(|t| t.1.len()).sum::<usize>(), 3);
    }
}

#[test]
fn a_lost_answer_starts_over_with_the_old_id() {
    let t = topics();
    let (mut session, wanted) = open_session(&t);
    session.request(wanted.clone(), &params(), 13).unwrap();
    session.connection_lost();
    let request = session.request(wanted.clone(), &params(), 13).unwrap();
    assert_eq!((request.session_id, request.session_epoch), (SESSION, 0));
    // A second request with the first never answered: the broker's view is unknown too.
    session.read_response(answer(
        SESSION + 1,
        13,
        &[("a", 0, 10, 0), ("a", 1, 25, 0), ("b", 0, 30, 0)],
    ));
    session.request(wanted.clone(), &params(), 13).unwrap();
    let request = session.request(wanted, &params(), 13).unwrap();
    assert_eq!(
        (request.session_id, request.session_epoch),
        (SESSION + 1, 0)
    );
}

#[test]
fn a_broker_that_answers_session_id_zero_gets_full_requests() {
    let t = topics();
    let mut session = FetchSession::new(true);
    let wanted = want(&[(&t.a, 0, 10)]);
    for _ in 0..3 {
        let request = session.request(wanted.clone(), &params(), 13).unwrap();
        assert_eq!((request.session_id, request.session_epoch), (0, 0));
        assert_eq!(request.topics.len(), 1);
        let read = session.read_response(answer(0, 13, &[("a", 0, 10, 0)]));
        assert!(!read.mismatched);
    }
}

#[test]
fn the_broker_ending_the_session_means_a_full_request() {
    let t = topics();
    let (mut session, wanted) = open_session(&t);
    session.request(wanted.clone(), &params(), 13).unwrap();
    session.read_response(answer(0, 13, &[]));
    let request = session.request(wanted, &params(), 13).unwrap();
    assert_eq!((request.session_id, request.session_epoch), (0, 0));
}

#[test]
fn an_answer_that_does_not_fit_the_session_starts_over() {
    let t = topics();
    let (mut session, wanted) = open_session(&t);
    session.request(wanted.clone(), &params(), 13).unwrap();
    let read = session.read_response(answer(SESSION, 13, &[("b", 7, 0, 0)]));
    assert!(read.mismatched, "b/7 is not in the session");
    assert!(read.unchanged.is_empty());
    let request = session.request(wanted.clone(), &params(), 13).unwrap();
    assert_eq!((request.session_id, request.session_epoch), (SESSION, 0));
    // A full answer that leaves a partition out (as a throttled one does) opens nothing.
    let read = session.read_response(answer(SESSION, 13, &[("a", 0, 10, 0)]));
    assert!(read.mismatched);
    assert_eq!(read.partitions.len(), 1, "what did come is still used");
    let request = session.request(wanted, &params(), 13).unwrap();
    assert_eq!((request.session_id, request.session_epoch), (0, 0));
}

#[test]
fn sessions_off_or_before_v7_send_sessionless_requests() {
    let t = topics();
    let wanted = want(&[(&t.a, 0, 10)]);
    for (enabled, version) in [(false, 13), (true, 6)] {
        let mut session = FetchSession::new(enabled);
        for _ in 0..2 {
            let request = session.request(wanted.clone(), &params(), version).unwrap();
            assert_eq!((request.session_id, request.session_epoch), (0, -1));
            assert_eq!(request.topics.len(), 1);
            session.read_response(answer(SESSION, version, &[("a", 0, 10, 0)]));
        }
        assert_eq!(session.id(), 0, "an id the broker sent anyway is not taken");
        assert!(session.close_request(&params(), version).is_none());
    }
}

#[test]
fn closing_names_the_session_at_the_final_epoch() {
    let t = topics();
    assert!(
        FetchSession::new(true)
            .close_request(&params(), 13)
            .is_none(),
        "no session yet"
    );
    let (mut session, wanted) = open_session(&t);
    let close = session.close_request(&params(), 13).unwrap();
    assert_eq!((close.session_id, close.session_epoch), (SESSION, -1));
    assert!(close.topics.is_empty() && close.forgotten_topics_data.is_empty());
    assert_eq!(close.max_wait_ms, 0);
    assert!(session.partitions().is_empty());
    assert!(session.close_request(&params(), 13).is_none());
    let request = session.request(wanted, &params(), 13).unwrap();
    assert_eq!((request.session_id, request.session_epoch), (0, 0));
}

#[test]
fn a_recreated_topic_is_forgotten_by_its_old_id() {
    let t = topics();
    let (mut session, _) = open_session(&t);
    let mut wanted = want(&[(&t.a, 0, 0), (&t.a, 1, 20), (&t.b, 0, 30)]);
    let new_id = Uuid::from_u128(3);
    wanted[0].topic_id = new_id;
    wanted[1].topic_id = new_id;
    let request = session.request(wanted, &params(), 13).unwrap();
    assert_eq!(
        named(&request),
        vec![(new_id.to_string(), vec![(0, 0), (1, 20)])]
    );
    assert_eq!(forgotten(&request), vec![(id("a"), vec![0, 1])]);
    // The answer comes by the new id.
    let mut response = answer(SESSION, 13, &[("a", 0, 5, 0)]);
    response.responses[0].topic_id = new_id;
    let read = session.read_response(response);
    assert!(!read.mismatched);
    assert_eq!(read.partitions[0].0, 0);
}

#[test]
fn full_requests_rotate_which_partition_goes_first() {
    let t = topics();
    let mut session = FetchSession::new(false);
    let wanted = want(&[(&t.a, 0, 0), (&t.a, 1, 0), (&t.b, 0, 0)]);
    let mut firsts = Vec::new();
    for _ in 0..4 {
        let request = session.request(wanted.clone(), &params(), 12).unwrap();
        let first = &request.topics[0];
        firsts.push((first.topic.0.to_string(), first.partitions[0].partition));
        let all: usize = request.topics.iter().map(|t| t.partitions.len()).sum();
        assert_eq!(all, 3);
        session.read_response(answer(0, 12, &[]));
    }
    let firsts: Vec<(&str, i32)> = firsts.iter().map(|(t, p)| (t.as_str(), *p)).collect();
    assert_eq!(firsts, vec![("a", 0), ("a", 1), ("b", 0), ("a", 0)]);
}

#[test]
fn wanted_partitions_in_any_order_make_the_same_session() {
    let t = topics();
    let mut session = FetchSession::new(true);
    let wanted = want(&[(&t.b, 0, 30), (&t.a, 1, 20), (&t.a, 0, 10), (&t.a, 1, 20)]);
    let request = session.request(wanted, &params(), 13).unwrap();
    assert_eq!(
        named(&request).iter().map(|t| t.1.len()).sum::<usize>(),
        3,
        "each partition once"
    );
    let keys: Vec<(&str, i32)> = session
        .partitions()
        .iter()
        .map(|p| (&*p.topic, p.partition))
        .collect();
    assert_eq!(keys, vec![("a", 0), ("a", 1), ("b", 0)]);
    session.read_response(answer(
        SESSION,
        13,
        &[("b", 0, 30, 0), ("a", 1, 20, 0), ("a", 0, 10, 0)],
    ));
    let reordered = want(&[(&t.b, 0, 31), (&t.a, 0, 10), (&t.a, 1, 20)]);
    let request = session.request(reordered, &params(), 13).unwrap();
    assert_eq!(named(&request), vec![(id("b"), vec![(0, 31)])]);
    assert!(request.forgotten_topics_data.is_empty());
}

#[test]
fn nothing_wanted_sends_nothing_and_keeps_the_session() {
    let t = topics();
    let (mut session, wanted) = open_session(&t);
    assert!(session.request(Vec::new(), &params(), 13).is_none());
    assert_eq!(session.partitions().len(), 3);
    let request = session.request(wanted, &params(), 13).unwrap();
    assert_eq!((request.session_id, request.session_epoch), (SESSION, 1));
}

#[test]
fn session_requests_encode_at_every_version() {
    let t = topics();
    for version in [4, 6, 7, 11, 12, 13, 16, 17] {
        let mut session = FetchSession::new(true);
        let wanted = want(&[(&t.a, 0, 10), (&t.b, 0, 30)]);
        session.request(wanted, &params(), version).unwrap();
        session.read_response(answer(
            SESSION,
            version,
            &[("a", 0, 10, 0), ("b", 0, 30, 0)],
        ));
        let request = session
            .request(want(&[(&t.a, 0, 11)]), &params(), version)
            .unwrap();
        let mut buffer = bytes::BytesMut::new();
        request.encode(&mut buffer, version).unwrap();
        let decoded = FetchRequest::decode(&mut buffer.freeze(), version).unwrap();
        if version >= FIRST_VERSION_WITH_SESSIONS {
            assert_eq!((decoded.session_id, decoded.session_epoch), (SESSION, 1));
            assert_eq!(decoded.topics.len(), 1, "v{version}");
            assert_eq!(decoded.forgotten_topics_data.len(), 1, "v{version}");
        } else {
            assert_eq!(decoded.topics.len(), 1, "v{version}: full, a/0 only");
        }
    }
}
