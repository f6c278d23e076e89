//! Dates and times as text, written and read back: proleptic Gregorian calendar, UTC, no
//! time-zone database.

/// Appends `YYYY-MM-DD` for a count of days since 1970-01-01.
pub(crate) fn push_date(out: &mut Vec<u8>, days: i64) {
    let (year, month, day) = civil_from_days(days);
    if (0..=9999).contains(&year) {
        push_padded(out, year as u64, 4);
    } else {
        out.extend_from_slice(year.to_string().as_bytes());
    }
    out.push(b'-');
    push_padded(out, u64::from(month), 2);
    out.push(b'-');
    push_padded(out, u64::from(day), 2);
}

/// Appends a quoted RFC 3339 instant for `count` units of 10^-`digits` seconds since the
/// epoch, with exactly `digits` fraction digits, ending in `Z` when `utc`.
pub(crate) fn push_timestamp(out: &mut Vec<u8>, count: i64, digits: u32, utc: bool) {
    let per_second = 10i64.pow(digits);
    let seconds = count.div_euclid(per_second);
    let fraction = count.rem_euclid(per_second) as u64;
    out.push(b'"');
    push_date(out, seconds.div_euclid(86_400));
    out.push(b'T');
    push_clock(out, seconds.rem_euclid(86_400) as u64, fraction, digits);
    if utc {
        out.push(b'Z');
    }
    out.push(b'"');
}

/// Appends a quoted time of day `HH:MM:SS.fff` (or `.ffffff` for 6 digits) for microseconds
/// since midnight.
pub(crate) fn push_time_of_day(out: &mut Vec<u8>, micros: i64, digits: u32) {
    let seconds = micros.div_euclid(1_000_000) as u64;
    let fraction = micros.rem_euclid(1_000_000) as u64 / 10u64.pow(6 - digits);
    out.push(b'"');
    push_clock(out, seconds, fraction, digits);
    out.push(b'"');
}

fn push_clock(out: &mut Vec<u8>, seconds: u64, fraction: u64, digits: u32) {
    push_padded(out, seconds / 3600, 2);
    out.push(b':');
    push_padded(out, seconds / 60 % 60, 2);
    out.push(b':');
    push_padded(out, seconds % 60, 2);
    out.push(b'.');
    push_padded(out, fraction, digits as usize);
}

/// Appends `value` in at least `width` digits, zero-padded.
fn push_padded(out: &mut Vec<u8>, value: u64, width: usize) {
    // Dates and clocks are short fixed-width numbers: written digit by digit, no formatter.
    let mut digits = [b'0'; 20];
    let mut rest = value;
    let mut start = digits.len();
    while rest > 0 {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    let start = start.min(digits.len() - width.min(digits.len()));
    out.extend_from_slice(&digits[start..]);
}

/// Year, month, day of a day count since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u32;
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// Days since 1970-01-01 of `YYYY-MM-DD` (the year may be signed or longer, as
/// [`push_date`] writes years outside 0..=9999).
pub(crate) fn parse_date(text: &str) -> Option<i64> {
    // The sign of a negative year is the first character, not a separator.
    let split = text.get(1..)?.find('-')? + 1;
    let (year, rest) = (&text[..split], &text[split + 1..]);
    let year: i64 = year
        .parse()
        .ok()
        .filter(|year: &i64| year.abs() < 1 << 40)?;
    let (month, day) = rest.split_once('-')?;
    let (month, day) = (two_digits(month)?, two_digits(day)?);
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day))
}

/// Microseconds since midnight of `HH:MM:SS[.f]` with at most `digits` fraction digits.
pub(crate) fn parse_time_of_day(text: &str, digits: u32) -> Option<i64> {
    let (seconds, fraction) = parse_clock(text, digits)?;
    seconds
        .checked_mul(1_000_000)?
        .checked_add(fraction * 10i64.pow(6 - digits))
}

/// Units of 10^-`digits` seconds since the epoch of `YYYY-MM-DDTHH:MM:SS[.f]`, ending in `Z`
/// exactly when `utc`, with at most `digits` fraction digits.
pub(crate) fn parse_timestamp(text: &str, digits: u32, utc: bool) -> Option<i64> {
    let text = match (utc, text.strip_suffix('Z')) {
        (true, Some(text)) => text,
        (false, None) => text,
        _ => return None,
    };
    let (date, clock) = text.split_once('T')?;
    let (seconds, fraction) = parse_clock(clock, digits)?;
    if seconds >= 86_400 {
        return None;
    }
    let seconds = parse_date(date)?.checked_mul(86_400)? + seconds;
    seconds
        .checked_mul(10i64.pow(digits))?
        .checked_add(fraction)
}

/// Seconds and fraction (in units of 10^-`digits`) of `HH:MM:SS[.f]`; hours may take more
/// digits, as [`push_time_of_day`] writes them for values past a day.
fn parse_clock(text: &str, digits: u32) -> Option<(i64, i64)> {
    let (clock, fraction) = match text.split_once('.') {
        Some((clock, fraction)) => (clock, fraction),
        None => (text, ""),
    };
    let mut parts = clock.rsplitn(3, ':');
    let (second, minute, hour) = (parts.next()?, parts.next()?, parts.next()?);
    let (second, minute) = (two_digits(second)?, two_digits(minute)?);
    if hour.len() < 2 || hour.len() > 12 || !hour.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if second > 59 || minute > 59 || fraction.len() > digits as usize {
        return None;
    }
    if !fraction.bytes().all(|b| b.is_ascii_digit()) || text.ends_with('.') {
        return None;
    }
    let hour: i64 = hour.parse().ok()?;
    let scale = 10i64.pow(digits - fraction.len() as u32);
    let fraction = if fraction.is_empty() {
        0
    } else {
        fraction.parse::<i64>().ok()? * scale
    };
    Some((
        hour * 3600 + i64::from(minute) * 60 + i64::from(second),
        fraction,
    ))
}

fn two_digits(text: &str) -> Option<u32> {
    match text.as_bytes() {
        [tens @ b'0'..=b'9', ones @ b'0'..=b'9'] => {
            Some(u32::from(tens - b'0') * 10 + u32::from(ones - b'0'))
        }
        _ => None,
    }
}

fn days_in_month(year: i64, month: u32) -> u32 {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a date (H. Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let shifted_month = i64::from((month + 9) % 12);
    let day_of_year = (153 * shifted_month + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::{
        parse_date, parse_time_of_day, parse_timestamp, push_date, push_time_of_day, push_timestamp,
    };

    fn text(write: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        write(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn dates_across_leap_years_and_before_the_epoch() {
        assert_eq!(text(|o| push_date(o, 0)), "1970-01-01");
        assert_eq!(text(|o| push_date(o, 19_782)), "2024-02-29");
        assert_eq!(text(|o| push_date(o, -1)), "1969-12-31");
        assert_eq!(text(|o| push_date(o, 10_957)), "2000-01-01");
    }

    #[test]
    fn timestamps_and_times_keep_their_precision() {
        let at = |count, digits, utc| text(|o| push_timestamp(o, count, digits, utc));
        assert_eq!(
            at(1_700_000_000_123, 3, true),
            "\"2023-11-14T22:13:20.123Z\""
        );
        assert_eq!(
            at(1_700_000_000_000_007, 6, false),
            "\"2023-11-14T22:13:20.000007\""
        );
        assert_eq!(at(-1, 3, true), "\"1969-12-31T23:59:59.999Z\"");
        assert_eq!(
            text(|o| push_time_of_day(o, 49_510_250_000, 3)),
            "\"13:45:10.250\""
        );
        assert_eq!(
            text(|o| push_time_of_day(o, 49_510_000_001, 6)),
            "\"13:45:10.000001\""
        );
    }

    #[test]
    fn what_is_written_reads_back() {
        for days in [
            0, 19_782, -1, 10_957, -719_528, 2_932_896, 3_000_000, -800_000,
        ] {
            let date = text(|o| push_date(o, days));
            assert_eq!(parse_date(&date), Some(days), "{date}");
        }
        for (count, digits, utc) in [
            (1_700_000_000_123, 3, true),
            (-1, 3, true),
            (1_700_000_000_000_007, 6, false),
            (-86_400_000_000_000_001, 9, true),
        ] {
            let quoted = text(|o| push_timestamp(o, count, digits, utc));
            let stamp = quoted.trim_matches('"');
            assert_eq!(parse_timestamp(stamp, digits, utc), Some(count), "{stamp}");
            assert_eq!(parse_timestamp(stamp, digits, !utc), None, "{stamp}");
        }
        for (micros, digits) in [
            (49_510_250_000, 3),
            (49_510_000_001, 6),
            (0, 6),
            (90_000_000_000, 3),
        ] {
            let quoted = text(|o| push_time_of_day(o, micros, digits));
            assert_eq!(
                parse_time_of_day(quoted.trim_matches('"'), digits),
                Some(micros)
            );
        }
    }

    #[test]
    fn malformed_dates_and_times_are_refused() {
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-1-01",
            "2024-01-00",
            "x-01-01",
            "",
            "-",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
        assert_eq!(parse_date("2024-02-29"), Some(19_782));
        for bad in [
            "13:45",
            "13:60:00.000",
            "13:45:10.2500",
            "13:45:10.",
            "1:45:10.250",
        ] {
            assert_eq!(parse_time_of_day(bad, 3), None, "{bad}");
        }
        assert_eq!(parse_time_of_day("13:45:10", 3), Some(49_510_000_000));
        assert_eq!(parse_timestamp("2024-02-29T24:00:00.000Z", 3, true), None);
        assert_eq!(parse_timestamp("2024-02-29 13:45:10.250Z", 3, true), None);
    }
}
