//! `krec metadata` and `krec offsets` against a real broker, checked against what Kafka's own
//! tools (TopicCommand --describe, GetOffsetShell) say about the same topic.
//! Run through `bash scripts/test.sh` (it starts the broker and enables `broker-tests`; the
//! metadata check runs again on the three-node cluster under `cluster-tests`).
#![cfg(any(feature = "broker-tests", feature = "cluster-tests"))]

mod support;

use std::collections::BTreeMap;
use std::process::{Command, Output, Stdio};

use support::broker::{unique_topic, Broker};

fn krec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run krec")
}

fn json_of(output: &Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "krec failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("one JSON document")
}

/// TopicCommand --describe's partition lines: partition -> (leader, replicas, isr).
fn described_partitions(broker: &Broker, topic: &str) -> (String, BTreeMap<i64, [String; 3]>) {
    let text = broker.kafka_sh(
        "tool",
        &[
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            "{bootstrap}",
            "--describe",
            "--topic",
            topic,
        ],
    );
    let field = |line: &str, name: &str| -> String {
        line.split('\t')
            .find_map(|part| part.trim().strip_prefix(name))
            .map(|value| value.trim().to_owned())
            .unwrap_or_default()
    };
    let mut id = String::new();
    let mut partitions = BTreeMap::new();
    for line in text.lines() {
        if line.contains("TopicId:") {
            id = field(line, "TopicId:");
        }
        if line.contains("Partition: ") {
            let partition: i64 = field(line, "Partition:").parse().expect("partition id");
            let row = ["Leader:", "Replicas:", "Isr:"].map(|name| field(line, name));
            partitions.insert(partition, row);
        }
    }
    (id, partitions)
}

fn joined(ids: &serde_json::Value) -> String {
    ids.as_array()
        .expect("node id list")
        .iter()
        .map(|id| id.as_i64().expect("node id").to_string())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(feature = "broker-tests")]
#[test]
fn metadata_agrees_with_topic_command() {
    check_metadata(&support::broker::broker(), 1);
}

/// Three replicas each, so replicas, ISR and leaders differ between partitions.
#[cfg(feature = "cluster-tests")]
#[test]
fn metadata_agrees_with_topic_command_on_three_nodes() {
    check_metadata(&support::broker::cluster(), 3);
}

fn check_metadata(broker: &Broker, nodes: usize) {
    let topic = unique_topic("meta");
    broker.create_topic(&topic, 3, nodes as u32);
    let missing = unique_topic("meta-missing");
    let output = krec(&[
        "metadata",
        "-b",
        &broker.bootstrap,
        "-J",
        "-t",
        &format!("{topic},{missing}"),
    ]);
    // A named topic the cluster does not have: shown with its error, and the exit status says so.
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("UNKNOWN_TOPIC_OR_PARTITION"), "{stderr}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let keys: Vec<&String> = document.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["cluster_id", "controller", "brokers", "topics"]);

    let port: i64 = broker
        .bootstrap
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let brokers = document["brokers"].as_array().expect("brokers");
    assert_eq!(brokers.len(), nodes);
    assert!(brokers.iter().any(|b| b["port"] == port), "{document}");
    for b in brokers {
        // kafka.sh puts node K in rack-K.
        assert_eq!(b["rack"], format!("rack-{}", b["id"]), "{b}");
    }

    let topics = document["topics"].as_array().expect("topics");
    let gone = topics
        .iter()
        .find(|t| t["name"] == missing.as_str())
        .expect("missing topic shown");
    assert_eq!(gone["error"], "UNKNOWN_TOPIC_OR_PARTITION");
    let ours = topics
        .iter()
        .find(|t| t["name"] == topic.as_str())
        .expect("topic");
    assert_eq!(ours["error"], serde_json::Value::Null);

    let (id, described) = described_partitions(broker, &topic);
    assert_eq!(ours["id"], id.as_str());
    let partitions = ours["partitions"].as_array().expect("partitions");
    assert_eq!(partitions.len(), described.len());
    for p in partitions {
        let [leader, replicas, isr] = &described[&p["partition"].as_i64().unwrap()];
        assert_eq!(&p["leader"].to_string(), leader, "{p}");
        assert_eq!(&joined(&p["replicas"]), replicas, "{p}");
        assert_eq!(&joined(&p["isr"]), isr, "{p}");
        assert_eq!(joined(&p["offline"]), "");
        assert!(p["leader_epoch"].as_i64().unwrap() >= 0, "{p}");
    }

    let text = krec(&["metadata", "-b", &broker.bootstrap, "-t", &topic]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains(&format!("topic \"{topic}\" id {id}, 3 partitions:")),
        "{text}"
    );
}

/// GetOffsetShell's `topic:partition:offset` lines for one `--time`.
fn offset_shell(broker: &Broker, topic: &str, time: &str) -> BTreeMap<i64, i64> {
    let text = broker.kafka_sh(
        "tool",
        &[
            "org.apache.kafka.tools.GetOffsetShell",
            "--bootstrap-server",
            "{bootstrap}",
            "--topic",
            topic,
            "--time",
            time,
        ],
    );
    text.lines()
        .filter_map(|line| {
            let mut fields = line.rsplitn(3, ':');
            let offset = fields.next()?.parse().ok()?;
            let partition = fields.next()?.parse().ok()?;
            Some((partition, offset))
        })
        .collect()
}

#[cfg(feature = "broker-tests")]
#[test]
fn offsets_agree_with_get_offset_shell() {
    use support::broker::{PlannedRecord, ProducePlan};
    let broker = support::broker::broker();
    let topic = unique_topic("offsets");
    broker.create_topic(&topic, 3, 1);
    let base = 1_700_000_000_000i64;
    // Partition p holds 10 * (p + 1) records, one second apart.
    let records: Vec<PlannedRecord> = (0..3)
        .flat_map(|p| {
            (0..10 * (p + 1)).map(move |i| PlannedRecord {
                partition: p,
                key: None,
                value: Some(format!("{p}-{i}").into_bytes()),
                headers: vec![],
                timestamp: Some(base + i64::from(i) * 1000),
            })
        })
        .collect();
    broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "none".into(),
        steps: vec![(None, records)],
        ..ProducePlan::default()
    });
    // Partition 0 then starts at 4, not 0.
    broker.delete_records(&topic, 0, 4);

    let at = base + 15_500;
    let earliest = offset_shell(&broker, &topic, "-2");
    let latest = offset_shell(&broker, &topic, "-1");
    let timed = offset_shell(&broker, &topic, &at.to_string());
    assert_eq!(earliest[&0], 4, "DeleteRecords moved the log start");

    let output = krec(&[
        "offsets",
        "-b",
        &broker.bootstrap,
        "-t",
        &topic,
        "-J",
        "--at",
        &at.to_string(),
    ]);
    assert!(output.status.success(), "{output:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 3);
    for line in &lines {
        let partition = line["partition"].as_i64().unwrap();
        assert_eq!(line["topic"], topic.as_str());
        assert_eq!(line["earliest"], earliest[&partition], "{line}");
        assert_eq!(line["latest"], latest[&partition], "{line}");
        // GetOffsetShell leaves out a partition with no record that late.
        match timed.get(&partition) {
            None => assert_eq!(line["offset"], serde_json::Value::Null, "{line}"),
            Some(offset) => assert_eq!(line["offset"], *offset, "{line}"),
        }
    }
    // Partition 0 has no record 15.5 s after the first: no offset, not a made-up one.
    assert_eq!(lines[0]["offset"], serde_json::Value::Null);
    assert_eq!(lines[1]["offset"], 16);

    // RFC 3339 names the same instant; -p picks partitions; no --at, no "offset" key.
    let rfc3339 = "2023-11-14T22:13:35.500Z";
    let one = json_of(&krec(&[
        "offsets",
        "-b",
        &broker.bootstrap,
        "-t",
        &topic,
        "-p",
        "2",
        "-J",
        "--at",
        rfc3339,
    ]));
    assert_eq!(
        (one["partition"].as_i64(), one["offset"].as_i64()),
        (Some(2), Some(16))
    );
    let plain = json_of(&krec(&[
        "offsets",
        "-b",
        &broker.bootstrap,
        "-t",
        &topic,
        "-p",
        "1",
        "-J",
    ]));
    assert!(plain.get("offset").is_none(), "{plain}");

    let wrong = krec(&["offsets", "-b", &broker.bootstrap, "-t", &topic, "-p", "9"]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("has no partition 9"));
}
