//! JSON values to framed values with no registry: `ValueEncoder::from_schema`, then the
//! crate's own decoders read the bytes back. Exact bytes where Avro's encoding is small
//! enough to write by hand; every misfit names its path; arbitrary JSON never panics.

use std::collections::HashMap;

use krec_schema::avro::AvroSchema;
use krec_schema::protobuf::ProtobufSchema;
use krec_schema::wire::{split_header, split_message_indexes};
use krec_schema::{Error, SchemaFormat, ValueEncoder};
use serde_json::{json, Value};

const ORDER_AVRO: &str = r#"{"type": "record", "name": "Order", "namespace": "shop",
  "fields": [
    {"name": "id", "type": "long"},
    {"name": "note", "type": ["null", "string"], "default": null},
    {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line",
      "fields": [{"name": "sku", "type": "long"}, {"name": "qty", "type": "int", "default": 1}]}}},
    {"name": "tags", "type": {"type": "map", "values": "string"}, "default": {}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
    {"name": "blob", "type": "bytes"},
    {"name": "four", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "choice", "type": ["null", "long", "Line", "Status"], "default": null},
    {"name": "ratio", "type": "float", "default": 0.5},
    {"name": "precise", "type": "double"},
    {"name": "flag", "type": "boolean"},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
      "scale": 2}},
    {"name": "first", "type": ["string", "null"], "default": "dflt"}
  ]}"#;

fn avro_encoder() -> ValueEncoder {
    ValueEncoder::from_schema(7, SchemaFormat::Avro, ORDER_AVRO, None).expect("schema compiles")
}

fn order() -> Value {
    json!({
        "id": 42,
        "note": {"string": "rush"},
        "lines": [{"sku": 1, "qty": 3}, {"sku": -2}],
        "tags": {"a": "x"},
        "status": "PAID",
        "blob": "\u{0}\u{ff}A",
        "four": "abcd",
        "choice": {"shop.Line": {"sku": 9}},
        "precise": "-Infinity",
        "flag": true,
        "day": 19753,
        "at": 1_700_000_000_123_i64,
        "amount": "\u{4}\u{d2}"
    })
}

/// The payload after the 5-byte header, decoded by krec's Avro decoder.
fn avro_decoded(framed: &[u8]) -> Value {
    let (id, payload) = split_header(framed).unwrap();
    assert_eq!(id, 7);
    let schema = AvroSchema::parse(ORDER_AVRO, &[]).unwrap();
    let mut json = Vec::new();
    schema.to_json(payload, &mut json).expect("decodes");
    serde_json::from_slice(&json).unwrap()
}

fn misfit(result: Result<Vec<u8>, Error>) -> String {
    match result {
        Err(error @ Error::Misfit { .. }) => error.to_string(),
        other => panic!("expected a misfit, got {other:?}"),
    }
}

#[test]
fn avro_json_encoding_round_trips_through_the_decoder() {
    let framed = avro_encoder().encode_to_vec(&order()).unwrap();
    // The decoder's mapping: unions untagged, bytes base64, logical types formatted.
    let expected = json!({
        "id": 42, "note": "rush",
        "lines": [{"sku": 1, "qty": 3}, {"sku": -2, "qty": 1}],
        "tags": {"a": "x"}, "status": "PAID", "blob": "AP9B", "four": "YWJjZA==",
        "choice": {"sku": 9, "qty": 1}, "ratio": 0.5, "precise": "-Infinity", "flag": true,
        "day": "2024-01-31", "at": "2023-11-14T22:13:20.123Z", "amount": "12.34",
        "first": "dflt"
    });
    assert_eq!(avro_decoded(&framed), expected);
}

#[test]
fn avro_bytes_are_exact() {
    let schema = r#"{"type": "record", "name": "R", "fields": [
        {"name": "n", "type": "long"}, {"name": "s", "type": ["null", "string"]},
        {"name": "xs", "type": {"type": "array", "items": "int"}}]}"#;
    let encoder = ValueEncoder::from_schema(258, SchemaFormat::Avro, schema, None).unwrap();
    let mut out = vec![0xAA];
    let value = json!({"n": -65, "s": {"string": "é"}, "xs": [1, -1]});
    encoder.encode(&value, &mut out).unwrap();
    // Reused buffer: appended after what was there. -65 zigzags to 129 (0x81 0x01); branch 1;
    // "é" is 2 UTF-8 bytes; one block of 2 items (1 -> 2, -1 -> 1), then the end block.
    let want = [
        0xAA, 0, 0, 0, 1, 2, 0x81, 0x01, 2, 4, 0xC3, 0xA9, 4, 2, 1, 0,
    ];
    assert_eq!(out, want);
    let null = json!({"n": 0, "s": null, "xs": []});
    assert_eq!(
        encoder.encode_to_vec(&null).unwrap(),
        [0, 0, 0, 1, 2, 0, 0, 0]
    );
    assert_eq!(encoder.schema_id(), 258);
    assert_eq!(encoder.format(), SchemaFormat::Avro);
}

#[test]
fn avro_misfits_name_the_field_path() {
    let encoder = avro_encoder();
    let cases: [(&str, Value, &str); 10] = [
        (
            "/lines/1/sku",
            json!("x"),
            r#".lines[1].sku: expected long, got "x" (schema id 7)"#,
        ),
        ("/id", json!(1.5), ".id: expected long, got 1.5"),
        (
            "/lines/0/qty",
            json!(1_i64 << 40),
            ".lines[0].qty: expected int, got 1099511627776",
        ),
        (
            "/note",
            json!("rush"),
            r#".note: expected a union value, one of null, {"string": ...}, got "rush""#,
        ),
        (
            "/choice",
            json!({"Line": {"sku": 1}}),
            ".choice: expected a union value, one of null, {\"long\": ...}, {\"shop.Line\": ...}",
        ),
        (
            "/status",
            json!("LOST"),
            r#".status: expected one of NEW, PAID, got "LOST""#,
        ),
        (
            "/blob",
            json!("\u{100}"),
            ".blob: expected bytes as a string of code points",
        ),
        (
            "/four",
            json!("abc"),
            r#".four: expected 4 bytes as a string, got "abc""#,
        ),
        ("/tags/a", json!(3), r#".tags["a"]: expected string, got 3"#),
        ("/lines", json!({}), ".lines: expected array, got {}"),
    ];
    for (pointer, bad, want) in cases {
        let mut value = order();
        *value.pointer_mut(pointer).expect(pointer) = bad;
        let message = misfit(encoder.encode_to_vec(&value));
        assert!(message.starts_with(want), "{pointer}: {message}");
    }
    let mut value = order();
    value.as_object_mut().unwrap().remove("flag");
    let message = misfit(encoder.encode_to_vec(&value));
    assert_eq!(
        message,
        ".flag: missing, and the field has no default (schema id 7)"
    );
    value = order();
    value["lines"][0]["skew"] = json!(1);
    let message = misfit(encoder.encode_to_vec(&value));
    assert!(
        message.starts_with(".lines[0].skew: no such field (the record has sku, qty)"),
        "{message}"
    );
    assert!(misfit(encoder.encode_to_vec(&json!([1]))).starts_with(".: expected record"));
}

#[test]
fn a_failed_encoding_leaves_the_buffer_as_it_was() {
    let mut out = b"kept".to_vec();
    let mut value = order();
    value["precise"] = json!("many");
    assert!(avro_encoder().encode(&value, &mut out).is_err());
    assert_eq!(out, b"kept");
}

const SHOP_PROTO: &str = r#"syntax = "proto3"; package shop;
    import "google/protobuf/timestamp.proto";
    message Order {
      message Line { string sku = 1; int32 qty = 2; message Note { string text = 1; } }
      int64 id = 1; repeated Line lines = 2; google.protobuf.Timestamp at = 3;
      map<string, int64> counts = 4; Status status = 5; bytes blob = 6; }
    message Refund { int64 cents = 1; Order.Line.Note why = 2; }
    enum Status { NEW = 0; PAID = 1; }"#;

fn proto_decoded(framed: &[u8], expected_path: &[usize]) -> Value {
    let (id, payload) = split_header(framed).unwrap();
    assert_eq!(id, 9);
    let mut path = Vec::new();
    let body = split_message_indexes(payload, &mut path).unwrap();
    assert_eq!(path, expected_path);
    let schema = ProtobufSchema::compile("shop.proto", SHOP_PROTO, &HashMap::new()).unwrap();
    let mut json = Vec::new();
    ProtobufSchema::to_json(schema.message(&path).unwrap(), body, &mut json).unwrap();
    serde_json::from_slice(&json).unwrap()
}

#[test]
fn protobuf_round_trips_with_the_message_index_prefix() {
    let encoder = ValueEncoder::from_schema(9, SchemaFormat::Protobuf, SHOP_PROTO, None).unwrap();
    let order = json!({"id": "42", "lines": [{"sku": "a", "qty": 2}],
        "at": "2024-01-31T10:00:00Z", "counts": {"x": "5"}, "status": "PAID", "blob": "AP8="});
    let framed = encoder.encode_to_vec(&order).unwrap();
    assert_eq!(
        &framed[..6],
        [0, 0, 0, 0, 9, 0],
        "the first message: index list `0`"
    );
    assert_eq!(proto_decoded(&framed, &[0]), order);

    let refund = json!({"cents": "-3", "why": {"text": "late"}});
    for name in ["Refund", "shop.Refund"] {
        let encoder =
            ValueEncoder::from_schema(9, SchemaFormat::Protobuf, SHOP_PROTO, Some(name)).unwrap();
        let framed = encoder.encode_to_vec(&refund).unwrap();
        assert_eq!(&framed[5..7], [2, 2], "count 1, index 1 (zigzag)");
        assert_eq!(proto_decoded(&framed, &[1]), refund);
    }
    let note = "Order.Line.Note";
    let encoder =
        ValueEncoder::from_schema(9, SchemaFormat::Protobuf, SHOP_PROTO, Some(note)).unwrap();
    let framed = encoder.encode_to_vec(&json!({"text": "hi"})).unwrap();
    assert_eq!(&framed[5..9], [6, 0, 0, 0], "count 3, then 0, 0, 0");
    assert_eq!(proto_decoded(&framed, &[0, 0, 0]), json!({"text": "hi"}));
    let missing = ValueEncoder::from_schema(9, SchemaFormat::Protobuf, SHOP_PROTO, Some("Nope"));
    let message = missing.unwrap_err().to_string();
    assert!(
        message.contains("no message \"Nope\"") && message.contains("Order, Refund"),
        "{message}"
    );
}

#[test]
fn protobuf_misfits_name_the_field_path() {
    let encoder = ValueEncoder::from_schema(9, SchemaFormat::Protobuf, SHOP_PROTO, None).unwrap();
    let cases = [
        (
            json!({"lines": [{}, {"qty": "x"}]}),
            r#".lines[1].qty: expected int32, got "x" ("#,
        ),
        (json!({"id": true}), ".id: expected int64, got true ("),
        (
            json!({"status": "LOST"}),
            r#".status: expected enum shop.Status, got "LOST" ("#,
        ),
        (
            json!({"counts": {"a": 1.5}}),
            r#".counts.a: expected int64, got 1.5 ("#,
        ),
        (json!({"lines": 3}), ".lines: expected a list, got 3 ("),
        (
            json!({"nope": 1}),
            r#".: expected shop.Order, got {"nope":1} ("#,
        ),
        (json!([]), ".: expected shop.Order, got [] ("),
    ];
    for (value, want) in cases {
        let message = misfit(encoder.encode_to_vec(&value));
        assert!(message.starts_with(want), "{value}: {message}");
    }
}

const ORDER_JSON_SCHEMA: &str = r#"{"$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object", "required": ["id"],
  "properties": {"id": {"type": "integer"},
    "lines": {"type": "array", "items": {"type": "object",
      "properties": {"sku": {"type": "string"}}}}}}"#;

#[test]
fn json_schema_values_are_checked_then_written_as_json() {
    let encoder =
        ValueEncoder::from_schema(3, SchemaFormat::Json, ORDER_JSON_SCHEMA, None).unwrap();
    let value = json!({"id": 1, "lines": [{"sku": "a"}]});
    let framed = encoder.encode_to_vec(&value).unwrap();
    assert_eq!(&framed[..5], [0, 0, 0, 0, 3]);
    assert_eq!(&framed[5..], br#"{"id":1,"lines":[{"sku":"a"}]}"#);
    let bad = json!({"id": 1, "lines": [{"sku": "a"}, {"sku": 5}]});
    let message = misfit(encoder.encode_to_vec(&bad));
    assert!(
        message.starts_with(".lines[1].sku: 5 is not of type \"string\""),
        "{message}"
    );
    assert!(misfit(encoder.encode_to_vec(&json!({}))).starts_with(".: \"id\" is a required"));
    assert!(ValueEncoder::from_schema(3, SchemaFormat::Json, "{", None).is_err());
    let not_proto = ValueEncoder::from_schema(3, SchemaFormat::Json, "{}", Some("Order"));
    assert!(not_proto.is_err(), "a message name is for Protobuf only");
}

/// A small deterministic generator of arbitrary JSON values.
struct Arbitrary(u64);

impl Arbitrary {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }

    fn value(&mut self, depth: u32) -> Value {
        const NAMES: [&str; 14] = [
            "id",
            "note",
            "lines",
            "sku",
            "qty",
            "string",
            "shop.Line",
            "status",
            "blob",
            "four",
            "choice",
            "long",
            "text",
            "x",
        ];
        match self.next() % if depth > 4 { 6 } else { 8 } {
            0 => Value::Null,
            1 => json!(self.next() % 2 == 0),
            2 => json!(self.next() as i64 >> (self.next() % 64)),
            3 => json!(f64::from_bits(self.next()) % 1e6),
            4 => json!(self.pick(&[
                "",
                "PAID",
                "NaN",
                "abcd",
                "\u{ff}\u{100}",
                "2024-01-31T10:00:00Z"
            ])),
            5 => json!(self.next()),
            6 => Value::Array(
                (0..self.next() % 4)
                    .map(|_| self.value(depth + 1))
                    .collect(),
            ),
            _ => Value::Object(
                (0..self.next() % 5)
                    .map(|_| (self.pick(&NAMES).to_owned(), self.value(depth + 1)))
                    .collect(),
            ),
        }
    }
}

#[test]
fn arbitrary_json_never_panics_and_leaves_the_buffer_alone_on_error() {
    let encoders = [
        avro_encoder(),
        ValueEncoder::from_schema(9, SchemaFormat::Protobuf, SHOP_PROTO, None).unwrap(),
        ValueEncoder::from_schema(9, SchemaFormat::Protobuf, SHOP_PROTO, Some("Refund")).unwrap(),
        ValueEncoder::from_schema(3, SchemaFormat::Json, ORDER_JSON_SCHEMA, None).unwrap(),
    ];
    let mut arbitrary = Arbitrary(0x9E37_79B9_7F4A_7C15);
    let mut out = Vec::new();
    let (mut fits, mut misfits) = (0, 0);
    for _ in 0..20_000 {
        let value = arbitrary.value(0);
        for encoder in &encoders {
            out.clear();
            out.push(1);
            match encoder.encode(&value, &mut out) {
                Ok(()) => fits += 1,
                Err(Error::Misfit { .. }) => {
                    assert_eq!(out, [1]);
                    misfits += 1;
                }
                Err(other) => panic!("{value}: not a misfit: {other}"),
            }
        }
    }
    assert!(
        fits > 0 && misfits > 0,
        "both outcomes reached: {fits} {misfits}"
    );
}
