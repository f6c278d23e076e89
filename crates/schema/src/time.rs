//! Dates and times as text: proleptic Gregorian calendar, UTC, no time-zone database.

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

#[cfg(test)]
mod tests {
    use super::{push_date, push_time_of_day, push_timestamp};

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
}
