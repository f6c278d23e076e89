//! `krec count` against a real broker and its segment files: exact counts of what a
//! transactional librdkafka producer acknowledged, aborted transactions left out under
//! read_committed, and a log start inside a compressed batch.

use std::collections::BTreeMap;
use std::process::{Command, Output, Stdio};

use crate::support::broker::{broker, simple_records, unique_topic, Broker, ProducePlan};

fn krec(args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run krec");
    assert!(
        output.status.success(),
        "krec {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `krec count ... -J` as partition -> records, with the total line checked against the sum.
fn counted(args: &[&str]) -> BTreeMap<i64, i64> {
    let output = krec(args);
    let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON line"))
        .collect();
    let (total, partitions) = lines.split_last().expect("a total line");
    assert!(total.get("partition").is_none(), "{total}");
    let counts: BTreeMap<i64, i64> = partitions
        .iter()
        .map(|l| {
            (
                l["partition"].as_i64().unwrap(),
                l["records"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(total["records"].as_i64(), Some(counts.values().sum()));
    counts
}

fn segment_files(broker: &Broker, topic: &str, partitions: i32) -> Vec<String> {
    let data = broker.kafka_sh("datadir", &[]);
    (0..partitions)
        .map(|p| format!("{}/{topic}-{p}/00000000000000000000.log", data.trim()))
        .collect()
}

#[test]
fn counts_match_what_the_producer_acknowledged() {
    let broker = broker();
    let topic = unique_topic("count");
    broker.create_topic(&topic, 3, 1);
    let step = |from, commit| (Some(commit), simple_records(from, 300, 3));
    let produced = broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "lz4".into(),
        transactional_id: Some(unique_topic("count-txn")),
        steps: vec![step(0, true), step(300, false), step(600, true)],
    });
    let mut all: BTreeMap<i64, i64> = BTreeMap::new();
    let mut committed: BTreeMap<i64, i64> = BTreeMap::new();
    for record in &produced {
        *all.entry(record.partition.into()).or_default() += 1;
        *committed.entry(record.partition.into()).or_default() += i64::from(record.committed);
    }
    assert_eq!(all.values().sum::<i64>(), 900);
    assert_eq!(committed.values().sum::<i64>(), 600);

    let on_broker = ["count", "-b", &broker.bootstrap, "-t", &topic, "-J"];
    assert_eq!(
        counted(&on_broker),
        all,
        "read_uncommitted counts every data record"
    );
    let committed_args = [&on_broker[..], &["--isolation", "read_committed"]].concat();
    assert_eq!(
        counted(&committed_args),
        committed,
        "aborted records left out"
    );

    // The same from the broker's own segment files, which hold the markers.
    let files = segment_files(&broker, &topic, 3);
    let file_args: Vec<&str> = ["count", "-J"]
        .into_iter()
        .chain(files.iter().map(String::as_str))
        .collect();
    assert_eq!(counted(&file_args), all);
    let committed_files = [&file_args[..], &["--isolation", "read_committed"]].concat();
    assert_eq!(counted(&committed_files), committed);

    // Filters decode every batch and count the matches: values ending in 7, committed only.
    let mut sevens: BTreeMap<i64, i64> = (0..3).map(|p| (p, 0)).collect();
    for record in produced.iter().filter(|r| r.committed) {
        if record.value.as_deref().is_some_and(|v| v.ends_with(b"7")) {
            *sevens.entry(record.partition.into()).or_default() += 1;
        }
    }
    let grep = ["--grep", "7$", "--isolation", "read_committed"];
    assert_eq!(counted(&[&on_broker[..], &grep].concat()), sevens);
    assert_eq!(counted(&[&file_args[..], &grep].concat()), sevens);
    let header = ["--header", "n=601"];
    let one = counted(&[&on_broker[..], &header].concat());
    assert_eq!(one.values().sum::<i64>(), 1, "{one:?}");

    let text =
        String::from_utf8(krec(&["count", "-b", &broker.bootstrap, "-t", &topic]).stdout).unwrap();
    assert!(text.ends_with(&format!("{topic} total 900\n")), "{text}");
}

#[test]
fn a_log_start_inside_a_compressed_batch_counts_from_there() {
    let broker = broker();
    let topic = unique_topic("count-start");
    broker.create_topic(&topic, 1, 1);
    broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "zstd".into(),
        steps: vec![(None, simple_records(0, 50, 1))],
        ..ProducePlan::default()
    });
    broker.delete_records(&topic, 0, 7);
    let counts = counted(&["count", "-b", &broker.bootstrap, "-t", &topic, "-J"]);
    assert_eq!(counts, BTreeMap::from([(0, 43)]));
    let consumed = broker.consume_records(&topic, &["-e"]);
    assert_eq!(consumed.len(), 43, "krec consume agrees");
}
