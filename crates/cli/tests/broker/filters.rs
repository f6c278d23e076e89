//! `--key`, `--header`, `--grep` and `--partitioner` against records written by kcat
//! (librdkafka's default partitioner) and by Kafka's Java console producer (murmur2), on
//! `krec consume` and on `krec decode` of the broker's segment files.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::support::broker::{broker, parse_json_lines, unique_topic, Broker, Produced};

const PARTITIONS: u32 = 6;

/// Produces `lines` (`key:value`) with kcat and `headers`, letting librdkafka pick partitions.
fn kcat_produce(broker: &Broker, topic: &str, lines: &[String], headers: &[&str]) {
    let mut command = Command::new("kcat");
    command.args([
        "-P",
        "-b",
        &broker.bootstrap,
        "-t",
        topic,
        "-K",
        ":",
        "-z",
        "lz4",
    ]);
    for header in headers {
        command.args(["-H", header]);
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kcat");
    let input = lines.join("\n") + "\n";
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "kcat: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn consumed(broker: &Broker, topic: &str, args: &[&str]) -> (Vec<Produced>, String) {
    let output = broker.consume(topic, &[&["-e"], args].concat());
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "krec consume {args:?}: {stderr}");
    (parse_json_lines(&output.stdout), stderr)
}

fn decoded(broker: &Broker, topic: &str, args: &[&str]) -> Vec<Produced> {
    let data = broker.kafka_sh("datadir", &[]);
    let files: Vec<String> = (0..PARTITIONS)
        .map(|p| format!("{}/{topic}-{p}/00000000000000000000.log", data.trim()))
        .collect();
    let output = Command::new(env!("CARGO_BIN_EXE_krec"))
        .arg("decode")
        .args(args)
        .args(&files)
        .output()
        .expect("run krec decode");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    parse_json_lines(&output.stdout)
}

#[test]
fn filters_keep_exactly_the_matching_records_on_consume_and_decode() {
    let broker = broker();
    let topic = unique_topic("filters");
    broker.create_topic(&topic, PARTITIONS, 1);
    let lines: Vec<String> = (0..600).map(|i| format!("key-{i}:value-{i}")).collect();
    kcat_produce(&broker, &topic, &lines, &["source=kcat"]);
    kcat_produce(
        &broker,
        &topic,
        &["needle:found it".to_owned()],
        &["trace=t-42", "source=kcat"],
    );

    let (all, _) = consumed(&broker, &topic, &[]);
    assert_eq!(all.len(), 601);
    let needle: Vec<&Produced> = all
        .iter()
        .filter(|r| r.key.as_deref() == Some(b"needle"))
        .collect();
    assert_eq!(needle.len(), 1);

    let cases: [(&[&str], usize); 7] = [
        (&["--header", "trace=t-42"], 1),
        (&["--header", "trace"], 1),
        (&["--header", "trace=t-4"], 0),
        (&["--header", "source=kcat", "--header", "trace"], 1),
        (&["--key", "needle"], 1),
        // value-10 .. value-19 and value-100 .. value-199.
        (&["--grep", "^value-1[0-9]+$"], 110),
        (&["--key", "key-7", "--grep", "7$"], 1),
    ];
    for (args, expected) in cases {
        let (printed, stderr) = consumed(&broker, &topic, &[args, &["--stats", "60"]].concat());
        assert_eq!(printed.len(), expected, "{args:?}");
        assert!(
            stderr.contains(&format!("{expected} records written of 601 scanned")),
            "{args:?}: {stderr}"
        );
        for record in &printed {
            let original = all
                .iter()
                .find(|r| (r.partition, r.offset) == (record.partition, record.offset))
                .expect("a produced record");
            assert_eq!(record, original, "printed as produced");
        }
        let from_files = decoded(&broker, &topic, args);
        let key = |r: &Produced| (r.partition, r.offset);
        let mut printed_keys: Vec<_> = printed.iter().map(key).collect();
        printed_keys.sort();
        assert_eq!(
            from_files.iter().map(key).collect::<Vec<_>>(),
            printed_keys,
            "{args:?} on decode"
        );
    }
    assert_eq!(
        consumed(&broker, &topic, &["--header", "trace=t-42"]).0[0]
            .key
            .as_deref(),
        Some(&b"needle"[..])
    );
}

#[test]
fn partitioners_find_the_partition_each_producer_chose() {
    let broker = broker();
    // librdkafka's default partitioner (consistent_random) is CRC32 for keyed records.
    let by_kcat = unique_topic("part-kcat");
    broker.create_topic(&by_kcat, PARTITIONS, 1);
    let lines: Vec<String> = (0..200).map(|i| format!("key-{i}:v{i}")).collect();
    kcat_produce(&broker, &by_kcat, &lines, &[]);
    // The Java producer's default for keyed records is murmur2.
    let by_java = unique_topic("part-java");
    broker.create_topic(&by_java, PARTITIONS, 1);
    broker.tool_with_input(
        &[
            "org.apache.kafka.tools.ConsoleProducer",
            "--bootstrap-server",
            "{bootstrap}",
            "--topic",
            &by_java,
            "--property",
            "parse.key=true",
            "--property",
            "key.separator=:",
        ],
        (lines.join("\n") + "\n").as_bytes(),
    );

    for (topic, partitioner, other) in [
        (&by_kcat, "crc32", "murmur2"),
        (&by_java, "murmur2", "crc32"),
    ] {
        let (all, _) = consumed(&broker, topic, &[]);
        assert_eq!(all.len(), 200, "{topic}");
        let mut distinct_partitions = std::collections::BTreeSet::new();
        for i in [3, 17, 42, 199] {
            let key = format!("key-{i}");
            let actual = all
                .iter()
                .find(|r| r.key.as_deref() == Some(key.as_bytes()))
                .expect("produced")
                .partition;
            distinct_partitions.insert(actual);
            let (printed, stderr) = consumed(
                &broker,
                topic,
                &["--key", &key, "--partitioner", partitioner],
            );
            assert!(
                stderr.contains(&format!("reading partition {actual} only")),
                "{partitioner} for {key}: {stderr}"
            );
            assert_eq!(printed.len(), 1, "{partitioner} for {key}");
            assert_eq!(printed[0].partition, actual);
        }
        assert!(
            distinct_partitions.len() > 1,
            "the keys spread over partitions"
        );
        // The other client's partitioner looks elsewhere for at least one of the keys.
        let misses = [3, 17, 42, 199]
            .iter()
            .filter(|i| {
                let key = format!("key-{i}");
                consumed(&broker, topic, &["--key", &key, "--partitioner", other])
                    .0
                    .is_empty()
            })
            .count();
        assert!(misses > 0, "{other} on {topic} should miss some key");
    }
}
