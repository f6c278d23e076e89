//! JSON lines: one object per record per line.
//!
//! A data record:
//! ```text
//! {"topic":"orders","partition":3,"offset":42,"timestamp":1700000000000,
//!  "timestamp_type":"create_time","key":"k1","value":"v1",
//!  "headers":[["trace","abc"],["empty",""],["nil",null]]}
//! ```
//! (one line in the output). Fields always appear, in this order:
//! - `topic`: string, or `null` when unknown (a segment file outside a `TOPIC-N/` directory);
//! - `partition`: number, or `null` when unknown;
//! - `delivery_count`: number, for a share group's records only (`--share-group`): how many
//!   times the group has delivered the record, this time included;
//! - `offset`, `timestamp` (ms since the epoch, `-1` when the record has none): numbers;
//! - `timestamp_type`: `"create_time"`, `"log_append_time"` or `"none"` (legacy magic 0);
//! - `key`, `value`: see below;
//! - `headers`: array of `[key, value]` pairs in wire order, duplicates kept;
//! - with `-s`: `key_schema_id` / `value_schema_id` (number, `null` for a null key or value)
//!   for each part decoded, and that part is the decoded JSON value.
//!
//! Keys, values, header keys and header values are written losslessly:
//! `null` when null on the wire; a JSON string when the bytes are valid UTF-8;
//! otherwise an object `{"base64":"..."}` with the standard base64 (RFC 4648,
//! padded) of the exact bytes. A reader tells the cases apart by JSON type alone,
//! and text stays readable as text.
//!
//! A control record (only with `--print-control`):
//! ```text
//! {"topic":"orders","partition":3,"offset":43,"timestamp":1700000000001,
//!  "control":"commit","control_type":1,"version":0,"coordinator_epoch":5}
//! ```
//! `control` is Kafka's name for the control type: `"abort"` (0), `"commit"` (1),
//! and in KRaft metadata logs `"leader_change"`, `"snapshot_header"`,
//! `"snapshot_footer"`, `"kraft_version"`, `"kraft_voters"` (2 to 6); any other
//! type is `"unknown"`. `control_type` always holds the number.
//! `coordinator_epoch` is `null` when the marker carries none.

use super::escape::{push_json_bytes, push_json_str};
use super::record::{ControlMarker, RecordContext, RecordFields};
use super::schema::{DecodedPart, DecodedParts, DecodedRecord};

/// Appends one data record as a JSON line (with the trailing `\n`).
pub(crate) fn write_record<R: RecordFields + ?Sized>(
    out: &mut Vec<u8>,
    ctx: &RecordContext<'_>,
    record: &R,
) {
    write_record_parts(out, ctx, record, DecodedParts::default());
}

/// Appends a record whose key or value was decoded by `-s`: the decoded part is a JSON value
/// and its schema id follows the headers (`key_schema_id`, `value_schema_id`, `null` for a
/// null key or value).
pub(crate) fn write_decoded_record<R: RecordFields + ?Sized>(
    out: &mut Vec<u8>,
    ctx: &RecordContext<'_>,
    decoded: &DecodedRecord<'_, R>,
) {
    write_record_parts(out, ctx, decoded.record, decoded.parts);
}

fn write_record_parts<R: RecordFields + ?Sized>(
    out: &mut Vec<u8>,
    ctx: &RecordContext<'_>,
    record: &R,
    parts: DecodedParts<'_>,
) {
    let mut numbers = itoa::Buffer::new();
    push_context(out, ctx, &mut numbers);
    out.extend_from_slice(b",\"offset\":");
    out.extend_from_slice(numbers.format(record.offset()).as_bytes());
    out.extend_from_slice(b",\"timestamp\":");
    out.extend_from_slice(numbers.format(record.timestamp()).as_bytes());
    out.extend_from_slice(b",\"timestamp_type\":\"");
    out.extend_from_slice(record.timestamp_type_name().as_bytes());
    out.extend_from_slice(b"\",\"key\":");
    push_part(out, parts.key, record.key());
    out.extend_from_slice(b",\"value\":");
    push_part(out, parts.value, record.value());
    out.extend_from_slice(b",\"headers\":[");
    for (index, (key, value)) in record.header_pairs().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.push(b'[');
        push_json_bytes(out, Some(key));
        out.push(b',');
        push_json_bytes(out, value);
        out.push(b']');
    }
    out.push(b']');
    push_schema_id(out, b",\"key_schema_id\":", parts.key, &mut numbers);
    push_schema_id(out, b",\"value_schema_id\":", parts.value, &mut numbers);
    out.extend_from_slice(b"}\n");
}

/// A decoded part's JSON text as it is, or the bytes in the usual encoding.
fn push_part(out: &mut Vec<u8>, part: Option<DecodedPart<'_>>, bytes: Option<&[u8]>) {
    match part {
        Some(DecodedPart {
            json: Some(json), ..
        }) => out.extend_from_slice(json),
        Some(DecodedPart { json: None, .. }) => out.extend_from_slice(b"null"),
        None => push_json_bytes(out, bytes),
    }
}

fn push_schema_id(
    out: &mut Vec<u8>,
    field: &[u8],
    part: Option<DecodedPart<'_>>,
    numbers: &mut itoa::Buffer,
) {
    if let Some(part) = part {
        out.extend_from_slice(field);
        match part.schema_id {
            Some(id) => out.extend_from_slice(numbers.format(id).as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
    }
}

/// Appends one control record as a JSON line (with the trailing `\n`).
pub(crate) fn write_control(out: &mut Vec<u8>, ctx: &RecordContext<'_>, control: &ControlMarker) {
    let mut numbers = itoa::Buffer::new();
    push_context(out, ctx, &mut numbers);
    out.extend_from_slice(b",\"offset\":");
    out.extend_from_slice(numbers.format(control.offset).as_bytes());
    out.extend_from_slice(b",\"timestamp\":");
    out.extend_from_slice(numbers.format(control.timestamp).as_bytes());
    out.extend_from_slice(b",\"control\":\"");
    out.extend_from_slice(control.kind.as_bytes());
    out.extend_from_slice(b"\",\"control_type\":");
    out.extend_from_slice(numbers.format(control.control_type).as_bytes());
    out.extend_from_slice(b",\"version\":");
    out.extend_from_slice(numbers.format(control.version).as_bytes());
    out.extend_from_slice(b",\"coordinator_epoch\":");
    match control.coordinator_epoch {
        Some(epoch) => out.extend_from_slice(numbers.format(epoch).as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b"}\n");
}

/// Opens the object and writes `topic` and `partition`.
fn push_context(out: &mut Vec<u8>, ctx: &RecordContext<'_>, numbers: &mut itoa::Buffer) {
    out.extend_from_slice(b"{\"topic\":");
    match ctx.topic {
        Some(topic) => push_json_str(out, topic),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"partition\":");
    match ctx.partition {
        Some(partition) => out.extend_from_slice(numbers.format(partition).as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    if let Some(count) = ctx.delivery_count {
        out.extend_from_slice(b",\"delivery_count\":");
        out.extend_from_slice(numbers.format(count).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::{write_control, write_record};
    use crate::format::record::tests::TestRecord;
    use crate::format::{ControlMarker, RecordContext};
    use serde_json::{json, Value};

    fn render(ctx: &RecordContext<'_>, record: &TestRecord) -> Value {
        let mut out = Vec::new();
        write_record(&mut out, ctx, record);
        assert_eq!(out.last(), Some(&b'\n'), "each record ends its line");
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1, "one line");
        serde_json::from_slice(&out).expect("valid JSON")
    }

    #[test]
    fn data_record_has_every_field() {
        let record = TestRecord {
            offset: 42,
            timestamp: 1_700_000_000_000,
            timestamp_type: "create_time",
            key: Some(b"k1".to_vec()),
            value: Some(b"v\n1".to_vec()),
            headers: vec![
                (b"trace".to_vec(), Some(b"abc".to_vec())),
                (b"empty".to_vec(), Some(Vec::new())),
                (b"nil".to_vec(), None),
                (b"trace".to_vec(), Some(b"\xff".to_vec())),
            ],
        };
        let got = render(&RecordContext::new("orders", 3), &record);
        assert_eq!(
            got,
            json!({
                "topic": "orders", "partition": 3, "offset": 42,
                "timestamp": 1_700_000_000_000i64, "timestamp_type": "create_time",
                "key": "k1", "value": "v\n1",
                "headers": [["trace", "abc"], ["empty", ""], ["nil", null],
                            ["trace", {"base64": "/w=="}]],
            })
        );
    }

    #[test]
    fn a_share_group_record_has_its_delivery_count() {
        let record = TestRecord::default();
        let shared = render(&RecordContext::new("t", 0).with_delivery_count(3), &record);
        assert_eq!(shared["delivery_count"], 3);
        let plain = render(&RecordContext::new("t", 0), &record);
        assert!(
            plain.get("delivery_count").is_none(),
            "only for share groups"
        );
    }

    #[test]
    fn null_fields_unknown_context_and_extreme_numbers() {
        let record = TestRecord {
            offset: i64::MAX,
            timestamp: -1,
            timestamp_type: "none",
            key: None,
            value: None,
            headers: vec![],
        };
        let got = render(&RecordContext::unknown(), &record);
        assert_eq!(
            got,
            json!({
                "topic": null, "partition": null, "offset": i64::MAX, "timestamp": -1,
                "timestamp_type": "none", "key": null, "value": null, "headers": [],
            })
        );
    }

    #[test]
    fn binary_key_and_topic_needing_escape() {
        let record = TestRecord {
            key: Some(vec![0xc3, 0x28]),
            value: Some(b"\"quoted\"".to_vec()),
            ..TestRecord::default()
        };
        let got = render(&RecordContext::new("we\"ird", -1), &record);
        assert_eq!(got["topic"], "we\"ird");
        assert_eq!(got["partition"], -1);
        assert_eq!(got["key"], json!({"base64": "wyg="}));
        assert_eq!(got["value"], "\"quoted\"");
    }

    #[test]
    fn control_record_line() {
        let cases = [
            (
                ControlMarker {
                    offset: 7,
                    timestamp: 99,
                    kind: "commit",
                    control_type: 1,
                    version: 0,
                    coordinator_epoch: Some(5),
                },
                json!({"topic": "t", "partition": 0, "offset": 7, "timestamp": 99,
                       "control": "commit", "control_type": 1, "version": 0,
                       "coordinator_epoch": 5}),
            ),
            (
                ControlMarker {
                    offset: 8,
                    timestamp: -1,
                    kind: "unknown",
                    control_type: 9,
                    version: 0,
                    coordinator_epoch: None,
                },
                json!({"topic": "t", "partition": 0, "offset": 8, "timestamp": -1,
                       "control": "unknown", "control_type": 9, "version": 0,
                       "coordinator_epoch": null}),
            ),
        ];
        for (marker, expected) in cases {
            let mut out = Vec::new();
            write_control(&mut out, &RecordContext::new("t", 0), &marker);
            assert_eq!(out.last(), Some(&b'\n'));
            let got: Value = serde_json::from_slice(&out).expect("valid JSON");
            assert_eq!(got, expected);
        }
    }
}
