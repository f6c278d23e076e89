//! `krec produce` against the real broker: every codec read back by kcat; kcat's `-P` input
//! read back by kcat and by Kafka's Java console consumer, `krec consume -J | krec produce -J`
//! copying a topic exactly, the errors that stop it (where, and exit 1), and SIGTERM
//! delivering what was read.

use std::io::Write;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::support::broker::{
    assert_same_records, broker, unique_topic, varied_record, wait_with_timeout, ProducePlan,
    Produced,
};

/// Runs `krec produce -b BOOTSTRAP -t TOPIC ARGS` with `input` on stdin.
pub(crate) fn produce(bootstrap: &str, topic: &str, args: &[&str], input: &[u8]) -> Output {
    let mut child = spawn_produce(bootstrap, topic, args);
    let mut stdin = child.stdin.take().expect("piped stdin");
    // Written on a thread: a refused topic may end krec before it reads everything.
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().expect("wait for krec produce");
    writer.join().expect("the stdin writer");
    output
}

fn spawn_produce(bootstrap: &str, topic: &str, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(["produce", "-b", bootstrap, "-t", topic])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run krec produce")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every codec krec writes, compressible enough that the blocks are compressed (not stored),
/// read back by kcat (librdkafka's decompressors).
#[test]
fn every_codec_read_back_by_kcat() {
    let broker = broker();
    let input: String = (0..300)
        .map(|i| {
            format!(
                "key-{i}:value {i} {}\n",
                "the same words again ".repeat(i % 7 + 1)
            )
        })
        .collect();
    for codec in ["gzip", "snappy", "lz4", "zstd"] {
        let topic = unique_topic(&format!("cliprod-{codec}"));
        broker.create_topic(&topic, 1, 1);
        let output = produce(
            &broker.bootstrap,
            &topic,
            &["-K", ":", "-z", codec],
            input.as_bytes(),
        );
        assert!(output.status.success(), "{codec}: {}", stderr(&output));
        let kcat = Command::new("kcat")
            .args([
                "-C",
                "-b",
                &broker.bootstrap,
                "-t",
                &topic,
                "-e",
                "-f",
                "%k:%s\n",
            ])
            .stdin(Stdio::null())
            .output()
            .expect("run kcat");
        assert!(kcat.status.success(), "kcat {codec}: {}", stderr(&kcat));
        assert_eq!(String::from_utf8_lossy(&kcat.stdout), input, "{codec}");
    }
}

#[test]
fn lines_read_back_by_kcat_and_the_java_consumer() {
    let broker = broker();
    let topic = unique_topic("cliprod-lines");
    broker.create_topic(&topic, 2, 1);
    // kcat's -K/-Z: an empty key or value becomes null, and a record left without a key
    // takes -k's; a line without ':' is all value; the empty line is skipped.
    let input = b"k1:v1\nk2:\n:v3\nno-delimiter\n\nk5:v:5\n";
    let args = [
        "-p", "1", "-K", ":", "-Z", "-k", "fixed", "-H", "h=1", "-H", "h=2",
    ];
    let output = produce(&broker.bootstrap, &topic, &args, input);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).starts_with("krec produce: 5 records acknowledged, "),
        "{}",
        stderr(&output)
    );

    let kcat = Command::new("kcat")
        .args(["-C", "-b", &broker.bootstrap, "-t", &topic, "-p", "1", "-e"])
        .args(["-Z", "-f", "%k|%s|%h\n"])
        .stdin(Stdio::null())
        .output()
        .expect("run kcat");
    assert!(kcat.status.success(), "kcat: {}", stderr(&kcat));
    assert_eq!(
        String::from_utf8_lossy(&kcat.stdout),
        "k1|v1|h=1,h=2\nk2|NULL|h=1,h=2\nfixed|v3|h=1,h=2\nfixed|no-delimiter|h=1,h=2\nk5|v:5|h=1,h=2\n"
    );

    let java = broker.tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        &[
            "--bootstrap-server",
            "{bootstrap}",
            "--topic",
            &topic,
            "--from-beginning",
            "--max-messages",
            "5",
            "--timeout-ms",
            "30000",
            "--formatter-property",
            "print.key=true",
            "--formatter-property",
            "print.headers=true",
            "--formatter-property",
            "print.partition=true",
        ],
    );
    let expected = [
        "Partition:1\th:1,h:2\tk1\tv1",
        "Partition:1\th:1,h:2\tk2\tnull",
        "Partition:1\th:1,h:2\tfixed\tv3",
        "Partition:1\th:1,h:2\tfixed\tno-delimiter",
        "Partition:1\th:1,h:2\tk5\tv:5",
    ];
    assert_eq!(java.lines().collect::<Vec<_>>(), expected);
}

#[test]
fn json_lines_copy_a_topic_exactly() {
    let broker = broker();
    let source = unique_topic("cliprod-json-a");
    let target = unique_topic("cliprod-json-b");
    broker.create_topic(&source, 3, 1);
    broker.create_topic(&target, 3, 1);
    let records: Vec<_> = (0..300)
        .map(|i| {
            let mut record = varied_record(i, 3);
            record.timestamp = Some(1_700_000_000_000 + i as i64 * 7);
            record
        })
        .collect();
    let produced = broker.produce_python(&ProducePlan {
        topic: source.clone(),
        compression: "none".to_owned(),
        steps: vec![(None, records)],
        ..ProducePlan::default()
    });
    assert_eq!(produced.len(), 300);

    let consumed = broker.consume(&source, &["-e", "-J"]);
    assert!(consumed.status.success(), "{}", stderr(&consumed));
    let output = produce(&broker.bootstrap, &target, &["-J"], &consumed.stdout);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).starts_with("krec produce: 300 records acknowledged, "),
        "{}",
        stderr(&output)
    );

    let mut copied = broker.consume_records(&target, &["-e"]);
    copied.sort_by_key(|record| (record.partition, record.offset));
    // Null header values included: `varied_record` makes some.
    assert!(produced
        .iter()
        .any(|record| record.headers.iter().any(|(_, value)| value.is_none())));
    let expected: Vec<Produced> = produced
        .iter()
        .map(|record| Produced {
            committed: true,
            ..record.clone()
        })
        .collect();
    assert_same_records(&copied, &expected);
    for (copy, original) in copied.iter().zip(&expected) {
        assert_eq!(copy.timestamp, original.timestamp, "{copy:?}");
    }
}

#[test]
fn bad_input_and_unknown_topics_fail_with_where() {
    let broker = broker();
    let topic = unique_topic("cliprod-errors");
    broker.create_topic(&topic, 1, 1);

    let json = b"{\"value\":\"ok\"}\n{\"value\":\"cut\"\n{\"value\":\"never\"}\n";
    let output = produce(&broker.bootstrap, &topic, &["-J"], json);
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("krec produce: stdin:2: malformed JSON: "),
        "{text}"
    );
    assert!(
        lines[1].starts_with("krec produce: 1 records acknowledged, "),
        "{text}"
    );

    let long = [vec![b'x'; 3000], b"\n".to_vec()].concat();
    let output = produce(
        &broker.bootstrap,
        &topic,
        &["-X", "max.request.size=2000", "-X", "batch.size=1000"],
        &[b"short\n".as_slice(), &long].concat(),
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).starts_with(
            "krec produce: stdin:2: a record over 2000 bytes, the most max.request.size allows\n"
        ),
        "{}",
        stderr(&output)
    );

    // The broker refuses the batch (its topic takes 500 bytes at most): a failed delivery,
    // counted and named with where its record was read.
    let small = unique_topic("cliprod-small");
    let create = [
        "create",
        &small,
        "--partitions",
        "1",
        "--replication-factor",
        "1",
    ];
    let config = ["--config", "max.message.bytes=500"];
    broker.kafka_sh("topic", &[&create[..], &config[..]].concat());
    broker.wait_for_leaders(&small, 1);
    let output = produce(&broker.bootstrap, &small, &[], &long[..1000]);
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    assert!(
        text.starts_with(&format!(
            "krec produce: 1 of 1 records failed; the first, stdin:1: topic {small} partition 0: "
        )) && text.contains("(MESSAGE_TOO_LARGE)")
            && text.ends_with(
                "\nkrec produce: 0 records acknowledged, 0 bytes in 0 batches, 0 retries\n"
            ),
        "{text}"
    );

    let missing = unique_topic("cliprod-missing");
    let output = produce(
        &broker.bootstrap,
        &missing,
        &["-X", "max.block.ms=1000"],
        b"a\nb\n",
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        format!(
            "krec produce: stdin:1: topic {missing}: not in the cluster's metadata within \
             max.block.ms (1000 ms); create it, or let the brokers create topics \
             (auto.create.topics.enable)\n\
             krec produce: 0 records acknowledged, 0 bytes in 0 batches, 0 retries\n"
        )
    );
}

#[test]
fn sigterm_stops_reading_and_delivers_what_was_read() {
    let broker = broker();
    let topic = unique_topic("cliprod-term");
    broker.create_topic(&topic, 1, 1);
    let mut child = spawn_produce(&broker.bootstrap, &topic, &["--stats", "0.05"]);
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin.write_all(b"one\ntwo\nthree\n").unwrap();
    stdin.flush().unwrap();
    // The three records are out once a consumer sees them; stdin stays open, krec waits on it.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while broker.consume_records(&topic, &["-e"]).len() < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the records never arrived"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(kill.success());
    let status = wait_with_timeout(&mut child, Duration::from_secs(30)).expect("krec exits");
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut text).unwrap();
    assert!(status.success(), "{status}: {text}");
    // --stats lines while it waited, then the summary.
    let lines: Vec<&str> = text.lines().collect();
    let (summary, stats) = lines.split_last().expect("a summary");
    assert!(
        !stats.is_empty() && stats.iter().all(|l| l.starts_with("krec produce: stats: ")),
        "{text}"
    );
    assert!(
        stats.iter().any(|l| l.ends_with(" 3 records acknowledged")),
        "{text}"
    );
    assert!(
        summary.starts_with("krec produce: 3 records acknowledged, ")
            && summary.ends_with(" (interrupted: the records read before were sent)"),
        "{text}"
    );
    drop(stdin);
}

/// One test, so that its registrations never race another of this file's (Apicurio fails
/// concurrent ones): a schema file registered and used, then the subject it made, then a
/// value that does not fit.
#[test]
fn values_encoded_with_a_registry_schema_read_back_by_consume() {
    let broker = broker();
    let registry = std::env::var("KREC_TEST_REGISTRY_URL")
        .expect("KREC_TEST_REGISTRY_URL: run through scripts/test.sh (it starts the registry)");
    let topic = unique_topic("cliprod-avro");
    broker.create_topic(&topic, 1, 1);
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("order.avsc");
    std::fs::write(
        &schema,
        r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"int"},{"name":"item","type":"string"}]}"#,
    )
    .unwrap();
    let by_file = [
        "-r",
        &registry,
        "--value-format",
        "avro",
        "--value-schema",
        schema.to_str().unwrap(),
        "-K",
        "\t",
    ];
    let input = b"k1\t{\"id\":1,\"item\":\"a\"}\n{\"id\":2,\"item\":\"b\"}\n";
    let output = produce(&broker.bootstrap, &topic, &by_file, input);
    assert!(output.status.success(), "{}", stderr(&output));

    let subject = format!("{topic}-value:latest");
    let by_subject = [
        "-r",
        &registry,
        "--value-format",
        "avro",
        "--value-subject",
        &subject,
    ];
    let input = b"{\"id\":3,\"item\":\"c\"}\n{\"id\":\"four\",\"item\":\"d\"}\n";
    let output = produce(&broker.bootstrap, &topic, &by_subject, input);
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    assert!(
        text.starts_with("krec produce: stdin:2: value.id: expected int, got \"four\" (schema id "),
        "{text}"
    );
    assert!(
        text.contains("\nkrec produce: 1 records acknowledged, "),
        "{text}"
    );

    let consumed = broker.consume(&topic, &["-e", "-J", "-s", "value=avro", "-r", &registry]);
    assert!(consumed.status.success(), "{}", stderr(&consumed));
    let lines: Vec<serde_json::Value> = String::from_utf8(consumed.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let values: Vec<_> = lines.iter().map(|l| (&l["key"], &l["value"])).collect();
    let consumed_text = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    assert_eq!(
        values,
        [
            (&"k1".into(), &serde_json::json!({"id": 1, "item": "a"})),
            (
                &serde_json::Value::Null,
                &serde_json::json!({"id": 2, "item": "b"})
            ),
            (
                &serde_json::Value::Null,
                &serde_json::json!({"id": 3, "item": "c"})
            ),
        ]
    );

    // What `consume -J -s` wrote, copied by `produce -J` with the same schema.
    let copy = unique_topic("cliprod-avro-copy");
    broker.create_topic(&copy, 1, 1);
    let subject = format!("{topic}-value");
    let args = [
        "-J",
        "-r",
        &registry,
        "--value-format",
        "avro",
        "--value-subject",
        &subject,
    ];
    let output = produce(&broker.bootstrap, &copy, &args, consumed_text.as_bytes());
    assert!(output.status.success(), "{}", stderr(&output));
    let copied = broker.consume(&copy, &["-e", "-J", "-s", "value=avro", "-r", &registry]);
    let copied: Vec<serde_json::Value> = String::from_utf8(copied.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let pairs = |lines: &[serde_json::Value]| -> Vec<(serde_json::Value, serde_json::Value)> {
        lines
            .iter()
            .map(|l| (l["key"].clone(), l["value"].clone()))
            .collect()
    };
    assert_eq!(pairs(&copied), pairs(&lines));
}
