//! `-J`: JSON lines in exactly the shape `krec consume -J` writes (see
//! [`crate::format::json`]), so that its output is this input.
//!
//! Every field is optional: `{"value":"a"}` is a record. Read:
//! - `key`, `value`: `null` (or absent) for null; a string for its UTF-8 bytes;
//!   `{"base64":"..."}` for any bytes (standard base64, padded);
//! - `headers`: `[[key, value], ...]` in order, each as above (a header key is never null);
//! - `timestamp`: ms since the epoch; `-1` (a record without one) or absent: the producer's
//!   clock;
//! - `partition`: the partition to write to (a number from 0), unless `-p` says otherwise.
//!
//! With `--key-format` / `--value-format`, `key` / `value` is the JSON document to encode
//! (any JSON value), null still null. A line with `key_schema_id` / `value_schema_id` (as
//! `krec consume -J -s` writes it) has that part in the decoded notation (README, "The JSON
//! mapping": Avro unions untagged, bytes base64, logical types formatted); without it, in
//! Avro's JSON encoding (unions tagged, as Confluent's console producer reads it).
//!
//! Ignored: `topic` (`-t` names it), `offset`, `timestamp_type`, `delivery_count` and any
//! field this format does not know. A control record's line (`"control"`, written with
//! `--print-control`) is an error: it is a transaction marker, not data. A blank line is
//! skipped.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::{DecodedParts, Header, InputError, InputRecord, Origin};

/// How JSON lines become records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JsonFormat {
    /// Headers added after each line's own (`-H`).
    pub headers: Vec<Header>,
    /// `key` is a JSON document to encode with a schema (`--key-format`): any JSON value but
    /// null, as `krec consume -J -s` writes it, taken as its JSON text.
    pub key_documents: bool,
    /// The same for `value` (`--value-format`).
    pub value_documents: bool,
}

/// The longest JSON line read for records of at most `record_limit` bytes: JSON escapes a
/// byte in up to six (`\u0000`), and the fields around the bytes take some more.
pub fn line_limit(record_limit: usize) -> usize {
    record_limit.saturating_mul(6).saturating_add(64 << 10)
}

impl JsonFormat {
    /// The record on `line`, `None` for a blank line.
    pub fn record(&self, line: &[u8], origin: Origin) -> Result<Option<InputRecord>, InputError> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        let parsed: Value = serde_json::from_slice(line).map_err(|error| InputError::Json {
            origin: origin.clone(),
            detail: error.to_string(),
        })?;
        let field_error = |field: &str, detail: &str| InputError::Field {
            origin: origin.clone(),
            field: field.to_owned(),
            detail: detail.to_owned(),
        };
        let Value::Object(fields) = parsed else {
            return Err(field_error(
                "(line)",
                "expected an object such as {\"key\":\"k\",\"value\":\"v\"}",
            ));
        };
        if fields.contains_key("control") {
            return Err(field_error(
                "control",
                "a control record (a transaction marker) is not data: consume without \
                 --print-control",
            ));
        }
        let bytes = |field: &str, document: bool| match fields.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(value) if document => Ok(Some(value.to_string().into_bytes())),
            Some(value) => bytes_of(value).map_err(|detail| field_error(field, detail)),
        };
        let mut headers =
            headers_of(&fields).map_err(|(field, detail)| field_error(&field, detail))?;
        headers.extend(self.headers.iter().cloned());
        Ok(Some(InputRecord {
            key: bytes("key", self.key_documents)?,
            value: bytes("value", self.value_documents)?,
            headers,
            timestamp: timestamp_of(&fields).map_err(|detail| field_error("timestamp", detail))?,
            partition: partition_of(&fields).map_err(|detail| field_error("partition", detail))?,
            origin,
            decoded: DecodedParts {
                key: fields.contains_key("key_schema_id"),
                value: fields.contains_key("value_schema_id"),
            },
        }))
    }
}

const BYTES_SHAPE: &str = "expected null, a string or {\"base64\": \"...\"}";

/// Bytes as `krec consume -J` writes them: `null`, a string, or `{"base64": "..."}`.
fn bytes_of(value: &Value) -> Result<Option<Vec<u8>>, &'static str> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) => Ok(Some(text.as_bytes().to_vec())),
        Value::Object(object) => match (object.len(), object.get("base64")) {
            (1, Some(Value::String(encoded))) => base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map(Some)
                .map_err(|_| "invalid base64 (expected standard base64 with = padding)"),
            _ => Err(BYTES_SHAPE),
        },
        _ => Err(BYTES_SHAPE),
    }
}

/// `headers`: an array of `[key, value]` pairs; on error, the field path and what is wrong.
fn headers_of(fields: &Map<String, Value>) -> Result<Vec<Header>, (String, &'static str)> {
    let pairs = match fields.get("headers") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(pairs)) => pairs,
        Some(_) => {
            return Err((
                "headers".to_owned(),
                "expected an array of [key, value] pairs",
            ))
        }
    };
    let mut headers = Vec::with_capacity(pairs.len());
    for (index, pair) in pairs.iter().enumerate() {
        let at = |part: &str| format!("headers[{index}]{part}");
        let Some([key, value]) = pair.as_array().map(Vec::as_slice) else {
            return Err((at(""), "expected a [key, value] pair"));
        };
        let key = match bytes_of(key) {
            Ok(Some(key)) => key,
            Ok(None) => return Err((at("[0]"), "a header key cannot be null")),
            Err(detail) => return Err((at("[0]"), detail)),
        };
        let value = bytes_of(value).map_err(|detail| (at("[1]"), detail))?;
        headers.push((key, value));
    }
    Ok(headers)
}

/// `timestamp`: `None` when absent, null or `-1`.
fn timestamp_of(fields: &Map<String, Value>) -> Result<Option<i64>, &'static str> {
    match fields.get("timestamp") {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_i64() {
            Some(-1) => Ok(None),
            Some(ms) if ms >= 0 => Ok(Some(ms)),
            _ => Err("expected ms since the epoch: a whole number from 0, or -1 for none"),
        },
    }
}

/// `partition`: `None` when absent or null.
fn partition_of(fields: &Map<String, Value>) -> Result<Option<i32>, &'static str> {
    match fields.get("partition") {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .filter(|n| *n >= 0)
            .map(Some)
            .ok_or("expected a partition number from 0"),
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
