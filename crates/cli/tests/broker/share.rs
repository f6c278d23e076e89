//! `krec consume --share-group` (KIP-932) against the real broker: members that split a
//! partition's records, a member beside Kafka's own console share consumer, a member killed
//! holding records, rejected and released records as another member sees them, and a
//! principal without the group's ACL.

use std::collections::BTreeMap;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::support::broker::{
    broker, simple_records, unique_topic, wait_with_timeout, Broker, ProducePlan,
};
use crate::support::group::wait_until;
use crate::support::metrics::{free_port, get, promtool_check, samples};
use crate::support::secure::{run_limited, secure_broker};

/// `offset -> delivery count` of what a member printed with [`LINE`].
type Deliveries = BTreeMap<i64, i64>;

/// The template of the members here: offset, delivery count, value.
const LINE: &str = "%o %d %s\\n";

/// A one-partition topic holding `count` records `value-0`..; its share group `group`, set to
/// start at the earliest offset with each record locked to a member for `lock_ms`.
fn share_topic(broker: &Broker, prefix: &str, count: usize, lock_ms: u32) -> (String, String) {
    let topic = unique_topic(prefix);
    broker.create_topic(&topic, 1, 1);
    let group = format!("{topic}-sg");
    set_group_config(broker, &group, lock_ms);
    produce(broker, &topic, 0, count);
    (topic, group)
}

pub(super) fn set_group_config(broker: &Broker, group: &str, lock_ms: u32) {
    let config =
        format!("share.auto.offset.reset=earliest,share.record.lock.duration.ms={lock_ms}");
    broker.kafka_sh(
        "tool",
        &[
            "org.apache.kafka.tools.ConfigCommand",
            "--bootstrap-server",
            "{bootstrap}",
            "--alter",
            "--entity-type",
            "groups",
            "--entity-name",
            group,
            "--add-config",
            &config,
        ],
    );
}

fn produce(broker: &Broker, topic: &str, from: usize, count: usize) {
    broker.produce_python(&ProducePlan {
        topic: topic.to_owned(),
        compression: "none".to_owned(),
        steps: vec![(None, simple_records(from, count, 1))],
        ..ProducePlan::default()
    });
}

/// `krec consume --share-group GROUP -t TOPIC -f LINE` with `args`.
pub(super) fn member(broker: &Broker, topic: &str, group: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
    command
        .args(["consume", "-b", &broker.bootstrap, "-t", topic])
        .args(["--share-group", group, "-f", LINE])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

pub(super) fn spawn(mut command: Command) -> Child {
    command.spawn().expect("start krec consume --share-group")
}

/// Waits (at most a minute, then kills it) for a member to exit; its output (small enough
/// to wait in the pipe).
fn finish(mut child: Child) -> Output {
    let status = wait_with_timeout(&mut child, Duration::from_secs(60));
    let output = child.wait_with_output().expect("member output");
    assert!(
        status.is_some(),
        "still running after a minute: {}",
        stderr(&output)
    );
    output
}

/// The offsets and delivery counts of a member's output, asserting each offset once.
fn deliveries(output: &Output) -> Deliveries {
    let text = String::from_utf8_lossy(&output.stdout);
    let mut printed = Deliveries::new();
    for line in text.lines() {
        let mut fields = line.split(' ');
        let offset: i64 = fields.next().and_then(|f| f.parse().ok()).expect("offset");
        let count: i64 = fields.next().and_then(|f| f.parse().ok()).expect("count");
        assert_eq!(
            fields.next(),
            Some(format!("value-{offset}").as_str()),
            "{line}"
        );
        assert!(
            printed.insert(offset, count).is_none(),
            "offset {offset} printed twice"
        );
    }
    printed
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn assert_success(output: &Output) {
    assert!(output.status.success(), "{}", stderr(output));
}

/// A member that reads the group until it has been idle for `idle`.
fn drain(broker: &Broker, topic: &str, group: &str, idle: &str) -> Deliveries {
    let output = member(broker, topic, group, &["--idle-timeout", idle])
        .output()
        .expect("run krec");
    assert_success(&output);
    deliveries(&output)
}

#[test]
fn two_members_split_a_partition_and_each_record_is_delivered_once() {
    let broker = broker();
    let (topic, group) = share_topic(&broker, "share-split", 100, 30_000);
    let first = spawn(member(&broker, &topic, &group, &["--idle-timeout", "4s"]));
    let second = spawn(member(&broker, &topic, &group, &["--idle-timeout", "4s"]));
    // More records while both are members: whoever asks first gets them.
    for round in 0..4 {
        produce(&broker, &topic, 100 + round * 25, 25);
    }
    let (first, second) = (finish(first), finish(second));
    assert_success(&first);
    assert_success(&second);
    let (first, second) = (deliveries(&first), deliveries(&second));
    let mut union = first.clone();
    for (offset, count) in &second {
        assert!(
            union.insert(*offset, *count).is_none(),
            "offset {offset} went to both"
        );
    }
    let all: Vec<i64> = (0..200).collect();
    assert_eq!(
        union.keys().copied().collect::<Vec<_>>(),
        all,
        "exactly what was produced"
    );
    assert!(union.values().all(|&count| count == 1), "{union:?}");
    // Every record was accepted: a third member of the group gets none of them.
    assert_eq!(drain(&broker, &topic, &group, "2s"), Deliveries::new());
}

#[test]
fn a_member_beside_kafkas_console_share_consumer_splits_the_records() {
    let broker = broker();
    let (topic, group) = share_topic(&broker, "share-java", 50, 30_000);
    let krec = spawn(member(&broker, &topic, &group, &["--idle-timeout", "6s"]));
    let java = spawn({
        let mut command = Command::new("bash");
        command
            .arg(&broker.kafka_sh)
            .args(["tool", "--name", &broker.name])
            .arg("org.apache.kafka.tools.consumer.ConsoleShareConsumer")
            .args(["--bootstrap-server", "{bootstrap}", "--topic", &topic])
            .args(["--group", &group, "--timeout-ms", "6000"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    });
    for round in 0..5 {
        produce(&broker, &topic, 50 + round * 10, 10);
        std::thread::sleep(Duration::from_millis(300));
    }
    let (krec, java) = (finish(krec), finish(java));
    assert_success(&krec);
    let ours = deliveries(&krec);
    let mut values: Vec<String> = ours.keys().map(|o| format!("value-{o}")).collect();
    values.extend(
        String::from_utf8_lossy(&java.stdout)
            .lines()
            .filter(|l| l.starts_with("value-"))
            .map(str::to_owned),
    );
    values.sort_by_key(|v| v[6..].parse::<usize>().expect("value-N"));
    let all: Vec<String> = (0..100).map(|i| format!("value-{i}")).collect();
    assert_eq!(
        values,
        all,
        "each record once, by one of them; java: {}",
        stderr(&java)
    );
    assert!(ours.values().all(|&count| count == 1), "{ours:?}");
}

#[test]
fn records_a_killed_member_held_reach_another_member_delivered_twice() {
    let broker = broker();
    // The broker's shortest lock: the killed member's records come back within it.
    let (topic, group) = share_topic(&broker, "share-kill", 0, 15_000);
    // Values large enough that the member blocks writing into a pipe nobody reads yet,
    // holding acquired records it has not written.
    let records: Vec<_> = simple_records(0, 400, 1)
        .into_iter()
        .map(|mut r| {
            let mut value = r.value.take().unwrap();
            value.extend(std::iter::repeat_n(b'.', 2000));
            r.value = Some(value);
            r
        })
        .collect();
    broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "none".to_owned(),
        steps: vec![(None, records)],
        ..ProducePlan::default()
    });
    let mut held = spawn(member(&broker, &topic, &group, &[]));
    // Its first line: it has fetched (every record, in one acquired range) and is writing.
    let mut stdout = std::io::BufReader::new(held.stdout.take().expect("stdout"));
    let mut text = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut text).expect("a first line");
    std::thread::sleep(Duration::from_secs(1));
    let killed = Command::new("kill")
        .args(["-KILL", &held.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let _ = wait_with_timeout(&mut held, Duration::from_secs(10));
    std::io::Read::read_to_string(&mut stdout, &mut text).expect("the rest of its output");
    let written: Vec<i64> = text
        .lines()
        .filter(|l| l.ends_with('.'))
        .filter_map(|l| l.split(' ').next()?.parse().ok())
        .collect();
    assert!(written.len() < 400, "the member was still holding records");

    // Every unwritten record comes back; those written but not yet acknowledged may too.
    let output = member(
        &broker,
        &topic,
        &group,
        &["--idle-timeout", "20s", "-c", "400"],
    )
    .output()
    .expect("run krec");
    assert_success(&output);
    let mut again = Deliveries::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let mut fields = line.split(' ');
        let offset: i64 = fields.next().and_then(|f| f.parse().ok()).expect("offset");
        let count: i64 = fields.next().and_then(|f| f.parse().ok()).expect("count");
        assert!(
            again.insert(offset, count).is_none(),
            "offset {offset} twice"
        );
    }
    for offset in 0..400 {
        assert!(
            written.contains(&offset) || again.contains_key(&offset),
            "offset {offset} lost"
        );
    }
    let unwritten: Vec<i64> = (0..400).filter(|o| !written.contains(o)).collect();
    assert!(
        unwritten.iter().all(|o| again.get(o) == Some(&2)),
        "the held records come back at their second delivery: {again:?}"
    );
}

#[test]
fn rejected_records_never_come_back_and_released_ones_come_back_at_once() {
    let broker = broker();
    // A lock longer than the members here live: only a release hands records on in time.
    let (topic, group) = share_topic(&broker, "share-reject", 10, 60_000);
    // Plain values are not in the Schema Registry's framing: undecodable, so rejected (the
    // framing fails before the registry is asked).
    let rejecting = member(
        &broker,
        &topic,
        &group,
        &[
            "-s",
            "value=json",
            "-r",
            "http://127.0.0.1:9/",
            "--on-corrupt",
            "skip",
        ],
    )
    .args(["--idle-timeout", "3s", "--stats", "60"])
    .output()
    .expect("run krec");
    let report = stderr(&rejecting);
    assert_eq!(rejecting.status.code(), Some(3), "{report}");
    assert!(
        report.contains("10 undecodable records skipped"),
        "{report}"
    );
    assert!(
        report.contains("0 accepted, 0 released, 10 rejected"),
        "{report}"
    );
    assert_eq!(
        drain(&broker, &topic, &group, "3s"),
        Deliveries::new(),
        "never again"
    );

    let (topic, group) = share_topic(&broker, "share-release", 20, 60_000);
    let counted = member(&broker, &topic, &group, &["-c", "5", "--stats", "60"])
        .output()
        .expect("run krec");
    assert_success(&counted);
    let report = stderr(&counted);
    assert!(
        report.contains("5 accepted, 15 released, 0 rejected"),
        "{report}"
    );
    let first = deliveries(&counted);
    assert_eq!(first, (0..5).map(|o| (o, 1)).collect::<Deliveries>());
    let rest = drain(&broker, &topic, &group, "3s");
    assert_eq!(
        rest,
        (5..20).map(|o| (o, 2)).collect::<Deliveries>(),
        "released at -c's exit, delivered again at once"
    );
}

#[test]
fn a_member_without_read_on_the_share_group_fails_naming_it() {
    let broker = secure_broker();
    let alice = broker.alice_properties("SASL_SSL", Some("PLAIN"));
    let prefix = broker.get("ACL_PREFIX");
    let topic = unique_topic(&format!("{prefix}share-acl"));
    broker.admin.create_topic(&topic, 1, 1);
    let group = unique_topic("share-not-alices");
    let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
    command.args(["consume", "-b", broker.get("SASL_SSL"), "-t", &topic]);
    alice.iter().for_each(|p| {
        command.args(["-X", p]);
    });
    command.args(["--share-group", &group]);
    let (output, _) = run_limited(command, Duration::from_secs(20));
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("GROUP_AUTHORIZATION_FAILED")
            && text.contains(&format!("lacks the ACL Read on Group:{group}")),
        "{text}"
    );
}

#[test]
fn metrics_count_the_acknowledgements_and_health_answers() {
    let broker = broker();
    let (topic, group) = share_topic(&broker, "share-metrics", 12, 30_000);
    let address = format!("127.0.0.1:{}", free_port());
    let running = spawn(member(
        &broker,
        &topic,
        &group,
        &["--metrics", &address, "--idle-timeout", "4s"],
    ));
    let url = format!("http://{address}");
    let mut text = String::new();
    wait_until(Duration::from_secs(20), "12 records accepted", || {
        text = get(&format!("{url}/metrics"), &[]).map_or_else(String::new, |(_, t)| t);
        samples(&text, "krec_share_acknowledgements_total").contains(&("type=\"accept\"", 12.0))
    });
    assert_eq!(
        samples(&text, "krec_share_acknowledgements_total"),
        [
            ("type=\"accept\"", 12.0),
            ("type=\"release\"", 0.0),
            ("type=\"reject\"", 0.0)
        ]
    );
    assert_eq!(samples(&text, "krec_share_records_in_flight"), [("", 0.0)]);
    let (accepted, report) = promtool_check(&text);
    assert!(accepted, "promtool check metrics: {report}\n{text}");
    assert_eq!(
        get(&format!("{url}/health"), &[]).map(|(s, _)| s),
        Some(200)
    );
    let output = finish(running);
    assert_success(&output);
    assert_eq!(deliveries(&output).len(), 12);
}

#[test]
fn flags_without_meaning_for_a_share_group_exit_2_before_connecting() {
    // Port 9 (discard) never answers Kafka: these must fail before trying.
    for (flags, says) in [
        (&["-e"][..], "a share group has no end per member"),
        (&["-G", "g"][..], "--share-group and -G"),
        (&["-o", "beginning"][..], "not at a given offset"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_krec"))
            .args([
                "consume",
                "-b",
                "127.0.0.1:9",
                "-t",
                "t",
                "--share-group",
                "s",
            ])
            .args(flags)
            .stdin(Stdio::null())
            .output()
            .expect("run krec");
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{flags:?}: {text}");
        assert!(text.contains(says), "{flags:?}: {text}");
    }
}
