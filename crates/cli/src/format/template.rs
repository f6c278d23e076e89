//! kcat-style format templates, e.g. `'%t [%p] at offset %o: key %k: %s\n'`.
//!
//! Tokens (the kcat ones keep kcat's meaning):
//!
//! | token      | prints                                                              |
//! |------------|---------------------------------------------------------------------|
//! | `%s`       | value bytes, unchanged (null: the null text)                        |
//! | `%S`       | value length in bytes, `-1` for null                                |
//! | `%R`       | value length as a 4-byte big-endian signed integer, `-1` for null   |
//! | `%k`       | key bytes, unchanged (null: the null text)                          |
//! | `%K`       | key length in bytes, `-1` for null                                  |
//! | `%t`       | topic (empty when unknown)                                          |
//! | `%p`       | partition (`-1` when unknown)                                       |
//! | `%o`       | offset                                                              |
//! | `%T`       | timestamp, ms since the epoch (`-1` when none)                      |
//! | `%I`       | timestamp as RFC 3339 in UTC with milliseconds, `2023-11-14T22:13:20.123Z` (none: the null text) |
//! | `%h`       | all headers as `k=v,k2=v2` in wire order (null value: the null text)|
//! | `%{h:KEY}` | value of the first header named `KEY` (absent or null: the null text) |
//! | `%c`       | control type of a control record (`commit`, `abort`, `unknown`); empty for data records |
//! | `%d`       | delivery count of a share group's record (`--share-group`); `-1` otherwise |
//! | `%%`       | a literal `%`                                                       |
//!
//! Escapes: `\n`, `\r`, `\t`, `\\`, and `\xHH` (one byte, two hex digits). They
//! also work inside `%{h:KEY}`, so `\x7d` puts a `}` in a header name.
//! The null text is empty by default and `NULL` with `-Z`, as in kcat.
//! Anything else after `%` or `\` is an error, so typos do not print silently.

use super::record::{ControlAsRecord, ControlMarker, RecordContext, RecordFields};
use crate::Error;

/// A parsed template: literal bytes and tokens, rendered per record without allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(Box<[u8]>),
    Value,
    ValueLength,
    ValueLengthBinary,
    Key,
    KeyLength,
    Topic,
    Partition,
    Offset,
    Timestamp,
    TimestampRfc3339,
    Headers,
    Header(Box<[u8]>),
    ControlKind,
    DeliveryCount,
}

impl Template {
    /// Parses a template. Errors name the byte position of the bad token or escape.
    pub fn parse(text: &str) -> Result<Template, Error> {
        let bytes = text.as_bytes();
        let error = |position: usize, reason: String| Error::InvalidFormat {
            option: "--format",
            text: text.to_owned(),
            position,
            reason,
        };
        let mut parts = Vec::new();
        let mut literal = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => {
                    let (byte, next) = unescape_at(bytes, i).map_err(|reason| error(i, reason))?;
                    literal.push(byte);
                    i = next;
                }
                b'%' => {
                    let Some(&token) = bytes.get(i + 1) else {
                        return Err(error(i, "`%` at the end of the template".into()));
                    };
                    let part = match token {
                        b'%' => {
                            literal.push(b'%');
                            i += 2;
                            continue;
                        }
                        b's' => Part::Value,
                        b'S' => Part::ValueLength,
                        b'R' => Part::ValueLengthBinary,
                        b'k' => Part::Key,
                        b'K' => Part::KeyLength,
                        b't' => Part::Topic,
                        b'p' => Part::Partition,
                        b'o' => Part::Offset,
                        b'T' => Part::Timestamp,
                        b'I' => Part::TimestampRfc3339,
                        b'h' => Part::Headers,
                        b'c' => Part::ControlKind,
                        b'd' => Part::DeliveryCount,
                        b'{' => {
                            let (key, next) =
                                parse_braced(bytes, i).map_err(|reason| error(i, reason))?;
                            if !literal.is_empty() {
                                parts.push(Part::Literal(std::mem::take(&mut literal).into()));
                            }
                            parts.push(Part::Header(key.into()));
                            i = next;
                            continue;
                        }
                        _ => {
                            let shown = text[i + 1..].chars().next().unwrap_or('?');
                            return Err(error(i, format!("unknown token `%{shown}`")));
                        }
                    };
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal).into()));
                    }
                    parts.push(part);
                    i += 2;
                }
                byte => {
                    literal.push(byte);
                    i += 1;
                }
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal.into()));
        }
        Ok(Template { parts })
    }

    /// Appends one data record rendered through this template.
    pub(crate) fn render_record<R: RecordFields + ?Sized>(
        &self,
        out: &mut Vec<u8>,
        ctx: &RecordContext<'_>,
        record: &R,
        null_text: &[u8],
    ) {
        self.render(out, ctx, record, None, null_text);
    }

    /// Appends one control record rendered through this template: no key, value
    /// or headers, and `%c` names the control type.
    pub(crate) fn render_control(
        &self,
        out: &mut Vec<u8>,
        ctx: &RecordContext<'_>,
        control: &ControlMarker,
        null_text: &[u8],
    ) {
        self.render(
            out,
            ctx,
            &ControlAsRecord(control),
            Some(control.kind),
            null_text,
        );
    }

    fn render<R: RecordFields + ?Sized>(
        &self,
        out: &mut Vec<u8>,
        ctx: &RecordContext<'_>,
        record: &R,
        control_kind: Option<&str>,
        null_text: &[u8],
    ) {
        let mut numbers = itoa::Buffer::new();
        for part in &self.parts {
            match part {
                Part::Literal(bytes) => out.extend_from_slice(bytes),
                Part::Value => out.extend_from_slice(record.value().unwrap_or(null_text)),
                Part::ValueLength => push_length(out, &mut numbers, record.value()),
                Part::ValueLengthBinary => {
                    // Lengths above i32::MAX cannot occur: Kafka sizes are int32 on the wire.
                    let length = record
                        .value()
                        .map_or(-1, |v| i32::try_from(v.len()).unwrap_or(i32::MAX));
                    out.extend_from_slice(&length.to_be_bytes());
                }
                Part::Key => out.extend_from_slice(record.key().unwrap_or(null_text)),
                Part::KeyLength => push_length(out, &mut numbers, record.key()),
                Part::Topic => out.extend_from_slice(ctx.topic.unwrap_or("").as_bytes()),
                Part::Partition => {
                    out.extend_from_slice(numbers.format(ctx.partition.unwrap_or(-1)).as_bytes())
                }
                Part::DeliveryCount => {
                    let count = ctx.delivery_count.unwrap_or(-1);
                    out.extend_from_slice(numbers.format(count).as_bytes())
                }
                Part::Offset => out.extend_from_slice(numbers.format(record.offset()).as_bytes()),
                Part::Timestamp => {
                    out.extend_from_slice(numbers.format(record.timestamp()).as_bytes())
                }
                Part::TimestampRfc3339 => push_rfc3339(out, record.timestamp(), null_text),
                Part::Headers => {
                    for (index, (key, value)) in record.header_pairs().enumerate() {
                        if index > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(key);
                        out.push(b'=');
                        out.extend_from_slice(value.unwrap_or(null_text));
                    }
                }
                Part::Header(key) => {
                    let value = record.header_value(key).flatten();
                    out.extend_from_slice(value.unwrap_or(null_text));
                }
                Part::ControlKind => out.extend_from_slice(control_kind.unwrap_or("").as_bytes()),
            }
        }
    }
}

/// A timestamp in ms as RFC 3339 in UTC, always with milliseconds; Kafka's -1 (none), or one
/// outside what RFC 3339 can write, as the null text.
fn push_rfc3339(out: &mut Vec<u8>, ms: i64, null_text: &[u8]) {
    use std::io::Write;
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(instant) if ms != -1 => {
            // Writing into a Vec cannot fail.
            let _ = write!(out, "{instant:.3}");
        }
        _ => out.extend_from_slice(null_text),
    }
}

fn push_length(out: &mut Vec<u8>, numbers: &mut itoa::Buffer, field: Option<&[u8]>) {
    match field {
        Some(bytes) => out.extend_from_slice(numbers.format(bytes.len()).as_bytes()),
        None => out.extend_from_slice(b"-1"),
    }
}

/// Parses `%{h:KEY}` starting at the `%` at `start`; returns the key bytes and
/// the position after the `}`.
fn parse_braced(bytes: &[u8], start: usize) -> Result<(Vec<u8>, usize), String> {
    let body = start + 2;
    if bytes.get(body..body + 2) != Some(b"h:") {
        return Err("expected `%{h:KEY}` (a header value by key)".into());
    }
    let mut key = Vec::new();
    let mut i = body + 2;
    loop {
        match bytes.get(i) {
            None => return Err("`%{h:` without a closing `}`".into()),
            Some(b'}') => return Ok((key, i + 1)),
            Some(b'\\') => {
                let (byte, next) = unescape_at(bytes, i)?;
                key.push(byte);
                i = next;
            }
            Some(&byte) => {
                key.push(byte);
                i += 1;
            }
        }
    }
}

/// Decodes the escape sequence whose backslash is at `start`; returns the byte
/// and the position after the sequence.
pub(crate) fn unescape_at(bytes: &[u8], start: usize) -> Result<(u8, usize), String> {
    match bytes.get(start + 1) {
        Some(b'n') => Ok((b'\n', start + 2)),
        Some(b'r') => Ok((b'\r', start + 2)),
        Some(b't') => Ok((b'\t', start + 2)),
        Some(b'\\') => Ok((b'\\', start + 2)),
        Some(b'x') => {
            let digits = bytes
                .get(start + 2..start + 4)
                .and_then(|d| std::str::from_utf8(d).ok())
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| "`\\x` needs two hex digits".to_string())?;
            Ok((digits, start + 4))
        }
        Some(_) => Err("unknown escape (use \\n, \\r, \\t, \\\\ or \\xHH)".into()),
        None => Err("`\\` at the end".into()),
    }
}

/// Decodes the escapes of a delimiter option (`\n`, `\t`, `\xHH`...) into bytes.
pub(crate) fn unescape(option: &'static str, text: &str) -> Result<Vec<u8>, Error> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            let (byte, next) = unescape_at(bytes, i).map_err(|reason| Error::InvalidFormat {
                option,
                text: text.to_owned(),
                position: i,
                reason,
            })?;
            out.push(byte);
            i = next;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{unescape, Template};
    use crate::format::record::tests::TestRecord;
    use crate::format::{ControlMarker, RecordContext};
    use crate::Error;

    fn sample() -> TestRecord {
        TestRecord {
            offset: 42,
            timestamp: 1_700_000_000_123,
            timestamp_type: "create_time",
            key: Some(b"user-7".to_vec()),
            value: Some(b"{\"n\":1}".to_vec()),
            headers: vec![
                (b"trace".to_vec(), Some(b"t-1".to_vec())),
                (b"nil".to_vec(), None),
                (b"trace".to_vec(), Some(b"t-2".to_vec())),
                (b"a}b".to_vec(), Some(b"braced".to_vec())),
            ],
        }
    }

    fn render(template: &str, record: &TestRecord, ctx: RecordContext<'_>, null: &[u8]) -> Vec<u8> {
        let template = Template::parse(template).expect("valid template");
        let mut out = Vec::new();
        template.render_record(&mut out, &ctx, record, null);
        out
    }

    #[test]
    fn each_token_on_a_full_record() {
        let ctx = RecordContext::new("orders", 3);
        let cases: [(&str, &[u8]); 20] = [
            ("%s", b"{\"n\":1}"),
            ("%S", b"7"),
            ("%R", &[0, 0, 0, 7]),
            ("%k", b"user-7"),
            ("%K", b"6"),
            ("%t", b"orders"),
            ("%p", b"3"),
            ("%o", b"42"),
            ("%T", b"1700000000123"),
            ("%I", b"2023-11-14T22:13:20.123Z"),
            ("%h", b"trace=t-1,nil=,trace=t-2,a}b=braced"),
            ("%{h:trace}", b"t-1"),
            ("%{h:nil}", b""),
            ("%{h:missing}", b""),
            ("%{h:a\\x7db}", b"braced"),
            ("%c", b""),
            ("%%", b"%"),
            ("100%% %o\\n", b"100% 42\n"),
            ("\\t\\r\\\\\\x41", b"\t\r\\A"),
            (
                "Topic %t [%p] at offset %o: key %k: %s\\n",
                b"Topic orders [3] at offset 42: key user-7: {\"n\":1}\n",
            ),
        ];
        for (template, expected) in cases {
            assert_eq!(
                render(template, &sample(), ctx, b""),
                expected,
                "template {template:?}"
            );
        }
    }

    #[test]
    fn the_delivery_count_of_a_share_group_record() {
        let shared = RecordContext::new("orders", 3).with_delivery_count(2);
        assert_eq!(render("%o:%d", &sample(), shared, b""), b"42:2");
        let plain = RecordContext::new("orders", 3);
        assert_eq!(render("%d", &sample(), plain, b""), b"-1");
    }

    #[test]
    fn null_and_empty_fields_and_unknown_context() {
        let record = TestRecord {
            offset: 0,
            timestamp: -1,
            timestamp_type: "none",
            key: None,
            value: None,
            headers: vec![(b"h".to_vec(), None)],
        };
        let ctx = RecordContext::unknown();
        let cases: [(&str, &[u8], &[u8]); 11] = [
            ("[%k|%s]", b"", b"[|]"),
            ("[%k|%s]", b"NULL", b"[NULL|NULL]"),
            ("%K %S", b"NULL", b"-1 -1"),
            ("%R", b"", &[0xff, 0xff, 0xff, 0xff]),
            ("%h", b"NULL", b"h=NULL"),
            ("%{h:h}%{h:x}", b"NULL", b"NULLNULL"),
            ("%t|%p", b"", b"|-1"),
            ("%T", b"", b"-1"),
            ("[%I]", b"", b"[]"),
            ("[%I]", b"NULL", b"[NULL]"),
            ("%o", b"", b"0"),
        ];
        for (template, null, expected) in cases {
            assert_eq!(
                render(template, &record, ctx, null),
                expected,
                "template {template:?} null {null:?}"
            );
        }
        let empty = TestRecord {
            key: Some(Vec::new()),
            value: Some(Vec::new()),
            ..record
        };
        assert_eq!(render("[%k|%s] %K %S", &empty, ctx, b"NULL"), b"[|] 0 0");
    }

    #[test]
    fn binary_bytes_pass_through_unchanged() {
        let record = TestRecord {
            key: Some(vec![0xff, 0x00]),
            value: Some(vec![0x80, b'\n', 0xfe]),
            ..TestRecord::default()
        };
        assert_eq!(
            render("%k:%s", &record, RecordContext::unknown(), b""),
            [0xff, 0x00, b':', 0x80, b'\n', 0xfe]
        );
    }

    #[test]
    fn control_records_have_no_key_value_or_headers() {
        let marker = ControlMarker {
            offset: 9,
            timestamp: 5,
            kind: "commit",
            control_type: 1,
            version: 0,
            coordinator_epoch: Some(2),
        };
        let template = Template::parse("%o %c [%k] [%s] %S [%h] %T\\n").expect("valid");
        let mut out = Vec::new();
        template.render_control(&mut out, &RecordContext::new("t", 0), &marker, b"NULL");
        assert_eq!(out, b"9 commit [NULL] [NULL] -1 [] 5\n");
    }

    #[test]
    fn bad_templates_name_the_position() {
        let cases = [
            ("%x", 0, "unknown token `%x`"),
            ("ab%", 2, "`%` at the end"),
            ("%o %é", 3, "unknown token `%é`"),
            ("x\\q", 1, "unknown escape"),
            ("x\\", 1, "`\\` at the end"),
            ("\\x4", 0, "two hex digits"),
            ("\\xzz", 0, "two hex digits"),
            ("%{k:a}", 0, "expected `%{h:KEY}`"),
            ("%o %{h:abc", 3, "without a closing"),
            ("%{h:a\\q}", 0, "unknown escape"),
        ];
        for (template, position, reason_part) in cases {
            match Template::parse(template) {
                Err(Error::InvalidFormat {
                    position: got,
                    reason,
                    text,
                    ..
                }) => {
                    assert_eq!(got, position, "template {template:?}");
                    assert!(reason.contains(reason_part), "{template:?}: {reason}");
                    assert_eq!(text, template);
                }
                other => panic!("{template:?}: expected InvalidFormat, got {other:?}"),
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_is_refused_without_panicking(text in "[%\\\\{}hnrtxksSRKpoTc:0-9a-fé ]{0,24}") {
            if let Ok(template) = Template::parse(&text) {
                let mut out = Vec::new();
                template.render_record(&mut out, &RecordContext::new("t", 1), &sample(), b"");
                // Literal text without `%` or `\\` comes out as given.
                if !text.contains(['%', '\\']) {
                    proptest::prop_assert_eq!(out, text.as_bytes());
                }
            }
        }
    }

    #[test]
    fn delimiter_unescape() {
        assert_eq!(unescape("-D", "\\n").expect("valid"), b"\n");
        assert_eq!(unescape("-D", "--\\x00--").expect("valid"), b"--\0--");
        assert_eq!(unescape("-D", "").expect("valid"), b"");
        assert!(matches!(
            unescape("-D", "a\\z"),
            Err(Error::InvalidFormat {
                option: "-D",
                position: 1,
                ..
            })
        ));
    }
}
