//! A consumer group across a broker restart: the members lose the coordinator, find it again,
//! rejoin, and go on from the committed offsets without losing a record. In a file of its
//! own because restarting the shared broker would disturb the other group tests.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::support::broker::{broker, unique_topic};
use crate::support::group::{
    print_counts, start_settled_members, wait_all_printed, wait_until, Member, PacedProducer,
    Position,
};

const PARTITIONS: i32 = 4;

/// Both tests restart the one broker: they take turns.
static BROKER_RESTARTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn members_survive_a_broker_restart(extra: &[&str]) {
    let _turn = BROKER_RESTARTS.lock().unwrap_or_else(|p| p.into_inner());
    let broker = broker();
    let topic = unique_topic("group-restart");
    broker.create_topic(&topic, PARTITIONS as u32, 1);
    let group = format!("{topic}-g");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut members = start_settled_members(
        &broker.bootstrap,
        &topic,
        &group,
        dir.path(),
        2,
        PARTITIONS,
        extra,
    );
    let refs: Vec<&Member> = members.iter().collect();
    let producer = PacedProducer::start(&broker.bootstrap, &topic, 4000, PARTITIONS, 400.0);
    wait_until(
        Duration::from_secs(30),
        "records before the restart",
        || print_counts(&refs).len() > 1000,
    );
    broker.kafka_sh("stop-node", &["--node", "1"]);
    let before_restart = print_counts(&refs).len();
    broker.kafka_sh("start-node", &["--node", "1"]);
    let produced = producer.finish();
    assert_eq!(produced.len(), 4000);
    wait_all_printed(&refs, &produced, Duration::from_secs(120));
    for member in &mut members {
        member.stop();
    }
    let refs: Vec<&Member> = members.iter().collect();
    let counts = print_counts(&refs);
    let printed: BTreeSet<Position> = counts.keys().copied().collect();
    assert_eq!(printed, produced, "nothing lost across the restart");
    assert!(
        before_restart < produced.len(),
        "records kept coming after the restart"
    );
    // Resuming from committed offsets repeats at most what was written after the last
    // commit before the restart (commits every 500 ms at 400 records/s: a few hundred).
    let duplicates = counts.values().filter(|n| **n > 1).count();
    eprintln!("broker restart: {duplicates} records printed twice");
    assert!(
        duplicates < 1000,
        "{duplicates} duplicates: members did not resume from their commits"
    );
    for member in &members {
        assert!(
            !member.last_commits().is_empty(),
            "{} committed",
            member.name
        );
    }
}

#[test]
fn classic_members_survive_a_broker_restart() {
    members_survive_a_broker_restart(&["--assignor", "range"]);
}

#[test]
fn kip848_members_survive_a_broker_restart() {
    members_survive_a_broker_restart(&["--group-protocol", "consumer"]);
}
