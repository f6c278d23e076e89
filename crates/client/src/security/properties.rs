//! Client properties files (`kcat -F`, Java `client.properties`), read the way
//! `java.util.Properties#load` reads them.
//!
//! - A logical line is one or more natural lines (ended by `\n`, `\r` or `\r\n`): an odd run
//!   of backslashes at the end joins the next line, whose leading whitespace is dropped.
//! - Blank lines and lines whose first non-blank character is `#` or `!` are skipped; a
//!   comment line never continues.
//! - The key runs to the first unescaped `=`, `:` or whitespace (space, tab, form feed); then
//!   whitespace, at most one `=` or `:`, and whitespace again are skipped. The rest is the
//!   value, trailing whitespace included, as Java keeps it.
//! - Escapes: `\t`, `\n`, `\r`, `\f`, `\uXXXX` (surrogate pairs joined), and `\` before any
//!   other character for that character (`\\`, `\=`, `\:`, `\#`, `\ `).
//!
//! Where this differs from Java: the file is UTF-8 (Java's `load(InputStream)` reads
//! ISO-8859-1), a leading byte-order mark is dropped, and a line with an empty key is an
//! error rather than the key `""`.

use std::fmt;

/// Largest file accepted.
pub const MAX_PROPERTIES_FILE: usize = 1024 * 1024;

/// One `key=value` from the file.
#[derive(Clone, PartialEq, Eq)]
pub struct Property {
    /// The key, escapes applied; never empty.
    pub key: String,
    /// The value, escapes applied.
    pub value: String,
    /// The natural line (1-based) where the entry starts.
    pub line: usize,
}

/// Shows key and line; values are passwords as often as not.
impl fmt::Debug for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Property")
            .field("key", &self.key)
            .field("value", &format_args!("[redacted]"))
            .field("line", &self.line)
            .finish()
    }
}

/// What is wrong with a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineProblem {
    /// Bytes that are not UTF-8.
    NotUtf8,
    /// A separator or value with nothing before it.
    NoKey,
    /// `\u` not followed by four hexadecimal digits.
    UnicodeEscape,
    /// A `\uD800`..`\uDFFF` escape that is not half of a pair.
    LoneSurrogate,
}

impl fmt::Display for LineProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LineProblem::NotUtf8 => "not UTF-8",
            LineProblem::NoKey => "no key before the value",
            LineProblem::UnicodeEscape => "`\\u` needs four hexadecimal digits",
            LineProblem::LoneSurrogate => "`\\u` escape of half a surrogate pair",
        })
    }
}

/// Why a properties file was refused. Names the line, never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PropertiesFault {
    /// The file is larger than [`MAX_PROPERTIES_FILE`].
    #[error("properties file of {len} bytes is larger than the {max} accepted")]
    TooLarge {
        /// The file's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A line that cannot be read.
    #[error("properties file line {line}: {what}")]
    Line {
        /// The natural line (1-based).
        line: usize,
        /// What is wrong with it.
        what: LineProblem,
    },
}

/// The entries of a properties file in file order; repeats are kept (the caller applies the
/// last one, as `Properties` does).
pub fn parse(input: &[u8]) -> Result<Vec<Property>, PropertiesFault> {
    if input.len() > MAX_PROPERTIES_FILE {
        return Err(PropertiesFault::TooLarge {
            len: input.len(),
            max: MAX_PROPERTIES_FILE,
        });
    }
    let text = std::str::from_utf8(input).map_err(|e| PropertiesFault::Line {
        line: line_breaks(&input[..e.valid_up_to()]) + 1,
        what: LineProblem::NotUtf8,
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    logical_lines(text)
        .into_iter()
        .map(|(line, raw)| {
            entry(&raw)
                .map(|(key, value)| Property { key, value, line })
                .map_err(|what| PropertiesFault::Line { line, what })
        })
        .collect()
}

/// Line breaks in `bytes`, `\r\n` counted once.
fn line_breaks(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b == b'\n' && (i == 0 || bytes[i - 1] != b'\r') || b == b'\r')
        .count()
}

/// Java's `Properties` whitespace.
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{c}')
}

/// The logical lines of `text`, each with the natural line it starts on; comments and blank
/// lines dropped, continuations joined, escapes still in place.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    let mut buf = String::new();
    let mut start = 1;
    // At the start of a natural line, skipping its leading whitespace.
    let mut skip_blank = true;
    // The natural line continues a logical one: a line break now ends it.
    let mut continued = false;
    // The first character of the logical line is still to come.
    let mut first = true;
    let mut comment = false;
    // An odd run of backslashes ends `buf`.
    let mut odd_backslashes = false;
    while let Some(c) = chars.next() {
        let is_break = c == '\n' || c == '\r';
        if is_break {
            line += 1;
            if c == '\r' && chars.peek() == Some(&'\n') {
                chars.next();
            }
        }
        if skip_blank {
            if is_blank(c) || (is_break && !continued) {
                continue;
            }
            skip_blank = false;
            continued = false;
        }
        if first {
            first = false;
            start = line;
            if c == '#' || c == '!' {
                comment = true;
            }
        }
        if !is_break {
            if !comment {
                buf.push(c);
                odd_backslashes = c == '\\' && !odd_backslashes;
            }
            continue;
        }
        if !comment && !buf.is_empty() && odd_backslashes {
            buf.pop();
            odd_backslashes = false;
            skip_blank = true;
            continued = true;
            continue;
        }
        if !comment && !buf.is_empty() {
            lines.push((start, std::mem::take(&mut buf)));
        }
        buf.clear();
        comment = false;
        first = true;
        skip_blank = true;
        odd_backslashes = false;
    }
    if !comment && !buf.is_empty() {
        if odd_backslashes {
            buf.pop();
        }
        lines.push((start, buf));
    }
    lines
}

/// Splits a logical line into its key and value and applies the escapes.
fn entry(raw: &str) -> Result<(String, String), LineProblem> {
    let mut key_end = raw.len();
    let mut value_start = raw.len();
    let mut separator = false;
    let mut escaped = false;
    for (i, c) in raw.char_indices() {
        if !escaped && (c == '=' || c == ':') {
            key_end = i;
            value_start = i + 1;
            separator = true;
            break;
        }
        if !escaped && is_blank(c) {
            key_end = i;
            value_start = i + 1;
            break;
        }
        escaped = c == '\\' && !escaped;
    }
    let rest = &raw[value_start..];
    let mut skipped = 0;
    for c in rest.chars() {
        if is_blank(c) || (!separator && (c == '=' || c == ':')) {
            separator |= !is_blank(c);
            skipped += c.len_utf8();
        } else {
            break;
        }
    }
    let key = unescape(&raw[..key_end])?;
    if key.is_empty() {
        return Err(LineProblem::NoKey);
    }
    Ok((key, unescape(&rest[skipped..])?))
}

/// Applies Java's escapes to one key or value.
fn unescape(text: &str) -> Result<String, LineProblem> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(escaped) = chars.next() else {
            // Unreachable from `parse`: a final odd backslash was taken as a continuation.
            break;
        };
        match escaped {
            't' => out.push('\t'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            'f' => out.push('\u{c}'),
            'u' => {
                let unit = utf16_unit(&mut chars)?;
                let c = match unit {
                    0xd800..=0xdbff => {
                        let rest = chars.as_str();
                        let low = rest
                            .strip_prefix("\\u")
                            .map(|r| utf16_unit(&mut r.chars()))
                            .transpose()?
                            .filter(|low| (0xdc00..=0xdfff).contains(low))
                            .ok_or(LineProblem::LoneSurrogate)?;
                        chars = rest[6..].chars();
                        let code = 0x10000
                            + ((u32::from(unit) - 0xd800) << 10)
                            + (u32::from(low) - 0xdc00);
                        char::from_u32(code).ok_or(LineProblem::LoneSurrogate)?
                    }
                    0xdc00..=0xdfff => return Err(LineProblem::LoneSurrogate),
                    unit => char::from_u32(u32::from(unit)).ok_or(LineProblem::LoneSurrogate)?,
                };
                out.push(c);
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// Four hexadecimal digits after `\u`.
fn utf16_unit(chars: &mut std::str::Chars<'_>) -> Result<u16, LineProblem> {
    let mut unit = 0u16;
    for _ in 0..4 {
        let digit = chars
            .next()
            .and_then(|c| c.to_digit(16))
            .ok_or(LineProblem::UnicodeEscape)?;
        unit = unit << 4 | digit as u16;
    }
    Ok(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(input: &str) -> Vec<(String, String, usize)> {
        parse(input.as_bytes())
            .unwrap()
            .into_iter()
            .map(|p| (p.key, p.value, p.line))
            .collect()
    }

    fn p(key: &str, value: &str, line: usize) -> (String, String, usize) {
        (key.to_owned(), value.to_owned(), line)
    }

    #[test]
    fn confluent_cloud_java_client_properties() {
        let file = "\
# Required connection configs for Kafka producer, consumer, and admin
bootstrap.servers=pkc-abc12.us-east-1.aws.confluent.cloud:9092
security.protocol=SASL_SSL
sasl.mechanisms=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username='KEY123' password='se/cr+et=';
sasl.mechanism=PLAIN
# Required for correctness in Apache Kafka clients prior to 2.6
client.dns.lookup=use_all_dns_ips

# Best practice for higher availability in Apache Kafka clients prior to 3.0
session.timeout.ms=45000

# Required connection configs for Confluent Cloud Schema Registry
schema.registry.url=https\\://psrc-xyz.us-east-2.aws.confluent.cloud
basic.auth.credentials.source=USER_INFO
basic.auth.user.info={{ SR_API_KEY }}:{{ SR_API_SECRET }}
";
        assert_eq!(
            pairs(file),
            [
                p(
                    "bootstrap.servers",
                    "pkc-abc12.us-east-1.aws.confluent.cloud:9092",
                    2
                ),
                p("security.protocol", "SASL_SSL", 3),
                p("sasl.mechanisms", "PLAIN", 4),
                p(
                    "sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required \
                     username='KEY123' password='se/cr+et=';",
                    5
                ),
                p("sasl.mechanism", "PLAIN", 6),
                p("client.dns.lookup", "use_all_dns_ips", 8),
                p("session.timeout.ms", "45000", 11),
                p(
                    "schema.registry.url",
                    "https://psrc-xyz.us-east-2.aws.confluent.cloud",
                    14
                ),
                p("basic.auth.credentials.source", "USER_INFO", 15),
                p(
                    "basic.auth.user.info",
                    "{{ SR_API_KEY }}:{{ SR_API_SECRET }}",
                    16
                ),
            ]
        );
    }

    #[test]
    fn librdkafka_style_file() {
        let file = "\
# kcat -F file
metadata.broker.list=broker1:9093,broker2:9093
security.protocol=sasl_ssl
sasl.mechanisms=SCRAM-SHA-512
sasl.username=alice
sasl.password=p@ss=word:with#signs
ssl.ca.location=/etc/ssl/certs/ca.pem
";
        assert_eq!(
            pairs(file),
            [
                p("metadata.broker.list", "broker1:9093,broker2:9093", 2),
                p("security.protocol", "sasl_ssl", 3),
                p("sasl.mechanisms", "SCRAM-SHA-512", 4),
                p("sasl.username", "alice", 5),
                p("sasl.password", "p@ss=word:with#signs", 6),
                p("ssl.ca.location", "/etc/ssl/certs/ca.pem", 7),
            ]
        );
    }

    #[test]
    fn separators_and_whitespace() {
        assert_eq!(
            pairs("a=1\nb: 2\nc 3\n  d = 4\ne\t:\t5\nf\ng=\nh==x\ni = = y\nj:=z\n"),
            [
                p("a", "1", 1),
                p("b", "2", 2),
                p("c", "3", 3),
                p("d", "4", 4),
                p("e", "5", 5),
                p("f", "", 6),
                p("g", "", 7),
                p("h", "=x", 8),
                p("i", "= y", 9),
                p("j", "=z", 10),
            ]
        );
    }

    #[test]
    fn value_keeps_trailing_whitespace_as_java_does() {
        assert_eq!(pairs("k=v  \t\n"), [p("k", "v  \t", 1)]);
    }

    #[test]
    fn continuation_lines() {
        let file = "list=a,\\\n     b,\\\n\t c\nnext=1\r\nwin=x\\\r\n  y\rmac=z\n";
        assert_eq!(
            pairs(file),
            [
                p("list", "a,b,c", 1),
                p("next", "1", 4),
                p("win", "xy", 5),
                p("mac", "z", 7),
            ]
        );
        // An even run of backslashes is escaped backslashes, not a continuation.
        assert_eq!(pairs("k=a\\\\\nn=1"), [p("k", "a\\", 1), p("n", "1", 2)]);
        // A continuation into a blank line ends there; one at the end of the file is dropped.
        assert_eq!(pairs("k=a\\\n\nn=1\\"), [p("k", "a", 1), p("n", "1", 3)]);
        // The key can be continued too.
        assert_eq!(pairs("ke\\\n  y=v"), [p("key", "v", 1)]);
    }

    #[test]
    fn escapes() {
        assert_eq!(
            pairs(
                "tab=a\\tb\nnl=a\\nb\ncr=\\r\nff=\\f\nslash=a\\\\b\neq\\=key=v\\=1\n\
                 colon\\:key=v\\:1\nsp\\ ace=\\ lead\nuni=\\u00e9\\u0041\npair=\\uD83D\\uDE00\n\
                 other=\\q\\#\\!\n"
            ),
            [
                p("tab", "a\tb", 1),
                p("nl", "a\nb", 2),
                p("cr", "\r", 3),
                p("ff", "\u{c}", 4),
                p("slash", "a\\b", 5),
                p("eq=key", "v=1", 6),
                p("colon:key", "v:1", 7),
                p("sp ace", " lead", 8),
                p("uni", "\u{e9}A", 9),
                p("pair", "\u{1f600}", 10),
                p("other", "q#!", 11),
            ]
        );
    }

    #[test]
    fn comments_and_blank_lines() {
        let file =
            "# hash\n! bang\n   # indented\n\n   \n\t\nk=v # not a comment\n# ends in \\\nn=1\n";
        assert_eq!(
            pairs(file),
            [p("k", "v # not a comment", 7), p("n", "1", 9)]
        );
    }

    #[test]
    fn later_duplicates_are_kept_in_order() {
        assert_eq!(pairs("k=1\nk=2\n"), [p("k", "1", 1), p("k", "2", 2)]);
    }

    #[test]
    fn byte_order_mark_and_no_final_newline() {
        assert_eq!(pairs("\u{feff}k=v"), [p("k", "v", 1)]);
        assert_eq!(pairs(""), []);
        assert_eq!(pairs("\n\n"), []);
    }

    /// Found by the properties fuzz target (`\r` then U+FEFF): only the file's first
    /// character can be a byte-order mark; elsewhere U+FEFF is an ordinary key character.
    #[test]
    fn bug_fuzz_1_byte_order_mark_only_at_the_start() {
        assert_eq!(pairs("\r\u{feff}"), [p("\u{feff}", "", 2)]);
        assert_eq!(pairs("\u{feff}\u{feff}k=v"), [p("\u{feff}k", "v", 1)]);
        assert_eq!(pairs("\\uFEFF=v"), [p("\u{feff}", "v", 1)]);
    }

    #[test]
    fn a_line_with_no_key_is_refused() {
        for (file, line) in [("=value", 1), ("a=1\n  : value", 2), ("a=1\n\n = x", 3)] {
            assert_eq!(
                parse(file.as_bytes()).unwrap_err(),
                PropertiesFault::Line {
                    line,
                    what: LineProblem::NoKey,
                },
                "{file:?}"
            );
        }
    }

    #[test]
    fn bad_unicode_escapes_are_refused() {
        for (file, what) in [
            ("k=\\u12", LineProblem::UnicodeEscape),
            ("k=\\u12zz", LineProblem::UnicodeEscape),
            ("k=\\uD83D", LineProblem::LoneSurrogate),
            ("k=\\uD83Dx", LineProblem::LoneSurrogate),
            ("k=\\uD83D\\u0041", LineProblem::LoneSurrogate),
            ("k=\\uDE00", LineProblem::LoneSurrogate),
            ("k=\\uD83D\\u12", LineProblem::UnicodeEscape),
        ] {
            assert_eq!(
                parse(file.as_bytes()).unwrap_err(),
                PropertiesFault::Line { line: 1, what },
                "{file:?}"
            );
        }
    }

    #[test]
    fn hostile_bytes() {
        assert_eq!(
            parse(b"a=1\r\nb=2\n\xff\xfe=3\n").unwrap_err(),
            PropertiesFault::Line {
                line: 3,
                what: LineProblem::NotUtf8,
            }
        );
        assert_eq!(
            parse(b"a=1\rb=\xc3").unwrap_err(),
            PropertiesFault::Line {
                line: 2,
                what: LineProblem::NotUtf8,
            }
        );
        let nul = pairs("k\0=v\0\n");
        assert_eq!(nul, [p("k\0", "v\0", 1)]);
        let big = vec![b'#'; MAX_PROPERTIES_FILE + 1];
        assert_eq!(
            parse(&big).unwrap_err(),
            PropertiesFault::TooLarge {
                len: MAX_PROPERTIES_FILE + 1,
                max: MAX_PROPERTIES_FILE,
            }
        );
        let mut many = "k=v\n".repeat(MAX_PROPERTIES_FILE / 4).into_bytes();
        many.truncate(MAX_PROPERTIES_FILE);
        assert_eq!(parse(&many).unwrap().len(), MAX_PROPERTIES_FILE / 4);
    }

    #[test]
    fn faults_and_debug_never_show_values() {
        let fault = parse(b"sasl.password=hunter2\\u12").unwrap_err();
        assert!(!fault.to_string().contains("hunter2"), "{fault}");
        let entries = parse(b"sasl.password=hunter2").unwrap();
        let text = format!("{entries:?}");
        assert!(
            text.contains("sasl.password") && !text.contains("hunter2"),
            "{text}"
        );
    }
}
