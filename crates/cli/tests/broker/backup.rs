//! `krec backup` against the real broker: topics written by librdkafka in every codec with an
//! aborted transaction, backed up into a directory, read back by `krec decode` and by Kafka's
//! DumpLogSegments and compared with the source record by record; the manifest's offsets,
//! timestamps, topic id and consumer groups; a backup run again (incremental) and one that
//! finds records deleted under it; a compacted topic kept as the broker stored it.
//! `backup_runs` has the runs that are stopped (SIGTERM, SIGKILL) and the backup into S3.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::mirror::{committed, summary_count};
use crate::support::broker::{
    broker, parse_json_lines, simple_records, unique_topic, varied_record, Broker, PlannedRecord,
    ProducePlan, Produced,
};

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

pub(crate) fn backup_command(broker: &Broker, topics: &str, location: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
    command
        .args(["backup", "-b", &broker.bootstrap, "-t", topics, location])
        .stdin(Stdio::null());
    command
}

/// `krec backup` into `dir`; asserts it exits with `status`.
pub(crate) fn backup(broker: &Broker, topics: &str, dir: &Path, status: i32) -> Output {
    let output = backup_command(broker, topics, dir.to_str().expect("UTF-8 path"))
        .output()
        .expect("run krec backup");
    assert_eq!(
        output.status.code(),
        Some(status),
        "krec backup: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

pub(crate) fn manifest(dir: &Path) -> Value {
    let text = std::fs::read(dir.join("manifest.json")).expect("the manifest");
    serde_json::from_slice(&text).expect("JSON")
}

/// The segment files of `topic` in `dir`, by partition then name.
pub(crate) fn segment_files(dir: &Path, topic: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("the backup directory") {
        let path = entry.expect("an entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let partition = name.strip_prefix(&format!("{topic}-"));
        if partition.is_some_and(|p| p.parse::<i32>().is_ok()) {
            for segment in std::fs::read_dir(&path).expect("a partition directory") {
                files.push(segment.expect("a segment").path());
            }
        }
    }
    files.sort();
    files
}

/// The records `krec decode` reads from `files`, by partition then offset.
pub(crate) fn decoded(files: &[PathBuf]) -> Vec<Produced> {
    let output = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(["decode", "-J"])
        .args(files)
        .stdin(Stdio::null())
        .output()
        .expect("run krec decode");
    assert!(
        output.status.success(),
        "krec decode: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut records = parse_json_lines(&output.stdout);
    records.sort_by_key(|r| (r.partition, r.offset));
    records
}

/// The same records (keys, values, headers, timestamps, partitions, offsets), each
/// partition in the same order; the first difference is named.
pub(crate) fn assert_same(got: &[Produced], want: &[Produced], what: &str) {
    let mut want = want.to_vec();
    want.sort_by_key(|r| (r.partition, r.offset));
    for (index, (got, want)) in got.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "{what}: record #{index}");
    }
    assert_eq!(got.len(), want.len(), "{what}: records");
}

/// Each partition's end offset (`krec offsets`'s latest).
fn end_offsets(broker: &Broker, topic: &str) -> BTreeMap<i64, i64> {
    let output = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(["offsets", "-b", &broker.bootstrap, "-t", topic, "-J"])
        .stdin(Stdio::null())
        .output()
        .expect("run krec offsets");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a JSON line"))
        .map(|v| {
            (
                v["partition"].as_i64().unwrap(),
                v["latest"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// The topic's id as UUID text (`krec metadata` prints it as Kafka's tools do, in base64).
fn topic_id(broker: &Broker, topic: &str) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(["metadata", "-b", &broker.bootstrap, "-J", "-t", topic])
        .stdin(Stdio::null())
        .output()
        .expect("run krec metadata");
    let doc: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let text = doc["topics"][0]["id"].as_str().expect("a topic id");
    let bytes = base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, text)
        .expect("base64");
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The manifest's partitions of `topic`, by number.
pub(crate) fn partitions_of<'m>(manifest: &'m Value, topic: &str) -> Vec<(i64, &'m Value)> {
    let partitions = manifest["topics"][topic]["partition"]
        .as_object()
        .unwrap_or_else(|| panic!("{topic} in {manifest}"));
    (partitions.iter())
        .map(|(number, p)| (number.parse().unwrap(), p))
        .collect()
}

/// What the manifest says of each partition matches the records backed up and the source.
fn check_manifest(manifest: &Value, topic: &str, records: &[Produced], ends: &BTreeMap<i64, i64>) {
    for (partition, kept) in partitions_of(manifest, topic) {
        let mine: Vec<&Produced> = records
            .iter()
            .filter(|r| r.partition as i64 == partition)
            .collect();
        assert_eq!(kept["next_offset"], ends[&partition], "{topic}-{partition}");
        let segments = kept["segments"].as_array().unwrap();
        let sum = |field: &str| {
            segments
                .iter()
                .map(|s| s[field].as_u64().unwrap())
                .sum::<u64>()
        };
        assert_eq!(sum("records"), mine.len() as u64, "{topic}-{partition}");
        let (first, last) = (mine.first().unwrap(), mine.last().unwrap());
        assert_eq!(
            segments[0]["base_offset"], first.offset,
            "{topic}-{partition}"
        );
        let last_offset = segments.last().unwrap()["last_offset"].as_i64().unwrap();
        assert!(last_offset >= last.offset && last_offset < ends[&partition]);
        assert_eq!(segments[0]["first_timestamp"], first.timestamp.unwrap());
        let max = mine.iter().filter_map(|r| r.timestamp).max().unwrap();
        let kept_max = segments
            .iter()
            .map(|s| s["max_timestamp"].as_i64().unwrap())
            .max();
        assert_eq!(kept_max, Some(max), "{topic}-{partition}");
        for segment in segments {
            let file = segment["file"].as_str().unwrap();
            let base = segment["base_offset"].as_i64().unwrap();
            assert_eq!(file, format!("{topic}-{partition}/{base:020}.log"));
        }
    }
}

#[test]
fn every_codec_and_an_aborted_transaction_kept_as_fetched_and_read_by_kafka() {
    let broker = broker();
    let dir = tempfile::tempdir().expect("a directory");
    let mut topics = Vec::new();
    let mut aborted = Vec::new();
    for codec in CODECS {
        let topic = unique_topic(&format!("backup-{codec}"));
        broker.create_topic(&topic, 2, 1);
        let records = |range: std::ops::Range<usize>| range.map(|i| varied_record(i, 2)).collect();
        let produced = broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: codec.to_owned(),
            transactional_id: Some(format!("{topic}-tx")),
            steps: vec![
                (Some(true), records(0..40)),
                (Some(false), records(40..60)),
                (Some(true), records(60..100)),
            ],
        });
        aborted.push(
            produced
                .into_iter()
                .filter(|r| !r.committed)
                .collect::<Vec<_>>(),
        );
        topics.push(topic);
    }
    // A group that read the first topic to its end: its offsets go into the manifest.
    let group = unique_topic("backup-group");
    let read = (broker.consume(&topics[0], &["-G", &group, "-e"])).status;
    assert!(read.success());

    let output = backup(&broker, &topics.join(","), dir.path(), 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(summary_count(&stderr, "records, "), 5 * 80, "{stderr}");
    assert_eq!(summary_count(&stderr, "records lost"), 0, "{stderr}");
    assert!(!dir.path().join(".krec-staging").exists());

    let kept = manifest(dir.path());
    let mut all_files = Vec::new();
    for (topic, aborted) in topics.iter().zip(&aborted) {
        let source = committed(&broker, topic);
        assert_eq!(source.len(), 80, "{topic}");
        let files = segment_files(dir.path(), topic);
        let backed_up = decoded(&files);
        assert_same(&backed_up, &source, topic);
        // The aborted records are not kept: their offsets are a gap in the backup.
        for record in aborted {
            let at = (record.partition, record.offset);
            assert!(
                !backed_up.iter().any(|r| (r.partition, r.offset) == at),
                "{at:?}"
            );
        }
        let ends = end_offsets(&broker, topic);
        check_manifest(&kept, topic, &backed_up, &ends);
        assert_eq!(kept["topics"][topic]["partitions"], 2);
        assert_eq!(kept["topics"][topic]["topic_id"], topic_id(&broker, topic));
        all_files.extend(files);
    }
    let groups = &kept["topics"][&topics[0]]["groups"][&group];
    let ends = end_offsets(&broker, &topics[0]);
    for (partition, end) in ends {
        assert_eq!(groups[partition.to_string()], end, "{group} in {kept}");
    }

    // Kafka's own reader takes every file as it is: valid batches, no control batch, every
    // record of the source.
    let files: Vec<&str> = all_files.iter().map(|f| f.to_str().unwrap()).collect();
    let dump = broker.tool(
        "org.apache.kafka.tools.DumpLogSegments",
        &["--deep-iteration", "--files", &files.join(",")],
    );
    let mut records = 0;
    for line in dump.lines() {
        if line.starts_with("baseOffset: ") {
            assert!(line.contains(" isvalid: true"), "{line}");
            assert!(line.contains(" isControl: false"), "{line}");
        } else if line.starts_with("| offset: ") {
            records += 1;
        } else {
            assert!(!line.contains("invalid bytes"), "DumpLogSegments: {line}");
        }
    }
    assert_eq!(records, 5 * 80, "{dump}");
}

#[test]
fn a_backup_run_again_continues_and_reports_what_the_source_deleted() {
    let broker = broker();
    let dir = tempfile::tempdir().expect("a directory");
    let topic = unique_topic("backup-again");
    broker.create_topic(&topic, 1, 1);
    let produce = |records: Vec<PlannedRecord>| {
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: "zstd".to_owned(),
            steps: vec![(None, records)],
            ..ProducePlan::default()
        })
    };
    produce(simple_records(0, 50, 1));
    backup(&broker, &topic, dir.path(), 0);
    let first = manifest(dir.path());
    produce(simple_records(50, 50, 1));
    let output = backup(&broker, &topic, dir.path(), 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(summary_count(&stderr, "records, "), 50, "{stderr}");
    let second = manifest(dir.path());
    assert_eq!(second["backup_id"], first["backup_id"]);
    let segments = second["topics"][&topic]["partition"]["0"]["segments"]
        .as_array()
        .unwrap();
    assert_eq!(segments.len(), 2, "{second}");
    assert_eq!(
        segments[1]["base_offset"], 50,
        "the second run starts where the first stopped"
    );
    let backed_up = decoded(&segment_files(dir.path(), &topic));
    assert_eq!(
        backed_up,
        committed(&broker, &topic),
        "nothing repeated, nothing missed"
    );

    // Records added, then deleted at the source before the next run reads them: a loss,
    // said on stderr, in the exit status and in the manifest.
    // Two batches: the deletion ends at the boundary between them.
    produce(simple_records(100, 20, 1));
    produce(simple_records(120, 10, 1));
    broker.delete_records(&topic, 0, 120);
    let output = backup(&broker, &topic, dir.path(), 3);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(summary_count(&stderr, "records lost"), 20, "{stderr}");
    assert!(stderr.contains("warning: 20 records lost"), "{stderr}");
    let third = manifest(dir.path());
    let kept = &third["topics"][&topic]["partition"]["0"];
    assert_eq!(kept["lost"][0]["from"], 100, "{third}");
    assert_eq!(kept["lost"][0]["to"], 120, "{third}");
    assert_eq!(kept["next_offset"], 130);
    let last = kept["segments"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["base_offset"], 120);
}

#[test]
fn a_compacted_topic_is_kept_as_the_broker_stored_it() {
    let broker = broker();
    let dir = tempfile::tempdir().expect("a directory");
    let topic = unique_topic("backup-compacted");
    let configs = [
        "cleanup.policy=compact",
        "segment.ms=100",
        "min.cleanable.dirty.ratio=0.01",
        "delete.retention.ms=0",
        "min.compaction.lag.ms=0",
    ];
    let mut create = vec!["create", topic.as_str(), "--partitions", "1"];
    for config in &configs {
        create.extend(["--config", config]);
    }
    broker.kafka_sh("topic", &create);
    broker.wait_for_leaders(&topic, 1);
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
    for (compression, records) in [("lz4", keyed(0, 200)), ("none", keyed(200, 200))] {
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: compression.to_owned(),
            steps: vec![(None, records)],
            ..ProducePlan::default()
        });
    }
    // A record in a new segment (segment.ms passed) makes the others cleanable.
    std::thread::sleep(Duration::from_millis(300));
    broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "none".to_owned(),
        steps: vec![(None, keyed(400, 1))],
        ..ProducePlan::default()
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    while committed(&broker, &topic).len() > 21 {
        assert!(
            Instant::now() < deadline,
            "the log cleaner did not run in 90 s"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let output = backup(&broker, &topic, dir.path(), 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let source = committed(&broker, &topic);
    assert_eq!(
        summary_count(&stderr, "records, "),
        source.len() as u64,
        "{stderr}"
    );
    let files = segment_files(dir.path(), &topic);
    assert_same(&decoded(&files), &source, &topic);
    // The bytes are the broker's own: its log, segment after segment, is the backup's.
    let data = PathBuf::from(broker.kafka_sh("datadir", &[]).trim()).join(format!("{topic}-0"));
    let mut logs: Vec<PathBuf> = (std::fs::read_dir(&data).expect("the topic's log directory"))
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let broker_bytes: Vec<u8> = logs
        .iter()
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect();
    let backup_bytes: Vec<u8> = files
        .iter()
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(
        backup_bytes == broker_bytes,
        "the backup differs from the broker's log"
    );
    // Compaction's gaps are kept: the offsets the batches span exceed the records they hold.
    let kept = manifest(dir.path());
    let segments = &kept["topics"][&topic]["partition"]["0"]["segments"];
    let span = segments[0]["last_offset"].as_i64().unwrap() + 1;
    assert!(span > source.len() as i64, "{kept}");
    assert_eq!(
        kept["topics"][&topic]["configs"]["cleanup.policy"],
        "compact"
    );
}
