//! `GroupConsumer::membership` as `krec mirror` drives it, with both group protocols: members
//! that hold partitions and read none share a 4-partition topic; when one closes or is dropped
//! without leaving (a crash) the other takes every partition; one that releases revoked
//! partitions slowly keeps its membership; a static member back with one more topic takes
//! it too. No Fetch is sent and the group has no committed offsets, though the topic holds
//! records a reading member would fetch.

use std::collections::BTreeSet;
use std::time::Duration;

use krec_consumer::group::GroupProtocol;
use krec_consumer::{ConsumerConfig, GroupConsumer, GroupEvent};

use crate::support::{config, live, numbered, within, LiveBroker, LIMIT};

/// The partitions of each test's topic.
const PARTITIONS: usize = 4;

/// The members' session timeout.
const SESSION: Duration = Duration::from_secs(6);

/// A member's settings: `protocol`; a short session (classic: sent in JoinGroup; KIP-848: the
/// broker's `group.consumer.session.timeout.ms`, which kafka.sh sets to the same) so a dropped
/// member is replaced soon; a rebalance timeout longer than a test's wait, so a revocation
/// that is never released fails the test instead of timing out quietly.
fn member_config(broker: &LiveBroker, group: &str, protocol: GroupProtocol) -> ConsumerConfig {
    let mut settings = config(broker);
    settings.group.group_id = group.to_owned();
    settings.group.protocol = protocol;
    settings.group.session_timeout = SESSION;
    settings.group.heartbeat_interval = Duration::from_millis(500);
    settings.group.rebalance_timeout = LIMIT * 2;
    settings
}

/// A topic of [`PARTITIONS`] partitions holding records, so that a member that fetched would
/// get chunks.
fn topic_with_records(broker: &LiveBroker, prefix: &str) -> String {
    let topic = live::unique_name(prefix);
    broker.create_topic(&topic, PARTITIONS as u32);
    broker.produce(&topic, &numbered(8, PARTITIONS as i32));
    topic
}

/// A member of `group` that holds partitions of `topics` (a name or a `^pattern`).
async fn join(
    broker: &LiveBroker,
    group: &str,
    protocol: GroupProtocol,
    topics: &str,
) -> GroupConsumer {
    GroupConsumer::membership(member_config(broker, group, protocol), &[topics])
        .await
        .expect("a membership member")
}

/// The partition ids `member` holds now.
fn held(member: &GroupConsumer) -> BTreeSet<i32> {
    member.assignment().iter().map(|p| p.partition).collect()
}

/// One event of a member that reads nothing: an assignment change, never a chunk, and never
/// a loss (no member these tests watch is ever fenced). True for a revocation.
fn check_event(name: &str, event: Result<Option<GroupEvent>, krec_consumer::Error>) -> bool {
    match event.expect("next_event") {
        Some(GroupEvent::Assigned(_)) => false,
        Some(GroupEvent::Revoked(_)) => true,
        Some(GroupEvent::Lost(lost)) => panic!("member {name} lost {lost:?}"),
        Some(GroupEvent::Chunk(chunk)) => panic!(
            "member {name} was handed records of {}/{}",
            chunk.topic(),
            chunk.partition()
        ),
        other => panic!("member {name}: unexpected {other:?}"),
    }
}

/// Takes both members' events until each holds a share and the shares are disjoint and cover
/// the topic.
async fn split(a: &mut GroupConsumer, b: &mut GroupConsumer) {
    within("the split between two members", async {
        loop {
            let (ha, hb) = (held(a), held(b));
            let covered = ha.len() + hb.len() == PARTITIONS && ha.union(&hb).count() == PARTITIONS;
            if covered && !ha.is_empty() && !hb.is_empty() {
                return;
            }
            tokio::select! {
                event = a.next_event() => check_event("a", event),
                event = b.next_event() => check_event("b", event),
            };
        }
    })
    .await;
}

/// Takes `member`'s events until it holds every partition.
async fn take_all(member: &mut GroupConsumer) {
    within("one member taking every partition", async {
        while held(member).len() < PARTITIONS {
            check_event("a", member.next_event().await);
        }
    })
    .await;
}

/// Two members split the topic, each with its own member id and a generation (or epoch) for
/// its offset commits; the second closes and the first takes every partition before the
/// closed one's session could have expired (it left the group), under a newer generation.
/// Neither fetched, and the group has no committed offset, while the first is still in the
/// group (every partition listed, none with an offset) and after it closed.
async fn split_then_close(protocol: GroupProtocol, prefix: &str) {
    let broker = live::broker();
    let topic = topic_with_records(&broker, prefix);
    let group = live::unique_name(&format!("{prefix}-group"));
    let mut a = join(&broker, &group, protocol, &topic).await;
    let mut b = join(&broker, &group, protocol, &topic).await;
    split(&mut a, &mut b).await;

    let (meta_a, meta_b) = (a.group_metadata(), b.group_metadata());
    assert!(
        meta_a.generation > 0 && meta_b.generation > 0,
        "{meta_a:?} {meta_b:?}"
    );
    assert!(!meta_a.member_id.is_empty(), "{meta_a:?}");
    assert_ne!(meta_a.member_id, meta_b.member_id);
    assert_eq!(b.metrics().fetch_requests(), 0, "member b fetched");

    let closed = std::time::Instant::now();
    within("close", b.close()).await.expect("close b");
    take_all(&mut a).await;
    assert!(
        closed.elapsed() < SESSION,
        "the other member took over only after {:?}: the closed member did not leave",
        closed.elapsed()
    );
    assert!(
        a.group_metadata().generation > meta_a.generation,
        "{:?} after {meta_a:?}",
        a.group_metadata()
    );
    assert_eq!(a.metrics().fetch_requests(), 0, "member a fetched");

    let committed = broker.committed_offsets(&group, &topic);
    assert_eq!(
        committed.len(),
        PARTITIONS,
        "the group's partitions: {committed:?}"
    );
    assert!(
        committed.values().all(Option::is_none),
        "commits: {committed:?}"
    );
    within("close", a.close()).await.expect("close a");
    let committed = broker.committed_offsets(&group, &topic);
    assert!(
        committed.values().all(Option::is_none),
        "commits: {committed:?}"
    );
}

/// Members subscribed with a pattern (as `krec mirror` subscribes to its target topics) split
/// the topic; one dropped without leaving (its tasks aborted, as in a crash) is removed by the
/// coordinator after the session timeout, and the other then holds every partition, under a
/// newer generation; the survivor never fetched.
async fn dropped_member_is_replaced(protocol: GroupProtocol, prefix: &str) {
    let broker = live::broker();
    let topic = topic_with_records(&broker, prefix);
    let group = live::unique_name(&format!("{prefix}-group"));
    let pattern = format!("^{topic}$");
    let mut a = join(&broker, &group, protocol, &pattern).await;
    let mut b = join(&broker, &group, protocol, &pattern).await;
    split(&mut a, &mut b).await;
    let before = a.group_metadata();
    drop(b);
    take_all(&mut a).await;
    assert!(
        a.group_metadata().generation > before.generation,
        "{:?} after {before:?}",
        a.group_metadata()
    );
    assert_eq!(a.metrics().fetch_requests(), 0, "member a fetched");
    within("close", a.close()).await.expect("close a");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_members_split_then_one_closes() {
    split_then_close(GroupProtocol::Classic, "kc-membership-close").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kip848_members_split_then_one_closes() {
    split_then_close(GroupProtocol::Consumer, "kc-membership848-close").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_dropped_member_is_replaced() {
    dropped_member_is_replaced(GroupProtocol::Classic, "kc-membership-drop").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kip848_dropped_member_is_replaced() {
    dropped_member_is_replaced(GroupProtocol::Consumer, "kc-membership848-drop").await;
}

/// A member that releases revoked partitions only after longer than the session timeout (a
/// mirror finishing a slow transaction) keeps its membership: the rebalance timeout bounds the
/// release, and the member goes on heartbeating meanwhile. Neither member loses partitions.
async fn slow_release_keeps_the_membership(protocol: GroupProtocol, prefix: &str) {
    let broker = live::broker();
    let topic = topic_with_records(&broker, prefix);
    let group = live::unique_name(&format!("{prefix}-group"));
    let mut a = join(&broker, &group, protocol, &topic).await;
    take_all(&mut a).await;
    let mut b = join(&broker, &group, protocol, &topic).await;
    within("a revocation", async {
        while !check_event("a", a.next_event().await) {}
    })
    .await;
    tokio::time::sleep(SESSION + Duration::from_secs(2)).await;
    split(&mut a, &mut b).await;
    let (closed_a, closed_b) = tokio::join!(a.close(), b.close());
    closed_a.expect("close a");
    closed_b.expect("close b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_slow_release_keeps_the_membership() {
    slow_release_keeps_the_membership(GroupProtocol::Classic, "kc-membership-slow").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kip848_slow_release_keeps_the_membership() {
    slow_release_keeps_the_membership(GroupProtocol::Consumer, "kc-membership848-slow").await;
}

/// A static member closed (it stays in the group) and started again with one more topic
/// takes that topic's partitions too: the coordinator hands a returning static member its
/// old assignment without a rebalance, so the classic leader checks it against the members'
/// subscriptions. Then, nothing changing, the member takes no new assignment (a KIP-848
/// member does not acknowledge an unchanged one, which the broker would answer again).
async fn static_member_back_with_another_topic(protocol: GroupProtocol, prefix: &str) {
    let broker = live::broker();
    let first = topic_with_records(&broker, prefix);
    let second = topic_with_records(&broker, &format!("{prefix}-more"));
    let mut settings = member_config(&broker, &live::unique_name(prefix), protocol);
    settings.group.instance_id = Some("static".to_owned());
    let mut member = GroupConsumer::membership(settings.clone(), &[first.as_str()])
        .await
        .expect("a membership member");
    take_all(&mut member).await;
    within("close", member.close()).await.expect("close");
    let topics = [first.as_str(), second.as_str()];
    let mut member = GroupConsumer::membership(settings, &topics)
        .await
        .expect("the member back");
    within("the member back taking both topics", async {
        while member.assignment().len() < 2 * PARTITIONS {
            check_event("back", member.next_event().await);
        }
    })
    .await;
    let rebalances = || member.metrics().group.expect("group metrics").rebalances;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let settled = rebalances();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        rebalances(),
        settled,
        "assignments taken while nothing changed"
    );
    within("close", member.close()).await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_static_member_back_with_another_topic() {
    static_member_back_with_another_topic(GroupProtocol::Classic, "kc-membership-static").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kip848_static_member_back_with_another_topic() {
    static_member_back_with_another_topic(GroupProtocol::Consumer, "kc-membership848-static").await;
}
