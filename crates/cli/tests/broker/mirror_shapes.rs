//! `krec mirror` on sources whose batches cannot go to the target as they are: a topic the
//! log cleaner compacted (offset gaps inside batches, batches it emptied), a log start inside
//! a batch, legacy v1 message sets from Kafka 2.8.2, a 3.9.1 source, and the issue's scale
//! topic of 1,000 partitions. Each copy is compared with its source record by record.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::compat::older_brokers;
use crate::mirror::{assert_copied, committed, mirror_to_end, summary_count};
use crate::support::broker::{
    broker, simple_records, unique_topic, varied_record, Broker, PlannedRecord, ProducePlan,
};

/// `krec mirror -e` from `source` to `target`, copies prefixed `copy-`; asserts success.
fn mirror_between(source: &Broker, target: &Broker, topics: &str, name: &str) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(["mirror", "-b", &source.bootstrap, "-t", topics, "-e"])
        .args(["--to", &target.bootstrap, "--name", name])
        .args(["--topic-prefix", "copy-"])
        .stdin(Stdio::null())
        .output()
        .expect("run krec mirror");
    assert!(
        output.status.success(),
        "krec mirror failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The records `krec count` finds in `topic`, read committed.
fn count(broker: &Broker, topic: &str) -> u64 {
    let output = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(["count", "-b", &broker.bootstrap, "-t", topic])
        .args(["--isolation", "read_committed"])
        .stdin(Stdio::null())
        .output()
        .expect("run krec count");
    let text = String::from_utf8_lossy(&output.stdout);
    let total = text.lines().last().and_then(|l| l.rsplit(' ').next());
    total
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("krec count {topic}: {text}"))
}

/// `count` records of `partitions` partitions, keyed by `i % keys`: each key repeats.
fn keyed_records(from: usize, count: usize, keys: usize, partitions: i32) -> Vec<PlannedRecord> {
    (from..from + count)
        .map(|i| PlannedRecord {
            partition: (i % keys % partitions as usize) as i32,
            key: Some(format!("key-{}", i % keys).into_bytes()),
            value: Some(format!("value-{i}").into_bytes()),
            headers: vec![(b"n".to_vec(), Some(i.to_string().into_bytes()))],
            timestamp: None,
        })
        .collect()
}

fn produce(broker: &Broker, topic: &str, compression: &str, records: Vec<PlannedRecord>) {
    broker.produce_python(&ProducePlan {
        topic: topic.to_owned(),
        compression: compression.to_owned(),
        steps: vec![(None, records)],
        ..ProducePlan::default()
    });
}

#[test]
fn a_compacted_source_with_gaps_is_copied_equal_and_re_encoded() {
    let broker = broker();
    let topic = unique_topic("mirror-compacted");
    let configs = [
        "cleanup.policy=compact",
        "segment.ms=100",
        "min.cleanable.dirty.ratio=0.01",
        "delete.retention.ms=0",
        "min.compaction.lag.ms=0",
    ];
    let mut create = vec!["create", topic.as_str(), "--partitions", "2"];
    for config in &configs {
        create.extend(["--config", config]);
    }
    broker.kafka_sh("topic", &create);
    broker.wait_for_leaders(&topic, 2);
    // Two producers (two librdkafka batches of many records each) write the same 40 keys:
    // the cleaner leaves the first one's batches empty or with gaps, the second's with gaps.
    produce(&broker, &topic, "lz4", keyed_records(0, 400, 40, 2));
    produce(&broker, &topic, "none", keyed_records(400, 400, 40, 2));
    // A record in a new segment (segment.ms passed) makes the others' segments cleanable.
    std::thread::sleep(Duration::from_millis(300));
    let roll: Vec<PlannedRecord> = (0..2)
        .map(|p| PlannedRecord {
            partition: p,
            key: Some(format!("roll-{p}").into_bytes()),
            value: Some(b"roll".to_vec()),
            headers: Vec::new(),
            timestamp: None,
        })
        .collect();
    produce(&broker, &topic, "none", roll);
    let deadline = Instant::now() + Duration::from_secs(90);
    while count(&broker, &topic) != 42 {
        assert!(
            Instant::now() < deadline,
            "the log cleaner left {} of 802 records after 90 s (want 42)",
            count(&broker, &topic)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let name = unique_topic("mirror-compacted");
    let output = mirror_to_end(&broker, &topic, &name);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("compacted: {stderr}");
    assert_eq!(summary_count(&stderr, "records, "), 42, "{stderr}");
    assert!(
        summary_count(&stderr, "re-encoded") > 0,
        "batches with gaps are written again: {stderr}"
    );
    assert!(
        summary_count(&stderr, "skipped") > 0,
        "the batches the cleaner emptied (kept for their producer's state) are left out: {stderr}"
    );
    let source = committed(&broker, &topic);
    assert_eq!(source.len(), 42);
    assert_copied(&source, &committed(&broker, &format!("copy-{topic}")));
}

#[test]
fn a_log_start_inside_a_batch_is_where_the_copy_starts() {
    let broker = broker();
    let topic = unique_topic("mirror-log-start");
    broker.create_topic(&topic, 1, 1);
    // One librdkafka batch (it lingers) of 100 records; the log start moves into it.
    produce(&broker, &topic, "zstd", simple_records(0, 100, 1));
    broker.delete_records(&topic, 0, 37);
    let name = unique_topic("mirror-log-start");
    let output = mirror_to_end(&broker, &topic, &name);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(summary_count(&stderr, "records, "), 63, "{stderr}");
    assert!(summary_count(&stderr, "re-encoded") >= 1, "{stderr}");
    let source = committed(&broker, &topic);
    assert_eq!(source.len(), 63);
    assert_eq!(source[0].value.as_deref(), Some(&b"value-37"[..]));
    assert_copied(&source, &committed(&broker, &format!("copy-{topic}")));
}

/// The older broker of `version` among those test.sh started.
fn older(version: &str) -> Broker {
    let brokers = older_brokers();
    let found = brokers.into_iter().find(|b| {
        let said = b.kafka_sh("tool", &["kafka.Kafka", "--version"]);
        said.trim_start().starts_with(version)
    });
    found.unwrap_or_else(|| panic!("no Kafka {version} in KREC_TEST_COMPAT_NAMES"))
}

#[test]
fn a_kafka_3_9_source_is_copied_to_4_4_as_it_is() {
    let (source, target) = (older("3.9.1"), broker());
    let topic = unique_topic("mirror-from-391");
    source.create_topic(&topic, 3, 1);
    source.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "zstd".to_owned(),
        steps: vec![(None, (0..150).map(|i| varied_record(i, 3)).collect())],
        ..ProducePlan::default()
    });
    let name = unique_topic("mirror-from-391");
    let output = mirror_between(&source, &target, &topic, &name);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(summary_count(&stderr, "records, "), 150, "{stderr}");
    assert_eq!(summary_count(&stderr, "re-encoded"), 0, "{stderr}");
    let copied = committed(&target, &format!("copy-{topic}"));
    assert_copied(&committed(&source, &topic), &copied);
}

/// Produces with librdkafka, not idempotent: a topic on message format v1 refuses producer ids.
const LEGACY_PRODUCER: &str = r#"
import json, sys
from confluent_kafka import Producer
plan = json.load(sys.stdin)
p = Producer({"bootstrap.servers": plan["bootstrap"], "compression.type": plan["compression"],
               "linger.ms": 20, "enable.idempotence": False, "acks": "all"})
for i in range(plan["count"]):
    key = None if i % 7 == 0 else ("key-%d" % i).encode()
    value = None if i % 11 == 0 else ("value-%d" % i).encode()
    p.produce(plan["topic"], key=key, value=value, partition=i % 3,
              timestamp=1700000000000 + i)
p.flush(60)
"#;

#[test]
fn legacy_v1_message_sets_from_kafka_2_8_are_re_encoded_equal() {
    let (source, target) = (older("2.8.2"), broker());
    let mut topics = Vec::new();
    for codec in ["none", "lz4"] {
        let topic = unique_topic(&format!("mirror-v1-{codec}"));
        let format = "message.format.version=0.10.2";
        let create = ["create", &topic, "--partitions", "3", "--config", format];
        source.kafka_sh("topic", &create);
        source.wait_for_leaders(&topic, 3);
        let plan = serde_json::json!({
            "bootstrap": source.bootstrap, "topic": topic, "compression": codec, "count": 90,
        });
        krec_testkit::live::run_python(LEGACY_PRODUCER, &plan.to_string());
        topics.push(topic);
    }
    let name = unique_topic("mirror-v1");
    let output = mirror_between(&source, &target, &topics.join(","), &name);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(summary_count(&stderr, "records, "), 180, "{stderr}");
    assert!(
        summary_count(&stderr, "re-encoded") > 0,
        "v1 message sets are written again: {stderr}"
    );
    for topic in &topics {
        let source_records = committed(&source, topic);
        assert_eq!(source_records.len(), 90, "{topic}");
        assert!(source_records.iter().all(|r| r.timestamp.is_some()));
        assert_copied(
            &source_records,
            &committed(&target, &format!("copy-{topic}")),
        );
    }
}

#[test]
fn a_topic_of_1000_partitions_is_copied_equal() {
    let broker = broker();
    let topic = unique_topic("mirror-scale");
    broker.create_topic(&topic, 1000, 1);
    produce(&broker, &topic, "lz4", simple_records(0, 3000, 1000));
    let name = unique_topic("mirror-scale");
    let started = Instant::now();
    let output = mirror_to_end(&broker, &topic, &name);
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("1,000 partitions copied in {took:?}: {stderr}");
    assert_eq!(summary_count(&stderr, "records, "), 3000, "{stderr}");
    let source = committed(&broker, &topic);
    assert_eq!(source.len(), 3000);
    assert_copied(&source, &committed(&broker, &format!("copy-{topic}")));
    // 2,000 partitions would slow every later restart of the broker (the solo tests').
    let both = format!("{topic}|copy-{topic}");
    let delete = [
        "--bootstrap-server",
        "{bootstrap}",
        "--delete",
        "--topic",
        &both,
    ];
    broker.kafka_sh(
        "tool",
        &[&["org.apache.kafka.tools.TopicCommand"][..], &delete[..]].concat(),
    );
}
