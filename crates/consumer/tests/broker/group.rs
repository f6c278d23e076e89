//! `GroupConsumer` as an embedder drives it: `subscribe`, `next_event`, `processed`, `close`;
//! two members splitting a topic; what `close` commits, and what a drop does not.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use krec_consumer::{ConsumerConfig, Fetched, GroupConsumer, GroupEvent};

use crate::support::{config, expected, live, numbered, records_of, within, LiveBroker, Seen};

/// A member's settings: `group`, commits only on `close` (and on revocation: the periodic
/// commit is an hour away), and a short session so a dropped member leaves the group soon.
fn member_config(broker: &LiveBroker, group: &str) -> ConsumerConfig {
    let mut settings = config(broker);
    settings.group.group_id = group.to_owned();
    settings.group.commit_interval = Duration::from_secs(3600);
    settings.group.session_timeout = Duration::from_secs(6);
    settings.group.heartbeat_interval = Duration::from_millis(500);
    settings.group.rebalance_timeout = Duration::from_secs(10);
    settings
}

/// Reads events until `done` says so, marking every chunk processed; returns the records.
async fn read_until(
    member: &mut GroupConsumer,
    topic: &str,
    mut done: impl FnMut(&GroupConsumer, &[Seen]) -> bool,
) -> Vec<Seen> {
    let mut seen = Vec::new();
    within("group events", async {
        while !done(member, &seen) {
            if let Some(GroupEvent::Chunk(chunk)) = member.next_event().await.expect("next_event") {
                seen.extend(records_of(&chunk, topic));
                member.progress().processed(&chunk);
            }
        }
    })
    .await;
    seen
}

/// What a new member reads of each partition until every partition has reported its end
/// (`GroupConsumer::poll`): the records after the group's committed offsets.
async fn read_new_member(member: &mut GroupConsumer, topic: &str, partitions: usize) -> Vec<Seen> {
    let mut seen = Vec::new();
    let mut ended = BTreeSet::new();
    within("a new member reading to the end", async {
        while ended.len() < partitions {
            match member.poll().await.expect("poll") {
                Fetched::Chunk(chunk) => seen.extend(records_of(&chunk, topic)),
                Fetched::EndOfPartition {
                    topic_partition, ..
                } => {
                    ended.insert(topic_partition.partition);
                }
                _ => {}
            }
        }
    })
    .await;
    seen.sort();
    seen
}

/// Two members of one group: once the group is stable each holds two of the four
/// partitions, and of the records produced then each member gets those of its own
/// partitions only; together they get every record, none twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_members_split_a_topic() {
    let broker = live::broker();
    let topic = live::unique_name("kc-split");
    let group = live::unique_name("kc-split-group");
    broker.create_topic(&topic, 4);

    let mut a = GroupConsumer::subscribe(member_config(&broker, &group), &[&topic])
        .await
        .expect("first member");
    read_until(&mut a, &topic, |a, _| a.assignment().len() == 4).await;
    let mut b = GroupConsumer::subscribe(member_config(&broker, &group), &[&topic])
        .await
        .expect("second member");
    let mut seen: BTreeMap<char, Vec<Seen>> = BTreeMap::new();
    let mut produced = None;
    within("the split and its records", async {
        loop {
            let stable = a.assignment().len() == 2 && b.assignment().len() == 2;
            if stable && produced.is_none() {
                produced = Some(broker.produce(&topic, &numbered(40, 4)));
            }
            let total: usize = seen.values().map(Vec::len).sum();
            if produced.is_some() && total >= 40 {
                break;
            }
            let (name, event) = tokio::select! {
                event = a.next_event() => ('a', event),
                event = b.next_event() => ('b', event),
            };
            if let Some(GroupEvent::Chunk(chunk)) = event.expect("next_event") {
                let member = if name == 'a' { &a } else { &b };
                seen.entry(name)
                    .or_default()
                    .extend(records_of(&chunk, &topic));
                member.progress().processed(&chunk);
            }
        }
    })
    .await;

    let owned_a: BTreeSet<i32> = a.assignment().iter().map(|p| p.partition).collect();
    let owned_b: BTreeSet<i32> = b.assignment().iter().map(|p| p.partition).collect();
    assert!(owned_a.is_disjoint(&owned_b), "{owned_a:?} and {owned_b:?}");
    assert_eq!(owned_a.union(&owned_b).count(), 4);
    for (name, owned) in [('a', &owned_a), ('b', &owned_b)] {
        let got = seen.get(&name).map(Vec::as_slice).unwrap_or_default();
        assert!(!got.is_empty(), "member {name} got nothing");
        assert!(
            got.iter().all(|r| owned.contains(&r.partition)),
            "member {name} owns {owned:?} but got {got:?}"
        );
    }
    let mut union: Vec<Seen> = seen.into_values().flatten().collect();
    union.sort();
    assert_eq!(union, expected(&produced.expect("produced")));
    let (closed_a, closed_b) = tokio::join!(a.close(), b.close());
    closed_a.expect("close a");
    closed_b.expect("close b");
}

/// `processed` marks chunks of partition 0 only; `close` commits exactly their end
/// (offset 10, as Kafka's ConsumerGroupCommand shows) and nothing for partition 1; a new
/// member of the group then reads partition 1 from the beginning and nothing of partition 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_commits_exactly_what_was_processed() {
    let broker = live::broker();
    let topic = live::unique_name("kc-close");
    let group = live::unique_name("kc-close-group");
    broker.create_topic(&topic, 2);
    let acked = broker.produce(&topic, &numbered(20, 2));

    let mut member = GroupConsumer::subscribe(member_config(&broker, &group), &[&topic])
        .await
        .expect("member");
    let mut seen: Vec<Seen> = Vec::new();
    let mut processed_to = None;
    within("every record", async {
        while seen.len() < 20 {
            if let Some(GroupEvent::Chunk(chunk)) = member.next_event().await.expect("next_event") {
                seen.extend(records_of(&chunk, &topic));
                if chunk.partition() == 0 {
                    member.progress().processed(&chunk);
                    processed_to = Some(chunk.next_offset());
                }
            }
        }
    })
    .await;
    assert_eq!(
        processed_to,
        Some(10),
        "partition 0's last chunk ends at 10"
    );
    within("close", member.close()).await.expect("close");

    let committed = broker.committed_offsets(&group, &topic);
    assert_eq!(committed.get(&0), Some(&Some(10)), "commits: {committed:?}");
    assert_eq!(
        committed.get(&1).copied().flatten(),
        None,
        "commits: {committed:?}"
    );

    let mut next = GroupConsumer::subscribe(member_config(&broker, &group), &[&topic])
        .await
        .expect("new member");
    let want: Vec<Seen> = expected(&acked)
        .into_iter()
        .filter(|r| r.partition == 1)
        .collect();
    assert_eq!(read_new_member(&mut next, &topic, 2).await, want);
    within("close", next.close()).await.expect("close");
}

/// A member that processed records and is dropped without `close` commits nothing: the
/// next member starts where the last `close` left the group (offset 5), not after the
/// dropped member's records (offset 10).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_without_close_commits_nothing() {
    let broker = live::broker();
    let topic = live::unique_name("kc-drop");
    let group = live::unique_name("kc-drop-group");
    broker.create_topic(&topic, 1);
    let first = broker.produce(&topic, &numbered(5, 1));

    let mut closing = GroupConsumer::subscribe(member_config(&broker, &group), &[&topic])
        .await
        .expect("member");
    let read = read_until(&mut closing, &topic, |_, seen| seen.len() == 5).await;
    assert_eq!(read, expected(&first));
    within("close", closing.close()).await.expect("close");

    let second = broker.produce(&topic, &numbered(5, 1));
    let mut dropped = GroupConsumer::subscribe(member_config(&broker, &group), &[&topic])
        .await
        .expect("member");
    let read = read_until(&mut dropped, &topic, |_, seen| seen.len() == 5).await;
    assert_eq!(
        read,
        expected(&second),
        "starts at the closed member's commit"
    );
    drop(dropped);

    // The dropped member stays in the group until its session (6 s) expires.
    let mut next = GroupConsumer::subscribe(member_config(&broker, &group), &[&topic])
        .await
        .expect("new member");
    assert_eq!(
        read_new_member(&mut next, &topic, 1).await,
        expected(&second),
        "the dropped member committed what it processed"
    );
    within("close", next.close()).await.expect("close");
}
