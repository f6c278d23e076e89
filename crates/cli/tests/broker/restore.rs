//! `krec restore` against the real broker: a `krec backup` restored into prefixed topics of
//! the same cluster (empty, as a new cluster's would be), compared record by record with what
//! librdkafka wrote: every codec, nulls, headers, an aborted transaction, a compacted topic; a
//! restore killed with SIGKILL and run again; a restore after a later backup; one topic
//! restored, then all; `--until` inside a batch; a corrupt and a truncated segment; the
//! retention warning; `--groups`; a backup in S3 (the suite's moto server).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use krec_client::admin::{create_topics, describe_topic_configs, NewTopic};
use krec_client::connection::Connection;
use krec_client::ConnectionSettings;
use serde_json::{json, Value};

use crate::mirror::{assert_copied, committed, summary_count};
use crate::support::broker::{
    broker, simple_records, unique_topic, varied_record, Broker, PlannedRecord, ProducePlan,
};

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

/// Creates `topic` with `configs`, through the admin API (no JVM tool).
fn create_topic(broker: &Broker, topic: &str, partitions: i32, configs: &[(&str, &str)]) {
    let wanted = NewTopic {
        name: topic.to_owned(),
        partitions,
        replication_factor: None,
        configs: (configs.iter())
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    };
    runtime().block_on(async {
        let settings = ConnectionSettings::default();
        let mut admin = Connection::connect(&broker.bootstrap, &settings)
            .await
            .expect("connect");
        create_topics(&mut admin, &[wanted], Duration::from_secs(30))
            .await
            .expect("create the topic");
    });
    broker.wait_for_leaders(topic, partitions as usize);
}

fn runtime() -> tokio::runtime::Runtime {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_all();
    builder.build().expect("a runtime")
}

/// `krec backup` of `topics` into `dir`, segments rolled at `segment_bytes` (run again, it
/// continues where the manifest says).
fn back_up(broker: &Broker, topics: &[(&str, i32)], dir: &Path, segment_bytes: usize) {
    let names: Vec<&str> = topics.iter().map(|(name, _)| *name).collect();
    let output = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(["backup", "-b", &broker.bootstrap, "-t", &names.join(",")])
        .arg(dir)
        .args(["--segment-bytes", &segment_bytes.to_string()])
        .stdin(Stdio::null())
        .output()
        .expect("run krec backup");
    assert!(
        output.status.success(),
        "krec backup: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn restore_command(broker: &Broker, dir: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
    command.args(["restore", "-b", &broker.bootstrap]).arg(dir);
    if !extra.contains(&"--topic-prefix") {
        command.args(["--topic-prefix", "restored-"]);
    }
    command.args(extra).stdin(Stdio::null());
    command
}

fn restore(broker: &Broker, dir: &Path, extra: &[&str]) -> Output {
    let output = restore_command(broker, dir, extra)
        .output()
        .expect("run krec restore");
    assert!(
        output.status.success(),
        "krec restore failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn restored_count(output: &Output) -> u64 {
    summary_count(&String::from_utf8_lossy(&output.stderr), "records, ")
}

#[test]
fn every_codec_and_a_compacted_topic_restored_record_by_record() {
    let broker = broker();
    let dir = tempfile::tempdir().expect("a backup dir");
    let mut topics = Vec::new();
    for codec in CODECS {
        let topic = unique_topic(&format!("restore-{codec}"));
        create_topic(&broker, &topic, 2, &[]);
        let records = |range: std::ops::Range<usize>| -> Vec<_> {
            range.map(|i| varied_record(i, 2)).collect()
        };
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: codec.to_owned(),
            transactional_id: Some(format!("{topic}-tx")),
            steps: vec![
                (Some(true), records(0..40)),
                (Some(false), records(40..60)),
                (Some(true), records(60..100)),
            ],
        });
        topics.push(topic);
    }
    let compacted = unique_topic("restore-compacted");
    create_topic(&broker, &compacted, 1, &[("cleanup.policy", "compact")]);
    broker.produce_python(&ProducePlan {
        topic: compacted.clone(),
        compression: "lz4".to_owned(),
        steps: vec![(None, simple_records(0, 50, 1))],
        ..ProducePlan::default()
    });
    let mut listed: Vec<(&str, i32)> = topics.iter().map(|t| (t.as_str(), 2)).collect();
    listed.push((&compacted, 1));
    back_up(&broker, &listed, dir.path(), 4096);
    // The backup kept the compacted topic's settings: the restore creates it with them.
    let output = restore(&broker, dir.path(), &[]);
    assert_eq!(restored_count(&output), 5 * 80 + 50);
    for topic in topics.iter().chain([&compacted]) {
        let source = committed(&broker, topic);
        assert_copied(&source, &committed(&broker, &format!("restored-{topic}")));
    }
    let configs = runtime().block_on(async {
        let settings = ConnectionSettings::default();
        let mut admin = Connection::connect(&broker.bootstrap, &settings)
            .await
            .expect("connect");
        let name = format!("restored-{compacted}");
        describe_topic_configs(&mut admin, &[name.as_str()])
            .await
            .expect("describe")
    });
    let overrides: Vec<(&str, &str)> = configs[0].overrides().collect();
    assert!(
        overrides.contains(&("cleanup.policy", "compact")),
        "{overrides:?}"
    );
}

#[test]
fn a_restore_killed_with_sigkill_and_run_again_neither_loses_nor_repeats() {
    let broker = broker();
    let dir = tempfile::tempdir().expect("a backup dir");
    let topic = unique_topic("restore-kill");
    create_topic(&broker, &topic, 4, &[]);
    for round in 0..2 {
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: if round == 0 { "zstd" } else { "none" }.to_owned(),
            steps: vec![(None, simple_records(round * 5000, 5000, 4))],
            ..ProducePlan::default()
        });
    }
    back_up(&broker, &[(&topic, 4)], dir.path(), 64 << 10);
    let slow = ["--max-bytes-per-second", "60000"];
    for pause in [400, 1200] {
        let mut child = restore_command(&broker, dir.path(), &slow)
            .stderr(Stdio::null())
            .spawn()
            .expect("start krec restore");
        std::thread::sleep(Duration::from_millis(pause));
        child.kill().expect("kill -9");
        child.wait().expect("reap");
    }
    let copy = format!("restored-{topic}");
    let partial = committed(&broker, &copy).len();
    assert!(partial < 10_000, "killed mid-restore: {partial}");
    let output = restore(&broker, dir.path(), &[]);
    assert_eq!(restored_count(&output) as usize, 10_000 - partial);
    assert_copied(&committed(&broker, &topic), &committed(&broker, &copy));
}

#[test]
fn a_restore_after_a_later_backup_sends_only_the_new_records() {
    let broker = broker();
    let dir = tempfile::tempdir().expect("a backup dir");
    let topic = unique_topic("restore-again");
    create_topic(&broker, &topic, 2, &[]);
    let produce = |from: usize| {
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: "snappy".to_owned(),
            steps: vec![(None, simple_records(from, 300, 2))],
            ..ProducePlan::default()
        })
    };
    produce(0);
    back_up(&broker, &[(&topic, 2)], dir.path(), 2048);
    assert_eq!(restored_count(&restore(&broker, dir.path(), &[])), 300);
    assert_eq!(restored_count(&restore(&broker, dir.path(), &[])), 0);
    produce(300);
    back_up(&broker, &[(&topic, 2)], dir.path(), 2048);
    assert_eq!(restored_count(&restore(&broker, dir.path(), &[])), 300);
    let copy = format!("restored-{topic}");
    assert_copied(&committed(&broker, &topic), &committed(&broker, &copy));
}

#[test]
fn a_restore_of_one_topic_then_of_all_sends_the_first_topic_once() {
    let broker = broker();
    let dir = tempfile::tempdir().expect("a backup dir");
    let (first, second) = (unique_topic("restore-one"), unique_topic("restore-other"));
    for (topic, from) in [(&first, 0), (&second, 1000)] {
        create_topic(&broker, topic, 2, &[]);
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: "lz4".to_owned(),
            steps: vec![(None, simple_records(from, 200, 2))],
            ..ProducePlan::default()
        });
    }
    back_up(&broker, &[(&first, 2), (&second, 2)], dir.path(), 2048);
    let one = restore(&broker, dir.path(), &["-t", &first]);
    assert_eq!(restored_count(&one), 200);
    // The positions are the backup's group's, whatever the selection: the first topic's
    // partitions are where the first restore left them.
    let all = restore(&broker, dir.path(), &[]);
    assert_eq!(restored_count(&all), 200);
    for topic in [&first, &second] {
        let copy = committed(&broker, &format!("restored-{topic}"));
        assert_copied(&committed(&broker, topic), &copy);
    }
}

#[test]
fn until_cuts_at_a_time_inside_a_batch() {
    let broker = broker();
    let dir = tempfile::tempdir().expect("a backup dir");
    let topic = unique_topic("restore-until");
    create_topic(&broker, &topic, 1, &[]);
    // A day ago, to the second: the broker takes it, and retention keeps it.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let base = (now.as_secs() as i64 - 86_400) * 1000;
    let records: Vec<PlannedRecord> = (simple_records(0, 100, 1).into_iter().enumerate())
        .map(|(i, record)| PlannedRecord {
            timestamp: Some(base + i as i64 * 10),
            ..record
        })
        .collect();
    broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "zstd".to_owned(),
        steps: vec![(None, records)],
        ..ProducePlan::default()
    });
    back_up(&broker, &[(&topic, 1)], dir.path(), 1 << 20);
    // Between the stamps of value-41 and value-42.
    let until = (base + 415).to_string();
    let output = restore(&broker, dir.path(), &["--until", &until]);
    assert_eq!(restored_count(&output), 42);
    let source = committed(&broker, &topic);
    let copy = committed(&broker, &format!("restored-{topic}"));
    assert_copied(&source[..42], &copy);
    // Run again with the same time: nothing more.
    let again = restore(&broker, dir.path(), &["--until", &until]);
    assert_eq!(restored_count(&again), 0);
}

#[test]
fn records_older_than_the_target_retention_are_warned_about() {
    let broker = broker();
    let dir = tempfile::tempdir().expect("a backup dir");
    let topic = unique_topic("restore-retention");
    create_topic(&broker, &topic, 1, &[]);
    let day_ago = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - 86_400_000;
    let records = (simple_records(0, 10, 1).into_iter())
        .map(|record| PlannedRecord {
            timestamp: Some(day_ago),
            ..record
        })
        .collect();
    broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "none".to_owned(),
        steps: vec![(None, records)],
        ..ProducePlan::default()
    });
    back_up(&broker, &[(&topic, 1)], dir.path(), 1 << 20);
    // The target topic exists already, keeping records an hour.
    let short = format!("short-{topic}");
    create_topic(&broker, &short, 1, &[("retention.ms", "3600000")]);
    let output = restore(&broker, dir.path(), &["--topic-prefix", "short-"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("topic {short}: records to restore are up to")),
        "{stderr}"
    );
    assert!(stderr.contains("retention.ms (3600000 ms)"), "{stderr}");
    assert_eq!(summary_count(&stderr, "warnings"), 1, "{stderr}");
    // A topic that keeps them longer: no warning.
    let output = restore(&broker, dir.path(), &["--topic-prefix", "long-"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(summary_count(&stderr, "warnings"), 0, "{stderr}");
}

#[test]
fn a_corrupt_and_a_truncated_segment_are_named_and_nothing_past_them_restored() {
    let broker = broker();
    let topic = unique_topic("restore-corrupt");
    create_topic(&broker, &topic, 1, &[]);
    // Batches of a few records each (one produce step per 10 records).
    let steps = (0..10)
        .map(|round| (None, simple_records(round * 10, 10, 1)))
        .collect();
    broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "none".to_owned(),
        steps,
        ..ProducePlan::default()
    });
    for damage in ["corrupt", "truncated"] {
        let dir = tempfile::tempdir().expect("a backup dir");
        back_up(&broker, &[(&topic, 1)], dir.path(), 1500);
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("manifest.json")).unwrap())
                .unwrap();
        let segments = manifest["topics"][&topic]["partition"]["0"]["segments"].clone();
        let second = &segments[1];
        let file = second["file"].as_str().unwrap();
        let path = dir.path().join(file);
        let mut bytes = std::fs::read(&path).unwrap();
        // The byte and offset where the damage is: nothing from there on may be restored.
        let (at, cut_offset) = match damage {
            "corrupt" => {
                let last = bytes.len() - 1;
                bytes[last] ^= 0xff;
                let at = last_batch_position(&bytes);
                let base = i64::from_be_bytes(bytes[at..at + 8].try_into().unwrap());
                (at, base)
            }
            _ => {
                bytes.truncate(bytes.len() - 7);
                (bytes.len(), second["base_offset"].as_i64().unwrap())
            }
        };
        std::fs::write(&path, &bytes).unwrap();
        let prefix = format!("{damage}-");
        let output = restore_command(&broker, dir.path(), &["--topic-prefix", &prefix])
            .output()
            .expect("run krec restore");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!("{file} at byte {at}")),
            "{damage}: {stderr}"
        );
        let copy = committed(&broker, &format!("{prefix}{topic}"));
        let source = committed(&broker, &topic);
        // Everything before the damage is restored and committed, nothing from it on.
        assert_eq!(copy.len() as i64, cut_offset, "{damage}: {stderr}");
        assert_copied(&source[..copy.len()], &copy);
    }
}

/// The byte position of the last batch in `segment`.
fn last_batch_position(segment: &[u8]) -> usize {
    let mut position = 0;
    loop {
        let length = i32::from_be_bytes(segment[position + 8..position + 12].try_into().unwrap());
        let next = position + 12 + length as usize;
        if next >= segment.len() {
            return position;
        }
        position = next;
    }
}

#[test]
fn groups_offsets_land_on_the_records_with_the_same_content() {
    let broker = broker();
    let dir = tempfile::tempdir().expect("a backup dir");
    let topic = unique_topic("restore-groups");
    create_topic(&broker, &topic, 1, &[]);
    // value-0..9 committed, value-10..19 aborted, value-20..29 committed.
    let produced = broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "lz4".to_owned(),
        transactional_id: Some(unique_topic("restore-groups")),
        steps: vec![
            (Some(true), simple_records(0, 10, 1)),
            (Some(false), simple_records(10, 10, 1)),
            (Some(true), simple_records(20, 10, 1)),
        ],
    });
    let offset_of = |i: usize| {
        let value = format!("value-{i}").into_bytes();
        (produced.iter())
            .find(|r| r.value.as_ref() == Some(&value))
            .expect("produced")
            .offset
    };
    back_up(&broker, &[(&topic, 1)], dir.path(), 1 << 20);
    // The groups' offsets at the source, as a backup keeps them.
    let group = unique_topic("restore-billing");
    let path = dir.path().join("manifest.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["topics"][&topic]["groups"] = json!({ &group: {"0": offset_of(24)} });
    std::fs::write(&path, manifest.to_string()).unwrap();
    restore(&broker, dir.path(), &["--groups"]);
    let copy = format!("restored-{topic}");
    let restored = committed(&broker, &copy);
    let target = (restored.iter())
        .find(|r| r.value.as_deref() == Some(b"value-24".as_slice()))
        .expect("restored")
        .offset;
    assert_eq!(group_offset(&broker, &group, &copy), Some(target));
}

/// The offset `group` committed for partition 0 of `topic`, as `krec groups` reads it.
fn group_offset(broker: &Broker, group: &str, topic: &str) -> Option<i64> {
    let output = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(["groups", "-b", &broker.bootstrap, group, "-J"])
        .stdin(Stdio::null())
        .output()
        .expect("run krec groups");
    let doc: Value = serde_json::from_slice(&output.stdout).ok()?;
    let partitions = doc["partitions"].as_array()?;
    let row = partitions.iter().find(|p| p["topic"] == topic)?;
    row["committed_offset"].as_i64()
}

#[test]
fn a_backup_in_s3_is_restored_as_one_on_disk() {
    let endpoint = std::env::var("KREC_TEST_S3_ENDPOINT")
        .expect("KREC_TEST_S3_ENDPOINT: an S3-compatible server (scripts/s3.sh start)");
    let broker = broker();
    let topic = unique_topic("restore-s3");
    create_topic(&broker, &topic, 2, &[]);
    broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "zstd".to_owned(),
        steps: vec![(None, (0..80).map(|i| varied_record(i, 2)).collect())],
        ..ProducePlan::default()
    });
    let bucket = unique_topic("krec-restore")
        .to_lowercase()
        .replace('_', "-");
    let made = Command::new("curl")
        .args(["-sf", "-X", "PUT", &format!("{endpoint}/{bucket}")])
        .status()
        .expect("run curl");
    assert!(made.success(), "bucket {bucket} at {endpoint}");
    let location = format!("s3://{bucket}/backups/{topic}");
    let s3 = [
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
    ];
    let run = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_krec"))
            .args(args)
            .envs(s3)
            .stdin(Stdio::null())
            .output()
            .expect("run krec");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "krec {args:?}: {stderr}");
        stderr
    };
    let bootstrap = broker.bootstrap.as_str();
    run(&["backup", "-b", bootstrap, "-t", &topic, &location]);
    let stderr = run(&[
        "restore",
        "-b",
        bootstrap,
        &location,
        "--topic-prefix",
        "s3-",
    ]);
    assert_eq!(summary_count(&stderr, "records, "), 80, "{stderr}");
    let copy = committed(&broker, &format!("s3-{topic}"));
    assert_copied(&committed(&broker, &topic), &copy);
}

#[test]
fn a_compacted_topic_with_offset_gaps_is_restored_record_by_record() {
    let broker = broker();
    let dir = tempfile::tempdir().expect("a backup dir");
    let topic = unique_topic("restore-cleaned");
    let configs = [
        ("cleanup.policy", "compact"),
        ("segment.ms", "100"),
        ("min.cleanable.dirty.ratio", "0.01"),
        ("delete.retention.ms", "0"),
        ("min.compaction.lag.ms", "0"),
    ];
    create_topic(&broker, &topic, 1, &configs);
    let keyed = |from: usize, count: usize| -> Vec<PlannedRecord> {
        (from..from + count)
            .map(|i| PlannedRecord {
                partition: 0,
                key: Some(format!("key-{}", i % 20).into_bytes()),
                value: Some(format!("value-{i}").into_bytes()),
                headers: Vec::new(),
                timestamp: None,
            })
            .collect()
    };
    for (compression, records) in [("lz4", keyed(0, 200)), ("none", keyed(200, 1))] {
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: compression.to_owned(),
            steps: vec![(None, records)],
            ..ProducePlan::default()
        });
        // A record in a new segment (segment.ms passed) makes the others cleanable.
        std::thread::sleep(Duration::from_millis(300));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while committed(&broker, &topic).len() > 21 {
        assert!(
            std::time::Instant::now() < deadline,
            "the cleaner never ran"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    back_up(&broker, &[(&topic, 1)], dir.path(), 1 << 20);
    let output = restore(&broker, dir.path(), &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let source = committed(&broker, &topic);
    assert_eq!(restored_count(&output), source.len() as u64, "{stderr}");
    // The batches with offset gaps the cleaner left were written again.
    assert!(summary_count(&stderr, "re-encoded") > 0, "{stderr}");
    assert_copied(&source, &committed(&broker, &format!("restored-{topic}")));
}
