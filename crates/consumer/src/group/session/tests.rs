//! Commits against a fake coordinator that answers OffsetCommit from a script.
use super::*;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FindCoordinatorResponse, OffsetCommitRequest, OffsetCommitResponse,
};
use kafka_protocol::protocol::StrBytes;
use krec_testkit::broker::{self, answers, Reply, Request};
use std::sync::Mutex;

/// What the fake coordinator answers to each OffsetCommit, in turn, and what it was sent.
#[derive(Default)]
struct Script {
    answers: Vec<i16>,
    commits: Vec<(String, i32, i64, i32)>,
}

async fn fake_coordinator(script: Arc<Mutex<Script>>) -> String {
    broker::start(move |request| match request.api_key {
        ApiKey::ApiVersions => request.answer(&answers::api_versions(&[
            (ApiKey::Metadata, 1, 12),
            (ApiKey::OffsetCommit, 2, 9),
            (ApiKey::FindCoordinator, 0, 6),
            (ApiKey::ApiVersions, 0, 3),
        ])),
        ApiKey::Metadata => request.answer(&answers::metadata(request.port, &[])),
        ApiKey::FindCoordinator => request.answer(&coordinator(request.port)),
        ApiKey::OffsetCommit => offset_commit(request, &mut script.lock().unwrap()),
        other => panic!("the fake coordinator does not speak {other:?}"),
    })
    .await
}

fn coordinator(port: u16) -> FindCoordinatorResponse {
    FindCoordinatorResponse::default().with_coordinators(vec![Coordinator::default()
        .with_key(StrBytes::from_static_str("g"))
        .with_node_id(BrokerId(answers::NODE_ID))
        .with_host(StrBytes::from_static_str("127.0.0.1"))
        .with_port(i32::from(port))])
}

/// Records the commit and answers every partition with the script's next code.
fn offset_commit(request: &Request, script: &mut Script) -> Reply {
    let commit: OffsetCommitRequest = request.decode();
    for topic in &commit.topics {
        for p in &topic.partitions {
            script.commits.push((
                topic.name.0.to_string(),
                p.partition_index,
                p.committed_offset,
                commit.generation_id_or_member_epoch,
            ));
        }
    }
    let code = if script.answers.is_empty() {
        0
    } else {
        script.answers.remove(0)
    };
    let topics = commit
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(code)
                })
                .collect();
            OffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    request.answer(&OffsetCommitResponse::default().with_topics(topics))
}

fn session(address: &str) -> Session {
    let mut consumer = crate::ConsumerConfig::new(vec![address.to_owned()]);
    consumer.backoff = Duration::from_millis(5);
    let metadata = Arc::new(AsyncMutex::new(MetadataClient::new(
        consumer.bootstrap.clone(),
        consumer.connection.clone(),
    )));
    let (events, _) = mpsc::unbounded_channel();
    let (_, commands) = mpsc::unbounded_channel();
    let config = Arc::new(GroupConfig::new("g", vec!["t".to_owned()]));
    let (fetch_events, _) = mpsc::unbounded_channel();
    Session::new(
        config,
        &consumer,
        metadata,
        Arc::new(WrittenOffsets::default()),
        events,
        commands,
        TopicSubscription::parse(["t"]).unwrap(),
        Shared::new(consumer.clone(), fetch_events),
        Arc::new(Metrics::new(consumer.give_up_after)),
    )
}

fn identity() -> Identity {
    Identity {
        member_id: "m".to_owned(),
        generation: 4,
    }
}

#[tokio::test]
async fn a_refused_commit_keeps_the_position_for_the_next_one() {
    let script = Arc::new(Mutex::new(Script {
        answers: vec![group_codes::REBALANCE_IN_PROGRESS],
        ..Script::default()
    }));
    let address = fake_coordinator(script.clone()).await;
    let mut session = session(&address);
    let partitions: BTreeSet<TopicPartition> = [TopicPartition::from(("t", 0))].into();
    session.written.track("t", 0, Some(10));
    session.written.mark("t", 0, 25);
    let outcome = session
        .commit(&identity(), &partitions, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(
        outcome,
        CommitOutcome::Refused(group_codes::REBALANCE_IN_PROGRESS)
    );
    // Still pending: sent again by the next commit, which the coordinator takes.
    let outcome = session
        .commit(&identity(), &partitions, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(outcome, CommitOutcome::Done);
    // Nothing new written: nothing sent.
    let outcome = session
        .commit(&identity(), &partitions, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(outcome, CommitOutcome::Done);
    let commits = script.lock().unwrap().commits.clone();
    assert_eq!(
        commits,
        vec![("t".to_owned(), 0, 25, 4), ("t".to_owned(), 0, 25, 4)]
    );
}

#[tokio::test]
async fn a_moved_coordinator_is_found_again_within_the_retry_time() {
    let script = Arc::new(Mutex::new(Script {
        answers: vec![group_codes::NOT_COORDINATOR, group_codes::NOT_COORDINATOR],
        ..Script::default()
    }));
    let address = fake_coordinator(script.clone()).await;
    let mut session = session(&address);
    let partitions: BTreeSet<TopicPartition> = [TopicPartition::from(("t", 3))].into();
    session.written.track("t", 3, None);
    session.written.mark("t", 3, 7);
    // Without retry time the refusal is returned as is.
    let outcome = session
        .commit(&identity(), &partitions, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(
        outcome,
        CommitOutcome::Refused(group_codes::NOT_COORDINATOR)
    );
    let outcome = session
        .commit(&identity(), &partitions, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(outcome, CommitOutcome::Done);
    assert_eq!(script.lock().unwrap().commits.len(), 3);
}

#[tokio::test]
async fn untracked_or_unknown_positions_are_never_committed() {
    let script = Arc::new(Mutex::new(Script::default()));
    let address = fake_coordinator(script.clone()).await;
    let mut session = session(&address);
    // Tracked at -1 (no committed offset, nothing written yet) and not tracked at all.
    session.written.track("t", 0, None);
    let partitions: BTreeSet<TopicPartition> = [
        TopicPartition::from(("t", 0)),
        TopicPartition::from(("t", 1)),
    ]
    .into();
    let outcome = session
        .commit(&identity(), &partitions, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(outcome, CommitOutcome::Done);
    assert!(script.lock().unwrap().commits.is_empty());
}
