//! The arguments of `krec consume` (kcat's names where they exist), and what they say before
//! anything connects: the topics, the idle timeout.

use std::time::Duration;

use krec_batch::OnCorrupt;
use krec_consumer::TopicSubscription;

use crate::cluster::{ClusterArgs, PartitionArgs};
use crate::format::FormatArgs;
use crate::Error;

/// The `-G` options of `krec consume`.
#[derive(Debug, clap::Args)]
pub struct GroupArgs {
    /// Join this consumer group: the group's coordinator assigns the partitions, positions are
    /// committed as records are written out (kcat's `-G`).
    #[arg(short = 'G', long = "group", value_name = "GROUP")]
    pub group_id: Option<String>,

    /// Join this share group (KIP-932, Kafka 4.2+): members share the records of each
    /// partition, each record is accepted once written out, rejected when corrupt under
    /// `--on-corrupt skip`, and released at exit when not written. Not with `-G`, `-e`, `-o`
    /// or `-p`. A new share group starts at the log end unless its `share.auto.offset.reset`
    /// group config is `earliest`.
    #[arg(long = "share-group", value_name = "GROUP")]
    pub share_group: Option<String>,

    /// Group protocol: `classic` (JoinGroup/SyncGroup; default, or `group.protocol`) or
    /// `consumer` (KIP-848).
    #[arg(long = "group-protocol", value_name = "PROTOCOL")]
    pub group_protocol: Option<String>,

    /// Classic protocol assignors in preference order: `range`, `roundrobin`,
    /// `cooperative-sticky` (default as the Java client: range,cooperative-sticky, or
    /// `partition.assignment.strategy`).
    #[arg(long = "assignor", value_delimiter = ',', value_name = "NAME,...")]
    pub assignors: Vec<String>,

    /// KIP-848 server-side assignor (`uniform` or `range`; default: the broker's).
    #[arg(long = "server-assignor", value_name = "NAME")]
    pub server_assignor: Option<String>,

    /// Static membership: `group.instance.id`.
    #[arg(long = "group-instance-id", value_name = "ID")]
    pub instance_id: Option<String>,

    /// Group session timeout (default 45000, or `session.timeout.ms`). Classic: sent to the
    /// coordinator. KIP-848: the broker's `group.consumer.session.timeout.ms` decides; give the
    /// same value here. Either way, a member whose heartbeats go unanswered this long drops its
    /// partitions and stops writing them.
    #[arg(long = "session-timeout-ms", value_name = "MS")]
    pub session_timeout_ms: Option<u64>,

    /// Time between group heartbeats (classic protocol; default 3000, or
    /// `heartbeat.interval.ms`).
    #[arg(long = "heartbeat-interval-ms", value_name = "MS")]
    pub heartbeat_interval_ms: Option<u64>,

    /// Time allowed for a rebalance (default 60000, or `max.poll.interval.ms`).
    #[arg(long = "rebalance-timeout-ms", value_name = "MS")]
    pub rebalance_timeout_ms: Option<u64>,

    /// Time between commits of the written positions (default 5000, or
    /// `auto.commit.interval.ms`).
    #[arg(long = "commit-interval-ms", value_name = "MS")]
    pub commit_interval_ms: Option<u64>,
}

/// How `krec consume` reports on itself.
#[derive(Debug, clap::Args)]
pub struct MonitoringArgs {
    /// Print records/s, fetched MB/s (record bytes as on the wire) and lag per partition to
    /// stderr every SECONDS (default 1).
    #[arg(long = "stats", value_name = "SECONDS", num_args = 0..=1, default_missing_value = "1")]
    pub stats: Option<f64>,

    /// `--stats` lines as `text` (default) or `json` (one object per line).
    #[arg(long = "stats-format", value_name = "FORMAT", default_value = "text", requires = "stats", value_parser = ["text", "json"])]
    pub stats_format: String,

    /// Serve Prometheus metrics at `http://HOST:PORT/metrics` and liveness at `/health`.
    #[arg(long = "metrics", value_name = "HOST:PORT")]
    pub metrics: Option<String>,
}

/// Arguments of `krec consume` (kcat's names where they exist).
#[derive(Debug, clap::Args)]
pub struct ConsumeArgs {
    /// Brokers and client properties.
    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// Topics to consume, `TOPIC[,TOPIC...]`; one starting with `^` is a regular expression
    /// matched against the cluster's topic names (internal topics only by name).
    #[arg(short = 't', long = "topic", value_name = "TOPIC,...")]
    pub topic: String,

    /// How often the topics a `-t` pattern matches are looked at again, in milliseconds
    /// (default 300000, or `metadata.max.age.ms` / `topic.metadata.refresh.interval.ms`).
    #[arg(long = "metadata-refresh-ms", value_name = "MS")]
    pub metadata_refresh_ms: Option<u64>,

    /// Consumer group options (boxed: they are many and the command enum stays small).
    #[command(flatten)]
    pub group: Box<GroupArgs>,

    /// The partitions to consume, and whether aborted transactions are shown.
    #[command(flatten)]
    pub read: PartitionArgs,

    /// Where to start, and where to stop: `beginning` (default), `end`, an absolute `OFFSET`,
    /// `-N` (N before the end), `@TIME` or `s@TIME` (first record at or after TIME), `e@TIME`
    /// (stop before the first record at or after TIME), `START:END` (each an offset, `@TIME` or
    /// empty; END exclusive). TIME: ms, RFC 3339 or `-15m`. Repeatable: `-o s@T -o e@U`.
    /// A range with an end exits once every partition has passed it.
    #[arg(
        short = 'o',
        long = "offset",
        value_name = "WHERE",
        allow_hyphen_values = true,
        action = clap::ArgAction::Append
    )]
    pub offset: Vec<String>,

    /// Exit (status 0) once no record has arrived for this long: `30s`, `5m`, `1h30m`, `500ms`.
    /// Time in which the output holds fetched records (back-pressure) does not count.
    #[arg(long = "idle-timeout", value_name = "DURATION")]
    pub idle_timeout: Option<String>,

    /// Exit once every partition has reached its end offset (like kcat's `-e`).
    #[arg(short = 'e', long = "exit")]
    pub exit_at_end: bool,

    /// Exit after writing this many records.
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,

    /// When a fetch offset is out of range: `earliest` (default, or `auto.offset.reset`),
    /// `latest` or `fail`.
    #[arg(long = "reset", value_name = "POLICY")]
    pub reset: Option<String>,

    /// `--stats` and `--metrics` (boxed, as the group options).
    #[command(flatten)]
    pub monitoring: Box<MonitoringArgs>,

    /// How long a fault may last (a broker, the leader lookups or the group coordinator
    /// unreachable) before krec gives up and exits.
    #[arg(
        long = "give-up-after-ms",
        value_name = "MS",
        default_value_t = 300_000
    )]
    pub give_up_after_ms: u64,

    /// With --key: read only the partition this producer partitioner sends the key to:
    /// `murmur2` (the Java client's default) or `crc32` (librdkafka's `consistent_random`).
    /// Without it, every partition is scanned.
    #[arg(long = "partitioner", value_name = "NAME")]
    pub partitioner: Option<String>,

    /// Decode threads (default: one per core).
    #[arg(long = "threads", value_name = "N")]
    pub threads: Option<usize>,

    /// Record bytes per fetch response (default 52428800, or `fetch.max.bytes`).
    #[arg(long = "max-bytes", value_name = "BYTES")]
    pub max_bytes: Option<i32>,

    /// Record bytes per partition in a fetch response (default 1048576, or
    /// `max.partition.fetch.bytes`).
    #[arg(long = "partition-max-bytes", value_name = "BYTES")]
    pub partition_max_bytes: Option<i32>,

    /// Fetched bytes buffered before fetching pauses.
    #[arg(long = "buffer-bytes", value_name = "BYTES", default_value_t = 256 << 20)]
    pub buffer_bytes: usize,

    /// How long the broker may wait for data before answering a fetch, in milliseconds
    /// (default 500, or `fetch.max.wait.ms`).
    #[arg(long = "max-wait-ms", value_name = "MS")]
    pub max_wait_ms: Option<u64>,

    /// Highest Fetch request version to use (default: the highest both sides speak).
    #[arg(long = "fetch-version", value_name = "N")]
    pub fetch_version: Option<i16>,

    /// Skip the CRC check of each batch.
    #[arg(long = "no-crc")]
    pub no_crc: bool,

    /// A batch that fails its checks (CRC, decompression, record count or framing): `stop`
    /// (default) or `skip` it whole, reported on stderr before anything past it is committed,
    /// and exit with status 3 at the end.
    #[arg(long = "on-corrupt", value_name = "POLICY", default_value = "stop", value_parser = crate::corrupt::parse_on_corrupt)]
    pub on_corrupt: OnCorrupt,

    /// Output options.
    #[command(flatten)]
    pub format: FormatArgs,
}

impl ConsumeArgs {
    /// `-t`'s entries, as given.
    pub fn topic_entries(&self) -> Vec<String> {
        self.topic
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// What `-t` subscribes to, checked before anything connects: patterns compile, and `-p`
    /// goes with exactly one topic name (as in kcat).
    pub fn subscription(&self) -> Result<TopicSubscription, Error> {
        let subscription = TopicSubscription::parse(self.topic_entries())?;
        if subscription.is_empty() {
            return Err(Error::InvalidArgument {
                what: "topic",
                detail: "-t names no topic".to_owned(),
            });
        }
        let single_name = subscription.names().len() == 1 && !subscription.has_patterns();
        if !self.read.partitions.is_empty() && !single_name {
            return Err(Error::InvalidArgument {
                what: "partitions",
                detail: format!(
                    "-p needs exactly one topic name in -t, not {:?} (patterns and lists \
                     read every partition)",
                    self.topic
                ),
            });
        }
        Ok(subscription)
    }

    /// `--idle-timeout` as a duration.
    pub fn idle_timeout(&self) -> Result<Option<Duration>, Error> {
        crate::time::parse_duration("--idle-timeout", self.idle_timeout.as_deref())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Line {
        #[command(flatten)]
        args: ConsumeArgs,
    }

    /// `krec consume` with `line`'s arguments.
    pub(crate) fn parse(line: &[&str]) -> ConsumeArgs {
        let words = std::iter::once("krec").chain(line.iter().copied());
        Line::try_parse_from(words).expect("valid arguments").args
    }

    #[test]
    fn partitions_go_with_exactly_one_topic_name() {
        let subscription = |line: &[&str]| parse(line).subscription();
        assert!(subscription(&["-t", "a", "-p", "0,1"]).is_ok());
        for topics in ["a,b", "^a", "a,^b"] {
            let error = subscription(&["-t", topics, "-p", "0"]).unwrap_err();
            assert_eq!(error.exit_code(), 2, "{topics}");
            assert!(
                error.to_string().contains("-p needs exactly one topic"),
                "{error}"
            );
        }
        let listed = subscription(&["-t", " a, ^b.* ,,c"]).unwrap();
        assert_eq!(listed.names(), ["a".to_owned(), "c".to_owned()]);
        assert_eq!(listed.patterns().collect::<Vec<_>>(), ["^b.*"]);
        assert!(subscription(&["-t", ","]).is_err());
        let bad = subscription(&["-t", "^a("]).unwrap_err();
        assert_eq!(bad.exit_code(), 2);
    }
}
