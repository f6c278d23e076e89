//! Subscriptions against the real broker: `-t` lists and `^` patterns, without a group and
//! with one (classic and KIP-848): topics created before the start and while krec runs, a
//! topic deleted while krec reads it, and internal topics that a pattern must not take.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::broker::{broker, unique_topic, Broker};
use crate::support::group::wait_until;

/// A record as printed by `-f '%t %p %o %s\n'`: topic, partition, offset, value.
type Printed = (String, i32, i64, String);

/// Record values, unique within a test (the producer's acknowledgements do not always carry
/// the offset: an idempotent retry of a batch already written is acknowledged without one).
type Values = BTreeSet<String>;

/// The format every run here prints with.
const FORMAT: &str = "%t %p %o %s\\n";

/// One `krec consume` run in the background, its output and log in files.
struct Reader {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Reader {
    fn start(bootstrap: &str, dir: &Path, name: &str, log: &str, args: &[&str]) -> Reader {
        let stdout = dir.join(format!("{name}.out"));
        let stderr = dir.join(format!("{name}.err"));
        let child = Command::new(env!("CARGO_BIN_EXE_krec"))
            .args(["consume", "-b", bootstrap, "-f", FORMAT])
            .args(args)
            .env("RUST_LOG", log)
            .stdin(Stdio::null())
            .stdout(File::create(&stdout).expect("stdout file"))
            .stderr(File::create(&stderr).expect("stderr file"))
            .spawn()
            .expect("start krec consume");
        Reader {
            child,
            stdout,
            stderr,
        }
    }

    fn printed(&self) -> Vec<Printed> {
        // Lossy: a topic that should not be read may well hold binary values.
        let bytes = std::fs::read(&self.stdout).unwrap_or_default();
        parse_printed(&String::from_utf8_lossy(&bytes))
    }

    fn of_topic(&self, topic: &str) -> Values {
        self.printed()
            .into_iter()
            .filter(|(t, ..)| t == topic)
            .map(|(.., value)| value)
            .collect()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// Waits until every value of `expected` in `topic` has been printed.
    fn wait_for(&mut self, topic: &str, expected: &Values, timeout: Duration) {
        wait_until(timeout, &format!("{topic} read"), || {
            assert!(self.running(), "krec exited early:\n{}", self.log());
            expected.is_subset(&self.of_topic(topic))
        });
    }

    /// SIGTERM, and a clean exit.
    fn stop(&mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
        self.wait_success(Duration::from_secs(30));
    }

    fn wait_success(&mut self, timeout: Duration) {
        let status = crate::support::broker::wait_with_timeout(&mut self.child, timeout);
        assert!(
            status.is_some_and(|s| s.success()),
            "krec did not exit cleanly: {status:?}\n{}",
            self.log()
        );
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads `topic partition offset value` lines (other lines are not records).
fn parse_printed(text: &str) -> Vec<Printed> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let topic = fields.next()?.to_owned();
            let partition = fields.next()?.parse().ok()?;
            let offset = fields.next()?.parse().ok()?;
            let value = fields.next()?.to_owned();
            Some((topic, partition, offset, value))
        })
        .collect()
}

/// Creates topics `(name, partitions)`, deletes topics, then produces `(topic, count, rate
/// per second)` (values `TAG-N`, spread over the partitions), with confluent-kafka
/// (librdkafka) in one process; returns the acknowledged values by topic.
const ADMIN_AND_PRODUCE: &str = r#"
import json, sys, time
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
plan = json.loads(sys.argv[1])
conf = {"bootstrap.servers": plan["bootstrap"]}
admin = AdminClient(conf)
for name, partitions in plan["create"]:
    admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=30)[name].result()
for name in plan["delete"]:
    admin.delete_topics([name], operation_timeout=30)[name].result()
# A topic just created may take a moment to reach the metadata a producer reads.
for name, partitions in plan["create"]:
    deadline = time.time() + 30
    while True:
        topic = admin.list_topics(name, timeout=10).topics.get(name)
        if topic is not None and topic.error is None and len(topic.partitions) == partitions:
            break
        if time.time() > deadline:
            sys.exit("topic %s did not appear" % name)
        time.sleep(0.05)
p = Producer(dict(conf, **{"linger.ms": 5, "enable.idempotence": True, "acks": "all"}))
acked = []
def report(err, msg):
    if err is not None:
        sys.exit("delivery failed: %s" % err)
    acked.append((msg.topic(), msg.value().decode()))
n = 0
for name, count, rate in plan["produce"]:
    start = time.time()
    for i in range(count):
        n += 1
        p.produce(name, value=("%s-%d" % (plan["tag"], n)).encode(), on_delivery=report)
        p.poll(0)
        ahead = start + i / rate - time.time()
        if ahead > 0:
            time.sleep(ahead)
p.flush(60)
for topic, value in acked:
    print(topic, value)
"#;

/// Runs [`ADMIN_AND_PRODUCE`].
fn admin_and_produce(
    broker: &Broker,
    create: &[(&str, i32)],
    delete: &[&str],
    produce: &[(&str, usize, f64)],
) -> BTreeMap<String, Values> {
    let plan = serde_json::json!({
        "bootstrap": broker.bootstrap,
        "tag": unique_topic("value"),
        "create": create,
        "delete": delete,
        "produce": produce,
    });
    let output = Command::new("/usr/bin/python3")
        .args(["-c", ADMIN_AND_PRODUCE, &plan.to_string()])
        .stdin(Stdio::null())
        .output()
        .expect("run /usr/bin/python3 (python3-confluent-kafka, scripts/install-deps.sh)");
    assert!(
        output.status.success(),
        "admin/producer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut acked: BTreeMap<String, Values> = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let (topic, value) = line.split_once(' ').expect("`topic value`");
        acked
            .entry(topic.to_owned())
            .or_default()
            .insert(value.to_owned());
    }
    for (topic, count, _) in produce {
        assert_eq!(
            acked.get(*topic).map_or(0, BTreeSet::len),
            *count,
            "{topic}"
        );
    }
    acked
}

/// Creates each `(topic, partitions)` and writes `count` records into each, at once.
fn topics_with_records(
    broker: &Broker,
    topics: &[(&str, i32)],
    count: usize,
) -> BTreeMap<String, Values> {
    let produce: Vec<(&str, usize, f64)> = topics.iter().map(|(t, _)| (*t, count, 1e6)).collect();
    admin_and_produce(broker, topics, &[], &produce)
}

/// The values printed of each topic, asserting no position and no value came twice.
fn by_topic_exactly_once(printed: &[Printed]) -> BTreeMap<String, Values> {
    let mut positions = BTreeSet::new();
    let mut topics: BTreeMap<String, Values> = BTreeMap::new();
    for (topic, partition, offset, value) in printed {
        let fresh = positions.insert((topic.clone(), *partition, *offset));
        assert!(fresh, "{topic}/{partition}@{offset} printed twice");
        let fresh = topics
            .entry(topic.clone())
            .or_default()
            .insert(value.clone());
        assert!(fresh, "{topic}: {value} printed twice");
    }
    topics
}

/// Lines of the log that mention `text`.
fn lines_with(log: &str, text: &str) -> usize {
    log.lines().filter(|line| line.contains(text)).count()
}

#[test]
fn several_topics_without_a_group_are_read_exactly_once_until_their_ends() {
    let broker = broker();
    let prefix = unique_topic("sub-list");
    let names: Vec<String> = ["a", "b", "c", "d"]
        .iter()
        .map(|t| format!("{prefix}-{t}"))
        .collect();
    let specs: Vec<(&str, i32)> = names
        .iter()
        .zip(1..)
        .map(|(t, p)| (t.as_str(), p))
        .collect();
    let mut expected = topics_with_records(&broker, &specs, 30);
    // The list and the pattern leave the last topic out.
    let left_out = expected.remove(&names[3]).expect("produced");
    for list in [names[..3].join(","), format!("^{prefix}-[abc]$")] {
        let output = broker.consume(&list, &["-e", "-f", FORMAT]);
        assert!(
            output.status.success(),
            "-t {list}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let printed = parse_printed(&String::from_utf8_lossy(&output.stdout));
        assert_eq!(by_topic_exactly_once(&printed), expected, "-t {list}");
    }
    let all = broker.consume(&format!("^{prefix}-"), &["-e", "-f", "%t\\n"]);
    assert!(all.status.success());
    let left_out_lines = String::from_utf8_lossy(&all.stdout)
        .lines()
        .filter(|line| *line == names[3])
        .count();
    assert_eq!(left_out_lines, left_out.len());
}

#[test]
fn argument_errors_come_before_connecting_with_exit_status_2() {
    // Nothing listens on port 1: getting past the arguments would be a connection error.
    for (topics, extra, expected) in [
        ("a,b", vec!["-p", "0"], "-p needs exactly one topic name"),
        ("^a.*", vec!["-p", "0"], "-p needs exactly one topic name"),
        ("ok,^logs-(", vec![], "invalid topic pattern: \"^logs-(\""),
        ("^a", vec!["--metadata-refresh-ms", "0"], "must be positive"),
    ] {
        let output = crate::support::broker::krec_consume_command("127.0.0.1:1", topics, &extra)
            .output()
            .expect("run krec");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "-t {topics} {extra:?}: {stderr}"
        );
        assert!(stderr.contains(expected), "-t {topics} {extra:?}: {stderr}");
    }
}

#[test]
fn a_pattern_takes_topics_created_before_and_while_it_runs_but_no_internal_topic() {
    let broker = broker();
    let prefix = unique_topic("sub-grow");
    let dir = tempfile::tempdir().expect("tempdir");
    let first = format!("{prefix}-a");
    let first_records = topics_with_records(&broker, &[(&first, 2)], 20)
        .remove(&first)
        .unwrap();
    // A group commit, so that __consumer_offsets exists and holds records.
    let group = broker.consume(&first, &["-G", &format!("{prefix}-g"), "-e"]);
    assert!(
        group.status.success(),
        "{}",
        String::from_utf8_lossy(&group.stderr)
    );

    let pattern = format!("^(__consumer_offsets|{prefix}-)");
    let mut reader = Reader::start(
        &broker.bootstrap,
        dir.path(),
        "grow",
        "warn,krec_consumer::refresh=info",
        &["-t", &pattern, "--metadata-refresh-ms", "300"],
    );
    reader.wait_for(&first, &first_records, Duration::from_secs(30));

    // A topic created mid-run, with a producer writing to it while krec finds it: read from
    // the start policy (the beginning), so nothing written before it was found is missed.
    let second = format!("{prefix}-b");
    let second_records = admin_and_produce(&broker, &[(&second, 3)], &[], &[(&second, 60, 60.0)])
        .remove(&second)
        .unwrap();
    reader.wait_for(&second, &second_records, Duration::from_secs(30));
    reader.stop();

    let topics: BTreeSet<String> = reader.printed().into_iter().map(|(t, ..)| t).collect();
    let wanted: BTreeSet<String> = [first.clone(), second.clone()].into_iter().collect();
    assert_eq!(topics, wanted, "the pattern takes no internal topic");
    let printed = by_topic_exactly_once(&reader.printed());
    let expected: BTreeMap<String, Values> =
        [(first, first_records), (second.clone(), second_records)]
            .into_iter()
            .collect();
    assert_eq!(printed, expected, "only the two topics, each record once");
    let log = reader.log();
    assert_eq!(lines_with(&log, "__consumer_offsets"), 0, "{log}");
    assert_eq!(lines_with(&log, &format!("topic={second}")), 1, "{log}");
}

#[test]
fn a_deleted_topic_is_dropped_with_one_log_line_and_the_others_go_on() {
    let broker = broker();
    let prefix = unique_topic("sub-del");
    let dir = tempfile::tempdir().expect("tempdir");
    let kept = format!("{prefix}-kept");
    let gone = format!("{prefix}-gone");
    let mut records = topics_with_records(&broker, &[(&kept, 2), (&gone, 2)], 20);
    let mut kept_records = records.remove(&kept).unwrap();
    let gone_records = records.remove(&gone).unwrap();
    // A long refresh: the coordinator's finding the topic missing is what sets the drop off.
    let mut reader = Reader::start(
        &broker.bootstrap,
        dir.path(),
        "del",
        "warn",
        &[
            "-t",
            &format!("^{prefix}-"),
            "--metadata-refresh-ms",
            "60000",
        ],
    );
    reader.wait_for(&gone, &gone_records, Duration::from_secs(30));
    reader.wait_for(&kept, &kept_records, Duration::from_secs(30));

    let more = admin_and_produce(&broker, &[], &[&gone], &[(&kept, 20, 1e6)]);
    kept_records.extend(more[&kept].iter().cloned());
    wait_until(Duration::from_secs(30), "the drop logged", || {
        lines_with(&reader.log(), &gone) > 0
    });
    reader.wait_for(&kept, &kept_records, Duration::from_secs(30));
    // No error loop, no exit, once the topic is dropped.
    std::thread::sleep(Duration::from_secs(1));
    assert!(reader.running(), "krec exited:\n{}", reader.log());
    reader.stop();

    let log = reader.log();
    assert_eq!(
        lines_with(&log, &gone),
        1,
        "one line for the deleted topic:\n{log}"
    );
    assert!(log.contains("deleted"), "{log}");
    let printed = by_topic_exactly_once(&reader.printed());
    assert_eq!(printed.get(&kept), Some(&kept_records));
    assert_eq!(printed.get(&gone), Some(&gone_records));
}

/// A group member on `topics` (`{prefix}-re-` topics by a pattern, and maybe a `named` one):
/// it reads the matched topics, and with `new_topic` one the pattern matches once created
/// while it runs, each record exactly once.
fn a_group_member_follows_its_pattern(
    prefix: &str,
    topics: &str,
    named: Option<&str>,
    new_topic: bool,
    extra: &[&str],
) {
    let broker = broker();
    let dir = tempfile::tempdir().expect("tempdir");
    let first = format!("{prefix}-re-a");
    let mut specs = vec![(first.as_str(), 2)];
    specs.extend(named.map(|topic| (topic, 1)));
    let mut expected = topics_with_records(&broker, &specs, 20);
    let mut args = vec![
        "-t",
        topics,
        "-G",
        prefix,
        "--metadata-refresh-ms",
        "300",
        "--heartbeat-interval-ms",
        "500",
        "--session-timeout-ms",
        "6000",
        "--threads",
        "1",
    ];
    args.extend_from_slice(extra);
    let mut member = Reader::start(
        &broker.bootstrap,
        dir.path(),
        "member",
        "warn,krec_consumer::group=info",
        &args,
    );
    for (topic, records) in &expected {
        member.wait_for(topic, records, Duration::from_secs(60));
    }
    if new_topic {
        let second = format!("{prefix}-re-b");
        let produced = admin_and_produce(&broker, &[(&second, 2)], &[], &[(&second, 40, 40.0)]);
        member.wait_for(&second, &produced[&second], Duration::from_secs(60));
        expected.extend(produced);
        let log = member.log();
        let rejoined = log.lines().any(|line| {
            line.contains("partitions assigned") && line.contains(&format!("{second}/0"))
        });
        assert!(rejoined, "{log}");
    }
    member.stop();
    assert_eq!(by_topic_exactly_once(&member.printed()), expected);
}

#[test]
fn a_classic_member_rejoins_when_its_pattern_matches_a_new_topic() {
    let prefix = unique_topic("sub-classic");
    a_group_member_follows_its_pattern(&prefix, &format!("^{prefix}-re-"), None, true, &[]);
}

/// The broker evaluates the pattern (krec never names the `-re-` topics to it) together with
/// the name. (A topic created later is the broker's to find, at least ten seconds after its
/// last look in Kafka 4.1: left out to keep the suite short.)
#[test]
fn a_kip848_member_sends_its_pattern_to_the_broker_with_its_names() {
    let prefix = unique_topic("sub-848");
    let named = format!("{prefix}-named");
    a_group_member_follows_its_pattern(
        &prefix,
        &format!("{named},^{prefix}-re-"),
        Some(&named),
        false,
        &["--group-protocol", "consumer"],
    );
}
