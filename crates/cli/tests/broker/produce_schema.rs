//! `krec produce --value-format` against the real broker and Schema Registry (Apicurio, from
//! scripts/test.sh): `krec consume -J -s | krec produce -J` copies Avro values to the same
//! bytes, awkward types included (values from Confluent's Python serializer and from krec);
//! Protobuf and JSON Schema values read back by `krec consume -s` (and JSON Schema ones by
//! Confluent's Python deserializer).

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::produce::produce;
use crate::support::broker::{broker, unique_topic, Broker};

/// Apicurio fails concurrent registrations: this file's tests register one at a time.
static REGISTERING: Mutex<()> = Mutex::new(());

fn registry_url() -> String {
    std::env::var("KREC_TEST_REGISTRY_URL")
        .expect("KREC_TEST_REGISTRY_URL: run through scripts/test.sh (it starts the registry)")
}

fn python() -> String {
    std::env::var("KREC_TEST_PYTHON").expect("KREC_TEST_PYTHON (scripts/test.sh)")
}

fn assert_ok(output: &std::process::Output, what: &str) {
    assert!(
        output.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `krec consume -e ARGS` of the whole topic, its stdout.
fn consumed(broker: &Broker, topic: &str, args: &[&str]) -> Vec<u8> {
    let mut all = vec!["-e"];
    all.extend_from_slice(args);
    let output = broker.consume(topic, &all);
    assert_ok(&output, "krec consume");
    output.stdout
}

fn json_lines(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8(bytes.to_vec())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// A record's key and value bytes; `None` for null.
type KeyValue = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Each record's key and value bytes, as on the wire (`krec consume -J`, no decoding).
fn wire_values(broker: &Broker, topic: &str) -> Vec<KeyValue> {
    let bytes = |field: &Value| match field {
        Value::Null => None,
        Value::String(text) => Some(text.as_bytes().to_vec()),
        other => Some(
            base64::engine::general_purpose::STANDARD
                .decode(other["base64"].as_str().expect("base64 bytes"))
                .unwrap(),
        ),
    };
    json_lines(&consumed(broker, topic, &["-J"]))
        .iter()
        .map(|line| (bytes(&line["key"]), bytes(&line["value"])))
        .collect()
}

/// `krec consume -J -s value=FORMAT` of `source` piped into `krec produce -J` (the subject
/// `source`-value) on a new topic; asserts the copy's key and value bytes equal the source's.
fn copy_exactly(broker: &Broker, source: &str, format: &str, extra: &[&str]) -> Vec<Value> {
    let registry = registry_url();
    let decoded = consumed(
        broker,
        source,
        &["-J", "-s", &format!("value={format}"), "-r", &registry],
    );
    let copy = unique_topic(&format!("avronote-copy-{format}"));
    broker.create_topic(&copy, 1, 1);
    let subject = format!("{source}-value");
    let mut args = vec!["-J", "-r", &registry, "--value-format", format];
    args.extend(["--value-subject", &subject]);
    args.extend_from_slice(extra);
    let output = produce(&broker.bootstrap, &copy, &args, &decoded);
    assert_ok(&output, "krec produce");
    let (original, copied) = (wire_values(broker, source), wire_values(broker, &copy));
    assert!(!original.is_empty());
    assert_eq!(copied, original, "the copy's bytes");
    json_lines(&decoded)
}

#[test]
fn avro_values_copied_through_consume_and_produce_keep_their_bytes() {
    let broker = broker();
    let registry = registry_url();
    let _registering = REGISTERING.lock().unwrap_or_else(PoisonError::into_inner);

    // Confluent's Python serializer: every primitive and logical type, unions of a record,
    // an enum and a long (tests/support/schema_producer.py).
    let python_topic = unique_topic("avronote-python");
    broker.create_topic(&python_topic, 1, 1);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/schema_producer.py");
    let output = Command::new(python())
        .arg(script)
        .args([&broker.bootstrap, &registry, &python_topic, "avro"])
        .stdin(Stdio::null())
        .output()
        .expect("run the Python producer");
    assert_ok(&output, "the Python producer");
    let lines = copy_exactly(&broker, &python_topic, "avro", &[]);
    assert_eq!(lines.len(), 6);

    // krec, from Avro's JSON encoding: what the Python values leave out.
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("odd.avsc");
    std::fs::write(&schema, ODD_SCHEMA).unwrap();
    let krec_topic = unique_topic("avronote-krec");
    broker.create_topic(&krec_topic, 1, 1);
    let input: String = odd_values().iter().map(|v| format!("{v}\n")).collect();
    let args = ["-r", &registry, "--value-format", "avro"];
    let schema_path = schema.to_str().unwrap();
    let args = [&args[..], &["--value-schema", schema_path]].concat();
    let output = produce(&broker.bootstrap, &krec_topic, &args, input.as_bytes());
    assert_ok(&output, "krec produce from Avro's JSON encoding");
    let lines = copy_exactly(&broker, &krec_topic, "avro", &[]);
    // The decoded notation, as the copy read it.
    assert_eq!(lines[1]["value"]["maybe_bytes"], json!("AP9o"));
    assert_eq!(lines[1]["value"]["ratio"], json!("NaN"));
    assert_eq!(lines[0]["value"]["price"], json!("-12.340"));
}

const ODD_SCHEMA: &str = r#"{"type": "record", "name": "Odd", "namespace": "avronote",
  "fields": [
    {"name": "maybe_bytes", "type": ["null", "bytes"]},
    {"name": "blob", "type": "bytes"},
    {"name": "text_or_bytes", "type": ["string", "bytes"]},
    {"name": "ratio", "type": "float"},
    {"name": "number", "type": ["null", "float", "double"]},
    {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "span", "type": {"type": "fixed", "name": "Span", "size": 12,
      "logicalType": "duration"}},
    {"name": "nested", "type": {"type": "record", "name": "Nested", "fields": [
      {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
      {"name": "f", "type": {"type": "fixed", "name": "F2", "size": 2}},
      {"name": "m", "type": {"type": "map", "values": ["null", "Nested"]}}]}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10,
      "scale": 3}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}}
  ]}"#;

/// Values of [`ODD_SCHEMA`] in Avro's JSON encoding (tagged unions, code-point bytes).
fn odd_values() -> Vec<Value> {
    (0..4i64)
        .map(|i| {
            let inner = json!({"e": "A", "f": "\u{0}\u{0}", "m": {}});
            let number = [
                Value::Null,
                json!({"float": 0.25}),
                json!({"double": 0.123_456_789_012 * i as f64}),
                json!({"float": "-Infinity"}),
            ];
            let maybe_bytes = [Value::Null, json!({"bytes": "\u{0}\u{ff}h"})];
            let price = ["\u{cf}\u{cc}", "\u{0}", "\u{1}\u{e2}\u{40}", "\u{80}"];
            json!({
                "maybe_bytes": maybe_bytes[i as usize % 2],
                "blob": "\u{ff}\u{0}\u{7f}bytes",
                "text_or_bytes": {"string": format!("text {i}")},
                "ratio": if i == 1 { json!("NaN") } else { json!(1.1 * i as f64) },
                "number": number[i as usize],
                "at_us": 1_700_000_000_123_456_i64 - i * 86_400_000_000_000,
                "span": "\u{1}\u{0}\u{0}\u{0}\u{2}\u{0}\u{0}\u{0}\u{3}\u{0}\u{0}\u{ff}",
                "nested": {"e": "B", "f": "\u{ff}\u{1}",
                           "m": {"x": null, "y": {"avronote.Nested": inner}}},
                "price": price[i as usize],
                "day": 19_782 - i * 40_000,
            })
        })
        .collect()
}

const ORDER_PROTO: &str = r#"syntax = "proto3";
package avronote.test;
message Note { string text = 1; }
message Order {
  enum Status { UNKNOWN = 0; NEW = 1; PAID = 2; }
  string id = 1;
  int64 cents = 2;
  repeated string tags = 3;
  bytes token = 4;
  Status status = 5;
  map<string, Note> notes = 6;
}
"#;

#[test]
fn protobuf_values_from_a_proto_file_read_back_by_consume_and_copied() {
    let broker = broker();
    let registry = registry_url();
    let _registering = REGISTERING.lock().unwrap_or_else(PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("order.proto");
    std::fs::write(&schema, ORDER_PROTO).unwrap();
    let topic = unique_topic("avronote-proto");
    broker.create_topic(&topic, 1, 1);
    let values = [
        json!({"id": "o1", "cents": "9007199254740993", "tags": ["a", "b"], "token": "AAH/",
               "status": "PAID", "notes": {"k": {"text": "gift ✓"}}}),
        json!({"id": "o2"}),
    ];
    let input: String = values.iter().map(|v| format!("{v}\n")).collect();
    let args = [
        "-r",
        &registry,
        "--value-format",
        "protobuf",
        "--value-schema",
        schema.to_str().unwrap(),
        "--value-message",
        "Order",
    ];
    let output = produce(&broker.bootstrap, &topic, &args, input.as_bytes());
    assert_ok(&output, "krec produce");
    // The second message of the file: message index [1] after the schema id.
    let wire = wire_values(&broker, &topic);
    assert_eq!(&wire[0].1.as_ref().unwrap()[5..7], [2, 2]);

    let lines = copy_exactly(&broker, &topic, "protobuf", &["--value-message", "Order"]);
    let read: Vec<&Value> = lines.iter().map(|line| &line["value"]).collect();
    assert_eq!(read, values.iter().collect::<Vec<_>>());
}

#[test]
fn json_schema_values_read_back_by_consume_and_by_confluent_python() {
    let broker = broker();
    let registry = registry_url();
    let _registering = REGISTERING.lock().unwrap_or_else(PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("event.json");
    let event = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
        "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["name"]});
    std::fs::write(&schema, event.to_string()).unwrap();
    let topic = unique_topic("avronote-jsonschema");
    broker.create_topic(&topic, 1, 1);
    let values = [
        json!({"name": "e1 ✓", "n": 7}),
        json!({"name": "e2", "extra": [1.5]}),
    ];
    let mut input: String = values.iter().map(|v| format!("{v}\n")).collect();
    input.push_str("{\"n\": 3}\n");
    let args = [
        "-r",
        &registry,
        "--value-format",
        "json-schema",
        "--value-schema",
        schema.to_str().unwrap(),
    ];
    let output = produce(&broker.bootstrap, &topic, &args, input.as_bytes());
    assert_eq!(output.status.code(), Some(1), "the third value misses name");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("krec produce: stdin:3: value"),
        "{stderr}"
    );
    assert!(stderr.contains("name"), "{stderr}");

    let decoded = json_lines(&consumed(
        &broker,
        &topic,
        &["-J", "-s", "value=json-schema", "-r", &registry],
    ));
    let read: Vec<&Value> = decoded.iter().map(|line| &line["value"]).collect();
    assert_eq!(read, values.iter().collect::<Vec<_>>());

    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/tests/support/confluent_decode.py");
    let mut child = Command::new(python())
        .arg(script)
        .args([&registry, "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the Python deserializer");
    let mut stdin = child.stdin.take().unwrap();
    for (_, value) in wire_values(&broker, &topic) {
        let hex: String = value.unwrap().iter().map(|b| format!("{b:02x}")).collect();
        writeln!(stdin, "{hex}").unwrap();
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert_ok(&output, "the Python deserializer");
    assert_eq!(json_lines(&output.stdout), values);
}
