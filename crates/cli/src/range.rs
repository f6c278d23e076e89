//! `-o` ranges: where reading starts and where each partition's range ends.
//!
//! kcat's `s@TIME` / `e@TIME` and rpk's `START:END` (each side an offset, `@TIME` or empty, the
//! end exclusive). An end time stops a partition before the first record, in offset order, whose
//! timestamp is at or after it: what ListOffsets answers for that time, and what a check of each
//! record finds while that record has not been written yet.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

use krec_client::metadata::MetadataClient;
use krec_consumer::{Consumer, ConsumerConfig, PartitionPosition, StartOffset, TopicPartition};

use crate::offsets::{look_up, PartitionOffsets};
use crate::time::{now_ms, parse_instant};
use crate::Error;

/// Where reading starts and, for a bounded range, where it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetRange {
    /// The first record to read.
    pub start: StartOffset,
    /// Where every partition stops (none: it never does).
    pub end: Option<EndBound>,
}

/// The end of a range, exclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndBound {
    /// Stop before this offset.
    Offset(i64),
    /// Stop before the first record whose timestamp is at or after this many ms.
    Time(i64),
}

impl OffsetRange {
    /// Reads every `-o` given (none: from the beginning); `now` anchors relative times.
    pub fn parse(values: &[String], now: i64) -> Result<Self, Error> {
        let mut start = None;
        let mut end = None;
        for value in values {
            let (from, to) = parse_one(value, now)?;
            set_once(&mut start, from, value, "start")?;
            set_once(&mut end, to, value, "end")?;
        }
        let start = start.unwrap_or(StartOffset::Beginning);
        let backwards = match (start, end) {
            (StartOffset::Offset(from), Some(EndBound::Offset(to))) => from > to,
            (StartOffset::Timestamp(from), Some(EndBound::Time(to))) => from > to,
            _ => false,
        };
        if backwards {
            return Err(invalid(
                &values.join(" "),
                "the range ends before it starts",
            ));
        }
        Ok(Self { start, end })
    }
}

fn set_once<T>(
    slot: &mut Option<T>,
    value: Option<T>,
    text: &str,
    what: &str,
) -> Result<(), Error> {
    if value.is_some() && slot.is_some() {
        return Err(invalid(text, &format!("a second {what} of the range")));
    }
    if value.is_some() {
        *slot = value;
    }
    Ok(())
}

fn invalid(text: &str, detail: &str) -> Error {
    Error::InvalidArgument {
        what: "offset",
        detail: format!("{text:?}: {detail}"),
    }
}

/// One `-o` value: a start, an end, or both.
fn parse_one(text: &str, now: i64) -> Result<(Option<StartOffset>, Option<EndBound>), Error> {
    if let Some(time) = text.strip_prefix("s@") {
        let ms = parse_instant("start time", time, now)?;
        return Ok((Some(StartOffset::Timestamp(ms)), None));
    }
    if let Some(time) = text.strip_prefix("e@") {
        return Ok((
            None,
            Some(EndBound::Time(parse_instant("end time", time, now)?)),
        ));
    }
    if let Some(start) = single_start(text, now) {
        return Ok((Some(start?), None));
    }
    // RFC 3339 times hold colons too: the split is the colon both sides of which parse.
    for (at, _) in text.match_indices(':') {
        let (left, right) = (&text[..at], &text[at + 1..]);
        let (Some(start), Some(end)) = (side(left, now), side(right, now)) else {
            continue;
        };
        let start = match start? {
            None => StartOffset::Beginning,
            Some(Side::Offset(offset)) => StartOffset::Offset(offset),
            Some(Side::Time(ms)) => StartOffset::Timestamp(ms),
        };
        let end = end?.map(|side| match side {
            Side::Offset(offset) => EndBound::Offset(offset),
            Side::Time(ms) => EndBound::Time(ms),
        });
        return Ok((Some(start), end));
    }
    Err(invalid(
        text,
        "expected beginning, end, OFFSET, -N, @TIME, s@TIME, e@TIME or START:END \
         (TIME: ms, RFC 3339 or -15m)",
    ))
}

/// `beginning`, `end`, `OFFSET`, `-N` or `@TIME`; none when `text` is not one of those.
fn single_start(text: &str, now: i64) -> Option<Result<StartOffset, Error>> {
    if let Some(time) = text.strip_prefix('@') {
        match parse_instant("start time", time, now) {
            Ok(ms) => return Some(Ok(StartOffset::Timestamp(ms))),
            // `@T:@U` is a range.
            Err(_) if text.contains(':') => return None,
            Err(error) => return Some(Err(error)),
        }
    }
    if text.contains(':') {
        return None;
    }
    Some(text.parse::<StartOffset>().map_err(Error::from))
}

/// One side of `START:END`.
enum Side {
    Offset(i64),
    Time(i64),
}

/// None when `text` cannot be a side; an empty side is `Some(Ok(None))`.
fn side(text: &str, now: i64) -> Option<Result<Option<Side>, Error>> {
    if text.is_empty() {
        return Some(Ok(None));
    }
    if let Some(time) = text.strip_prefix('@') {
        return parse_instant("time", time, now)
            .ok()
            .map(|ms| Ok(Some(Side::Time(ms))));
    }
    let offset = text.parse::<i64>().ok().filter(|&o| o >= 0)?;
    Some(Ok(Some(Side::Offset(offset))))
}

/// Where one partition's range ends, as far as known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionEnd {
    /// The range's first offset: records before it (read when the fetch starts earlier, at
    /// the log's end) are not written.
    pub from: i64,
    /// The first offset past the range.
    pub offset: Option<i64>,
    /// Records at or after this timestamp are past the range (while `offset` is not known).
    pub time: Option<i64>,
}

impl PartitionEnd {
    /// The record at `offset` with `timestamp` is past the range.
    pub fn excludes(&self, offset: i64, timestamp: i64) -> bool {
        self.offset.is_some_and(|end| offset >= end) || self.time.is_some_and(|t| timestamp >= t)
    }
}

/// The first offset of a partition's range, given what ListOffsets said.
pub fn resolved_start(start: StartOffset, listed: &PartitionOffsets) -> i64 {
    match start {
        StartOffset::Beginning => listed.earliest,
        StartOffset::End => listed.latest,
        StartOffset::Offset(offset) => offset,
        StartOffset::FromEnd(n) => listed.latest.saturating_sub(n).max(listed.earliest),
        StartOffset::Timestamp(_) => listed.at.unwrap_or(listed.latest),
    }
}

/// Where a partition's range ends, given ListOffsets' answer for the end time (`at`). A time
/// no record reaches yet: fixed at the log's end when the time has passed, else each record
/// is checked until [`RangeEnds::settle`] fixes it.
pub fn resolved_end(end: EndBound, listed: &PartitionOffsets, now: i64) -> PartitionEnd {
    match end {
        EndBound::Offset(offset) => PartitionEnd {
            offset: Some(offset),
            ..PartitionEnd::default()
        },
        EndBound::Time(ms) => match listed.at {
            Some(offset) => PartitionEnd {
                offset: Some(offset),
                ..PartitionEnd::default()
            },
            None if ms <= now => PartitionEnd {
                offset: Some(listed.latest),
                ..PartitionEnd::default()
            },
            None => PartitionEnd {
                time: Some(ms),
                ..PartitionEnd::default()
            },
        },
    }
}

/// Every bounded partition's end, read by the decode threads once per chunk.
#[derive(Debug, Default)]
pub struct RangeEnds {
    by_topic: RwLock<HashMap<Arc<str>, HashMap<i32, PartitionEnd>>>,
}

impl RangeEnds {
    /// Sets (or replaces) a partition's end.
    pub fn set(&self, topic: &str, partition: i32, end: PartitionEnd) {
        let mut by_topic = self.by_topic.write().unwrap_or_else(|p| p.into_inner());
        by_topic
            .entry(Arc::from(topic))
            .or_default()
            .insert(partition, end);
    }

    /// The partition's end; none when its range has none.
    pub fn get(&self, topic: &str, partition: i32) -> Option<PartitionEnd> {
        let by_topic = self.by_topic.read().unwrap_or_else(|p| p.into_inner());
        by_topic.get(topic)?.get(&partition).copied()
    }

    /// Partitions whose end is still a time, not an offset.
    pub fn unsettled(&self) -> Vec<(String, i32, i64)> {
        let by_topic = self.by_topic.read().unwrap_or_else(|p| p.into_inner());
        let mut list = Vec::new();
        for (topic, partitions) in by_topic.iter() {
            for (&partition, end) in partitions {
                if let (None, Some(time)) = (end.offset, end.time) {
                    list.push((topic.to_string(), partition, time));
                }
            }
        }
        list
    }

    /// Fixes a partition's end at `offset` (its time has passed); the time check stays, so
    /// nothing at or after the time is written while the offset is further.
    pub fn settle(&self, topic: &str, partition: i32, offset: i64) {
        if let Some(mut end) = self.get(topic, partition) {
            end.offset = Some(offset);
            self.set(topic, partition, end);
        }
    }
}

/// The partitions of a bounded range still short of their end.
#[derive(Debug, Default)]
pub struct RangeWatch {
    open: BTreeSet<(String, i32)>,
}

impl RangeWatch {
    /// Every partition has passed its end.
    pub fn is_done(&self) -> bool {
        self.open.is_empty()
    }

    /// The partition has passed its end: it is no longer fetched.
    pub fn close(&mut self, consumer: &mut Consumer, topic: &str, partition: i32) {
        let key = (topic.to_owned(), partition);
        if self.open.remove(&key) {
            tracing::debug!(topic, partition, "the range of the partition is read");
            consumer.unassign(&[key.into()]);
        }
    }

    /// Closes the partitions whose fetch position is at or past their end offset.
    pub fn close_reached(&mut self, consumer: &mut Consumer, ends: &RangeEnds) {
        let positions: Vec<PartitionPosition> = consumer.positions();
        for position in positions {
            let TopicPartition { topic, partition } = &position.topic_partition;
            let end = ends.get(topic, *partition);
            let reached = match (position.offset, end.and_then(|e| e.offset)) {
                (Some(offset), Some(end)) => offset >= end,
                _ => false,
            };
            if reached {
                self.close(consumer, topic, *partition);
            }
        }
    }
}

/// Looks up where each partition of `topics` starts and ends, records the ends in `ends`, and
/// assigns the partitions whose range holds something, from their first offset. A partition
/// whose range is empty is never fetched.
pub async fn assign_bounded(
    consumer: &mut Consumer,
    topics: &[(String, Vec<i32>)],
    range: OffsetRange,
    ends: &RangeEnds,
) -> Result<RangeWatch, Error> {
    let Some(end) = range.end else {
        return Ok(RangeWatch::default());
    };
    let config = consumer.config().clone();
    let mut client = MetadataClient::new(config.bootstrap.clone(), config.connection.clone());
    let start_time = match range.start {
        StartOffset::Timestamp(ms) => Some(ms),
        _ => None,
    };
    let end_time = match end {
        EndBound::Time(ms) => Some(ms),
        EndBound::Offset(_) => None,
    };
    let mut watch = RangeWatch::default();
    let mut starts = Vec::new();
    for (topic, partitions) in topics {
        let at_start = lookup(&mut client, &config, topic, partitions, start_time).await?;
        let at_end = match end_time {
            Some(_) => lookup(&mut client, &config, topic, partitions, end_time).await?,
            None => at_start.clone(),
        };
        let now = now_ms();
        for (partition, listed) in &at_start {
            let first = resolved_start(range.start, listed);
            let last = PartitionEnd {
                from: first,
                ..resolved_end(end, &at_end[partition], now)
            };
            if last.offset.is_some_and(|end| first >= end) {
                tracing::info!(
                    topic,
                    partition,
                    first,
                    "empty range: the partition is not read"
                );
                continue;
            }
            ends.set(topic, *partition, last);
            watch.open.insert((topic.clone(), *partition));
            // Inside the log, so no offset reset moves it: a start past the log's end waits
            // there for the range's records.
            let fetch_from = first.clamp(listed.earliest, listed.latest.max(listed.earliest));
            starts.push((
                TopicPartition::new(topic.as_str(), *partition),
                StartOffset::Offset(fetch_from),
            ));
        }
    }
    consumer.assign_at(&starts).await?;
    Ok(watch)
}

async fn lookup(
    client: &mut MetadataClient,
    config: &ConsumerConfig,
    topic: &str,
    partitions: &[i32],
    at: Option<i64>,
) -> Result<std::collections::BTreeMap<i32, PartitionOffsets>, Error> {
    look_up(
        client,
        &config.connection,
        topic,
        partitions,
        at,
        config.read_committed,
    )
    .await
}

/// The end times no record reached yet, once they have passed: each such partition's end is
/// fixed where its log ends (or at the first record ListOffsets now finds that late).
pub async fn settle_passed(consumer: &Consumer, ends: &RangeEnds) -> Result<(), Error> {
    let config = consumer.config().clone();
    let mut client = MetadataClient::new(config.bootstrap.clone(), config.connection.clone());
    let now = now_ms();
    for (topic, partition, time) in ends.unsettled() {
        if time > now {
            continue;
        }
        let listed = lookup(&mut client, &config, &topic, &[partition], Some(time)).await?;
        if let Some(found) = listed.get(&partition) {
            ends.settle(&topic, partition, found.at.unwrap_or(found.latest));
        }
    }
    Ok(())
}

/// The earliest end time not yet settled, if any.
pub fn next_unsettled(ends: &RangeEnds) -> Option<i64> {
    ends.unsettled().into_iter().map(|(_, _, time)| time).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_764_496_800_000; // 2025-11-30T10:00:00Z

    fn parse(values: &[&str]) -> Result<OffsetRange, Error> {
        let owned: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        OffsetRange::parse(&owned, NOW)
    }

    fn range(start: StartOffset, end: Option<EndBound>) -> OffsetRange {
        OffsetRange { start, end }
    }

    #[test]
    fn reads_kcat_and_rpk_forms() {
        use EndBound::{Offset as EndAt, Time as EndTime};
        use StartOffset::*;
        let cases: &[(&[&str], OffsetRange)] = &[
            (&[], range(Beginning, None)),
            (&["end"], range(End, None)),
            (&["-5"], range(FromEnd(5), None)),
            (&["@-15m"], range(Timestamp(NOW - 900_000), None)),
            (&["@2025-11-30T10:00:00Z"], range(Timestamp(NOW), None)),
            (
                &["s@1000", "e@2000"],
                range(Timestamp(1000), Some(EndTime(2000))),
            ),
            (&["e@-1h"], range(Beginning, Some(EndTime(NOW - 3_600_000)))),
            (&["10:20"], range(Offset(10), Some(EndAt(20)))),
            (&[":20"], range(Beginning, Some(EndAt(20)))),
            (&["10:"], range(Offset(10), None)),
            (&["@-15m:"], range(Timestamp(NOW - 900_000), None)),
            (
                &["@1000:@-5m"],
                range(Timestamp(1000), Some(EndTime(NOW - 300_000))),
            ),
            (
                &["@2025-11-30T09:00:00Z:@2025-11-30T10:00:00Z"],
                range(Timestamp(NOW - 3_600_000), Some(EndTime(NOW))),
            ),
            (
                &["7:@2025-11-30T10:00:00Z"],
                range(Offset(7), Some(EndTime(NOW))),
            ),
        ];
        for (values, expected) in cases {
            assert_eq!(&parse(values).unwrap(), expected, "{values:?}");
        }
    }

    #[test]
    fn refuses_what_is_not_a_range() {
        for values in [
            &["s@yesterday"][..],
            &["e@"],
            &["1:2:3"],
            &["a:b"],
            &["s@1000", "5"],
            &["e@1000", ":20"],
            &["-3:5"],
            &["8:3"],
            &["s@2000", "e@1000"],
        ] {
            let error = parse(values).unwrap_err();
            assert_eq!(error.exit_code(), 2, "{values:?}");
        }
    }

    #[test]
    fn an_end_time_no_record_reaches_is_fixed_once_it_has_passed() {
        let listed = PartitionOffsets {
            earliest: 3,
            latest: 40,
            at: None,
        };
        let past = resolved_end(EndBound::Time(NOW - 1), &listed, NOW);
        assert_eq!(past.offset, Some(40));
        let future = resolved_end(EndBound::Time(NOW + 60_000), &listed, NOW);
        assert_eq!((future.offset, future.time), (None, Some(NOW + 60_000)));
        assert!(future.excludes(41, NOW + 60_000));
        assert!(!future.excludes(41, NOW + 59_999));
        let found = PartitionOffsets {
            at: Some(17),
            ..listed
        };
        let known = resolved_end(EndBound::Time(NOW + 60_000), &found, NOW);
        assert!(known.excludes(17, 0) && !known.excludes(16, i64::MAX));
    }

    #[test]
    fn starts_resolve_against_the_log() {
        let listed = PartitionOffsets {
            earliest: 10,
            latest: 50,
            at: Some(30),
        };
        assert_eq!(resolved_start(StartOffset::Beginning, &listed), 10);
        assert_eq!(resolved_start(StartOffset::End, &listed), 50);
        assert_eq!(resolved_start(StartOffset::FromEnd(100), &listed), 10);
        assert_eq!(resolved_start(StartOffset::FromEnd(5), &listed), 45);
        assert_eq!(resolved_start(StartOffset::Timestamp(0), &listed), 30);
        let none = PartitionOffsets { at: None, ..listed };
        assert_eq!(resolved_start(StartOffset::Timestamp(0), &none), 50);
    }
}
