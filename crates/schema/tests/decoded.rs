//! Values in the decoded notation (`JsonNotation::Decoded`: what `ValueDecoder` writes)
//! encoded back: every awkward Avro type makes the exact bytes it was decoded from; untagged
//! unions pick their branch by the documented rule; misfits name their path.

use krec_schema::avro::AvroSchema;
use krec_schema::wire::split_header;
use krec_schema::{Error, JsonNotation, SchemaFormat, ValueEncoder};
use serde_json::{json, Value};

const AWKWARD: &str = r#"{"type": "record", "name": "Awkward", "namespace": "t",
  "fields": [
    {"name": "maybe_bytes", "type": ["null", "bytes"]},
    {"name": "blob", "type": "bytes"},
    {"name": "four", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "BLUE"]}},
    {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [
      {"name": "x", "type": "int"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}},
    {"name": "labels", "type": {"type": "map", "values": ["null", "long", "Inner"]}},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 30,
      "scale": 2}},
    {"name": "fixed_amount", "type": {"type": "fixed", "name": "Money", "size": 8,
      "logicalType": "decimal", "precision": 18, "scale": 4}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "clock_ms", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "clock_us", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "at_ns", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
    {"name": "local_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "span", "type": {"type": "fixed", "name": "Span", "size": 12,
      "logicalType": "duration"}},
    {"name": "ratio", "type": "float"},
    {"name": "precise", "type": "double"},
    {"name": "number", "type": ["null", "float", "double"]},
    {"name": "when", "type": ["null", {"type": "int", "logicalType": "date"}, "string"]},
    {"name": "choice", "type": ["null", "long", "Inner", "Color", "Four"]}
  ]}"#;

fn encoder() -> ValueEncoder {
    ValueEncoder::from_schema(3, SchemaFormat::Avro, AWKWARD, None).expect("schema compiles")
}

/// Values in Avro's JSON encoding (tagged unions, code-point bytes, logical types as numbers).
fn tagged_values() -> Vec<Value> {
    (0..8i64)
        .map(|i| {
            let choice = match i % 5 {
                0 => Value::Null,
                1 => json!({"long": -i * 1_000_000_007}),
                2 => json!({"t.Inner": {"x": i, "tags": ["c"]}}),
                3 => json!({"t.Color": "BLUE"}),
                _ => json!({"t.Four": "\u{0}\u{ff}ab"}),
            };
            let number = match i % 4 {
                0 => Value::Null,
                1 => json!({"float": 0.1}),
                2 => json!({"double": 0.123_456_789_012 * i as f64}),
                _ => json!({"float": "NaN"}),
            };
            json!({
                "maybe_bytes": if i % 2 == 0 { Value::Null } else { json!({"bytes": "aGk="}) },
                "blob": (["", "\u{0}\u{ff}\u{80}", "plain text", "=="][i as usize % 4]),
                "four": (["abcd", "\u{ff}\u{fe}\u{0}\u{1}"][i as usize % 2]),
                "color": (["RED", "BLUE"][i as usize % 2]),
                "inner": {"x": -i, "tags": vec!["a"; i as usize % 3]},
                "labels": {"z": {"long": i}, "a": null, "m": {"t.Inner": {"x": 1, "tags": []}}},
                "amount": (["\u{4}\u{d2}", "\u{fb}\u{2e}", "\u{0}", "\u{80}", "\u{0}\u{80}"][i as usize % 5]),
                "fixed_amount": (["\u{ff}\u{ff}\u{ff}\u{ff}\u{ff}\u{ff}\u{cf}\u{c7}", "\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{1}"][i as usize % 2]),
                "day": 19_782 - i * 9_000,
                "clock_ms": 49_510_250 + i,
                "clock_us": 86_399_999_999 - i,
                "at_ms": 1_700_000_000_123 - i * 900_000_000_000,
                "at_us": -1 - i,
                "at_ns": 1_700_000_000_123_456_789 + i,
                "local_us": i * 1_000_001,
                "id": "0f8fad5b-d9cb-469f-a165-70867728950e",
                "span": "\u{1}\u{0}\u{0}\u{0}\u{2}\u{0}\u{0}\u{0}\u{ff}\u{ff}\u{ff}\u{ff}",
                "ratio": ([0.1, -3.5e30, 1.0, 16_777_217.0][i as usize % 4]),
                "precise": ([0.1, -1.0 / 3.0, 1e300, 5e-324][i as usize % 4]),
                "number": number,
                "when": ([Value::Null, json!({"string": "soon"}), json!({"int": -3})][i as usize % 3]),
                "choice": choice,
            })
        })
        .collect()
}

fn decoded_json(framed: &[u8]) -> Value {
    let (_, payload) = split_header(framed).unwrap();
    let mut out = Vec::new();
    AvroSchema::parse(AWKWARD, &[])
        .unwrap()
        .to_json(payload, &mut out)
        .unwrap();
    serde_json::from_slice(&out).unwrap()
}

fn encode_decoded(value: &Value) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    encoder().encode_in(value, JsonNotation::Decoded, &mut out)?;
    Ok(out)
}

#[test]
fn decoded_values_encode_back_to_the_same_bytes() {
    let encoder = encoder();
    for (index, tagged) in tagged_values().iter().enumerate() {
        let bytes = encoder
            .encode_to_vec(tagged)
            .expect("the tagged value fits");
        let decoded = decoded_json(&bytes);
        // Through text, as a pipe carries it.
        let text = serde_json::to_string(&decoded).unwrap();
        let reread: Value = serde_json::from_str(&text).unwrap();
        let again = encode_decoded(&reread).unwrap_or_else(|e| panic!("{index}: {e}: {text}"));
        assert_eq!(again, bytes, "value {index}: {text}");
    }
}

/// The branch index an untagged value takes in a one-field record's union.
fn branch(union: &str, value: Value) -> Result<u8, String> {
    let schema =
        format!(r#"{{"type":"record","name":"U","fields":[{{"name":"u","type":{union}}}]}}"#);
    let encoder = ValueEncoder::from_schema(1, SchemaFormat::Avro, &schema, None).unwrap();
    let mut out = Vec::new();
    encoder
        .encode_in(&json!({ "u": value }), JsonNotation::Decoded, &mut out)
        .map_err(|e| e.to_string())?;
    Ok(out[5] / 2)
}

#[test]
fn untagged_unions_take_the_first_branch_the_value_fits() {
    // Shared forms: the first branch in schema order.
    assert_eq!(branch(r#"["string","bytes"]"#, json!("aGk=")), Ok(0));
    assert_eq!(branch(r#"["bytes","string"]"#, json!("aGk=")), Ok(0));
    assert_eq!(branch(r#"["int","long"]"#, json!(5)), Ok(0));
    // Forms only one branch has.
    assert_eq!(branch(r#"["bytes","string"]"#, json!("hello")), Ok(1));
    assert_eq!(branch(r#"["int","long"]"#, json!(5_000_000_000_i64)), Ok(1));
    assert_eq!(branch(r#"["long","double"]"#, json!(1.0)), Ok(1));
    assert_eq!(branch(r#"["float","double"]"#, json!(0.1)), Ok(0));
    assert_eq!(
        branch(r#"["float","double"]"#, json!(0.123_456_789_012)),
        Ok(1)
    );
    assert_eq!(branch(r#"["null","double"]"#, json!("NaN")), Ok(1));
    let fixed = r#"[{"type":"fixed","name":"F","size":2},"bytes"]"#;
    assert_eq!(branch(fixed, json!("AAE=")), Ok(0));
    assert_eq!(branch(fixed, json!("AAEC")), Ok(1));
    let named = r#"[{"type":"enum","name":"E","symbols":["A"]},"string"]"#;
    assert_eq!(branch(named, json!("A")), Ok(0));
    assert_eq!(branch(named, json!("B")), Ok(1));
    let dates = r#"["null",{"type":"int","logicalType":"date"},"string"]"#;
    assert_eq!(branch(dates, json!("2024-02-29")), Ok(1));
    assert_eq!(branch(dates, json!("2024-02-30")), Ok(2));
    // Records by their fields, then deeper: the first that fits all the way down.
    let records = r#"[{"type":"record","name":"A","fields":[{"name":"a","type":"int"}]},
        {"type":"record","name":"B","fields":[{"name":"a","type":"string"}]},
        {"type":"map","values":"boolean"}]"#;
    assert_eq!(branch(records, json!({"a": 1})), Ok(0));
    assert_eq!(branch(records, json!({"a": "x"})), Ok(1));
    assert_eq!(branch(records, json!({"a": true})), Ok(2));
    let error = branch(r#"["null","int"]"#, json!("x")).unwrap_err();
    assert!(
        error.contains("one of the union's types (null, int)"),
        "{error}"
    );
}

#[test]
fn decoded_misfits_name_the_path_and_the_notation() {
    let mut value = decoded_json(&encoder().encode_to_vec(&tagged_values()[1]).unwrap());
    let cases = [
        (
            "/blob",
            json!("not base64!"),
            ".blob",
            "bytes as a base64 string",
        ),
        (
            "/four",
            json!("AAE="),
            ".four",
            "4 bytes as a base64 string",
        ),
        ("/day", json!("2024-02-30"), ".day", "a date such as"),
        (
            "/amount",
            json!("1.234"),
            ".amount",
            "at most 2 fraction digits",
        ),
        (
            "/fixed_amount",
            json!("1e3"),
            ".fixed_amount",
            "a decimal such as",
        ),
        (
            "/at_ms",
            json!("2024-02-29T13:45:10.250"),
            ".at_ms",
            "in UTC",
        ),
        (
            "/span",
            json!({"months": 1, "days": 2}),
            ".span",
            "\"millis\"",
        ),
        (
            "/choice",
            json!({"x": "one", "tags": []}),
            ".choice.x",
            "expected int",
        ),
    ];
    for (pointer, bad, path, detail) in cases {
        let good = value.pointer(pointer).unwrap().clone();
        *value.pointer_mut(pointer).unwrap() = bad;
        match encode_decoded(&value) {
            Err(Error::Misfit {
                path: got_path,
                detail: got_detail,
                ..
            }) => {
                assert_eq!(got_path, path, "{pointer}: {got_detail}");
                assert!(got_detail.contains(detail), "{pointer}: {got_detail}");
            }
            other => panic!("{pointer}: {other:?}"),
        }
        *value.pointer_mut(pointer).unwrap() = good;
    }
    assert!(encode_decoded(&value).is_ok());
}

#[test]
fn alike_record_branches_nested_deep_are_bounded() {
    // Two records with the same fields at every level: a value failing at the bottom would
    // try 2^depth branch combinations without the bound.
    let schema = r#"{"type":"record","name":"A","fields":[{"name":"y","type":"int"},
        {"name":"next","type":["null","A",{"type":"record","name":"B","fields":[
          {"name":"y","type":"int"},{"name":"next","type":["null","A","B"]}]}]}]}"#;
    let encoder = ValueEncoder::from_schema(1, SchemaFormat::Avro, schema, None).unwrap();
    let mut value = json!({"y": "bottom", "next": null});
    for _ in 0..60 {
        value = json!({"y": 1, "next": value});
    }
    let mut out = Vec::new();
    let error = encoder
        .encode_in(&value, JsonNotation::Decoded, &mut out)
        .unwrap_err()
        .to_string();
    assert!(error.contains("tried and abandoned"), "{error}");
    assert!(out.is_empty());
}
