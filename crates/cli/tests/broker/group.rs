//! Consumer groups against the real broker: krec members splitting a topic, a member killed
//! or stopped mid-stream, and a Java consumer in the same group. Each scenario runs with the
//! classic protocol and with KIP-848's consumer protocol.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::support::broker::{broker, unique_topic};
use crate::support::group::{
    print_counts, start_settled_members, wait_all_printed, wait_stable, wait_until, Member,
    PacedProducer, Position,
};

const PARTITIONS: i32 = 6;

/// Three members on a six-partition topic: once the group is settled, what is produced is
/// printed exactly once, each partition by exactly one member.
fn three_members_share_the_partitions(extra: &[&str]) {
    let broker = broker();
    let topic = unique_topic("group-share");
    broker.create_topic(&topic, PARTITIONS as u32, 1);
    let group = format!("{topic}-g");
    let dir = tempfile::tempdir().expect("tempdir");
    let members = start_settled_members(
        &broker.bootstrap,
        &topic,
        &group,
        dir.path(),
        3,
        PARTITIONS,
        extra,
    );
    let refs: Vec<&Member> = members.iter().collect();
    let assignments: Vec<BTreeSet<i32>> = members.iter().map(Member::assignment).collect();

    let produced =
        PacedProducer::start(&broker.bootstrap, &topic, 3000, PARTITIONS, 5000.0).finish();
    assert_eq!(produced.len(), 3000);
    wait_all_printed(&refs, &produced, Duration::from_secs(60));
    let mut members = members;
    for member in &mut members {
        member.stop();
    }
    let refs: Vec<&Member> = members.iter().collect();
    let counts = print_counts(&refs);
    let printed: BTreeSet<Position> = counts.keys().copied().collect();
    assert_eq!(
        printed, produced,
        "the union of the outputs is what was produced"
    );
    let duplicates: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        duplicates.is_empty(),
        "printed more than once: {duplicates:?}"
    );
    for (member, assigned) in members.iter().zip(&assignments) {
        let partitions: BTreeSet<i32> = member.printed().iter().map(|(p, _)| *p).collect();
        assert!(
            partitions.is_subset(assigned),
            "{} printed partitions {partitions:?} outside its assignment {assigned:?}",
            member.name
        );
        assert_eq!(
            assigned.len(),
            2,
            "{}: six partitions over three members",
            member.name
        );
    }
}

#[test]
fn classic_range_members_share_the_partitions() {
    three_members_share_the_partitions(&["--assignor", "range"]);
}

#[test]
fn classic_cooperative_sticky_members_share_the_partitions() {
    three_members_share_the_partitions(&["--assignor", "cooperative-sticky"]);
}

#[test]
fn classic_roundrobin_members_share_the_partitions() {
    three_members_share_the_partitions(&["--assignor", "roundrobin"]);
}

#[test]
fn kip848_members_share_the_partitions() {
    three_members_share_the_partitions(&["--group-protocol", "consumer"]);
}

/// One of three members dies mid-stream (SIGKILL or SIGTERM) while records keep coming. The
/// others take its partitions over: nothing is lost; after SIGKILL the only records printed
/// twice are ones the dead member printed after its last commit of their partition; after
/// SIGTERM none.
fn member_dies_mid_stream(signal: &str, extra: &[&str]) {
    let broker = broker();
    let topic = unique_topic(&format!("group-{}", signal.to_lowercase()));
    broker.create_topic(&topic, PARTITIONS as u32, 1);
    let group = format!("{topic}-g");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut members = start_settled_members(
        &broker.bootstrap,
        &topic,
        &group,
        dir.path(),
        3,
        PARTITIONS,
        extra,
    );

    // About 12 s of records; the member dies after about 4 s.
    let producer = PacedProducer::start(&broker.bootstrap, &topic, 6000, PARTITIONS, 500.0);
    let victim = &members[0];
    wait_until(
        Duration::from_secs(30),
        "the victim to print records",
        || victim.printed().len() > 1000,
    );
    victim.signal(signal);
    let status = members[0].wait(Duration::from_secs(30));
    if signal == "TERM" {
        assert!(status.success(), "SIGTERM is a clean exit: {status}");
    }
    let produced = producer.finish();
    assert_eq!(produced.len(), 6000);
    let refs: Vec<&Member> = members.iter().collect();
    wait_all_printed(&refs, &produced, Duration::from_secs(60));
    let victim_commits = members[0].last_commits();
    let victim_printed = members[0].printed();
    for member in &mut members[1..] {
        member.stop();
    }
    let refs: Vec<&Member> = members.iter().collect();
    let counts = print_counts(&refs);
    let printed: BTreeSet<Position> = counts.keys().copied().collect();
    assert_eq!(printed, produced, "no record lost, none invented");
    let duplicates: Vec<Position> = counts
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(p, _)| *p)
        .collect();
    if signal == "TERM" {
        assert!(
            duplicates.is_empty(),
            "SIGTERM commits everything written: {duplicates:?}"
        );
        return;
    }
    // The bound: per partition, what the victim printed at or after its last commit.
    let victim_set: BTreeSet<Position> = victim_printed.iter().copied().collect();
    let bound = victim_set
        .iter()
        .filter(|(p, o)| *o >= victim_commits.get(p).copied().unwrap_or(0))
        .count();
    for (partition, offset) in &duplicates {
        assert!(
            victim_set.contains(&(*partition, *offset)),
            "duplicate {partition}/{offset} not printed by the victim"
        );
        let committed = victim_commits.get(partition).copied().unwrap_or(0);
        assert!(
            *offset >= committed,
            "{partition}/{offset} printed twice although the victim committed {committed}"
        );
    }
    assert!(
        duplicates.len() <= bound,
        "{} duplicates > bound {bound}",
        duplicates.len()
    );
    eprintln!(
        "SIGKILL: {} duplicates (bound {bound}), victim commits {victim_commits:?}",
        duplicates.len()
    );
}

#[test]
fn classic_sigkill_loses_nothing_and_duplicates_only_after_the_last_commit() {
    member_dies_mid_stream("KILL", &["--assignor", "cooperative-sticky"]);
}

#[test]
fn classic_sigterm_hands_over_without_duplicates() {
    member_dies_mid_stream("TERM", &["--assignor", "range"]);
}

#[test]
fn kip848_sigkill_loses_nothing_and_duplicates_only_after_the_last_commit() {
    member_dies_mid_stream("KILL", &["--group-protocol", "consumer"]);
}

#[test]
fn kip848_sigterm_hands_over_without_duplicates() {
    member_dies_mid_stream("TERM", &["--group-protocol", "consumer"]);
}

/// Kafka's ConsoleConsumer (the Java client) in the same group as a krec member, both with
/// the same assignor: the partitions are split between them and every record is printed once.
fn java_and_krec_share_a_group(java_properties: &[&str], krec_args: &[&str], krec_first: bool) {
    let broker = broker();
    let topic = unique_topic("group-java");
    broker.create_topic(&topic, PARTITIONS as u32, 1);
    let group = format!("{topic}-g");
    let dir = tempfile::tempdir().expect("tempdir");
    let java_out = dir.path().join("java.out");
    let start_java = || {
        std::process::Command::new("bash")
            .arg(&broker.kafka_sh)
            .args(["tool", "--name", &broker.name])
            .arg("org.apache.kafka.tools.consumer.ConsoleConsumer")
            .args([
                "--bootstrap-server",
                "{bootstrap}",
                "--topic",
                &topic,
                "--group",
                &group,
            ])
            .args(
                java_properties
                    .iter()
                    .flat_map(|p| ["--consumer-property", p]),
            )
            .args([
                "--property",
                "print.partition=true",
                "--property",
                "print.offset=true",
            ])
            .stdin(std::process::Stdio::null())
            .stdout(std::fs::File::create(&java_out).expect("java stdout"))
            .stderr(std::fs::File::create(dir.path().join("java.err")).expect("java stderr"))
            .spawn()
            .map(JavaMember)
            .expect("start ConsoleConsumer")
    };
    let extra = krec_args;
    let (mut java, mut krec) = if krec_first {
        let krec = Member::start(&broker.bootstrap, &topic, &group, dir.path(), "krec", extra);
        wait_until(
            Duration::from_secs(30),
            "krec to own every partition",
            || krec.assignment().len() == PARTITIONS as usize,
        );
        (start_java(), krec)
    } else {
        let java = start_java();
        // The JVM takes a few seconds to start and join.
        std::thread::sleep(Duration::from_secs(6));
        let krec = Member::start(&broker.bootstrap, &topic, &group, dir.path(), "krec", extra);
        (java, krec)
    };
    // Settled when krec holds half the partitions and that has not changed for 3 s.
    let mut since: Option<(std::time::Instant, BTreeSet<i32>)> = None;
    wait_until(
        Duration::from_secs(90),
        "the group of krec and Java to settle",
        || {
            let now = krec.assignment();
            match &since {
                Some((at, seen)) if *seen == now && now.len() == 3 => {
                    at.elapsed() > Duration::from_secs(3)
                }
                _ => {
                    since = Some((std::time::Instant::now(), now));
                    false
                }
            }
        },
    );
    let krec_partitions = krec.assignment();
    let produced =
        PacedProducer::start(&broker.bootstrap, &topic, 3000, PARTITIONS, 5000.0).finish();
    let java_printed = || -> Vec<Position> {
        std::fs::read_to_string(&java_out)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let mut fields = line.split('\t');
                let p = fields.next()?.strip_prefix("Partition:")?.parse().ok()?;
                let o = fields.next()?.strip_prefix("Offset:")?.parse().ok()?;
                Some((p, o))
            })
            .collect()
    };
    wait_until(
        Duration::from_secs(60),
        "every record printed by krec or Java",
        || {
            let mut all: BTreeSet<Position> = krec.printed().into_iter().collect();
            all.extend(java_printed());
            produced.is_subset(&all)
        },
    );
    krec.stop();
    java.stop();
    let from_krec = krec.printed();
    let from_java = java_printed();
    let mut all: Vec<Position> = from_krec.iter().chain(&from_java).copied().collect();
    all.sort();
    let unique: BTreeSet<Position> = all.iter().copied().collect();
    assert_eq!(unique, produced, "the union is what was produced");
    assert_eq!(all.len(), unique.len(), "no record printed by both");
    let krec_seen: BTreeSet<i32> = from_krec.iter().map(|(p, _)| *p).collect();
    let java_seen: BTreeSet<i32> = from_java.iter().map(|(p, _)| *p).collect();
    assert_eq!(
        krec_seen, krec_partitions,
        "krec printed exactly its partitions"
    );
    let expected_java: BTreeSet<i32> = (0..PARTITIONS)
        .filter(|p| !krec_partitions.contains(p))
        .collect();
    assert_eq!(
        java_seen, expected_java,
        "Java printed exactly the other partitions"
    );
}

#[test]
fn java_leader_and_krec_share_with_cooperative_sticky() {
    java_and_krec_share_a_group(
        &[
            "partition.assignment.strategy=org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
            "session.timeout.ms=6000",
        ],
        &["--assignor", "cooperative-sticky"],
        false,
    );
}

#[test]
fn krec_leader_and_java_share_with_roundrobin() {
    java_and_krec_share_a_group(
        &[
            "partition.assignment.strategy=org.apache.kafka.clients.consumer.RoundRobinAssignor",
            "session.timeout.ms=6000",
        ],
        &["--assignor", "roundrobin"],
        true,
    );
}

#[test]
fn java_and_krec_share_with_the_kip848_protocol() {
    java_and_krec_share_a_group(
        &["group.protocol=consumer"],
        &["--group-protocol", "consumer"],
        false,
    );
}

/// Static membership: a member with a `group.instance.id` that stops (SIGTERM) and comes
/// back within the session timeout gets its partitions back without a rebalance; the other
/// member's assignment never changes.
fn static_member_restarts_without_a_rebalance(extra: &[&str]) {
    let broker = broker();
    let topic = unique_topic("group-static");
    broker.create_topic(&topic, PARTITIONS as u32, 1);
    let group = format!("{topic}-g");
    let dir = tempfile::tempdir().expect("tempdir");
    let with_id = |id: &'static str| -> Vec<&str> {
        let mut args = vec!["--group-instance-id", id];
        args.extend_from_slice(extra);
        args
    };
    let mut first = Member::start(
        &broker.bootstrap,
        &topic,
        &group,
        dir.path(),
        "a1",
        &with_id("a"),
    );
    let other = Member::start(
        &broker.bootstrap,
        &topic,
        &group,
        dir.path(),
        "b",
        &with_id("b"),
    );
    wait_stable(&[&first, &other], PARTITIONS, Duration::from_secs(60));
    let before = first.assignment();
    let other_changes = other.assignment_changes();
    let produced =
        PacedProducer::start(&broker.bootstrap, &topic, 1200, PARTITIONS, 5000.0).finish();
    wait_all_printed(&[&first, &other], &produced, Duration::from_secs(60));
    first.stop();
    let second = Member::start(
        &broker.bootstrap,
        &topic,
        &group,
        dir.path(),
        "a2",
        &with_id("a"),
    );
    wait_until(
        Duration::from_secs(30),
        "the restarted member's assignment",
        || !second.assignment().is_empty(),
    );
    assert_eq!(
        second.assignment(),
        before,
        "the static member got its partitions back"
    );
    let more = PacedProducer::start(&broker.bootstrap, &topic, 1200, PARTITIONS, 5000.0).finish();
    let all: BTreeSet<Position> = produced.union(&more).copied().collect();
    wait_all_printed(&[&first, &second, &other], &all, Duration::from_secs(60));
    assert_eq!(
        other.assignment_changes(),
        other_changes,
        "the other member saw no rebalance"
    );
    let counts = print_counts(&[&first, &second, &other]);
    let duplicates: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        duplicates.is_empty(),
        "the restart resumed at the commits: {duplicates:?}"
    );
    let mut second = second;
    let mut other = other;
    second.stop();
    other.stop();
}

#[test]
fn classic_static_member_restarts_without_a_rebalance() {
    static_member_restarts_without_a_rebalance(&["--assignor", "range"]);
}

#[test]
fn kip848_static_member_restarts_without_a_rebalance() {
    static_member_restarts_without_a_rebalance(&["--group-protocol", "consumer"]);
}

/// The Java group member (`kafka.sh tool` execs the JVM, so this is its pid). Stopped with
/// SIGTERM so it leaves the group; killed on drop so a failing test never leaves a JVM behind.
struct JavaMember(std::process::Child);

impl JavaMember {
    fn stop(&mut self) {
        let _ = std::process::Command::new("kill")
            .arg(self.0.id().to_string())
            .status();
        let _ = self.0.wait();
    }
}

impl Drop for JavaMember {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}
