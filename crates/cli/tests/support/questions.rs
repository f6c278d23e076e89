//! `krec metadata` checked against Kafka's TopicCommand --describe, on any broker or cluster.

use std::collections::BTreeMap;
use std::process::{Command, Output, Stdio};

use super::broker::{unique_topic, Broker};

pub fn krec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run krec")
}

pub fn json_of(output: &Output) -> serde_json::Value {
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

pub fn check_metadata(broker: &Broker, nodes: usize) {
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
