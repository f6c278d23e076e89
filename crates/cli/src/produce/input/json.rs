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

use std::convert::Infallible;
use std::fmt;

use serde::de::{self, Deserializer as _, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::{DecodedParts, Header, InputError, InputRecord, Origin, RecordRef};
use bytes::{bytes_into, part_into, Bad};

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

/// The record of the last `-J` line read, in storage kept from line to line: once its buffers
/// have grown to the input's records, reading a line allocates nothing.
#[derive(Debug, Default)]
pub struct JsonRecordBuf {
    key: Vec<u8>,
    has_key: bool,
    value: Vec<u8>,
    has_value: bool,
    headers: HeaderPool,
    /// An escaped base64 string, unescaped before it is decoded.
    unescaped: Vec<u8>,
    timestamp: Option<i64>,
    partition: Option<i32>,
    decoded: DecodedParts,
}

impl JsonRecordBuf {
    /// The record last read, borrowing this storage.
    pub fn record(&self, origin: Origin) -> RecordRef<'_> {
        RecordRef {
            key: self.has_key.then_some(&self.key[..]),
            value: self.has_value.then_some(&self.value[..]),
            headers: self.headers.live(),
            timestamp: self.timestamp,
            partition: self.partition,
            origin,
            decoded: self.decoded,
        }
    }
}

/// Headers whose buffers outlive a line: the first `live` entries are the record's; value
/// buffers of null values wait in `spare`.
#[derive(Debug, Default)]
struct HeaderPool {
    entries: Vec<Header>,
    live: usize,
    spare: Vec<Vec<u8>>,
}

impl HeaderPool {
    fn live(&self) -> &[Header] {
        &self.entries[..self.live]
    }

    /// Starts a header after the live ones: its name's buffer, empty.
    fn name_buffer(&mut self) -> &mut Vec<u8> {
        if self.live == self.entries.len() {
            self.entries.push(Header::default());
        }
        let name = &mut self.entries[self.live].0;
        name.clear();
        name
    }

    /// Ends the header [`HeaderPool::name_buffer`] started: `fill` writes its value into an
    /// empty buffer and says whether it is not null.
    fn finish<E>(&mut self, fill: impl FnOnce(&mut Vec<u8>) -> Result<bool, E>) -> Result<(), E> {
        let slot = &mut self.entries[self.live].1;
        let mut buffer = slot.take().or_else(|| self.spare.pop()).unwrap_or_default();
        buffer.clear();
        let present = fill(&mut buffer);
        match present {
            Ok(true) => *slot = Some(buffer),
            _ => self.spare.push(buffer),
        }
        present?;
        self.live += 1;
        Ok(())
    }
}

impl JsonFormat {
    /// The record on `line`, owned; `None` for a blank line.
    pub fn record(&self, line: &[u8], origin: Origin) -> Result<Option<InputRecord>, InputError> {
        let mut buf = JsonRecordBuf::default();
        let read = self.read_into(line, &origin, &mut buf)?;
        Ok(read.then(|| buf.record(origin).to_owned()))
    }

    /// Reads the record on `line` into `buf`; false for a blank line (`buf` then unchanged).
    pub fn read_into(
        &self,
        line: &[u8],
        origin: &Origin,
        buf: &mut JsonRecordBuf,
    ) -> Result<bool, InputError> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(false);
        }
        let mut walk = Walk {
            pool: &mut buf.headers,
            scratch: &mut buf.unescaped,
            place: Place::Line,
            failure: None,
        };
        walk.pool.live = 0;
        let fields = fields_of(line, &mut walk).map_err(|error| walk.error(line, error, origin))?;
        let error = |field: &str, bad: Bad| match bad {
            Bad::Shape(detail) => InputError::Field {
                origin: origin.clone(),
                field: field.to_owned(),
                detail: detail.to_owned(),
            },
            Bad::Escape => malformed(line, origin),
        };
        if fields.control {
            return Err(error(
                "control",
                Bad::Shape(
                    "a control record (a transaction marker) is not data: consume without \
                     --print-control",
                ),
            ));
        }
        let unescaped = &mut buf.unescaped;
        buf.has_key = part_into(fields.key, self.key_documents, &mut buf.key, unescaped)
            .map_err(|bad| error("key", bad))?;
        buf.has_value = part_into(
            fields.value,
            self.value_documents,
            &mut buf.value,
            unescaped,
        )
        .map_err(|bad| error("value", bad))?;
        for (name, value) in &self.headers {
            buf.headers.name_buffer().extend_from_slice(name);
            buf.headers.finish(|buffer| {
                buffer.extend_from_slice(value.as_deref().unwrap_or_default());
                Ok::<_, Infallible>(value.is_some())
            })?;
        }
        buf.timestamp = timestamp_of(fields.timestamp)
            .map_err(|detail| error("timestamp", Bad::Shape(detail)))?;
        buf.partition = partition_of(fields.partition)
            .map_err(|detail| error("partition", Bad::Shape(detail)))?;
        buf.decoded = DecodedParts {
            key: fields.key_schema_id,
            value: fields.value_schema_id,
        };
        Ok(true)
    }
}

impl From<Infallible> for InputError {
    fn from(never: Infallible) -> Self {
        match never {}
    }
}

/// A line's fields, each as its JSON text in the line; null and absent are both `None`.
#[derive(Default)]
struct LineFields<'a> {
    key: Option<&'a RawValue>,
    value: Option<&'a RawValue>,
    timestamp: Option<&'a RawValue>,
    partition: Option<&'a RawValue>,
    key_schema_id: bool,
    value_schema_id: bool,
    control: bool,
}

/// The names of the fields read (`base64` inside bytes); any other is skipped.
enum FieldName {
    Key,
    Value,
    Headers,
    Timestamp,
    Partition,
    KeySchemaId,
    ValueSchemaId,
    Control,
    Base64,
    Other,
}

impl<'de> de::Deserialize<'de> for FieldName {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(FieldNameVisitor)
    }
}

struct FieldNameVisitor;

impl Visitor<'_> for FieldNameVisitor {
    type Value = FieldName;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<FieldName, E> {
        Ok(match name {
            "key" => FieldName::Key,
            "value" => FieldName::Value,
            "headers" => FieldName::Headers,
            "timestamp" => FieldName::Timestamp,
            "partition" => FieldName::Partition,
            "key_schema_id" => FieldName::KeySchemaId,
            "value_schema_id" => FieldName::ValueSchemaId,
            "control" => FieldName::Control,
            "base64" => FieldName::Base64,
            _ => FieldName::Other,
        })
    }
}

/// Walks a line's object, keeping each field's text and reading `headers` into the pool; a
/// repeated field keeps its last.
struct LineVisitor<'a, 'w>(&'a mut Walk<'w>);

impl<'de> Visitor<'de> for LineVisitor<'_, '_> {
    type Value = LineFields<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LineFields<'de>, A::Error> {
        let mut fields = LineFields::default();
        while let Some(name) = map.next_key::<FieldName>()? {
            let slot = match name {
                FieldName::Key => &mut fields.key,
                FieldName::Value => &mut fields.value,
                FieldName::Headers => {
                    map.next_value_seed(HeadersWalk(&mut *self.0))?;
                    continue;
                }
                FieldName::Timestamp => &mut fields.timestamp,
                FieldName::Partition => &mut fields.partition,
                present => {
                    match present {
                        FieldName::KeySchemaId => fields.key_schema_id = true,
                        FieldName::ValueSchemaId => fields.value_schema_id = true,
                        FieldName::Control => fields.control = true,
                        _ => {}
                    }
                    // Read as text, not skipped: the text is checked as UTF-8.
                    map.next_value::<&RawValue>()?;
                    continue;
                }
            };
            *slot = map.next_value()?;
        }
        Ok(fields)
    }
}

fn fields_of<'a>(line: &'a [u8], walk: &mut Walk<'_>) -> Result<LineFields<'a>, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(line);
    let fields = (&mut deserializer).deserialize_map(LineVisitor(walk))?;
    deserializer.end()?;
    Ok(fields)
}

/// The error for a line serde_json refuses as a whole, in its words.
fn malformed(line: &[u8], origin: &Origin) -> InputError {
    let detail = match serde_json::from_slice::<serde_json::Value>(line) {
        Err(error) => error.to_string(),
        Ok(_) => "a string that is not valid UTF-16".to_owned(),
    };
    InputError::Json {
        origin: origin.clone(),
        detail,
    }
}

/// Where a line's walk is: what a JSON value of the wrong type there is refused as.
#[derive(Clone, Copy)]
enum Place {
    Line,
    Headers,
    Pair(usize),
}

/// A line's walk: `headers` is read into the pool as the line is parsed, not kept as text, since
/// serde_json allocates to skip over nested arrays.
struct Walk<'w> {
    pool: &'w mut HeaderPool,
    scratch: &'w mut Vec<u8>,
    place: Place,
    /// The first header that is not bytes: its field path and why.
    failure: Option<(String, Bad)>,
}

impl Walk<'_> {
    /// The error for a line the walk stopped on with `error`.
    fn error(&mut self, line: &[u8], error: serde_json::Error, origin: &Origin) -> InputError {
        // A type error or a header refused: the line may still be malformed further on.
        let error = match error.is_data() {
            true => match serde_json::from_slice::<de::IgnoredAny>(line) {
                Ok(_) => return self.field_error(line, origin),
                Err(malformed) => malformed,
            },
            false => error,
        };
        InputError::Json {
            origin: origin.clone(),
            detail: error.to_string(),
        }
    }

    /// The error for a line that is JSON but whose field at the walk's place is wrong.
    fn field_error(&mut self, line: &[u8], origin: &Origin) -> InputError {
        let (field, detail) = match (self.failure.take(), self.place) {
            (Some((_, Bad::Escape)), _) => return malformed(line, origin),
            (Some((field, Bad::Shape(detail))), _) => (field, detail),
            (None, Place::Line) => (
                "(line)".to_owned(),
                "expected an object such as {\"key\":\"k\",\"value\":\"v\"}",
            ),
            (None, Place::Headers) => (
                "headers".to_owned(),
                "expected an array of [key, value] pairs",
            ),
            (None, Place::Pair(index)) => {
                (format!("headers[{index}]"), "expected a [key, value] pair")
            }
        };
        InputError::Field {
            origin: origin.clone(),
            field,
            detail: detail.to_owned(),
        }
    }

    /// Stops the walk on a header that is not bytes.
    fn fail<E: de::Error>(&mut self, field: String, bad: Bad) -> E {
        self.failure = Some((field, bad));
        E::custom("a header is not bytes")
    }
}

/// Walks `headers`: null, or an array of `[key, value]` pairs.
struct HeadersWalk<'a, 'w>(&'a mut Walk<'w>);

impl<'de> de::DeserializeSeed<'de> for HeadersWalk<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.0.place = Place::Headers;
        // A repeated `headers` keeps its last, as other fields do.
        self.0.pool.live = 0;
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for HeadersWalk<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of [key, value] pairs")
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.0.place = Place::Line;
        Ok(())
    }

    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        for index in 0.. {
            self.0.place = Place::Pair(index);
            if seq
                .next_element_seed(PairWalk(&mut *self.0, index))?
                .is_none()
            {
                break;
            }
        }
        self.0.place = Place::Line;
        Ok(())
    }
}

/// Walks one `[key, value]` of `headers`, at its index, into the pool.
struct PairWalk<'a, 'w>(&'a mut Walk<'w>, usize);

impl<'de> de::DeserializeSeed<'de> for PairWalk<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for PairWalk<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a [key, value] pair")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let PairWalk(walk, index) = self;
        let at = |part: &str| format!("headers[{index}]{part}");
        let key = seq.next_element::<&RawValue>()?;
        let value = seq.next_element::<&RawValue>()?;
        let (Some(key), Some(value), None) = (key, value, seq.next_element::<&RawValue>()?) else {
            return Err(walk.fail(at(""), Bad::Shape("expected a [key, value] pair")));
        };
        let scratch = &mut *walk.scratch;
        match bytes_into(key.get(), walk.pool.name_buffer(), scratch) {
            Ok(true) => {}
            Ok(false) => {
                let bad = Bad::Shape("a header key cannot be null");
                return Err(walk.fail(at("[0]"), bad));
            }
            Err(bad) => return Err(walk.fail(at("[0]"), bad)),
        }
        match walk
            .pool
            .finish(|buffer| bytes_into(value.get(), buffer, scratch))
        {
            Ok(()) => Ok(()),
            Err(bad) => Err(walk.fail(at("[1]"), bad)),
        }
    }
}

/// `timestamp`: `None` when absent, null or `-1`.
fn timestamp_of(raw: Option<&RawValue>) -> Result<Option<i64>, &'static str> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    match serde_json::from_str::<i64>(raw.get()) {
        Ok(-1) => Ok(None),
        Ok(ms) if ms >= 0 => Ok(Some(ms)),
        _ => Err("expected ms since the epoch: a whole number from 0, or -1 for none"),
    }
}

/// `partition`: `None` when absent or null.
fn partition_of(raw: Option<&RawValue>) -> Result<Option<i32>, &'static str> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    (serde_json::from_str::<i64>(raw.get()).ok())
        .and_then(|n| i32::try_from(n).ok())
        .filter(|n| *n >= 0)
        .map(Some)
        .ok_or("expected a partition number from 0")
}

#[path = "json_bytes.rs"]
mod bytes;

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
