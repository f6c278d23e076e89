//! `-s` / `-r` against a real Schema Registry (Apicurio, started by scripts/test.sh) with
//! values written by the Confluent Python serializers: krec's JSON equals the producer's
//! objects rendered in the documented mapping (support/schema_producer.py), field by field.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::broker::{broker, krec_consume_command, unique_topic, Broker};
use krec_schema::{RegistryConfig, SchemaRegistry};
use serde_json::Value;

fn registry_url() -> String {
    std::env::var("KREC_TEST_REGISTRY_URL")
        .expect("KREC_TEST_REGISTRY_URL: run through scripts/test.sh (it starts the registry)")
}

/// Produces `kind` values into a new topic; returns the topic and the expected lines.
fn produce(broker: &Broker, kind: &str, extra: &[&str]) -> (String, Vec<Value>) {
    let topic = unique_topic(&format!("schema-{kind}"));
    broker.create_topic(&topic, 1, 1);
    let expected = produce_to(broker, &topic, kind, extra);
    (topic, expected)
}

/// Runs the Python producer of `kind` records on an existing topic; the records it expects.
fn produce_to(broker: &Broker, topic: &str, kind: &str, extra: &[&str]) -> Vec<Value> {
    let python = std::env::var("KREC_TEST_PYTHON").expect("KREC_TEST_PYTHON (scripts/test.sh)");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/schema_producer.py");
    let output = Command::new(python)
        .arg(script)
        .args([&broker.bootstrap, &registry_url(), topic, kind])
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .expect("run the Python producer");
    assert!(
        output.status.success(),
        "producer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    json_lines(&output.stdout)
}

fn json_lines(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8(bytes.to_vec())
        .expect("UTF-8 output")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

fn consume(broker: &Broker, topic: &str, args: &[&str]) -> Output {
    let mut all = vec!["-o", "beginning", "-e"];
    all.extend_from_slice(args);
    krec_consume_command(&broker.bootstrap, topic, &all)
        .output()
        .expect("run krec")
}

fn consume_ok(broker: &Broker, topic: &str, args: &[&str]) -> Vec<u8> {
    let output = consume(broker, topic, args);
    assert!(
        output.status.success(),
        "krec failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// Compares each printed value with the expected one, field by field, and returns the ids.
fn assert_values_match(printed: &[Value], expected: &[Value]) -> Vec<u64> {
    assert_eq!(printed.len(), expected.len(), "one line per record");
    let mut ids = Vec::new();
    for (line, want) in printed.iter().zip(expected) {
        assert_eq!(line["offset"], want["offset"]);
        let (got, want) = (&line["value"], &want["value"]);
        let want_fields = want.as_object().expect("expected values are objects");
        let got_fields = got
            .as_object()
            .unwrap_or_else(|| panic!("not an object: {got}"));
        assert_eq!(
            got_fields.keys().collect::<Vec<_>>(),
            want_fields.keys().collect::<Vec<_>>(),
            "offset {}: the same fields",
            line["offset"]
        );
        for (name, want_field) in want_fields {
            assert_eq!(
                &got[name], want_field,
                "offset {} field {name}",
                line["offset"]
            );
        }
        ids.push(
            line["value_schema_id"]
                .as_u64()
                .expect("value_schema_id is a number"),
        );
    }
    ids
}

fn segment_of(broker: &Broker, topic: &str) -> PathBuf {
    let data = broker.kafka_sh("datadir", &[]);
    let dir = Path::new(data.lines().next().expect("a data directory")).join(format!("{topic}-0"));
    dir.join("00000000000000000000.log")
}

#[test]
fn avro_every_type_matches_the_python_serializer_on_consume_and_decode() {
    let broker = broker();
    let (topic, expected) = produce(&broker, "avro", &[]);
    let registry = registry_url();
    let printed = json_lines(&consume_ok(
        &broker,
        &topic,
        &["-J", "-s", "value=avro", "-r", &registry],
    ));
    let ids = assert_values_match(&printed, &expected);
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "one schema: {ids:?}");
    assert!(
        printed
            .iter()
            .all(|line| line.get("key_schema_id").is_none()),
        "keys not decoded"
    );

    // Templates print the compact JSON text; -s avro decodes the (null) keys too.
    let text = consume_ok(
        &broker,
        &topic,
        &[
            "-f",
            "%k|%s\\n",
            "-s",
            "avro",
            "-X",
            &format!("schema.registry.url={registry}"),
        ],
    );
    let lines: Vec<&str> = std::str::from_utf8(&text).unwrap().lines().collect();
    assert_eq!(lines.len(), expected.len());
    for (line, line_json) in lines.iter().zip(&printed) {
        let value = line
            .strip_prefix('|')
            .expect("a null key prints as nothing");
        assert_eq!(value, serde_json::to_string(&line_json["value"]).unwrap());
    }

    // The same records from the broker's segment file.
    let segment = segment_of(&broker, &topic);
    let output = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args([
            "decode",
            "-J",
            "-s",
            "value=avro",
            "-r",
            &registry,
            "--topic",
            &topic,
            "--partition",
            "0",
        ])
        .arg(&segment)
        .output()
        .expect("run krec decode");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_values_match(&json_lines(&output.stdout), &expected);
}

#[test]
fn protobuf_nested_maps_oneofs_well_known_types_and_second_message_match_python() {
    let broker = broker();
    let (topic, expected) = produce(&broker, "protobuf", &[]);
    let printed = json_lines(&consume_ok(
        &broker,
        &topic,
        &["-J", "-s", "value=protobuf", "-r", &registry_url()],
    ));
    assert_values_match(&printed, &expected);
    // Offsets 2 and 5 are Refunds: message index 1 of the same file.
    assert!(printed[2]["value"].get("amount").is_some());
}

#[test]
fn json_schema_values_are_written_as_they_are() {
    let broker = broker();
    let (topic, expected) = produce(&broker, "json", &[]);
    let printed = json_lines(&consume_ok(
        &broker,
        &topic,
        &["-J", "-s", "value=json", "-r", &registry_url()],
    ));
    assert_values_match(&printed, &expected);
}

#[test]
fn an_https_registry_is_trusted_through_its_ca_file_and_only_so() {
    let broker = broker();
    let https = std::env::var("KREC_TEST_REGISTRY_HTTPS_URL")
        .expect("KREC_TEST_REGISTRY_HTTPS_URL: run through scripts/test.sh");
    let ca = crate::support::secure::secure_broker()
        .get("CA_PEM")
        .to_owned();
    let (topic, expected) = produce(&broker, "json", &[]);
    let trusted = format!("schema.registry.ssl.ca.location={ca}");
    let args = ["-J", "-s", "value=json", "-r", https.as_str(), "-X"];
    let printed = json_lines(&consume_ok(
        &broker,
        &topic,
        &[&args[..], &[&trusted]].concat(),
    ));
    assert_values_match(&printed, &expected);

    // The system's roots do not know the test CA: refused at once, clearly, not retried.
    let refused = consume(
        &broker,
        &topic,
        &[&args[..], &["schema.registry.retry.backoff.ms=5000"]].concat(),
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    let want = format!("schema registry {https}: TLS: invalid peer certificate: UnknownIssuer");
    assert!(stderr.contains(&want), "{stderr}");
}

/// Runs krec on one raw value and returns (exit code, stderr).
fn failure_on(broker: &Broker, value_hex: &str, args: &[&str]) -> (Option<i32>, String, Duration) {
    let (topic, _) = produce(broker, "raw", &[value_hex]);
    let started = Instant::now();
    let output = consume(broker, &topic, args);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (
        output.status.code(),
        format!("{topic}: {stderr}"),
        started.elapsed(),
    )
}

#[test]
fn bad_values_and_a_missing_registry_are_clear_errors_naming_the_record() {
    let broker = broker();
    let registry = registry_url();
    let avro = ["-J", "-s", "value=avro", "-r", registry.as_str()];

    let (code, stderr, _) = failure_on(&broker, "00000fffff02", &avro);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("partition 0 offset 0: value: schema id 1048575: not found"),
        "{stderr}"
    );

    let (code, stderr, _) = failure_on(&broker, "68656c6c6f", &avro);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("offset 0: value: not in the Confluent wire format: first byte is 0x68"),
        "{stderr}"
    );

    // A real Avro value of the every-type schema, cut short.
    let (topic, _) = produce(&broker, "avro", &[]);
    let raw = consume_ok(&broker, &topic, &["-f", "%s", "-c", "1"]);
    let cut: String = raw[..raw.len() - 3]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let (code, stderr, _) = failure_on(&broker, &cut, &avro);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("value does not match its schema: truncated"),
        "{stderr}"
    );

    let down = [
        "-J",
        "-s",
        "value=avro",
        "-r",
        "http://127.0.0.1:9/apis/ccompat/v7",
        "-X",
        "schema.registry.max.retries=2",
        "-X",
        "schema.registry.retry.backoff.ms=100",
    ];
    let (code, stderr, elapsed) = failure_on(&broker, "0000000001", &down);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "schema registry http://127.0.0.1:9/apis/ccompat/v7 unavailable after 3 attempts"
        ),
        "{stderr}"
    );
    assert!(elapsed < Duration::from_secs(20), "bounded: {elapsed:?}");

    let (code, stderr, _) = failure_on(&broker, "0000000001", &["-s", "value=avro"]);
    assert_eq!(code, Some(2), "no registry is a usage error: {stderr}");
}

#[test]
fn on_corrupt_skip_reports_an_undecodable_value_and_writes_the_others() {
    let broker = broker();
    // The values, one not in the wire format, the values again: from one producer process.
    let (topic, expected) = produce(&broker, "json", &["68656c6c6f"]);
    let registry = registry_url();
    let args = ["-J", "-s", "value=json", "-r", registry.as_str()];
    let skip = [&args[..], &["--on-corrupt", "skip"]].concat();
    let output = consume(&broker, &topic, &skip);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let offsets: Vec<u64> = json_lines(&output.stdout)
        .iter()
        .map(|line| line["offset"].as_u64().unwrap())
        .collect();
    let bad = expected.len() as u64 / 2;
    let want: Vec<u64> = expected
        .iter()
        .map(|line| line["offset"].as_u64().unwrap())
        .collect();
    assert!(
        !want.contains(&bad) && want.len() as u64 == 2 * bad,
        "{want:?}"
    );
    assert_eq!(
        offsets, want,
        "every good record once, the bad one left out"
    );
    let report = format!(
        "krec consume: skipped undecodable record: topic {topic} partition 0 offset {bad}: \
         value: not in the Confluent wire format"
    );
    assert!(stderr.contains(&report), "{stderr}");
    assert!(
        stderr.contains("krec consume: 1 undecodable records skipped"),
        "{stderr}"
    );
    let stop = consume(&broker, &topic, &args);
    assert_eq!(stop.status.code(), Some(1), "stop is the default");
    let down = consume(
        &broker,
        &topic,
        &[
            "-J",
            "-s",
            "value=json",
            "-r",
            "http://127.0.0.1:9/apis/ccompat/v7",
            "-X",
            "schema.registry.max.retries=0",
            "--on-corrupt",
            "skip",
        ],
    );
    let stderr = String::from_utf8_lossy(&down.stderr);
    assert_eq!(
        down.status.code(),
        Some(1),
        "a registry down is not skipped: {stderr}"
    );
    assert!(stderr.contains("unavailable after 1 attempts"), "{stderr}");
}

#[test]
fn a_schema_is_fetched_once_when_many_threads_ask_at_once() {
    let broker = broker();
    let (topic, _) = produce(&broker, "json", &[]);
    let printed = json_lines(&consume_ok(
        &broker,
        &topic,
        &["-J", "-c", "1", "-s", "value=json", "-r", &registry_url()],
    ));
    let id = u32::try_from(printed[0]["value_schema_id"].as_u64().unwrap()).unwrap();
    let mut config = RegistryConfig::default();
    config.set_urls(&registry_url()).unwrap();
    let registry = Arc::new(SchemaRegistry::new(config).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let registry = registry.clone();
            std::thread::spawn(move || registry.schema(id).map(|schema| schema.type_name()))
        })
        .collect();
    for thread in threads {
        assert_eq!(thread.join().unwrap().unwrap(), "JSON");
    }
    assert_eq!(registry.fetches(), 1);
    assert!(matches!(
        registry.schema(u32::MAX),
        Err(krec_schema::Error::UnknownSchema { id: u32::MAX })
    ));
}
