//! `krec offsets`: per partition the earliest and latest (or last stable) offset, and the
//! offset for a time (kcat's `-Q`), as text or JSON lines.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::json;

use crate::cluster::{print, run_command, ClusterArgs, PartitionArgs};
use crate::time::{now_ms, parse_instant};
use crate::Error;
use krec_client::metadata::{MetadataClient, PartitionMetadata};
use krec_client::offsets::{list_offsets, OffsetQuery};
use krec_client::{codes, error_name, Connection, ConnectionSettings, Error as ClientError};

/// Rounds of lookups before a partition whose leader keeps moving is an error.
const LOOKUP_ROUNDS: u32 = 5;

/// Pause between rounds, for the metadata to catch up with a leader change.
const ROUND_DELAY: Duration = Duration::from_millis(300);

/// Arguments of `krec offsets`.
#[derive(Debug, clap::Args)]
pub struct OffsetsArgs {
    /// Brokers and client properties.
    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// The topic.
    #[arg(short = 't', long = "topic")]
    pub topic: String,

    /// The partitions, and the isolation level (the latest offset is the high watermark,
    /// or under read_committed the last stable offset).
    #[command(flatten)]
    pub read: PartitionArgs,

    /// Also the offset of the first record at or after this time: milliseconds since the
    /// epoch, RFC 3339 (2026-11-30T10:00:00Z), or before now (-15m, -2h).
    #[arg(long = "at", value_name = "TIME", allow_hyphen_values = true)]
    pub at: Option<String>,

    /// JSON lines, one object per partition, instead of text.
    #[arg(short = 'J', long = "json")]
    pub json: bool,
}

/// One partition's offsets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionOffsets {
    /// Log start offset.
    pub earliest: i64,
    /// High watermark, or last stable offset under read_committed.
    pub latest: i64,
    /// First offset at or after `--at`; none when no record is that late.
    pub at: Option<i64>,
}

/// Runs `krec offsets`.
pub fn run(args: OffsetsArgs) -> ExitCode {
    run_command("offsets", offsets(args))
}

async fn offsets(args: OffsetsArgs) -> Result<(), Error> {
    let at = args
        .at
        .as_deref()
        .map(|text| parse_instant("time", text, now_ms()))
        .transpose()?;
    let access = args.cluster.access()?;
    let read_committed = args.read.read_committed(&access.config);
    let mut client = MetadataClient::new(access.bootstrap, access.settings.clone());
    let found = look_up(
        &mut client,
        &access.settings,
        &args.topic,
        &args.read.partitions,
        at,
        read_committed,
    )
    .await?;
    let mut text = String::new();
    for (partition, offsets) in &found {
        if args.json {
            let mut line = json!({
                "topic": args.topic, "partition": partition,
                "earliest": offsets.earliest, "latest": offsets.latest,
            });
            if at.is_some() {
                line["offset"] = json!(offsets.at);
            }
            let _ = writeln!(text, "{line}");
        } else {
            let _ = write!(
                text,
                "{} {partition} earliest {} latest {}",
                args.topic, offsets.earliest, offsets.latest
            );
            if at.is_some() {
                let offset = offsets.at.map_or("none".to_owned(), |o| o.to_string());
                let _ = write!(text, " offset {offset}");
            }
            text.push('\n');
        }
    }
    print(&text)
}

/// Asks each partition's leader; partitions whose leader moved meanwhile are asked again
/// after fresh metadata.
pub(crate) async fn look_up(
    client: &mut MetadataClient,
    settings: &ConnectionSettings,
    topic: &str,
    wanted: &[i32],
    at: Option<i64>,
    read_committed: bool,
) -> Result<BTreeMap<i32, PartitionOffsets>, Error> {
    let mut found = BTreeMap::new();
    let mut last_error = None;
    for _ in 0..LOOKUP_ROUNDS {
        let metadata = client.fetch(&[topic.to_owned()]).await.map_err(consumer)?;
        let partitions =
            chosen_partitions(metadata.topic(topic).map_err(consumer)?, topic, wanted)?;
        let mut by_leader: BTreeMap<i32, Vec<PartitionMetadata>> = BTreeMap::new();
        for partition in partitions
            .into_iter()
            .filter(|p| !found.contains_key(&p.partition))
        {
            by_leader
                .entry(partition.leader)
                .or_default()
                .push(partition);
        }
        if by_leader.is_empty() {
            return Ok(found);
        }
        for (leader, partitions) in by_leader {
            let Some(address) = metadata.brokers.get(&leader) else {
                last_error = Some(ClientError::Broker {
                    broker: format!("node {leader}"),
                    api: "ListOffsets",
                    topic: Some(topic.to_owned()),
                    partition: partitions.first().map(|p| p.partition),
                    code: codes::LEADER_NOT_AVAILABLE,
                    name: error_name(codes::LEADER_NOT_AVAILABLE),
                });
                continue;
            };
            let asked = Asked {
                topic,
                address,
                at,
                read_committed,
            };
            match asked.ask(settings, &partitions).await {
                Ok(answers) => found.extend(answers),
                Err(error) if is_retriable(&error) => last_error = Some(error),
                Err(error) => return Err(consumer(error)),
            }
        }
        tokio::time::sleep(ROUND_DELAY).await;
    }
    match last_error {
        Some(error) => Err(consumer(error)),
        None => Ok(found),
    }
}

/// A leader that moved or a broker that went away is asked again; the rest is final.
fn is_retriable(error: &ClientError) -> bool {
    match error {
        ClientError::Broker { code, .. } => codes::needs_metadata_refresh(*code),
        error => !error.is_security_failure() && error.is_connection_failure(),
    }
}

fn consumer(error: ClientError) -> Error {
    Error::Consumer(error.into())
}

/// The partitions `-p` names (all when empty), each checked to exist.
fn chosen_partitions(
    topic: &krec_client::metadata::TopicMetadata,
    name: &str,
    wanted: &[i32],
) -> Result<Vec<PartitionMetadata>, Error> {
    if wanted.is_empty() {
        return Ok(topic.partitions.clone());
    }
    wanted
        .iter()
        .map(|&id| {
            topic
                .partitions
                .iter()
                .find(|p| p.partition == id)
                .copied()
                .ok_or_else(|| {
                    Error::Consumer(krec_consumer::Error::UnknownPartition {
                        topic: name.to_owned(),
                        partition: id,
                        count: topic.partitions.len(),
                    })
                })
        })
        .collect()
}

/// One leader's share of the lookup.
struct Asked<'a> {
    topic: &'a str,
    address: &'a str,
    at: Option<i64>,
    read_committed: bool,
}

impl Asked<'_> {
    /// Earliest, latest and (with `--at`) the time's offset of `partitions`, all led by the
    /// broker at `address`. One request per question: ListOffsets takes a partition once.
    async fn ask(
        &self,
        settings: &ConnectionSettings,
        partitions: &[PartitionMetadata],
    ) -> Result<BTreeMap<i32, PartitionOffsets>, ClientError> {
        let mut connection = Connection::connect(self.address, settings).await?;
        let mut answers: BTreeMap<i32, PartitionOffsets> = BTreeMap::new();
        let mut queries = vec![OffsetQuery::Earliest, OffsetQuery::Latest];
        queries.extend(self.at.map(OffsetQuery::Timestamp));
        for query in queries {
            let asked: Vec<(i32, i32, OffsetQuery)> = partitions
                .iter()
                .map(|p| (p.partition, p.leader_epoch, query))
                .collect();
            let listed =
                list_offsets(&mut connection, self.topic, &asked, self.read_committed).await?;
            for answer in listed {
                if answer.error_code != 0 {
                    return Err(ClientError::Broker {
                        broker: self.address.to_owned(),
                        api: "ListOffsets",
                        topic: Some(self.topic.to_owned()),
                        partition: Some(answer.partition),
                        code: answer.error_code,
                        name: error_name(answer.error_code),
                    });
                }
                let entry = answers.entry(answer.partition).or_default();
                match query {
                    OffsetQuery::Earliest => entry.earliest = answer.offset,
                    OffsetQuery::Latest => entry.latest = answer.offset,
                    OffsetQuery::Timestamp(_) => {
                        entry.at = Some(answer.offset).filter(|&offset| offset >= 0)
                    }
                }
            }
        }
        Ok(answers)
    }
}
