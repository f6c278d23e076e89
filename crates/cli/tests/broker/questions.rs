//! `krec metadata` and `krec offsets` against the single broker, checked against what Kafka's
//! own tools (TopicCommand --describe, GetOffsetShell) say about the same topic.

use std::collections::BTreeMap;

use crate::support::broker::{unique_topic, Broker};
use crate::support::questions::{check_metadata, json_of, krec};

#[test]
fn metadata_agrees_with_topic_command() {
    check_metadata(&crate::support::broker::broker(), 1);
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

#[test]
fn offsets_agree_with_get_offset_shell() {
    use crate::support::broker::{PlannedRecord, ProducePlan};
    let broker = crate::support::broker::broker();
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
