//! `krec count`: exact data-record counts per partition and in total, of a topic on a
//! cluster (`-b`, `-t`) or of segment files, read from batch headers without decompressing.
//! With filters (`--key`, `--header`, `--grep`) every batch is decoded and only the records
//! that match are counted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use crate::cluster::{print, run_command, ClusterArgs, PartitionArgs};
use crate::decode::count::{FileCount, Tallies};
use crate::format::{FilterArgs, RecordFilter};
use crate::Error;
use krec_batch::DecodeConfig;
use krec_consumer::{Consumer, Fetched, PartitionChunk, StartOffset, TopicPartition};

/// Largest segment file counted by default (Kafka's segments are below 2 GiB).
const DEFAULT_MAX_FILE_BYTES: u64 = i32::MAX as u64;

/// Input bytes read at a time from a file.
const RUN_BYTES: usize = 1 << 20;

/// Arguments of `krec count`.
#[derive(Debug, clap::Args)]
pub struct CountArgs {
    /// Segment files (`.log`) to count, in order; without files, `-b` and `-t` count a topic.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Brokers and client properties.
    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// The topic to count on the cluster; with files, the topic name to print (default:
    /// from each file's `TOPIC-PARTITION` directory).
    #[arg(short = 't', long = "topic")]
    pub topic: Option<String>,

    /// The partitions to count on the cluster, and the isolation level (in files too:
    /// transactions no marker in them closes are left out under read_committed).
    #[command(flatten)]
    pub read: PartitionArgs,

    /// With files: the partition to print (default: from each file's directory).
    #[arg(long = "partition", value_name = "N")]
    pub partition: Option<i32>,

    /// JSON lines: one object per partition, then one total per topic.
    #[arg(short = 'J', long = "json")]
    pub json: bool,

    /// Skip the CRC check of each batch.
    #[arg(long = "no-crc")]
    pub no_crc: bool,

    /// Largest file accepted, in bytes.
    #[arg(long = "max-file-bytes", value_name = "BYTES", default_value_t = DEFAULT_MAX_FILE_BYTES)]
    pub max_file_bytes: u64,

    /// Count only the records these select (every batch is then decoded).
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// Runs `krec count`.
pub fn run(args: CountArgs) -> ExitCode {
    run_command("count", count(args))
}

async fn count(args: CountArgs) -> Result<(), Error> {
    let config = DecodeConfig {
        verify_crc: !args.no_crc,
        ..DecodeConfig::default()
    };
    let filter = args.filter.filter()?;
    let tallies = if args.files.is_empty() {
        let Some(topic) = args.topic.as_deref() else {
            return Err(Error::InvalidArgument {
                what: "count",
                detail: "give segment files, or -t TOPIC (and -b) to count a topic".to_owned(),
            });
        };
        count_topic(&args, topic, config, filter.as_ref()).await?
    } else {
        if args.cluster.brokers.is_some() || !args.read.partitions.is_empty() {
            return Err(Error::InvalidArgument {
                what: "count",
                detail: "-b and -p count a topic on a cluster; files are counted alone".to_owned(),
            });
        }
        FileCount {
            files: &args.files,
            topic: args.topic.as_deref(),
            partition: args.partition,
            config: &config,
            run_bytes: RUN_BYTES,
            max_file_bytes: args.max_file_bytes,
            read_committed: args.read.isolation.as_deref() == Some("read_committed"),
            filter: filter.as_ref(),
        }
        .count()?
    };
    print(&report(&tallies, args.json))
}

/// Reads every partition of `topic` from its start to the end offset the fetches find, and
/// counts each chunk from its batch headers.
async fn count_topic(
    args: &CountArgs,
    topic: &str,
    decode: DecodeConfig,
    filter: Option<&RecordFilter>,
) -> Result<Tallies, Error> {
    let mut config = args.cluster.config()?;
    config.read_committed = args.read.read_committed(&config);
    config.decode = decode;
    let mut consumer = Consumer::connect(config.clone()).await?;
    let partitions = if args.read.partitions.is_empty() {
        consumer.partitions(topic).await?
    } else {
        args.read.partitions.clone()
    };
    let assigned: Vec<TopicPartition> = partitions
        .iter()
        .map(|&partition| TopicPartition::new(topic, partition))
        .collect();
    consumer.assign(&assigned, StartOffset::Beginning).await?;
    let mut counts: BTreeMap<i32, u64> = partitions.iter().map(|&p| (p, 0)).collect();
    let mut remaining: BTreeSet<i32> = partitions.iter().copied().collect();
    while !remaining.is_empty() {
        match consumer.poll().await? {
            Fetched::Chunk(chunk) => {
                let records = match filter {
                    None => chunk.count_records()?,
                    Some(filter) => count_matches(&chunk, filter)?,
                };
                *counts.entry(chunk.partition()).or_default() += records;
            }
            Fetched::EndOfPartition {
                topic_partition, ..
            } => {
                remaining.remove(&topic_partition.partition);
            }
            // Only named topics are assigned here; no pattern changes them.
            _ => {}
        }
    }
    Ok(counts
        .into_iter()
        .map(|(partition, records)| ((Some(topic.to_owned()), Some(partition)), records))
        .collect())
}

/// The data records of `chunk` that `filter` selects (aborted ones hidden as when consuming).
fn count_matches(chunk: &PartitionChunk, filter: &RecordFilter) -> Result<u64, Error> {
    let mut matched = 0;
    chunk
        .batches()
        .try_for_each_ref(|batch| -> Result<_, Error> {
            let mut records = batch.records_in_place();
            while let Some(record) = records.next_ref() {
                matched += u64::from(filter.matches(record?));
            }
            Ok(std::ops::ControlFlow::Continue(()))
        })?;
    Ok(matched)
}

/// The text or JSON lines: each partition, then each topic's total.
fn report(tallies: &Tallies, json: bool) -> String {
    let mut text = String::new();
    let mut totals: BTreeMap<&Option<String>, u64> = BTreeMap::new();
    for ((topic, partition), records) in tallies {
        *totals.entry(topic).or_default() += records;
        if json {
            let line = json!({"topic": topic, "partition": partition, "records": records});
            let _ = writeln!(text, "{line}");
        } else {
            let partition = partition.map_or("-".to_owned(), |p| p.to_string());
            let _ = writeln!(text, "{} {partition} {records}", topic_text(topic));
        }
    }
    for (topic, records) in totals {
        if json {
            let _ = writeln!(text, "{}", json!({"topic": topic, "records": records}));
        } else {
            let _ = writeln!(text, "{} total {records}", topic_text(topic));
        }
    }
    text
}

fn topic_text(topic: &Option<String>) -> &str {
    topic.as_deref().unwrap_or("-")
}

#[cfg(test)]
mod tests {
    use super::report;

    #[test]
    fn partitions_then_one_total_per_topic() {
        let tallies = [
            ((Some("a".to_owned()), Some(1)), 5),
            ((Some("a".to_owned()), Some(0)), 2),
            ((None, None), 4),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            report(&tallies, false),
            "- - 4\na 0 2\na 1 5\n- total 4\na total 7\n"
        );
        let json = report(&tallies, true);
        let lines: Vec<&str> = json.lines().collect();
        assert_eq!(lines[1], r#"{"topic":"a","partition":0,"records":2}"#);
        assert_eq!(lines[4], r#"{"topic":"a","records":7}"#);
        assert_eq!(lines[3], r#"{"topic":null,"records":4}"#);
    }
}
