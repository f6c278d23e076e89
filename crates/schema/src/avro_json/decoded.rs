//! The decoded notation read back: Avro values as [`crate::avro`] writes them (README, "The
//! JSON mapping"), so that what `krec consume -J -s` printed encodes to the same bytes.
//!
//! - bytes and fixed: standard padded base64; float: the shortest text of the 32-bit value;
//! - logical types formatted: `decimal` `"-12.30"`, `date` `"2024-02-29"`, `time-*`
//!   `"13:45:10.250"`, `timestamp-*` RFC 3339 with `Z`, `local-timestamp-*` without, `duration`
//!   `{"months":..,"days":..,"millis":..}`;
//! - a union's value untagged: the first branch, in schema order, that the value fits as the
//!   decoder would have written it. Null, booleans, integers (int, then long), numbers with
//!   a fraction or exponent (float only when the value is a 32-bit float's shortest text, else
//!   double) and arrays each fit their own kind; a string fits `string` and `uuid` always,
//!   `bytes`/`fixed` when it is base64 (of the fixed's size), an enum when it is a symbol, a
//!   logical type when it parses; an object fits a map, a record whose fields include all its
//!   keys, a duration. A branch that fits on the surface but not deeper is abandoned for the
//!   next one.

use serde_json::Value;

use super::{push_long, AvroEncoder, Logical, Node, NodeId, Walk};
use crate::decimal::unscaled_bytes;
use crate::misfit::Misfit;
use crate::time::{parse_date, parse_time_of_day, parse_timestamp};

/// Most union branches abandoned (tried, then found not to fit deeper) in one value: a bound
/// on the work when several record branches look alike at every level.
pub(super) const MAX_UNION_RETRIES: u32 = 1 << 16;

const BASE64: &str = "bytes as a base64 string";

impl AvroEncoder {
    /// Writes `value` when its type reads differently in the decoded notation; `None` when it
    /// reads as in Avro's JSON encoding.
    pub(super) fn write_decoded(
        &self,
        id: NodeId,
        value: &Value,
        walk: Walk<'_>,
        out: &mut Vec<u8>,
    ) -> Option<Result<(), Misfit>> {
        Some(match (&self.nodes[id], value) {
            (Node::Float, _) => match float(value) {
                Some(float) => {
                    out.extend_from_slice(&float.to_le_bytes());
                    Ok(())
                }
                None => Err(Misfit::expected("float", value)),
            },
            (Node::Bytes, Value::String(text)) => push_base64(out, text, None),
            (Node::Fixed(size), Value::String(text)) => push_base64(out, text, Some(*size)),
            (Node::Union(branches), _) => self.write_untagged_union(branches, value, walk, out),
            (Node::Logical(logical, _), _) => write_logical(*logical, value, out),
            _ => return None,
        })
    }

    /// A union's branch index, then its value: the first branch that `value` fits.
    fn write_untagged_union(
        &self,
        branches: &[(String, NodeId)],
        value: &Value,
        walk: Walk<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), Misfit> {
        let start = out.len();
        let mut first_misfit = None;
        for (index, (_, branch)) in branches.iter().enumerate() {
            if !self.fits(*branch, value) {
                continue;
            }
            push_long(out, index as i64);
            let Err(misfit) = self.write(*branch, value, walk.deeper(), out) else {
                return Ok(());
            };
            out.truncate(start);
            first_misfit.get_or_insert(misfit);
            let left = walk.retries_left.get();
            if left == 0 {
                return Err(Misfit::new(format!(
                    "more than {MAX_UNION_RETRIES} union branches tried and abandoned"
                )));
            }
            walk.retries_left.set(left - 1);
        }
        Err(first_misfit.unwrap_or_else(|| {
            let names: Vec<&str> = branches.iter().map(|(tag, _)| tag.as_str()).collect();
            let expected = format!("a value of one of the union's types ({})", names.join(", "));
            Misfit::expected(&expected, value)
        }))
    }

    /// Whether `value` looks like what the decoder writes for this type (on the surface: a
    /// record's or a map's contents are checked by writing them).
    fn fits(&self, id: NodeId, value: &Value) -> bool {
        match (&self.nodes[id], value) {
            (Node::Null, Value::Null) | (Node::Boolean, Value::Bool(_)) => true,
            (Node::Int, Value::Number(n)) => n.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
            (Node::Long, Value::Number(n)) => n.as_i64().is_some(),
            (Node::Float, Value::Number(n)) => n.is_f64() && is_shortest_f32(value),
            (Node::Double, Value::Number(n)) => n.is_f64(),
            (Node::Float | Node::Double, Value::String(text)) => {
                matches!(text.as_str(), "NaN" | "Infinity" | "-Infinity")
            }
            (Node::String, Value::String(_)) => true,
            (Node::Bytes, Value::String(text)) => base64_len(text).is_some(),
            (Node::Fixed(size), Value::String(text)) => base64_len(text) == Some(*size),
            (Node::Enum(symbols), Value::String(text)) => symbols.contains(text),
            (Node::Array(_), Value::Array(_)) | (Node::Map(_), Value::Object(_)) => true,
            (Node::Record(fields), Value::Object(object)) => object
                .keys()
                .all(|key| fields.iter().any(|field| &field.name == key)),
            (Node::Logical(logical, _), _) => logical_fits(*logical, value),
            _ => false,
        }
    }
}

/// A float from a number or from `"NaN"`, `"Infinity"`, `"-Infinity"`: the 32-bit float
/// nearest the number's shortest text (not the double's rounding, which may differ).
fn float(value: &Value) -> Option<f32> {
    match value {
        Value::Number(number) => {
            let double = number.as_f64()?;
            ryu::Buffer::new().format_finite(double).parse().ok()
        }
        Value::String(text) => match text.as_str() {
            "NaN" => Some(f32::NAN),
            "Infinity" => Some(f32::INFINITY),
            "-Infinity" => Some(f32::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// Whether the number is a 32-bit float's shortest text (as the decoder writes floats).
fn is_shortest_f32(value: &Value) -> bool {
    let (Some(float), Some(double)) = (float(value), value.as_f64()) else {
        return false;
    };
    float.is_finite() && ryu::Buffer::new().format_finite(float).parse() == Ok(double)
}

/// The length of the bytes a standard padded base64 text holds; `None` when it is not one.
fn base64_len(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.len() % 4 != 0 {
        return None;
    }
    let padding = bytes.iter().rev().take_while(|&&b| b == b'=').count();
    let body = &bytes[..bytes.len() - padding];
    let alphabet = |b: &u8| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/';
    (padding <= 2 && body.iter().all(alphabet)).then(|| bytes.len() / 4 * 3 - padding)
}

/// Bytes (their length first) or a fixed of `size` from standard padded base64.
fn push_base64(out: &mut Vec<u8>, text: &str, size: Option<usize>) -> Result<(), Misfit> {
    use base64::Engine as _;
    let shown = || Value::String(text.to_owned());
    let len = base64_len(text).ok_or_else(|| Misfit::expected(BASE64, &shown()))?;
    match size {
        Some(size) if size != len => {
            let expected = format!("{size} bytes as a base64 string");
            return Err(Misfit::expected(&expected, &shown()));
        }
        Some(_) => {}
        None => push_long(out, len as i64),
    }
    let start = out.len();
    // Room for the decoder's estimate (a multiple of 3), cut to what it wrote.
    out.resize(start + text.len() / 4 * 3, 0);
    let written = base64::engine::general_purpose::STANDARD.decode_slice(text, &mut out[start..]);
    match written {
        Ok(written) if written == len => {
            out.truncate(start + written);
            Ok(())
        }
        _ => {
            out.truncate(start);
            Err(Misfit::expected(BASE64, &shown()))
        }
    }
}

/// A logical type in its decoded notation, as its underlying type's binary encoding.
fn write_logical(logical: Logical, value: &Value, out: &mut Vec<u8>) -> Result<(), Misfit> {
    if let Logical::Decimal { scale, size } = logical {
        let bytes = match value {
            Value::String(text) => unscaled_bytes(text, scale, size),
            _ => Err("expected a decimal string such as \"-12.30\"".to_owned()),
        };
        let bytes = bytes.map_err(|detail| Misfit::expected(&detail_text(&detail), value))?;
        if size.is_none() {
            push_long(out, bytes.len() as i64);
        }
        out.extend_from_slice(&bytes);
        return Ok(());
    }
    if let Logical::Duration = logical {
        let parts = duration(value).ok_or_else(|| Misfit::expected(DURATION, value))?;
        for part in parts {
            out.extend_from_slice(&part.to_le_bytes());
        }
        return Ok(());
    }
    let number = logical_number(logical, value).ok_or_else(|| {
        let expected = match logical {
            Logical::Date => "a date such as \"2024-02-29\"",
            Logical::TimeMillis => "a time such as \"13:45:10.250\"",
            Logical::TimeMicros => "a time such as \"13:45:10.250000\"",
            Logical::Timestamp { utc: true, .. } => "an RFC 3339 time in UTC (ending in Z)",
            _ => "a local date and time such as \"2024-02-29T13:45:10.250\"",
        };
        Misfit::expected(expected, value)
    })?;
    push_long(out, number);
    Ok(())
}

const DURATION: &str = "{\"months\": M, \"days\": D, \"millis\": N} (each 0 to 4294967295)";

/// `expected ...` for a message from [`unscaled_bytes`], which says what it expected.
fn detail_text(detail: &str) -> String {
    detail
        .strip_prefix("expected ")
        .unwrap_or(detail)
        .to_owned()
}

/// The int or long of a date, time or timestamp text.
fn logical_number(logical: Logical, value: &Value) -> Option<i64> {
    let text = value.as_str()?;
    match logical {
        Logical::Date => parse_date(text).filter(|days| i32::try_from(*days).is_ok()),
        Logical::TimeMillis => {
            let micros = parse_time_of_day(text, 3)?;
            Some(micros / 1000).filter(|millis| i32::try_from(*millis).is_ok())
        }
        Logical::TimeMicros => parse_time_of_day(text, 6),
        Logical::Timestamp { digits, utc } => parse_timestamp(text, digits, utc),
        Logical::Decimal { .. } | Logical::Duration => None,
    }
}

/// A duration's months, days and milliseconds.
fn duration(value: &Value) -> Option<[u32; 3]> {
    let object = value.as_object().filter(|object| object.len() == 3)?;
    let part = |name: &str| {
        object
            .get(name)?
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
    };
    Some([part("months")?, part("days")?, part("millis")?])
}

fn logical_fits(logical: Logical, value: &Value) -> bool {
    match (logical, value) {
        (Logical::Decimal { scale, size }, Value::String(text)) => {
            unscaled_bytes(text, scale, size).is_ok()
        }
        (Logical::Duration, _) => duration(value).is_some(),
        _ => logical_number(logical, value).is_some(),
    }
}
