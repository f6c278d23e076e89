//! Instants as users write them on the command line: milliseconds since the epoch, RFC 3339
//! (`2026-11-30T10:00:00Z`, `2026-11-30T12:00:00+02:00`), or a time before now (`-15m`,
//! `-2h`, `-1h30m`, `-90s`).

use std::time::{SystemTime, UNIX_EPOCH};

use crate::Error;

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis().min(i64::MAX as u128) as i64)
}

/// The instant `text` names, in milliseconds since the epoch; `now` anchors relative times.
pub fn parse_instant(what: &'static str, text: &str, now: i64) -> Result<i64, Error> {
    let invalid = |detail: String| Error::InvalidArgument {
        what,
        detail: format!("{text:?}: {detail}"),
    };
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse::<i64>()
            .map_err(|_| invalid("too many milliseconds".to_owned()));
    }
    if let Some(ago) = text.strip_prefix('-') {
        let duration = ago.parse::<jiff::SignedDuration>().map_err(|_| {
            invalid("expected a duration before now such as -15m, -2h, -1h30m or -90s".to_owned())
        })?;
        if duration.is_negative() {
            return Err(invalid("the duration cannot be negative".to_owned()));
        }
        let ms = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
        return Ok(now.saturating_sub(ms).max(0));
    }
    let instant = text.parse::<jiff::Timestamp>().map_err(|error| {
        invalid(format!(
            "expected milliseconds since the epoch, RFC 3339 (2026-11-30T10:00:00Z) or -DURATION ({error})"
        ))
    })?;
    let ms = instant.as_millisecond();
    if ms < 0 {
        return Err(invalid(
            "instants before 1970 have no Kafka timestamp".to_owned(),
        ));
    }
    Ok(ms)
}

/// A positive duration such as 30s, 5m, 1h30m or 500ms (`--idle-timeout`); `None` when not given.
pub fn parse_duration(
    what: &'static str,
    text: Option<&str>,
) -> Result<Option<std::time::Duration>, Error> {
    let Some(text) = text else { return Ok(None) };
    let invalid = |detail: &str| Error::InvalidArgument {
        what,
        detail: format!("{text:?}: {detail}"),
    };
    let duration = (text.parse::<jiff::SignedDuration>())
        .map_err(|_| invalid("expected a duration such as 30s, 5m, 1h30m or 500ms"))?;
    if duration.is_negative() || duration.is_zero() {
        return Err(invalid("the duration must be positive"));
    }
    Ok(Some(duration.unsigned_abs()))
}

#[cfg(test)]
mod tests {
    use super::parse_instant;

    const NOW: i64 = 1_764_496_800_000; // 2025-11-30T10:00:00Z

    #[test]
    fn reads_milliseconds_rfc3339_and_durations_before_now() {
        let cases = [
            ("1700000000000", 1_700_000_000_000),
            ("2025-11-30T10:00:00Z", NOW),
            ("2025-11-30T10:00:00.250Z", NOW + 250),
            ("2025-11-30T12:00:00+02:00", NOW),
            ("-15m", NOW - 15 * 60_000),
            ("-2h", NOW - 2 * 3_600_000),
            ("-1h30m", NOW - 90 * 60_000),
            ("-90s", NOW - 90_000),
        ];
        for (text, expected) in cases {
            assert_eq!(
                parse_instant("time", text, NOW).unwrap(),
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn refuses_what_names_no_instant() {
        for bad in [
            "",
            "soon",
            "-",
            "-15 parsecs",
            "2025-13-01T00:00:00Z",
            "1969-12-31T23:59:59Z",
            "99999999999999999999",
        ] {
            let error = parse_instant("time", bad, NOW).unwrap_err().to_string();
            assert!(error.starts_with("invalid time: "), "{bad}: {error}");
        }
    }
}
