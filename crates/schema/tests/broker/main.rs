//! The encoder against a real Schema Registry (Apicurio's Confluent API, started by
//! scripts/test.sh): schema files registered under a subject, subjects looked up by version,
//! the registry's refusals, and what krec writes read back by krec's own decoder and by
//! Confluent's Python deserializers (tests/support/confluent_decode.py).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use krec_schema::registry::{RegistryClient, SubjectVersion};
use krec_schema::{
    Error, RegistryConfig, SchemaFormat, SchemaRegistry, SchemaSource, ValueDecoder, ValueEncoder,
};
use prost::Message as _;
use serde_json::{json, Value};

fn registry_url() -> String {
    std::env::var("KREC_TEST_REGISTRY_URL")
        .expect("KREC_TEST_REGISTRY_URL: run through scripts/test.sh (it starts the registry)")
}

fn config() -> RegistryConfig {
    let mut config = RegistryConfig::default();
    config.set_urls(&registry_url()).unwrap();
    config
}

fn client() -> RegistryClient {
    RegistryClient::new(config()).unwrap()
}

/// A subject no other test (or earlier run against the same registry) uses.
fn unique_subject(what: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("schemaenc-{what}-{}-{nanos}-value", std::process::id())
}

/// Writes `text` to a file of its own and returns its path.
fn schema_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("krec-schemaenc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Apicurio's in-memory H2 store answers concurrent registrations with lock timeouts (500) and
/// then "already exists" (409) for a new subject: the tests register one at a time.
static REGISTERING: Mutex<()> = Mutex::new(());

fn new_encoder(
    format: SchemaFormat,
    source: &SchemaSource,
    message: Option<&str>,
) -> Result<ValueEncoder, Error> {
    let _one_at_a_time = REGISTERING.lock().unwrap_or_else(PoisonError::into_inner);
    ValueEncoder::new(&client(), format, source, message)
}

fn encoder(format: SchemaFormat, source: &SchemaSource, message: Option<&str>) -> ValueEncoder {
    new_encoder(format, source, message).expect("encoder")
}

/// What krec's decoder (schemas by id from the registry) makes of `framed`.
fn krec_decoded(format: SchemaFormat, framed: &[u8]) -> Value {
    let registry = Arc::new(SchemaRegistry::new(config()).unwrap());
    let mut json = Vec::new();
    ValueDecoder::new(registry, format)
        .decode(framed, &mut json)
        .expect("krec decodes what krec wrote");
    serde_json::from_slice(&json).unwrap()
}

/// What Confluent's Python deserializers make of each framed value.
fn python_decoded(kind: &str, extra: &[&str], framed: &[Vec<u8>]) -> Vec<Value> {
    let python = std::env::var("KREC_TEST_PYTHON").expect("KREC_TEST_PYTHON (scripts/test.sh)");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/confluent_decode.py");
    let mut child = Command::new(python)
        .arg(script)
        .args([&registry_url(), kind])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the Python deserializer");
    let mut stdin = child.stdin.take().unwrap();
    for value in framed {
        let hex: String = value.iter().map(|byte| format!("{byte:02x}")).collect();
        writeln!(stdin, "{hex}").unwrap();
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "Python deserializer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

const ORDER_AVRO: &str = r#"{"type": "record", "name": "Order", "namespace": "shop",
  "fields": [
    {"name": "id", "type": "long"},
    {"name": "note", "type": ["null", "string"], "default": null},
    {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line",
      "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int", "default": 1}]}}},
    {"name": "tags", "type": {"type": "map", "values": "double"}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
    {"name": "blob", "type": "bytes"},
    {"name": "four", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "choice", "type": ["null", "long", "Line"]},
    {"name": "flag", "type": "boolean"},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
      "scale": 2}}
  ]}"#;

#[test]
fn an_avro_file_registers_once_and_its_values_decode_in_krec_and_python() {
    let subject = unique_subject("avro");
    let source = SchemaSource::File {
        path: schema_file("order.avsc", ORDER_AVRO),
        subject: subject.clone(),
    };
    let encoder = encoder(SchemaFormat::Avro, &source, None);
    let again = encoder_for_subject(&subject, SubjectVersion::Number(1));
    assert_eq!(again.schema_id(), encoder.schema_id());
    let registered_again = new_encoder(SchemaFormat::Avro, &source, None).unwrap();
    assert_eq!(
        registered_again.schema_id(),
        encoder.schema_id(),
        "the same schema, the same id"
    );

    let inputs = [
        json!({"id": 1, "note": {"string": "rush"}, "lines": [{"sku": "a", "qty": 2}, {"sku": "b"}],
               "tags": {"w": 0.25}, "status": "PAID", "blob": "\u{0}\u{ff}", "four": "abcd",
               "choice": {"shop.Line": {"sku": "c"}}, "flag": true, "day": 19753,
               "amount": "\u{4}\u{d2}"}),
        json!({"id": -7, "lines": [], "tags": {}, "status": "NEW", "blob": "", "four": "\u{e9}\u{e9}\u{e9}\u{e9}",
               "choice": {"long": 5}, "flag": false, "day": 0, "amount": "\u{ff}"}),
    ];
    let framed: Vec<Vec<u8>> = inputs
        .iter()
        .map(|value| encoder.encode_to_vec(value).unwrap())
        .collect();
    assert_eq!(
        krec_decoded(SchemaFormat::Avro, &framed[0]),
        json!({"id": 1, "note": "rush", "lines": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 1}],
               "tags": {"w": 0.25}, "status": "PAID", "blob": "AP8=", "four": "YWJjZA==",
               "choice": {"sku": "c", "qty": 1}, "flag": true, "day": "2024-01-31",
               "amount": "12.34"})
    );
    let python = python_decoded("avro", &[], &framed);
    assert_eq!(
        python,
        [
            json!({"id": 1, "note": "rush", "lines": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 1}],
                   "tags": {"w": 0.25}, "status": "PAID", "blob": "\u{0}\u{ff}", "four": "abcd",
                   "choice": {"sku": "c", "qty": 1}, "flag": true, "day": "2024-01-31",
                   "amount": "12.34"}),
            json!({"id": -7, "note": null, "lines": [], "tags": {}, "status": "NEW", "blob": "",
                   "four": "\u{e9}\u{e9}\u{e9}\u{e9}", "choice": 5, "flag": false,
                   "day": "1970-01-01", "amount": "-0.01"}),
        ]
    );
}

fn encoder_for_subject(subject: &str, version: SubjectVersion) -> ValueEncoder {
    let source = SchemaSource::Subject {
        subject: subject.to_owned(),
        version,
    };
    encoder(SchemaFormat::Avro, &source, None)
}

const SHOP_PROTO: &str = r#"syntax = "proto3";
package shop;

message Order {
  message Line { string sku = 1; int32 qty = 2; }
  int64 id = 1;
  repeated Line lines = 2;
  map<string, int64> counts = 3;
  Status status = 4;
  bytes blob = 5;
  double ratio = 6;
}
message Refund { int64 cents = 1; Order.Line line = 2; }
enum Status { NEW = 0; PAID = 1; }
"#;

/// The FileDescriptorSet of `SHOP_PROTO`, base64, for the Python message classes.
fn shop_descriptor_set(path: &Path) -> String {
    let files = protox::compile([path.file_name().unwrap()], [path.parent().unwrap()])
        .expect("protox compiles the test schema");
    base64::engine::general_purpose::STANDARD.encode(files.encode_to_vec())
}

#[test]
fn a_protobuf_file_with_a_named_message_decodes_in_krec_and_python() {
    let subject = unique_subject("protobuf");
    let path = schema_file("shop.proto", SHOP_PROTO);
    let source = SchemaSource::File {
        path: path.clone(),
        subject: subject.clone(),
    };
    let orders = encoder(SchemaFormat::Protobuf, &source, None);
    let refunds = encoder(SchemaFormat::Protobuf, &source, Some("Refund"));
    assert_eq!(orders.schema_id(), refunds.schema_id());
    let order = json!({"id": "42", "lines": [{"sku": "a", "qty": 2}], "counts": {"x": "5"},
                       "status": "PAID", "blob": "AP8=", "ratio": 0.5});
    let refund = json!({"cents": "-3", "line": {"sku": "z"}});
    let framed_order = orders.encode_to_vec(&order).unwrap();
    let framed_refund = refunds.encode_to_vec(&refund).unwrap();
    assert_eq!(krec_decoded(SchemaFormat::Protobuf, &framed_order), order);
    assert_eq!(krec_decoded(SchemaFormat::Protobuf, &framed_refund), refund);

    let descriptors = shop_descriptor_set(&path);
    let python_order = python_decoded("protobuf", &[&descriptors, "shop.Order"], &[framed_order]);
    assert_eq!(python_order, [order]);
    let python_refund =
        python_decoded("protobuf", &[&descriptors, "shop.Refund"], &[framed_refund]);
    assert_eq!(python_refund, [refund]);

    let latest = SchemaSource::subject(&format!("{subject}:latest")).unwrap();
    let looked_up = encoder(SchemaFormat::Protobuf, &latest, Some("shop.Refund"));
    assert_eq!(looked_up.schema_id(), orders.schema_id());
}

const ORDER_JSON_SCHEMA: &str = r#"{"$schema": "http://json-schema.org/draft-07/schema#",
  "title": "Order", "type": "object", "required": ["id"],
  "properties": {"id": {"type": "integer"}, "lines": {"type": "array",
    "items": {"type": "object", "properties": {"sku": {"type": "string"}}}}}}"#;

#[test]
fn a_json_schema_file_checks_values_that_python_reads_back() {
    let subject = unique_subject("json");
    let source = SchemaSource::File {
        path: schema_file("order.json", ORDER_JSON_SCHEMA),
        subject: subject.clone(),
    };
    let encoder = encoder(SchemaFormat::Json, &source, None);
    let value = json!({"id": 3, "lines": [{"sku": "a"}]});
    let framed = encoder.encode_to_vec(&value).unwrap();
    assert_eq!(krec_decoded(SchemaFormat::Json, &framed), value);
    assert_eq!(python_decoded("json", &[], &[framed]), [value]);
    let bad = encoder.encode_to_vec(&json!({"id": "3"})).unwrap_err();
    assert!(bad.to_string().starts_with(".id: "), "{bad}");
}

#[test]
fn registry_refusals_are_clear() {
    let missing = unique_subject("missing");
    let source = SchemaSource::subject(&missing).unwrap();
    let error = new_encoder(SchemaFormat::Avro, &source, None).unwrap_err();
    match &error {
        Error::RegistryRefused {
            status: 404, what, ..
        } => {
            assert!(what.contains(&missing), "{error}")
        }
        other => panic!("expected a 404, got {other:?}"),
    }

    // An Avro subject asked for as Protobuf.
    let subject = unique_subject("typed");
    let avro = SchemaSource::File {
        path: schema_file("typed.avsc", ORDER_AVRO),
        subject: subject.clone(),
    };
    let id = encoder(SchemaFormat::Avro, &avro, None).schema_id();
    let by_subject = SchemaSource::subject(&format!("{subject}:1")).unwrap();
    let wrong = new_encoder(SchemaFormat::Protobuf, &by_subject, None).unwrap_err();
    assert!(
        matches!(&wrong, Error::WrongSchemaType { id: found, .. } if *found == id),
        "{wrong:?}"
    );
    let no_version = SchemaSource::subject(&format!("{subject}:9")).unwrap();
    let error = new_encoder(SchemaFormat::Avro, &no_version, None).unwrap_err();
    assert!(
        matches!(error, Error::RegistryRefused { status: 404, .. }),
        "{error:?}"
    );

    // A new version that breaks BACKWARD compatibility: a required field without a default.
    set_compatibility(&subject, "BACKWARD");
    let breaking = ORDER_AVRO.replacen(
        r#"{"name": "id", "type": "long"},"#,
        r#"{"name": "id", "type": "long"}, {"name": "extra", "type": "string"},"#,
        1,
    );
    let breaking = SchemaSource::File {
        path: schema_file("breaking.avsc", &breaking),
        subject,
    };
    let error = new_encoder(SchemaFormat::Avro, &breaking, None).unwrap_err();
    assert!(
        matches!(error, Error::RegistryRefused { status: 409, .. }),
        "{error:?}: {error}"
    );

    // A broken file is the file's fault and never reaches the registry.
    let broken = SchemaSource::File {
        path: schema_file("broken.avsc", r#"{"type": "record"}"#),
        subject: unique_subject("broken"),
    };
    let error = new_encoder(SchemaFormat::Avro, &broken, None).unwrap_err();
    assert!(matches!(error, Error::SchemaFile { .. }), "{error:?}");
}

/// `PUT /config/{subject}`: the subject's compatibility level.
fn set_compatibility(subject: &str, level: &str) {
    let url = format!("{}/config/{subject}", registry_url());
    let response = ureq::put(&url)
        .header("Content-Type", "application/vnd.schemaregistry.v1+json")
        .send(json!({"compatibility": level}).to_string())
        .expect("set the subject's compatibility");
    assert_eq!(response.status().as_u16(), 200);
}
