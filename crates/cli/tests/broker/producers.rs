//! Records written by kcat (librdkafka) and by Kafka's own Java tools come back exactly, and a
//! segment file written by the broker decodes (`krec decode`) to what `krec consume` prints.

use std::process::{Command, Stdio};

use crate::support::broker::{broker, unique_topic, varied_record, ProducePlan};

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

#[test]
fn kcat_records_in_every_codec() {
    let broker = broker();
    let topic = unique_topic("kcat");
    broker.create_topic(&topic, CODECS.len() as u32, 1);
    let lines: Vec<String> = (0..500)
        .map(|i| match i % 5 {
            // With -Z an empty value is sent as NULL.
            0 => format!("key-{i}:"),
            _ => format!("key-{i}:value-{i} {}", "y".repeat(i % 50)),
        })
        .collect();
    let mut input = lines.join("\n");
    input.push('\n');
    for (partition, codec) in CODECS.iter().enumerate() {
        let mut child = Command::new("kcat")
            .args(["-P", "-b", &broker.bootstrap, "-t", &topic])
            .args(["-p", &partition.to_string(), "-z", codec, "-K", ":", "-Z"])
            .args(["-H", "source=kcat", "-H", "dup=1", "-H", "dup=2"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kcat (installed by scripts/install-deps.sh)");
        use std::io::Write;
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
    let printed = broker.consume_records(&topic, &["-e"]);
    assert_eq!(printed.len(), 500 * CODECS.len());
    for partition in 0..CODECS.len() as i32 {
        let records: Vec<_> = printed
            .iter()
            .filter(|r| r.partition == partition)
            .collect();
        assert_eq!(records.len(), 500, "partition {partition}");
        for (i, record) in records.iter().enumerate() {
            assert_eq!(record.offset, i as i64);
            assert_eq!(record.key.as_deref(), Some(format!("key-{i}").as_bytes()));
            let value = match i % 5 {
                0 => None,
                _ => Some(format!("value-{i} {}", "y".repeat(i % 50)).into_bytes()),
            };
            assert_eq!(record.value, value, "partition {partition} offset {i}");
            let headers: Vec<(&[u8], Option<&[u8]>)> = record
                .headers
                .iter()
                .map(|(k, v)| (k.as_slice(), v.as_deref()))
                .collect();
            assert_eq!(
                headers,
                vec![
                    (&b"source"[..], Some(&b"kcat"[..])),
                    (&b"dup"[..], Some(&b"1"[..])),
                    (&b"dup"[..], Some(&b"2"[..])),
                ]
            );
        }
    }
}

#[test]
fn java_producer_performance_and_console_producer() {
    let broker = broker();
    let topic = unique_topic("java");
    broker.create_topic(&topic, 1, 1);
    let count = 20_000;
    for (round, codec) in ["zstd", "lz4"].iter().enumerate() {
        let _ = round;
        broker.tool_with_input(
            &[
                "org.apache.kafka.tools.ProducerPerformance",
                "--topic",
                &topic,
                "--num-records",
                &count.to_string(),
                "--payload-monotonic",
                "--throughput",
                "-1",
                "--producer-props",
                "bootstrap.servers={bootstrap}",
                &format!("compression.type={codec}"),
                "linger.ms=5",
                "acks=all",
            ],
            b"",
        );
    }
    // ConsoleProducer: `headers<TAB>key<TAB>value` lines, gzip.
    let console = "h1:v1,h2:v2\tkey-a\tvalue-a\nh1:x\tkey-b\tvalue-b\n";
    broker.tool_with_input(
        &[
            "org.apache.kafka.tools.ConsoleProducer",
            "--bootstrap-server",
            "{bootstrap}",
            "--topic",
            &topic,
            "--compression-codec",
            "gzip",
            "--property",
            "parse.headers=true",
            "--property",
            "parse.key=true",
        ],
        console.as_bytes(),
    );
    let printed = broker.consume_records(&topic, &["-e"]);
    assert_eq!(printed.len(), 2 * count + 2);
    for (index, record) in printed.iter().take(2 * count).enumerate() {
        assert_eq!(record.offset, index as i64);
        assert_eq!(record.key, None);
        // --payload-monotonic writes the record number as text, from 0 in each run.
        let expected = (index % count).to_string();
        assert_eq!(
            record.value.as_deref(),
            Some(expected.as_bytes()),
            "offset {index}"
        );
        assert!(record.headers.is_empty());
    }
    let last = &printed[2 * count..];
    assert_eq!(last[0].key.as_deref(), Some(&b"key-a"[..]));
    assert_eq!(last[0].value.as_deref(), Some(&b"value-a"[..]));
    assert_eq!(
        last[0].headers,
        vec![
            (b"h1".to_vec(), Some(b"v1".to_vec())),
            (b"h2".to_vec(), Some(b"v2".to_vec()))
        ]
    );
    assert_eq!(last[1].headers, vec![(b"h1".to_vec(), Some(b"x".to_vec()))]);
    assert_eq!(last[1].offset, 2 * count as i64 + 1);
}

#[test]
fn segment_file_decodes_to_what_consume_prints() {
    let broker = broker();
    let topic = unique_topic("segment");
    broker.create_topic(&topic, 1, 1);
    for (round, codec) in CODECS.iter().enumerate() {
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: (*codec).to_owned(),
            steps: vec![(
                None,
                (0..50).map(|i| varied_record(round * 100 + i, 1)).collect(),
            )],
            ..ProducePlan::default()
        });
    }
    let consumed = broker.consume(&topic, &["-e", "-f", "json"]);
    assert!(consumed.status.success());
    let datadir = broker.kafka_sh("datadir", &[]);
    let segment = std::path::Path::new(datadir.trim())
        .join(format!("{topic}-0"))
        .join("00000000000000000000.log");
    let decoded = Command::new(env!("CARGO_BIN_EXE_krec"))
        .arg("decode")
        .arg(&segment)
        .args(["-f", "json"])
        .output()
        .expect("run krec decode");
    assert!(
        decoded.status.success(),
        "krec decode {}: {}",
        segment.display(),
        String::from_utf8_lossy(&decoded.stderr)
    );
    let consumed = String::from_utf8(consumed.stdout).unwrap();
    let decoded = String::from_utf8(decoded.stdout).unwrap();
    assert_eq!(consumed.lines().count(), 250);
    assert_eq!(decoded, consumed);
}
