//! `--stats`: every interval, records/s, fetched MB/s and the lag of each partition on stderr,
//! as a text line for people or (`--stats-format json`) as one JSON object for log shippers;
//! totals when the command ends.

use std::sync::atomic::Ordering;
use std::time::Duration;

use krec_consumer::PartitionPosition;
use serde_json::json;
use tokio::time::{Instant, Interval};

use crate::progress::{Lag, Progress};
use crate::Error;

/// How `--stats` lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatsFormat {
    /// `krec stats: 1234 records/s 0.56 MB/s lag t/0=5 ...`
    Text,
    /// `{"type":"interval","records_per_s":1234.0,...}`, one object per line.
    Json,
}

impl std::str::FromStr for StatsFormat {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        match text {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            _ => Err(Error::InvalidArgument {
                what: "stats format",
                detail: format!("{text:?}: expected text or json"),
            }),
        }
    }
}

/// One interval's numbers, as both forms show them.
#[derive(Clone, Debug, PartialEq)]
pub struct StatsInterval {
    /// Length of the interval in seconds.
    pub seconds: f64,
    /// Records written out per second.
    pub records_per_second: f64,
    /// Record bytes (as fetched) of the chunks written out, in MB (10^6 bytes) per second.
    pub megabytes_per_second: f64,
    /// Records written out since the start.
    pub records: u64,
    /// Data records decoded since the start, matching the filters or not.
    pub scanned: u64,
    /// Record bytes written out since the start.
    pub bytes: u64,
    /// Lag of each assigned partition, from the next offset to write.
    pub lags: Vec<Lag>,
}

/// The stats printer: its format, its timer and the totals at the last line.
#[derive(Debug)]
pub struct Stats {
    format: StatsFormat,
    timer: Option<Interval>,
    read_committed: bool,
    last: (Instant, u64, u64),
}

impl Stats {
    /// A printer every `seconds` (none: never prints). Must be called inside a tokio runtime.
    pub fn new(seconds: Option<f64>, format: StatsFormat, read_committed: bool) -> Self {
        let timer = seconds.map(|seconds| {
            let every = Duration::from_secs_f64(seconds.max(0.05));
            tokio::time::interval_at(Instant::now() + every, every)
        });
        Self {
            format,
            timer,
            read_committed,
            last: (Instant::now(), 0, 0),
        }
    }

    /// Waits for the next line to be due (forever when stats are off).
    pub async fn tick(&mut self) {
        match self.timer.as_mut() {
            Some(timer) => {
                timer.tick().await;
            }
            None => std::future::pending().await,
        }
    }

    /// Prints one interval's line.
    pub fn print(&mut self, positions: &[PartitionPosition], progress: &Progress) {
        let now = Instant::now();
        let records = progress.records.load(Ordering::Relaxed);
        let bytes = progress.bytes.load(Ordering::Relaxed);
        let seconds = now.duration_since(self.last.0).as_secs_f64().max(1e-9);
        let interval = StatsInterval {
            seconds,
            records_per_second: records.saturating_sub(self.last.1) as f64 / seconds,
            megabytes_per_second: bytes.saturating_sub(self.last.2) as f64 / seconds / 1e6,
            records,
            scanned: progress.scanned.load(Ordering::Relaxed),
            bytes,
            lags: progress.lags(positions, self.read_committed),
        };
        self.last = (now, records, bytes);
        eprintln!("{}", interval_line(self.format, &interval));
    }

    /// Prints the totals when the command ends (if stats are on).
    pub fn finish(&self, progress: &Progress) {
        if self.timer.is_some() {
            let records = progress.records.load(Ordering::Relaxed);
            let scanned = progress.scanned.load(Ordering::Relaxed);
            let bytes = progress.bytes.load(Ordering::Relaxed);
            let skipped = progress.batches_skipped.load(Ordering::Relaxed);
            let line = total_line(self.format, records, scanned, bytes, skipped);
            eprintln!("{line}");
        }
    }
}

/// One interval as a line of `format`.
pub fn interval_line(format: StatsFormat, interval: &StatsInterval) -> String {
    match format {
        StatsFormat::Text => {
            let mut line = format!(
                "krec stats: {:.0} records/s {:.2} MB/s",
                interval.records_per_second, interval.megabytes_per_second
            );
            // A share-group member has no lag of its own; a group member may own nothing yet.
            if !interval.lags.is_empty() {
                line.push_str(" lag");
            }
            for lag in &interval.lags {
                line.push_str(&format!(" {}/{}={}", lag.topic, lag.partition, lag.lag));
            }
            line
        }
        StatsFormat::Json => {
            let lags: Vec<serde_json::Value> = interval
                .lags
                .iter()
                .map(
                    |lag| json!({"topic": &*lag.topic, "partition": lag.partition, "lag": lag.lag}),
                )
                .collect();
            json!({
                "type": "interval",
                "seconds": interval.seconds,
                "records_per_s": interval.records_per_second,
                "mb_per_s": interval.megabytes_per_second,
                "records": interval.records,
                "scanned": interval.scanned,
                "bytes": interval.bytes,
                "lag_total": interval.lags.iter().map(|lag| lag.lag).sum::<i64>(),
                "lag": lags,
            })
            .to_string()
        }
    }
}

/// The totals as a line of `format`: records written, records scanned (decoded, matching the
/// filters or not), record bytes, corrupt batches skipped (in text only when there were any).
pub fn total_line(
    format: StatsFormat,
    records: u64,
    scanned: u64,
    bytes: u64,
    skipped: u64,
) -> String {
    match format {
        StatsFormat::Text => {
            let mut line = format!(
                "krec consume: {records} records written of {scanned} scanned, {bytes} bytes"
            );
            if skipped > 0 {
                line.push_str(&format!(", {skipped} corrupt batches skipped"));
            }
            line
        }
        StatsFormat::Json => json!({
            "type": "total",
            "records": records,
            "scanned": scanned,
            "bytes": bytes,
            "batches_skipped": skipped,
        })
        .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn interval() -> StatsInterval {
        StatsInterval {
            seconds: 2.0,
            records_per_second: 1234.4,
            megabytes_per_second: 0.5678,
            records: 9000,
            scanned: 12000,
            bytes: 1_000_000,
            lags: vec![
                Lag {
                    topic: Arc::from("orders"),
                    partition: 0,
                    lag: 5,
                },
                Lag {
                    topic: Arc::from("orders"),
                    partition: 3,
                    lag: 0,
                },
            ],
        }
    }

    #[test]
    fn the_text_line_stays_as_it_was() {
        assert_eq!(
            interval_line(StatsFormat::Text, &interval()),
            "krec stats: 1234 records/s 0.57 MB/s lag orders/0=5 orders/3=0"
        );
        let no_partitions = StatsInterval {
            lags: Vec::new(),
            ..interval()
        };
        assert_eq!(
            interval_line(StatsFormat::Text, &no_partitions),
            "krec stats: 1234 records/s 0.57 MB/s"
        );
        assert_eq!(
            total_line(StatsFormat::Text, 9000, 12000, 1_000_000, 0),
            "krec consume: 9000 records written of 12000 scanned, 1000000 bytes"
        );
    }

    #[test]
    fn the_json_line_is_one_object_with_the_text_line_s_numbers() {
        let line = interval_line(StatsFormat::Json, &interval());
        assert!(!line.contains('\n'));
        let object: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(object["type"], "interval");
        assert_eq!(object["seconds"], 2.0);
        assert_eq!(object["records_per_s"], 1234.4);
        assert_eq!(object["mb_per_s"], 0.5678);
        assert_eq!(object["records"], 9000);
        assert_eq!(object["scanned"], 12000);
        assert_eq!(object["bytes"], 1_000_000);
        assert_eq!(object["lag_total"], 5);
        assert_eq!(
            object["lag"],
            serde_json::json!([
                {"topic": "orders", "partition": 0, "lag": 5},
                {"topic": "orders", "partition": 3, "lag": 0},
            ])
        );
        let total: serde_json::Value =
            serde_json::from_str(&total_line(StatsFormat::Json, 9000, 12000, 1_000_000, 2))
                .unwrap();
        assert_eq!(
            total,
            serde_json::json!({"type": "total", "records": 9000, "scanned": 12000,
                "bytes": 1_000_000, "batches_skipped": 2})
        );
        assert_eq!(
            total_line(StatsFormat::Text, 1, 1, 10, 2),
            "krec consume: 1 records written of 1 scanned, 10 bytes, 2 corrupt batches skipped"
        );
    }

    #[test]
    fn formats_parse_by_name() {
        assert_eq!("json".parse::<StatsFormat>().unwrap(), StatsFormat::Json);
        assert_eq!("text".parse::<StatsFormat>().unwrap(), StatsFormat::Text);
        assert!("yaml".parse::<StatsFormat>().is_err());
    }
}
