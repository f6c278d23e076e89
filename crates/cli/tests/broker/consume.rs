//! `krec consume` against a real broker: records written by real producers come back exactly.

use crate::support::broker::{
    assert_same_records, broker, unique_topic, varied_record, PlannedRecord, ProducePlan, Produced,
};

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

#[test]
fn every_codec_with_keys_null_values_and_headers_comes_back_exactly() {
    let broker = broker();
    let topic = unique_topic("codecs");
    broker.create_topic(&topic, 3, 1);
    let mut expected = Vec::new();
    for (round, codec) in CODECS.iter().enumerate() {
        let records = (0..300)
            .map(|i| varied_record(round * 1000 + i, 3))
            .collect();
        expected.extend(broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: (*codec).to_owned(),
            steps: vec![(None, records)],
            ..ProducePlan::default()
        }));
    }
    expected.sort_by_key(|r| (r.partition, r.offset));
    assert_eq!(expected.len(), 1500);

    let printed = broker.consume_records(&topic, &["-e", "-f", "json"]);
    assert_same_records(&printed, &expected);
    // Several decode threads and tiny fetches: same records, same order per partition.
    let printed = broker.consume_records(
        &topic,
        &[
            "-e",
            "--threads",
            "3",
            "--partition-max-bytes",
            "2000",
            "--max-bytes",
            "5000",
        ],
    );
    assert_same_records(&printed, &expected);
    // Older Fetch versions: v12 names topics instead of ids, v4 is the oldest we speak.
    for version in ["12", "4"] {
        let printed = broker.consume_records(&topic, &["-e", "--fetch-version", version]);
        assert_same_records(&printed, &expected);
    }
    // No transactions here, so read_committed changes nothing.
    let printed = broker.consume_records(&topic, &["-e", "--isolation", "read_committed"]);
    assert_same_records(&printed, &expected);
}

#[test]
fn read_committed_hides_exactly_the_aborted_records() {
    let broker = broker();
    let topic = unique_topic("txn");
    broker.create_topic(&topic, 2, 1);
    let batch = |from: usize| -> Vec<PlannedRecord> {
        (from..from + 40).map(|i| varied_record(i, 2)).collect()
    };
    let produced = broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "lz4".into(),
        transactional_id: Some(format!("{topic}-tx")),
        steps: vec![
            (Some(true), batch(0)),
            (Some(false), batch(100)),
            (Some(true), batch(200)),
            (Some(false), batch(300)),
            (Some(false), batch(400)),
            (Some(true), batch(500)),
        ],
    });
    let committed: Vec<Produced> = produced.iter().filter(|r| r.committed).cloned().collect();
    assert_eq!(committed.len(), 120);
    assert_eq!(produced.len(), 240);

    let uncommitted = broker.consume_records(&topic, &["-e"]);
    assert_same_records(&uncommitted, &produced);
    let read_committed = broker.consume_records(&topic, &["-e", "--isolation", "read_committed"]);
    assert_same_records(&read_committed, &committed);
    // Fetches that cut transactions at every few batches still hide the same records.
    let small_fetches = broker.consume_records(
        &topic,
        &[
            "-e",
            "--isolation",
            "read_committed",
            "--partition-max-bytes",
            "300",
        ],
    );
    assert_same_records(&small_fetches, &committed);
    // The markers are there for whoever asks.
    let output = broker.consume(&topic, &["-e", "--print-control", "-f", "json"]);
    let text = String::from_utf8(output.stdout).unwrap();
    let aborts = text
        .lines()
        .filter(|l| l.contains(r#""control":"abort""#))
        .count();
    let commits = text
        .lines()
        .filter(|l| l.contains(r#""control":"commit""#))
        .count();
    // One marker per transaction per partition that it wrote to (both partitions every time).
    assert_eq!((aborts, commits), (6, 6), "{text}");
}

#[test]
fn offset_variants_count_and_exit() {
    let broker = broker();
    let topic = unique_topic("offsets");
    broker.create_topic(&topic, 1, 1);
    let base_time = 1_700_000_000_000i64;
    let records = (0..20)
        .map(|i| PlannedRecord {
            partition: 0,
            key: Some(format!("k{i}").into_bytes()),
            value: Some(format!("v{i}").into_bytes()),
            headers: Vec::new(),
            timestamp: Some(base_time + i * 1000),
        })
        .collect();
    let produced = broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "none".into(),
        steps: vec![(None, records)],
        ..ProducePlan::default()
    });
    assert_eq!(produced.len(), 20);
    let offsets = |args: &[&str]| -> Vec<i64> {
        broker
            .consume_records(&topic, args)
            .iter()
            .map(|r| r.offset)
            .collect()
    };
    assert_eq!(
        offsets(&["-e", "-o", "beginning"]),
        (0..20).collect::<Vec<_>>()
    );
    assert_eq!(offsets(&["-e", "-o", "end"]), Vec::<i64>::new());
    assert_eq!(offsets(&["-e", "-o", "15"]), (15..20).collect::<Vec<_>>());
    assert_eq!(offsets(&["-e", "-o", "-3"]), (17..20).collect::<Vec<_>>());
    assert_eq!(offsets(&["-e", "-o", "-100"]), (0..20).collect::<Vec<_>>());
    let at_twelve = format!("@{}", base_time + 12_000);
    assert_eq!(
        offsets(&["-e", "-o", &at_twelve]),
        (12..20).collect::<Vec<_>>()
    );
    let between = format!("@{}", base_time + 12_500);
    assert_eq!(
        offsets(&["-e", "-o", &between]),
        (13..20).collect::<Vec<_>>()
    );
    let after_all = format!("@{}", base_time + 100_000);
    assert_eq!(offsets(&["-e", "-o", &after_all]), Vec::<i64>::new());
    assert_eq!(offsets(&["-c", "4"]), vec![0, 1, 2, 3]);
    assert_eq!(offsets(&["-c", "4", "-o", "10"]), vec![10, 11, 12, 13]);
    // -c larger than what exists, with -e: stops at the end.
    assert_eq!(offsets(&["-c", "100", "-e", "-o", "18"]), vec![18, 19]);

    // An offset past the end follows --reset.
    let output = broker.consume(&topic, &["-e", "-o", "500", "--reset", "fail"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("out of range"), "{stderr}");
    assert_eq!(
        offsets(&["-e", "-o", "500", "--reset", "earliest"]),
        (0..20).collect::<Vec<_>>()
    );
}

#[test]
fn unknown_topic_is_a_clear_error() {
    let broker = broker();
    let topic = unique_topic("missing");
    let output = broker.consume(&topic, &["-e"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("unknown topic") && stderr.contains(&topic),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());

    let known = unique_topic("known");
    broker.create_topic(&known, 2, 1);
    let output = broker.consume(&known, &["-e", "-p", "5"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no partition 5"), "{stderr}");
}

#[test]
fn unreachable_bootstrap_is_a_clear_error() {
    // Port 1 on loopback refuses connections.
    let output = crate::support::broker::krec_consume_command("127.0.0.1:1", "t", &["-e"])
        .output()
        .expect("run krec");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no bootstrap broker reachable"), "{stderr}");
}

#[test]
fn batches_larger_than_the_fetch_limits_still_come_through_on_every_partition() {
    let broker = broker();
    let topic = unique_topic("big");
    broker.create_topic(&topic, 3, 1);
    // Incompressible 100 KiB values: every batch is far above --partition-max-bytes. Only the
    // first non-empty partition of a fetch gets a whole oversized batch (KIP-74); the broker
    // answers the others with nothing, so they must wait their turn without being taken
    // for stuck.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut record = |i: i32| {
        let value = (0..100 * 1024)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        PlannedRecord {
            partition: i % 3,
            key: Some(format!("big-{i}").into_bytes()),
            value: Some(value),
            headers: Vec::new(),
            timestamp: None,
        }
    };
    // One step per round: each flush closes the batches, so every partition holds ten
    // oversized batches.
    let steps = (0..10)
        .map(|round| (None, (0..3).map(|p| record(round * 3 + p)).collect()))
        .collect();
    let expected = broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "none".into(),
        steps,
        ..ProducePlan::default()
    });
    assert_eq!(expected.len(), 30);
    let printed = broker.consume_records(&topic, &["-e", "--partition-max-bytes", "1000"]);
    assert_same_records(&printed, &expected);
}
