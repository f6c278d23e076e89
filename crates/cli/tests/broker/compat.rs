//! krec against older brokers: the instances `scripts/kafka.sh start --version V` runs on
//! ZooKeeper (Kafka 2.8.2, the oldest Amazon MSK offers, and 3.9.1, the last with ZooKeeper),
//! named in KREC_TEST_COMPAT_NAMES. Each must be read exactly, as a group member too, take
//! what `krec produce` writes, and answer `metadata` and `offsets`.

use std::collections::BTreeMap;

use krec_testkit::live::LiveBroker;

use crate::support::broker::{
    assert_same_records, simple_records, unique_topic, Broker, ProducePlan, Produced,
};
use crate::support::questions::{json_of, krec};

/// The older instances test.sh started, by kafka.sh name.
pub(crate) fn older_brokers() -> Vec<Broker> {
    let names = std::env::var("KREC_TEST_COMPAT_NAMES")
        .expect("KREC_TEST_COMPAT_NAMES: the kafka.sh instances of older releases (test.sh)");
    let kafka_sh = std::path::PathBuf::from(std::env::var("KREC_KAFKA_SH").expect("KREC_KAFKA_SH"));
    names
        .split_whitespace()
        .map(|name| {
            let mut broker = Broker(LiveBroker {
                bootstrap: String::new(),
                kafka_sh: kafka_sh.clone(),
                name: name.to_owned(),
            });
            broker.bootstrap = broker.kafka_sh("bootstrap", &[]).trim().to_owned();
            broker
        })
        .collect()
}

#[test]
fn older_brokers_are_read_exactly_alone_and_in_a_group_and_answer_questions() {
    let brokers = older_brokers();
    assert!(brokers.len() >= 2, "two older releases expected");
    std::thread::scope(|scope| {
        for broker in &brokers {
            scope.spawn(move || read_and_ask(broker));
        }
    });
}

fn read_and_ask(broker: &Broker) {
    let version = broker.kafka_sh("tool", &["kafka.Kafka", "--version"]);
    let topic = unique_topic("compat");
    broker.create_topic(&topic, 3, 1);
    let produced = broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "lz4".into(),
        steps: vec![(None, simple_records(0, 90, 3))],
        ..ProducePlan::default()
    });
    let context = format!("{} ({})", broker.name, version.trim());

    assert_same_records(&broker.consume_records(&topic, &["-e"]), &produced);
    let group = unique_topic("compat-group");
    let member = ["-e", "-G", group.as_str(), "--commit-interval-ms", "100"];
    assert_same_records(&broker.consume_records(&topic, &member), &produced);
    assert!(
        broker.consume_records(&topic, &member).is_empty(),
        "{context}: the group committed its end, so a second member reads nothing"
    );

    // What krec writes, idempotent and compressed, reads back the same from these releases.
    let consumed = broker.consume(&topic, &["-e", "-J"]);
    assert!(consumed.status.success(), "{context}: {consumed:?}");
    let copy = unique_topic("compat-copy");
    broker.create_topic(&copy, 3, 1);
    let written = crate::produce::produce(
        &broker.bootstrap,
        &copy,
        &["-J", "-z", "zstd"],
        &consumed.stdout,
    );
    assert!(
        written.status.success(),
        "{context}: krec produce: {written:?}"
    );
    let expected: Vec<_> = produced
        .iter()
        .map(|record| Produced {
            committed: true,
            ..record.clone()
        })
        .collect();
    assert_same_records(&broker.consume_records(&copy, &["-e"]), &expected);

    let metadata = json_of(&krec(&[
        "metadata",
        "-b",
        &broker.bootstrap,
        "-t",
        &topic,
        "-J",
    ]));
    let partitions = metadata["topics"][0]["partitions"].as_array().map(Vec::len);
    assert_eq!(partitions, Some(3), "{context}: {metadata}");

    let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
    for record in &produced {
        *counts.entry(record.partition.into()).or_default() += 1;
    }
    let offsets = krec(&["offsets", "-b", &broker.bootstrap, "-t", &topic, "-J"]);
    assert!(offsets.status.success(), "{context}: {offsets:?}");
    let latest: BTreeMap<i64, i64> = String::from_utf8(offsets.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("JSON line"))
        .map(|line| {
            (
                line["partition"].as_i64().unwrap(),
                line["latest"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(latest, counts, "{context}: latest offsets");
}
