//! `-J` bytes from their JSON text, into buffers kept from line to line: strings unescaped,
//! base64 decoded.

use std::fmt;

use base64::Engine as _;
use serde::de::{Deserializer as _, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::FieldName;

/// Why a part of a line is not bytes.
pub(super) enum Bad {
    /// The wrong shape, as said.
    Shape(&'static str),
    /// A string serde_json's check let through but a string cannot hold (a lone surrogate):
    /// the line is malformed JSON.
    Escape,
}

const BYTES_SHAPE: &str = "expected null, a string or {\"base64\": \"...\"}";

/// `key` or `value` into `out`: its JSON text when `document`, else its bytes; false for null.
pub(super) fn part_into(
    raw: Option<&RawValue>,
    document: bool,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<bool, Bad> {
    out.clear();
    match raw {
        None => Ok(false),
        Some(raw) if document => {
            out.extend_from_slice(raw.get().as_bytes());
            Ok(true)
        }
        Some(raw) => bytes_into(raw.get(), out, scratch),
    }
}

/// Bytes as `krec consume -J` writes them (`null`, a string, or `{"base64": "..."}`), from
/// their JSON text, appended to `out`; false for null. `scratch` holds an unescaped base64.
pub(super) fn bytes_into(
    text: &str,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<bool, Bad> {
    match text.as_bytes().first() {
        Some(b'n') => Ok(false),
        Some(b'"') => {
            unescape_into(string_content(text), out)?;
            Ok(true)
        }
        Some(b'{') => {
            let encoded = base64_string(text).ok_or(Bad::Shape(BYTES_SHAPE))?;
            let content = string_content(encoded);
            let encoded = if content.contains('\\') {
                scratch.clear();
                unescape_into(content, scratch)?;
                &scratch[..]
            } else {
                content.as_bytes()
            };
            (base64::engine::general_purpose::STANDARD.decode_vec(encoded, out)).map_err(|_| {
                Bad::Shape("invalid base64 (expected standard base64 with = padding)")
            })?;
            Ok(true)
        }
        _ => Err(Bad::Shape(BYTES_SHAPE)),
    }
}

/// The text between a JSON string's quotes.
fn string_content(text: &str) -> &str {
    text.get(1..text.len().saturating_sub(1))
        .unwrap_or_default()
}

/// The string of `{"base64": "..."}` (its JSON text), `None` for any other object.
fn base64_string(text: &str) -> Option<&str> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let encoded = (&mut deserializer).deserialize_map(Base64Visitor).ok()??;
    Some(encoded.get()).filter(|encoded| encoded.starts_with('"'))
}

/// Walks `{"base64": ...}`: the value when it is the one field.
struct Base64Visitor;

impl<'de> Visitor<'de> for Base64Visitor {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(BYTES_SHAPE)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut encoded, mut fields) = (None, 0);
        while let Some(name) = map.next_key::<FieldName>()? {
            let value = map.next_value::<&RawValue>()?;
            fields += 1;
            if let FieldName::Base64 = name {
                encoded = Some(value);
            }
        }
        Ok(encoded.filter(|_| fields == 1))
    }
}

/// Appends the string whose JSON text between quotes is `content` (checked by serde_json),
/// its escapes undone; a lone surrogate in a `\u` escape is refused, as serde_json does.
fn unescape_into(content: &str, out: &mut Vec<u8>) -> Result<(), Bad> {
    let mut rest = content.as_bytes();
    while let Some(at) = rest.iter().position(|&byte| byte == b'\\') {
        out.extend_from_slice(&rest[..at]);
        let escape = *rest.get(at + 1).ok_or(Bad::Escape)?;
        rest = &rest[at + 2..];
        let byte = match escape {
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let (ch, after) = code_point(rest).ok_or(Bad::Escape)?;
                rest = after;
                out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                continue;
            }
            other => other,
        };
        out.push(byte);
    }
    out.extend_from_slice(rest);
    Ok(())
}

/// The character of a `\u` escape whose four hex digits begin `rest` (two escapes for a
/// surrogate pair), and what follows it.
fn code_point(rest: &[u8]) -> Option<(char, &[u8])> {
    let hex = |digits: &[u8]| {
        let digits = std::str::from_utf8(digits.get(..4)?).ok()?;
        u32::from_str_radix(digits, 16).ok()
    };
    let first = hex(rest)?;
    if let Some(ch) = char::from_u32(first) {
        return Some((ch, &rest[4..]));
    }
    let second = rest
        .get(4..6)
        .filter(|escape| escape == b"\\u")
        .and(hex(rest.get(6..)?))?;
    let pair = (0xD800..0xDC00).contains(&first) && (0xDC00..0xE000).contains(&second);
    let ch =
        pair.then(|| char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)))??;
    Some((ch, &rest[10..]))
}
