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
        let applied = apply_response(&mut cursor, cut, &context(false, OffsetReset::Fail)).unwrap();
        assert!(applied.data.is_none());
        assert_eq!(cursor.stalled_fetches, attempt);
        assert_eq!(cursor.offset, 0);
    }
    let cut = response(whole[..whole.len() / 2].to_vec(), 4, 0);
    let error = apply_response(&mut cursor, cut, &context(false, OffsetReset::Fail)).unwrap_err();
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
    let error = apply_response(&mut cursor, out(), &context(false, OffsetReset::Fail)).unwrap_err();
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
    let applied = apply_response(&mut cursor, partial, &context(false, OffsetReset::Fail)).unwrap();
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
        let applied = apply_response(&mut cursor, response(Vec::new(), 9, code), &context).unwrap();
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
