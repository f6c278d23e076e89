//! A classic group member whose heartbeats fail while its fetches go on: a coordinator cut off
//! from a partition leader, which one real broker behind one proxy cannot play. Records
//! fetched from the first failed heartbeat on are held back until a heartbeat is answered, and
//! never handed out if the session expires first: the member could not commit them, and the
//! next owner of the partition would write them again.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse, FindCoordinatorResponse, HeartbeatResponse,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use krec_batch::encode::BatchBuilder;
use krec_consumer::{GroupConsumer, GroupEvent};
use krec_testkit::broker::{self, answers, Reply, Request};

use super::{fast_config, TOPIC};

/// Records per fetch answer: one batch of this many, from the offset asked for.
const BATCH: i64 = 10;

/// The log's end, never reached.
const END: i64 = 1 << 40;

/// How long a fetch waits for its answer while heartbeats fail: long enough that the member
/// has seen the failure before the records arrive.
const SLOW_FETCH: Duration = Duration::from_millis(250);

/// The fake coordinator and leader of `TOPIC`'s one partition, with an endless log.
#[derive(Debug, Default)]
struct Coordinator {
    /// Heartbeats and commits close their connection while this many heartbeats are left to
    /// fail (`usize::MAX`: until the test heals it).
    failing: usize,
    /// A heartbeat has failed.
    failed_once: bool,
    /// The first offset fetched after a heartbeat failed.
    held_from: Option<i64>,
    /// Heartbeats answered after the first failure.
    answered_after_failure: usize,
    /// The last offset committed.
    committed: i64,
    /// JoinGroups answered, each a new generation.
    joins: i32,
}

impl Coordinator {
    fn reply(&mut self, request: &Request) -> Reply {
        match request.api_key {
            ApiKey::ApiVersions => request.answer(&answers::api_versions(&[
                (ApiKey::Fetch, 4, 12),
                (ApiKey::ListOffsets, 1, 7),
                (ApiKey::Metadata, 1, 12),
                (ApiKey::ApiVersions, 0, 3),
                (ApiKey::FindCoordinator, 0, 3),
                (ApiKey::JoinGroup, 0, 5),
                (ApiKey::SyncGroup, 0, 3),
                (ApiKey::Heartbeat, 0, 3),
                (ApiKey::LeaveGroup, 0, 3),
                (ApiKey::OffsetFetch, 1, 7),
                (ApiKey::OffsetCommit, 2, 7),
            ])),
            ApiKey::Metadata => request.answer(&answers::metadata(request.port, &[(TOPIC, 1)])),
            ApiKey::ListOffsets => {
                request.answer(&answers::list_offsets(&request.decode(), |_, timestamp| {
                    if timestamp == -2 {
                        0
                    } else {
                        END
                    }
                }))
            }
            ApiKey::FindCoordinator => request.answer(
                &FindCoordinatorResponse::default()
                    .with_node_id(BrokerId(answers::NODE_ID))
                    .with_host(StrBytes::from_static_str("127.0.0.1"))
                    .with_port(i32::from(request.port)),
            ),
            ApiKey::JoinGroup => self.join(request),
            ApiKey::SyncGroup => {
                // The member leads: its own assignment is the one it sends.
                let sync: SyncGroupRequest = request.decode();
                let mine = sync.assignments.into_iter().next().expect("an assignment");
                request.answer(&SyncGroupResponse::default().with_assignment(mine.assignment))
            }
            ApiKey::Heartbeat => self.heartbeat(request),
            ApiKey::OffsetFetch => request.answer(&self.offset_fetch()),
            ApiKey::OffsetCommit => self.commit(request),
            ApiKey::LeaveGroup => request.answer(&LeaveGroupResponse::default()),
            ApiKey::Fetch => self.fetch(request),
            other => panic!("the fake coordinator does not speak {other:?}"),
        }
    }

    /// A group of one: the member is its leader, and gets its own subscription back.
    fn join(&mut self, request: &Request) -> Reply {
        let join: JoinGroupRequest = request.decode();
        self.joins += 1;
        let protocol = join.protocols.into_iter().next().expect("a protocol");
        let member_id = StrBytes::from_string(format!("member-{}", self.joins));
        request.answer(
            &JoinGroupResponse::default()
                .with_generation_id(self.joins)
                .with_protocol_name(Some(protocol.name))
                .with_leader(member_id.clone())
                .with_member_id(member_id.clone())
                .with_members(vec![JoinGroupResponseMember::default()
                    .with_member_id(member_id)
                    .with_metadata(protocol.metadata)]),
        )
    }

    fn heartbeat(&mut self, request: &Request) -> Reply {
        if self.failing > 0 {
            self.failing -= 1;
            self.failed_once = true;
            return Reply::close();
        }
        if self.failed_once {
            self.answered_after_failure += 1;
        }
        request.answer(&HeartbeatResponse::default())
    }

    fn offset_fetch(&self) -> OffsetFetchResponse {
        OffsetFetchResponse::default().with_topics(vec![OffsetFetchResponseTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partitions(vec![
                OffsetFetchResponsePartition::default().with_committed_offset(self.committed)
            ])])
    }

    fn commit(&mut self, request: &Request) -> Reply {
        if self.failing > 0 {
            return Reply::close();
        }
        let commit: OffsetCommitRequest = request.decode();
        let topics = commit
            .topics
            .into_iter()
            .map(|topic| {
                let partitions = topic
                    .partitions
                    .into_iter()
                    .map(|p| {
                        self.committed = p.committed_offset;
                        OffsetCommitResponsePartition::default()
                            .with_partition_index(p.partition_index)
                    })
                    .collect();
                OffsetCommitResponseTopic::default()
                    .with_name(topic.name)
                    .with_partitions(partitions)
            })
            .collect();
        request.answer(&OffsetCommitResponse::default().with_topics(topics))
    }

    /// One batch from the offset asked for, slow while heartbeats fail.
    fn fetch(&mut self, request: &Request) -> Reply {
        let fetch: FetchRequest = request.decode();
        let offset = fetch.topics[0].partitions[0].fetch_offset;
        if self.failed_once && self.held_from.is_none() {
            self.held_from = Some(offset);
        }
        let mut builder = BatchBuilder::new(offset);
        for i in 0..BATCH {
            builder = builder.record(None, Some(format!("v{}", offset + i).as_bytes()), &[]);
        }
        let partition = PartitionData::default()
            .with_high_watermark(END)
            .with_last_stable_offset(END)
            .with_log_start_offset(0)
            .with_records(Some(Bytes::from(builder.build())));
        let answer = request.answer(&FetchResponse::default().with_responses(vec![
            FetchableTopicResponse::default()
                .with_topic(TopicName(StrBytes::from_static_str(TOPIC)))
                .with_partitions(vec![partition]),
        ]));
        if self.failed_once && self.failing > 0 {
            return answer.after(SLOW_FETCH);
        }
        answer
    }
}

/// A member of the fake's group: 100 ms heartbeats, commits every 200 ms.
async fn member(session_timeout: Duration) -> (GroupConsumer, Arc<Mutex<Coordinator>>) {
    let coordinator = Arc::new(Mutex::new(Coordinator::default()));
    let script = coordinator.clone();
    let address = broker::start(move |request| script.lock().unwrap().reply(request)).await;
    let mut config = fast_config(&address);
    config.group.group_id = "g".to_owned();
    config.group.session_timeout = session_timeout;
    config.group.heartbeat_interval = Duration::from_millis(100);
    config.group.commit_interval = Duration::from_millis(200);
    let member = GroupConsumer::subscribe(config, &[TOPIC]).await.unwrap();
    (member, coordinator)
}

/// The next event, failing the test after 20 s without one.
async fn next(member: &mut GroupConsumer) -> GroupEvent {
    tokio::time::timeout(Duration::from_secs(20), member.next_event())
        .await
        .expect("an event within 20 s")
        .expect("next_event")
        .expect("the member still fetching")
}

/// Reads and processes chunks until `offset` has been handed out; returns where they ended.
async fn read_past(member: &mut GroupConsumer, offset: i64) -> i64 {
    loop {
        if let GroupEvent::Chunk(chunk) = next(member).await {
            member.progress().processed(&chunk);
            if chunk.next_offset() > offset {
                return chunk.next_offset();
            }
        }
    }
}

#[tokio::test]
async fn records_fetched_while_heartbeats_fail_wait_for_an_answered_one() {
    let (mut member, coordinator) = member(Duration::from_secs(20)).await;
    let mut next_offset = read_past(&mut member, 50).await;
    coordinator.lock().unwrap().failing = 5;
    let mut held_from = None;
    while held_from.is_none_or(|from| next_offset < from + 50) {
        let chunk = match next(&mut member).await {
            GroupEvent::Chunk(chunk) => chunk,
            other => panic!("the membership held, yet: {other:?}"),
        };
        assert_eq!(chunk.fetch_offset(), next_offset, "a gap or a repeat");
        let script = coordinator.lock().unwrap();
        held_from = script.held_from;
        if held_from.is_some_and(|from| chunk.fetch_offset() >= from) {
            assert!(
                script.answered_after_failure > 0,
                "offset {} was fetched after a heartbeat failed and handed out before one \
                 was answered",
                chunk.fetch_offset()
            );
        }
        drop(script);
        member.progress().processed(&chunk);
        next_offset = chunk.next_offset();
    }
    assert_eq!(coordinator.lock().unwrap().joins, 1, "no rejoin");
}

#[tokio::test]
async fn records_fetched_while_heartbeats_fail_are_never_handed_out_once_the_session_expires() {
    let (mut member, coordinator) = member(Duration::from_secs(1)).await;
    read_past(&mut member, 50).await;
    coordinator.lock().unwrap().failing = usize::MAX;
    loop {
        match next(&mut member).await {
            GroupEvent::Chunk(chunk) => {
                let held_from = coordinator.lock().unwrap().held_from;
                assert!(
                    held_from.is_none_or(|from| chunk.fetch_offset() < from),
                    "offset {} was fetched after a heartbeat failed and handed out before \
                     the session expired",
                    chunk.fetch_offset()
                );
                member.progress().processed(&chunk);
            }
            GroupEvent::Lost(_) => break,
            other => panic!("before the loss: {other:?}"),
        }
    }
    let committed = {
        let mut script = coordinator.lock().unwrap();
        script.failing = 0;
        script.committed
    };
    // Joined again, the member starts over where its last commit before the failure ended.
    let first = loop {
        if let GroupEvent::Chunk(chunk) = next(&mut member).await {
            break chunk.fetch_offset();
        }
    };
    assert_eq!(first, committed);
    assert_eq!(coordinator.lock().unwrap().joins, 2);
}
