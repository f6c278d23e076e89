//! `krec groups` against Kafka's own tools from the same jars
//! (`ConsumerGroupCommand --describe`, `ShareGroupCommand --describe`): the same groups, the
//! same committed (or start) offsets and the same lag, for a classic group, a KIP-848 group and
//! a share group, each left with records to go.

use std::collections::BTreeMap;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::broker::{broker, simple_records, unique_topic, Broker, ProducePlan};
use crate::support::group::start_settled_members;
use crate::support::secure::{run_limited, secure_broker};

const PARTITIONS: i32 = 2;
const RECORDS: usize = 20;

/// Per `(topic, partition)`: the group's offset and the lag (None where a tool shows "-").
type Rows = BTreeMap<(String, i32), (Option<i64>, Option<i64>)>;

fn krec_groups(bootstrap: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(["groups", "-b", bootstrap])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run krec groups")
}

fn krec_json(bootstrap: &str, args: &[&str]) -> Value {
    let output = krec_groups(bootstrap, args);
    assert!(
        output.status.success(),
        "krec groups {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("one JSON document")
}

/// A topic of two partitions with ten records each.
fn topic_with_records(broker: &Broker, prefix: &str) -> String {
    let topic = unique_topic(prefix);
    broker.create_topic(&topic, PARTITIONS as u32, 1);
    broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "none".to_owned(),
        steps: vec![(None, simple_records(0, RECORDS, PARTITIONS))],
        ..ProducePlan::default()
    });
    topic
}

/// Reads a `--describe` table by its heading: rows of `group` with `offset_column` and LAG.
fn kafka_rows(text: &str, group: &str, offset_column: &str) -> Rows {
    let mut lines = text.lines().skip_while(|l| !l.starts_with("GROUP "));
    let heading: Vec<&str> = lines
        .next()
        .expect("a table heading")
        .split_whitespace()
        .collect();
    let column = |name: &str| heading.iter().position(|h| *h == name).expect(name);
    let (topic, partition) = (column("TOPIC"), column("PARTITION"));
    let (offset, lag) = (column(offset_column), column("LAG"));
    let number = |cell: &str| (cell != "-").then(|| cell.parse::<i64>().expect(cell));
    lines
        .map(|l| l.split_whitespace().collect::<Vec<&str>>())
        .filter(|cells| cells.first() == Some(&group))
        .map(|cells| {
            let key = (cells[topic].to_owned(), cells[partition].parse().unwrap());
            (key, (number(cells[offset]), number(cells[lag])))
        })
        .collect()
}

/// krec's rows, checking on the way that each lag is the end minus the offset.
fn krec_rows(described: &Value, offset_key: &str) -> Rows {
    let rows = described["partitions"].as_array().expect("partitions");
    rows.iter()
        .map(|p| {
            let (offset, end, lag) = (
                p[offset_key].as_i64(),
                p["end_offset"].as_i64(),
                p["lag"].as_i64(),
            );
            assert_eq!(end, Some((RECORDS as i32 / PARTITIONS) as i64), "{p}");
            assert_eq!(lag, offset.map(|o| end.unwrap() - o), "{p}");
            let key = (
                p["topic"].as_str().unwrap().to_owned(),
                p["partition"].as_i64().unwrap() as i32,
            );
            (key, (offset, lag))
        })
        .collect()
}

/// A group of either protocol commits part of the topic with `krec consume -G -c`, then krec
/// and ConsumerGroupCommand must agree on every partition.
fn krec_member_group_matches_kafka(prefix: &str, protocol: &str, kafka_type: &str) {
    let broker = broker();
    let topic = topic_with_records(&broker, prefix);
    let group = format!("{topic}-g");
    let consumed = broker.consume(
        &topic,
        &[
            "-G",
            &group,
            "-c",
            "5",
            "--reset",
            "earliest",
            "--group-protocol",
            protocol,
        ],
    );
    assert!(
        consumed.status.success(),
        "{}",
        String::from_utf8_lossy(&consumed.stderr)
    );

    let described = krec_json(&broker.bootstrap, &[&group, "-J"]);
    assert_eq!(described["type"], protocol, "{described}");
    assert_eq!(described["state"], "Empty", "{described}");
    let ours = krec_rows(&described, "committed_offset");
    let kafka = broker.kafka_sh(
        "tool",
        &[
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            "--bootstrap-server",
            "{bootstrap}",
            "--describe",
            "--group",
            &group,
        ],
    );
    assert_eq!(
        ours,
        kafka_rows(&kafka, &group, "CURRENT-OFFSET"),
        "{kafka}"
    );
    let lag: i64 = ours.values().filter_map(|(_, lag)| *lag).sum();
    assert!(lag > 0, "records left: {ours:?}");

    // The same group in both lists, with the same type.
    let listed = krec_groups(&broker.bootstrap, &["--type", protocol, "-J"]);
    let line = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON line"))
        .find(|l| l["group"] == group.as_str())
        .unwrap_or_else(|| panic!("{group} not listed"));
    assert_eq!(
        (line["type"].as_str(), line["state"].as_str()),
        (Some(protocol), Some("Empty"))
    );
    let kafka_list = broker.kafka_sh(
        "tool",
        &[
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            "--bootstrap-server",
            "{bootstrap}",
            "--list",
            "--type",
        ],
    );
    let kafka_line = kafka_list
        .lines()
        .find(|l| l.starts_with(&format!("{group} ")))
        .expect("listed by Kafka");
    assert!(
        kafka_line.split_whitespace().any(|cell| cell == kafka_type),
        "{kafka_line}"
    );
}

#[test]
fn a_classic_group_has_the_offsets_and_lag_kafka_shows() {
    krec_member_group_matches_kafka("groups-classic", "classic", "Classic");
}

#[test]
fn a_kip848_group_has_the_offsets_and_lag_kafka_shows() {
    krec_member_group_matches_kafka("groups-kip848", "consumer", "Consumer");
}

#[test]
fn a_share_group_has_the_start_offsets_and_lag_kafka_shows() {
    let broker = broker();
    let topic = topic_with_records(&broker, "groups-share");
    let group = format!("{topic}-g");
    let tool = |class: &str, args: &[&str]| {
        let mut all = vec![class, "--bootstrap-server", "{bootstrap}"];
        all.extend(args);
        broker.kafka_sh("tool", &all)
    };
    tool(
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--alter",
            "--entity-type",
            "groups",
            "--entity-name",
            &group,
            "--add-config",
            "share.auto.offset.reset=earliest",
        ],
    );
    // The console share consumer accepts the records it prints and releases the rest.
    tool(
        "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
        &["--topic", &topic, "--group", &group, "--max-messages", "3"],
    );

    let described = krec_json(&broker.bootstrap, &[&group, "-J"]);
    assert_eq!(described["type"], "share", "{described}");
    let ours = krec_rows(&described, "start_offset");
    let kafka = tool(
        "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
        &["--describe", "--group", &group],
    );
    assert_eq!(ours, kafka_rows(&kafka, &group, "START-OFFSET"), "{kafka}");
    let lag: i64 = ours.values().filter_map(|(_, lag)| *lag).sum();
    let started: usize = ours.values().filter(|(offset, _)| offset.is_some()).count();
    assert!(started > 0 && lag > 0, "{ours:?}");

    let listed = krec_groups(&broker.bootstrap, &["--type", "share"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    let row = text
        .lines()
        .find(|l| l.starts_with(&format!("{group} ")))
        .expect("listed");
    assert_eq!(row.split_whitespace().nth(1), Some("share"), "{text}");
    let kafka_list = tool(
        "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
        &["--list"],
    );
    assert!(
        kafka_list.lines().any(|l| l.trim() == group),
        "{kafka_list}"
    );
}

#[test]
fn an_unknown_group_is_named_and_misused_flags_exit_2() {
    let broker = broker();
    let group = unique_topic("groups-none");
    let output = krec_groups(&broker.bootstrap, &[&group]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("group {group:?}: error 69 (GROUP_ID_NOT_FOUND)")),
        "{stderr}"
    );
    let output = krec_groups(&broker.bootstrap, &["--isolation", "read_committed"]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The members table of `--describe --members --verbose`: per member id, its host, client id
/// and current assignment (`topic:0,1`).
fn kafka_members(text: &str) -> BTreeMap<String, (String, String, String)> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with("GROUP "));
    let heading: Vec<&str> = lines
        .next()
        .expect("a heading")
        .split_whitespace()
        .collect();
    let column = |name: &str| heading.iter().position(|h| *h == name).expect(name);
    let (id, host, client) = (column("CONSUMER-ID"), column("HOST"), column("CLIENT-ID"));
    let assignment = column("CURRENT-ASSIGNMENT");
    lines
        .map(|l| l.split_whitespace().collect::<Vec<&str>>())
        .filter(|cells| cells.len() == heading.len())
        .map(|c| {
            let fields = (
                c[host].to_owned(),
                c[client].to_owned(),
                c[assignment].to_owned(),
            );
            (c[id].to_owned(), fields)
        })
        .collect()
}

/// krec's members in the same shape.
fn krec_members(described: &Value) -> BTreeMap<String, (String, String, String)> {
    let members = described["members"].as_array().expect("members");
    members
        .iter()
        .map(|m| {
            let mut by_topic: BTreeMap<&str, Vec<String>> = BTreeMap::new();
            for tp in m["assignment"].as_array().expect("assignment") {
                let topic = tp["topic"].as_str().unwrap();
                by_topic
                    .entry(topic)
                    .or_default()
                    .push(tp["partition"].to_string());
            }
            let assigned: Vec<String> = by_topic
                .iter()
                .map(|(t, ps)| format!("{t}:{}", ps.join(",")))
                .collect();
            let text = |key: &str| m[key].as_str().unwrap().to_owned();
            let fields = (text("host"), text("client_id"), assigned.join(";"));
            (text("member_id"), fields)
        })
        .collect()
}

#[test]
fn live_members_have_the_ids_hosts_and_assignments_kafka_shows() {
    let broker = broker();
    let topic = topic_with_records(&broker, "groups-members");
    let dir = tempfile::tempdir().expect("temp dir");
    for protocol in ["classic", "consumer"] {
        let group = format!("{topic}-{protocol}");
        let extra = ["--group-protocol", protocol];
        let mut members = start_settled_members(
            &broker.bootstrap,
            &topic,
            &group,
            dir.path(),
            1,
            PARTITIONS,
            &extra,
        );
        let described = krec_json(&broker.bootstrap, &[&group, "-J"]);
        assert_eq!(described["state"], "Stable", "{described}");
        let ours = krec_members(&described);
        let kafka = broker.kafka_sh(
            "tool",
            &[
                "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                "--bootstrap-server",
                "{bootstrap}",
                "--describe",
                "--members",
                "--verbose",
                "--group",
                &group,
            ],
        );
        assert_eq!(ours, kafka_members(&kafka), "{protocol}: {kafka}");
        assert_eq!(ours.len(), 1, "{ours:?}");
        let owner = ours.keys().next().unwrap();
        for partition in described["partitions"].as_array().unwrap() {
            assert_eq!(
                partition["member_id"].as_str(),
                Some(owner.as_str()),
                "{partition}"
            );
        }
        members[0].stop();
    }
}

#[test]
fn a_group_the_principal_may_not_describe_names_the_missing_acl() {
    let broker = secure_broker();
    let alice = broker.alice_properties("SASL_SSL", Some("PLAIN"));
    let listener = broker.get("SASL_SSL");
    let krec = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
        command.args(["groups", "-b", listener]);
        alice.iter().for_each(|p| {
            command.args(["-X", p]);
        });
        command.args(args);
        run_limited(command, Duration::from_secs(10)).0
    };
    let output = krec(&["not-alices-group"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("GROUP_AUTHORIZATION_FAILED")
            && stderr.contains("lacks the ACL Describe on Group:not-alices-group"),
        "{stderr}"
    );
    // Two groups with commits, made by the admin listener's super user: alice may describe
    // the one under her prefix only, and sees only that one in the list.
    let prefix = broker.get("ACL_PREFIX");
    let topic = topic_with_records(&broker.admin, &format!("{prefix}groups"));
    let hers = format!("{topic}-g");
    let other = unique_topic("groups-other");
    for group in [&hers, &other] {
        let consumed = broker
            .admin
            .consume(&topic, &["-G", group, "-c", "1", "--reset", "earliest"]);
        assert!(
            consumed.status.success(),
            "{}",
            String::from_utf8_lossy(&consumed.stderr)
        );
    }
    let listed = krec(&["-J"]);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let names: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("JSON line")["group"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(names.contains(&hers), "{names:?}");
    assert!(names.iter().all(|g| g.starts_with(prefix)), "{names:?}");
    let described = krec(&[&hers, "-J"]);
    assert!(
        described.status.success(),
        "{}",
        String::from_utf8_lossy(&described.stderr)
    );
    let described: Value = serde_json::from_slice(&described.stdout).expect("JSON");
    let rows = described["partitions"].as_array().expect("partitions");
    assert!(!rows.is_empty(), "{described}");
    for row in rows {
        assert!(
            row["committed_offset"].is_i64() && row["lag"].is_i64(),
            "{row}"
        );
        assert_eq!(row["errors"], serde_json::json!([]), "{row}");
    }
}

/// On the older releases (`kafka.sh start --version`): the group is listed as classic (with a
/// note where ListGroups names no types), and described with DescribeGroups, its committed
/// offsets at the end it read to.
#[test]
fn older_brokers_list_and_describe_classic_groups() {
    for broker in crate::compat::older_brokers() {
        let topic = topic_with_records(&broker, "groups-compat");
        let group = format!("{topic}-g");
        let member = broker.consume(&topic, &["-G", &group, "-e", "--reset", "earliest"]);
        assert!(
            member.status.success(),
            "{}",
            String::from_utf8_lossy(&member.stderr)
        );
        let version = broker.kafka_sh("tool", &["kafka.Kafka", "--version"]);
        let context = format!("{} ({})", broker.name, version.trim());

        let listed = krec_groups(&broker.bootstrap, &["-J"]);
        assert!(listed.status.success(), "{context}: {listed:?}");
        let line = String::from_utf8_lossy(&listed.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("JSON line"))
            .find(|l| l["group"] == group.as_str())
            .unwrap_or_else(|| panic!("{context}: {group} not listed"));
        assert_eq!(line["type"], "classic", "{context}: {line}");
        let note = String::from_utf8_lossy(&listed.stderr).contains("does not report group types");
        assert_eq!(note, version.starts_with("2."), "{context}: {listed:?}");

        let described = krec_json(&broker.bootstrap, &[&group, "-J"]);
        assert_eq!(described["type"], "classic", "{context}: {described}");
        let rows = krec_rows(&described, "committed_offset");
        assert_eq!(rows.len(), PARTITIONS as usize, "{context}: {rows:?}");
        let end = (RECORDS as i32 / PARTITIONS) as i64;
        assert!(
            rows.values().all(|row| *row == (Some(end), Some(0))),
            "{context}: {rows:?}"
        );
    }
}

/// `-c N` with a group and several decode threads: a chunk another thread cut short at the
/// count is not committed as written. Every committed offset is at most one past the last
/// record the member printed of that partition (none printed: nothing committed). Five runs,
/// since the race needs two threads at the count at once.
#[test]
fn a_member_stopped_by_count_commits_only_what_it_printed() {
    let broker = broker();
    let topic = unique_topic("groups-count");
    broker.create_topic(&topic, 4, 1);
    broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "none".to_owned(),
        steps: vec![(None, simple_records(0, 4000, 4))],
        ..ProducePlan::default()
    });
    for run in 0..5 {
        let group = unique_topic("groups-count-g");
        let args = [
            "-G",
            group.as_str(),
            "-c",
            "5",
            "--threads",
            "4",
            "--reset",
            "earliest",
        ];
        let printed = broker.consume_records(&topic, &args);
        assert_eq!(printed.len(), 5, "run {run}");
        let described = krec_json(&broker.bootstrap, &[group.as_str(), "-J"]);
        for row in described["partitions"].as_array().expect("partitions") {
            let partition = row["partition"].as_i64().unwrap() as i32;
            let next = printed
                .iter()
                .filter(|r| r.partition == partition)
                .map(|r| r.offset + 1)
                .max();
            let committed = row["committed_offset"].as_i64();
            assert!(
                committed.unwrap_or(0) <= next.unwrap_or(0),
                "run {run}: partition {partition} committed at {committed:?}, printed up to {next:?}"
            );
        }
    }
}
