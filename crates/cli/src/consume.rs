//! `krec consume`: read topics (names, or patterns followed as topics come and go) from a
//! Kafka cluster and write their records out, alone or as a member of a consumer group (`-G`).
//!
//! The network side runs on one tokio thread (the consumer's fetch loops); decoding and
//! formatting run on decode threads, one per core by default, each owning whole partitions so
//! that output is in offset order per partition.

use std::io::{self, Write};
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use krec_batch::{DecodeConfig, OnCorrupt, Skipped};

use crate::cluster::{ClusterArgs, PartitionArgs};
use crate::corrupt::{report_line, SkipSource, SKIPPED_EXIT_CODE};
use crate::format::{FormatArgs, RecordContext, RecordWriter};
use crate::metrics_server::{Exporter, MetricsEndpoint};
use crate::progress::{Cells, ChunkOutput, OutputWorkers, Progress};
use crate::properties::ClientProperties;
use crate::range::{self, OffsetRange, PartitionEnd, RangeEnds, RangeWatch};
use crate::stats::{Stats, StatsFormat};
use crate::time::now_ms;
use crate::workers::{self, PartitionWorkers};
use crate::Error;
use krec_consumer::group::{
    Assignor, GroupConfig, GroupConsumer, GroupProtocol, NoListener, WrittenOffsets,
};
use krec_consumer::partitioner::Partitioner;
use krec_consumer::{
    ChunkBatchRef, Consumer, ConsumerConfig, Fetched, OffsetReset, PartitionChunk,
    PartitionPosition, StartOffset, TopicPartition, TopicSubscription,
};

/// Fetch responses per broker held (queued or being written) before the next fetch waits.
/// Fetching only just ahead of the decode threads lets the connection reuse its response
/// buffers (3 held plus 1 being read fill its pool of 4) instead of mapping fresh memory for
/// every response, which costs far more CPU than it saves (see BENCHMARKS.md, end to end).
const HELD_RESPONSES: usize = 3;

/// The `-G` options of `krec consume`.
#[derive(Debug, clap::Args)]
pub struct GroupArgs {
    /// Join this consumer group: the group's coordinator assigns the partitions, positions are
    /// committed as records are written out (kcat's `-G`).
    #[arg(short = 'G', long = "group", value_name = "GROUP")]
    pub group_id: Option<String>,

    /// Group protocol: `classic` (JoinGroup/SyncGroup) or `consumer` (KIP-848).
    #[arg(
        long = "group-protocol",
        default_value = "classic",
        value_name = "PROTOCOL"
    )]
    pub group_protocol: String,

    /// Classic protocol assignors in preference order: `range`, `roundrobin`,
    /// `cooperative-sticky` (default as the Java client: range,cooperative-sticky).
    #[arg(
        long = "assignor",
        value_delimiter = ',',
        default_value = "range,cooperative-sticky",
        value_name = "NAME,..."
    )]
    pub assignors: Vec<String>,

    /// KIP-848 server-side assignor (`uniform` or `range`; default: the broker's).
    #[arg(long = "server-assignor", value_name = "NAME")]
    pub server_assignor: Option<String>,

    /// Static membership: `group.instance.id`.
    #[arg(long = "group-instance-id", value_name = "ID")]
    pub instance_id: Option<String>,

    /// Group session timeout (classic protocol; default 45000, or `session.timeout.ms`).
    #[arg(long = "session-timeout-ms", value_name = "MS")]
    pub session_timeout_ms: Option<u64>,

    /// Time between group heartbeats (classic protocol; default 3000, or
    /// `heartbeat.interval.ms`).
    #[arg(long = "heartbeat-interval-ms", value_name = "MS")]
    pub heartbeat_interval_ms: Option<u64>,

    /// Time allowed for a rebalance.
    #[arg(
        long = "rebalance-timeout-ms",
        value_name = "MS",
        default_value_t = 60_000
    )]
    pub rebalance_timeout_ms: u64,

    /// Time between commits of the written positions.
    #[arg(
        long = "commit-interval-ms",
        value_name = "MS",
        default_value_t = 5_000
    )]
    pub commit_interval_ms: u64,
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
    #[arg(long = "idle-timeout", value_name = "DURATION")]
    pub idle_timeout: Option<String>,

    /// Exit once every partition has reached its end offset (like kcat's `-e`).
    #[arg(short = 'e', long = "exit")]
    pub exit_at_end: bool,

    /// Exit after writing this many records.
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,

    /// When a fetch offset is out of range: `earliest`, `latest` or `fail`.
    #[arg(long = "reset", default_value = "earliest", value_name = "POLICY")]
    pub reset: String,

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

    /// Record bytes per fetch response.
    #[arg(long = "max-bytes", value_name = "BYTES", default_value_t = 50 << 20)]
    pub max_bytes: i32,

    /// Record bytes per partition in a fetch response.
    #[arg(long = "partition-max-bytes", value_name = "BYTES", default_value_t = 1 << 20)]
    pub partition_max_bytes: i32,

    /// Fetched bytes buffered before fetching pauses.
    #[arg(long = "buffer-bytes", value_name = "BYTES", default_value_t = 256 << 20)]
    pub buffer_bytes: usize,

    /// How long the broker may wait for data before answering a fetch, in milliseconds.
    #[arg(long = "max-wait-ms", value_name = "MS", default_value_t = 500)]
    pub max_wait_ms: u64,

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
    /// The consumer settings these arguments and `properties` describe.
    pub fn consumer_config(&self, properties: &ClientProperties) -> Result<ConsumerConfig, Error> {
        let brokers = match (&self.cluster.brokers, &properties.bootstrap) {
            (Some(brokers), _) | (None, Some(brokers)) => brokers,
            (None, None) => {
                return Err(Error::InvalidArgument {
                    what: "brokers",
                    detail: "give -b HOST:PORT or bootstrap.servers in the properties".to_owned(),
                })
            }
        };
        let mut config = ConsumerConfig::new(ConsumerConfig::parse_bootstrap(brokers)?);
        config.connection.security = properties.security.clone();
        if let Some(client_id) = &properties.client_id {
            config.connection.client_id = client_id.clone();
        }
        if let Some(ms) = properties.request_timeout_ms {
            config.connection.request_timeout = Duration::from_millis(ms);
        }
        config.client_rack = properties.client_rack.clone();
        config.read_committed = self.read.read_committed();
        config.offset_reset = self.reset.parse::<OffsetReset>()?;
        if self.max_bytes <= 0 || self.partition_max_bytes <= 0 {
            return Err(Error::InvalidArgument {
                what: "fetch size",
                detail: "--max-bytes and --partition-max-bytes must be positive".to_owned(),
            });
        }
        config.max_bytes = self.max_bytes;
        config.partition_max_bytes = self.partition_max_bytes;
        config.connection.max_frame_bytes = self.max_bytes as usize + (16 << 20);
        config.buffer_bytes = self.buffer_bytes.max(1);
        config.max_held_responses = Some(HELD_RESPONSES);
        config.max_wait = Duration::from_millis(self.max_wait_ms);
        config.max_fetch_version = self.fetch_version;
        config.metadata_refresh = self.metadata_refresh(properties)?;
        config.give_up_after = Duration::from_millis(self.give_up_after_ms);
        config.fetch_sessions = properties.fetch_sessions.unwrap_or(true);
        config.decode = DecodeConfig {
            verify_crc: !self.no_crc,
            ..DecodeConfig::default()
        };
        Ok(config)
    }
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

    /// `--metadata-refresh-ms`, else the properties' value, else the Java client's 5 minutes.
    fn metadata_refresh(&self, properties: &ClientProperties) -> Result<Duration, Error> {
        let millis = self
            .metadata_refresh_ms
            .or(properties.metadata_refresh_ms)
            .unwrap_or(300_000);
        if millis == 0 {
            return Err(Error::InvalidArgument {
                what: "metadata refresh",
                detail: "--metadata-refresh-ms (or metadata.max.age.ms) must be positive"
                    .to_owned(),
            });
        }
        Ok(Duration::from_millis(millis))
    }

    /// `--idle-timeout` as a duration.
    pub fn idle_timeout(&self) -> Result<Option<Duration>, Error> {
        let Some(text) = &self.idle_timeout else {
            return Ok(None);
        };
        let invalid = |detail: &str| Error::InvalidArgument {
            what: "--idle-timeout",
            detail: format!("{text:?}: {detail}"),
        };
        let duration = text
            .parse::<jiff::SignedDuration>()
            .map_err(|_| invalid("expected a duration such as 30s, 5m, 1h30m or 500ms"))?;
        if duration.is_negative() || duration.is_zero() {
            return Err(invalid("the duration must be positive"));
        }
        Ok(Some(duration.unsigned_abs()))
    }

    /// The group settings `-G` and its options describe; `start` (`-o`) is where partitions
    /// without a committed offset begin.
    pub fn group_config(
        &self,
        group: &str,
        start: StartOffset,
        properties: &ClientProperties,
    ) -> Result<GroupConfig, Error> {
        let options = &*self.group;
        let mut config = GroupConfig::new(group, self.topic_entries());
        config.protocol = options.group_protocol.parse::<GroupProtocol>()?;
        config.assignors = options
            .assignors
            .iter()
            .map(|a| a.parse::<Assignor>())
            .collect::<Result<_, _>>()?;
        config.server_assignor = options.server_assignor.clone();
        config.instance_id = options.instance_id.clone();
        let session_ms = options.session_timeout_ms.or(properties.session_timeout_ms);
        let heartbeat_ms = options
            .heartbeat_interval_ms
            .or(properties.heartbeat_interval_ms);
        config.session_timeout = Duration::from_millis(session_ms.unwrap_or(45_000));
        config.heartbeat_interval = Duration::from_millis(heartbeat_ms.unwrap_or(3_000).max(1));
        config.rebalance_timeout = Duration::from_millis(options.rebalance_timeout_ms);
        config.commit_interval = Duration::from_millis(options.commit_interval_ms.max(1));
        config.start_without_commit = match start {
            StartOffset::Beginning | StartOffset::End => start,
            other => {
                return Err(Error::InvalidArgument {
                    what: "offset",
                    detail: format!(
                        "{other:?}: with -G, -o says where partitions without a committed \
                         offset start: beginning or end"
                    ),
                })
            }
        };
        if !self.read.partitions.is_empty() {
            return Err(Error::InvalidArgument {
                what: "partitions",
                detail: "-p cannot be used with -G: the group assigns the partitions".to_owned(),
            });
        }
        Ok(config)
    }
}

/// Runs `krec consume`.
pub fn run(args: ConsumeArgs) -> ExitCode {
    crate::cluster::init_logging();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(source) => {
            return report(&Error::Io {
                context: "starting the async runtime".to_owned(),
                source,
            })
        }
    };
    // Shares its skip counter with the writers' copies.
    let schema = args.format.schema.clone();
    match runtime.block_on(consume(args)) {
        Ok(batches) => {
            let records = schema.records_skipped();
            if batches + records == 0 {
                return ExitCode::SUCCESS;
            }
            let _ = std::io::stdout().flush();
            if batches > 0 {
                eprintln!("krec consume: {batches} corrupt batches skipped");
            }
            if records > 0 {
                eprintln!("krec consume: {records} undecodable records skipped");
            }
            ExitCode::from(SKIPPED_EXIT_CODE)
        }
        // The reader went away (`krec consume ... | head`): stopping is what it asked for.
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(error) => report(&error),
    }
}

fn report(error: &Error) -> ExitCode {
    let _ = std::io::stdout().flush();
    eprintln!("krec consume: {error}");
    ExitCode::from(error.exit_code())
}

/// Consumes as `args` say; the number of corrupt batches skipped.
async fn consume(args: ConsumeArgs) -> Result<u64, Error> {
    let properties = args.cluster.client.load()?;
    let config = args.consumer_config(&properties)?;
    let range = OffsetRange::parse(&args.offset, now_ms())?;
    let start = range.start;
    let idle_timeout = args.idle_timeout()?;
    // Check the format and the topics before touching the network.
    args.format
        .schema
        .set_properties(&properties.schema_registry);
    args.format
        .schema
        .set_on_corrupt(args.on_corrupt, "consume");
    args.format.output_format()?;
    let subscription = args.subscription()?;
    if args.count == Some(0) {
        return Ok(0);
    }
    let endpoint = match &args.monitoring.metrics {
        Some(address) => Some(crate::metrics_server::bind(address).await?),
        None => None,
    };
    let group_id = args.group.group_id.clone().or(properties.group_id.clone());
    if range.end.is_some() && (group_id.is_some() || subscription.has_patterns()) {
        return Err(Error::InvalidArgument {
            what: "offset",
            detail: "a range with an end reads named topics without a group (-G) or pattern"
                .to_owned(),
        });
    }
    if let Some(group) = group_id {
        let group_config = args.group_config(&group, start, &properties)?;
        return consume_group(&args, config, group_config, endpoint, idle_timeout).await;
    }
    let read_committed = config.read_committed;
    let mut consumer = Consumer::connect(config.clone()).await?;
    let range_ends = Arc::new(RangeEnds::default());
    let mut range_watch = None;
    if range.end.is_some() {
        let topics = bounded_topics(&consumer, &args, &subscription).await?;
        range_watch =
            Some(range::assign_bounded(&mut consumer, &topics, range, &range_ends).await?);
    } else {
        start_consuming(&mut consumer, &args, subscription, start).await?;
    }

    let progress = Arc::new(Progress::default());
    let (count_done, mut count_reached) = tokio::sync::mpsc::unbounded_channel::<()>();
    let (range_done, mut range_passed) = tokio::sync::mpsc::unbounded_channel();
    let outputs = Outputs {
        count_done,
        written: None,
        range_ends: range_ends.clone(),
        range_done,
    };
    let mut workers = start_output_workers(&args, &progress, outputs)?;
    serve_metrics(
        endpoint,
        consumer.metrics_source(),
        &progress,
        read_committed,
    );

    let mut ends = EndWatch::default();
    if args.exit_at_end && consumer.positions().is_empty() {
        tracing::warn!(topics = %args.topic, "nothing to read; exiting (-e)");
    }
    let mut stats = stats_printer(&args, read_committed)?;
    let mut terminate = terminate_signal()?;
    let mut idle = IdleTimer::new(idle_timeout);
    // Looked at only when a partition reaches its end or the topics change, not per chunk.
    let mut check_ends = args.exit_at_end;
    let outcome = loop {
        // Every assigned partition looked at only once enough of them are at their end.
        if check_ends
            && ends.count() >= consumer.assigned_count()
            && ends.all_reached(&consumer.positions())
        {
            break Ok(());
        }
        check_ends = false;
        if range_watch.as_ref().is_some_and(RangeWatch::is_done) {
            break Ok(());
        }
        let settle_at = range::next_unsettled(&range_ends);
        tokio::select! {
            fetched = consumer.poll() => match fetched {
                Ok(Fetched::Chunk(chunk)) => {
                    idle.touch();
                    // The partition's name is copied only when this chunk ends its range.
                    let passed = range_watch.is_some()
                        && range_ends
                            .get(chunk.topic(), chunk.partition())
                            .and_then(|end| end.offset)
                            .is_some_and(|end| chunk.next_offset() >= end);
                    let passed = passed.then(|| (chunk.topic().to_owned(), chunk.partition()));
                    if let Err(error) = workers.submit(chunk) {
                        break Err(error);
                    }
                    if let (Some((topic, partition)), Some(watch)) = (passed, range_watch.as_mut()) {
                        watch.close(&mut consumer, &topic, partition);
                    }
                }
                Ok(Fetched::EndOfPartition { topic, partition, offset }) => {
                    tracing::debug!(%topic, partition, offset, "reached the end of the partition");
                    ends.reached(topic, partition);
                    check_ends = args.exit_at_end;
                }
                // Added topics have partitions to read; dropped ones no longer count for -e.
                Ok(Fetched::SubscriptionChanged { .. }) => check_ends = args.exit_at_end,
                Ok(_) => {}
                Err(error) => break Err(error.into()),
            },
            Some((topic, partition)) = range_passed.recv() => {
                if let Some(watch) = range_watch.as_mut() {
                    watch.close(&mut consumer, &topic, partition);
                }
            }
            _ = wait_until_ms(settle_at), if settle_at.is_some() => {
                if let Err(error) = range::settle_passed(&consumer, &range_ends).await {
                    break Err(error);
                }
                if let Some(watch) = range_watch.as_mut() {
                    watch.close_reached(&mut consumer, &range_ends);
                }
            }
            error = workers.failure() => break Err(error),
            _ = count_reached.recv() => break Ok(()),
            _ = idle.expired() => {
                tracing::info!("no record for the --idle-timeout; exiting");
                break Ok(());
            }
            // Ctrl-C: stop fetching, but write out what was already fetched.
            _ = tokio::signal::ctrl_c() => break Ok(()),
            _ = terminate.recv() => break Ok(()),
            _ = stats.tick() => stats.print(&consumer.positions(), &progress),
        }
    };
    // Ends the brokers' fetch sessions (bounded) and stops fetching.
    consumer.close().await;
    let finished = tokio::task::spawn_blocking(move || workers.finish())
        .await
        .unwrap_or(Err(krec_consumer::Error::Stopped.into()));
    stats.finish(&progress);
    outcome.and(finished)?;
    Ok(progress.batches_skipped.load(Ordering::Relaxed))
}

/// With `--key` and `--partitioner`, only the partition that partitioner sends the key to;
/// otherwise all of `partitions`.
/// `partitions` of `topic`, in the consumer's shape.
fn topic_partitions(topic: &str, partitions: &[i32]) -> Vec<TopicPartition> {
    let topic: std::sync::Arc<str> = std::sync::Arc::from(topic);
    partitions
        .iter()
        .map(|&partition| TopicPartition::new(topic.clone(), partition))
        .collect()
}

fn key_partition(args: &ConsumeArgs, partitions: Vec<i32>) -> Result<Vec<i32>, Error> {
    let Some(partitioner) = &args.partitioner else {
        return Ok(partitions);
    };
    let partitioner = partitioner.parse::<Partitioner>()?;
    let filter = args.format.filter.filter()?;
    let Some(key) = filter.as_ref().and_then(|filter| filter.key()) else {
        return Err(Error::InvalidArgument {
            what: "--partitioner",
            detail: "it finds the partition of a --key; give --key too".to_owned(),
        });
    };
    let partition = partitioner.partition(key, partitions.len() as i32);
    eprintln!(
        "krec consume: reading partition {partition} only: {partitioner:?} sends the key there \
         among {} partitions",
        partitions.len()
    );
    Ok(vec![partition])
}

/// The topics of a bounded range and their partitions: `-p`'s, the `--key`'s, or all.
async fn bounded_topics(
    consumer: &Consumer,
    args: &ConsumeArgs,
    subscription: &TopicSubscription,
) -> Result<Vec<(String, Vec<i32>)>, Error> {
    let mut topics = Vec::new();
    for topic in subscription.names() {
        let partitions = if args.read.partitions.is_empty() {
            key_partition(args, consumer.partitions(topic).await?)?
        } else {
            args.read.partitions.clone()
        };
        topics.push((topic.clone(), partitions));
    }
    Ok(topics)
}

/// `--idle-timeout`: a deadline pushed back by every chunk that arrives.
struct IdleTimer {
    timeout: Option<Duration>,
    deadline: tokio::time::Instant,
}

impl IdleTimer {
    fn new(timeout: Option<Duration>) -> Self {
        Self {
            timeout,
            deadline: tokio::time::Instant::now() + timeout.unwrap_or_default(),
        }
    }

    fn touch(&mut self) {
        if let Some(timeout) = self.timeout {
            self.deadline = tokio::time::Instant::now() + timeout;
        }
    }

    /// Completes once the timeout has passed without a chunk (never without a timeout).
    async fn expired(&self) {
        match self.timeout {
            Some(_) => tokio::time::sleep_until(self.deadline).await,
            None => std::future::pending().await,
        }
    }
}

/// Sleeps until the wall clock reaches `ms` since the epoch, plus a second for records
/// stamped just before it to arrive (forever when there is none).
async fn wait_until_ms(ms: Option<i64>) {
    let Some(ms) = ms else {
        return std::future::pending().await;
    };
    let wait = ms.saturating_sub(now_ms()).max(0) as u64 + 1_000;
    tokio::time::sleep(Duration::from_millis(wait)).await;
}

/// Starts reading what `-t` names: the `-p` partitions of its one topic, or every partition
/// of every topic it takes, followed as the patterns match other topics.
async fn start_consuming(
    consumer: &mut Consumer,
    args: &ConsumeArgs,
    subscription: TopicSubscription,
    start: StartOffset,
) -> Result<(), Error> {
    match subscription.names() {
        [topic] if !args.read.partitions.is_empty() => {
            let partitions = topic_partitions(topic, &args.read.partitions);
            consumer.assign(&partitions, start).await?;
        }
        [topic] if args.partitioner.is_some() && !subscription.has_patterns() => {
            let partitions = key_partition(args, consumer.partitions(topic).await?)?;
            consumer
                .assign(&topic_partitions(topic, &partitions), start)
                .await?;
        }
        _ => consumer.subscribe(subscription, start).await?,
    }
    Ok(())
}

/// `-e` without a group: the partitions that have reached their end (each counts once, as in
/// kcat). Every partition consumed now must be among them; topics a pattern adds later count
/// from when they are added, and dropped (deleted) ones no longer count.
#[derive(Debug, Default)]
struct EndWatch {
    reached: std::collections::BTreeSet<(Arc<str>, i32)>,
}

impl EndWatch {
    fn reached(&mut self, topic: Arc<str>, partition: i32) {
        self.reached.insert((topic, partition));
    }

    /// Partitions that reached their end, dropped ones included.
    fn count(&self) -> usize {
        self.reached.len()
    }

    fn all_reached(&self, positions: &[PartitionPosition]) -> bool {
        positions
            .iter()
            .all(|p| self.reached.contains(&(p.topic.clone(), p.partition)))
    }
}

/// Which assigned partitions of a group member are at their end (for `-e`): a partition
/// leaves the set when it fetches more, and the check costs a look at the whole assignment
/// only once enough partitions are at their end.
#[derive(Debug, Default)]
struct GroupEnds {
    at_end: std::collections::HashMap<Arc<str>, std::collections::HashSet<i32>>,
    count: usize,
}

impl GroupEnds {
    fn fetched(&mut self, topic: &str, partition: i32) {
        if let Some(partitions) = self.at_end.get_mut(topic) {
            self.count -= usize::from(partitions.remove(&partition));
        }
    }

    fn reached(&mut self, topic: Arc<str>, partition: i32) {
        self.count += usize::from(self.at_end.entry(topic).or_default().insert(partition));
    }

    /// Every partition of `assignment` (not empty) is at its end.
    fn all_reached(&mut self, assignment: &std::collections::BTreeSet<TopicPartition>) -> bool {
        if assignment.is_empty() || self.count < assignment.len() {
            return false;
        }
        // Partitions revoked since they reached their end no longer count.
        let at_end = |key: &TopicPartition| {
            self.at_end
                .get(&*key.topic)
                .is_some_and(|p| p.contains(&key.partition))
        };
        let reached = assignment.iter().filter(|p| at_end(p)).count();
        if reached == assignment.len() {
            return true;
        }
        for (topic, partitions) in &mut self.at_end {
            partitions.retain(|&p| assignment.contains(&TopicPartition::new(topic.clone(), p)));
        }
        self.count = reached;
        false
    }
}

/// What the decode threads report to, besides the progress counters.
#[derive(Clone, Debug)]
struct Outputs {
    /// Told when `-c` is satisfied.
    count_done: tokio::sync::mpsc::UnboundedSender<()>,
    /// For a group member: what was written, so only that is committed.
    written: Option<Arc<WrittenOffsets>>,
    /// Where bounded ranges end.
    range_ends: Arc<RangeEnds>,
    /// Told when a partition's records passed its range's end.
    range_done: tokio::sync::mpsc::UnboundedSender<(String, i32)>,
}

/// The decode threads of `krec consume`: each writes and flushes its chunks, says on
/// `count_done` when `-c` is satisfied, and, for a group member, marks what it wrote in
/// `written`, so only records that left the sink are committed.
fn start_output_workers(
    args: &ConsumeArgs,
    progress: &Arc<Progress>,
    outputs: Outputs,
) -> Result<OutputWorkers, Error> {
    let threads = args.threads.unwrap_or_else(workers::default_threads);
    let workers = PartitionWorkers::start(threads, |_| {
        let writer = args.format.writer(std::io::stdout());
        let progress = progress.clone();
        let Outputs {
            count_done,
            written,
            range_ends,
            range_done,
        } = outputs.clone();
        let limit = args.count;
        let on_corrupt = args.on_corrupt;
        let mut writer = writer.ok();
        let mut cells = Cells::default();
        move |chunk: PartitionChunk| {
            let Some(writer) = writer.as_mut() else {
                return Ok(());
            };
            let end = range_ends.get(chunk.topic(), chunk.partition());
            let outcome = write_chunk(&chunk, writer, on_corrupt, &progress, (limit, end))?;
            if outcome.passed_end {
                let _ = range_done.send((chunk.topic().to_owned(), chunk.partition()));
            }
            let output = ChunkOutput {
                records: outcome.records,
                scanned: outcome.scanned,
                bytes: chunk.records_bytes().len() as u64,
                next_offset: outcome.next_offset,
            };
            progress.written(&mut cells, chunk.topic(), chunk.partition(), output);
            // Flushed by write_chunk, and its skipped batches reported: these records have
            // left the sink, so they may be committed.
            if let (Some(written), Some(next_offset)) = (&written, outcome.next_offset) {
                written.mark(chunk.topic(), chunk.partition(), next_offset);
            }
            if outcome.reached {
                let _ = count_done.send(());
            }
            Ok(())
        }
    })?;
    Ok(OutputWorkers::new(workers, progress.clone()))
}

/// The `--stats` printer the arguments ask for.
fn stats_printer(args: &ConsumeArgs, read_committed: bool) -> Result<Stats, Error> {
    let monitoring = &*args.monitoring;
    let format = monitoring.stats_format.parse::<StatsFormat>()?;
    Ok(Stats::new(monitoring.stats, format, read_committed))
}

/// Starts answering `--metrics` scrapes, if it was given.
fn serve_metrics(
    endpoint: Option<MetricsEndpoint>,
    source: krec_consumer::MetricsSource,
    progress: &Arc<Progress>,
    read_committed: bool,
) {
    if let Some(endpoint) = endpoint {
        endpoint.serve(Exporter::new(source, progress.clone(), read_committed));
    }
}

/// What writing one chunk did.
#[derive(Debug, Clone, Copy)]
struct ChunkWritten {
    /// This chunk satisfied `-c`.
    reached: bool,
    /// A record of this chunk is past the partition's range.
    passed_end: bool,
    /// Records written.
    records: u64,
    /// Data records decoded, matching the filters or not.
    scanned: u64,
    /// The partition is written out up to here (None: nothing of it was written).
    next_offset: Option<i64>,
}

/// Decodes one chunk, writes its records and flushes them; reports each corrupt batch that
/// `on_corrupt` skips on stderr (before returning, so before the chunk can be committed).
/// `(limit, end)`: `-c`'s count and where the partition's range ends.
fn write_chunk<W: Write>(
    chunk: &PartitionChunk,
    writer: &mut RecordWriter<W>,
    on_corrupt: OnCorrupt,
    progress: &Progress,
    (limit, end): (Option<u64>, Option<PartitionEnd>),
) -> Result<ChunkWritten, Error> {
    if progress.count_reached.load(Ordering::Relaxed) {
        return Ok(ChunkWritten {
            reached: false,
            passed_end: false,
            records: 0,
            scanned: 0,
            next_offset: None,
        });
    }
    let context = RecordContext::new(chunk.topic(), chunk.partition());
    let mut state = ChunkWriting {
        writer,
        context: &context,
        progress,
        limit,
        end,
        written: 0,
        scanned: 0,
        last_written: None,
        reached: false,
        passed_end: false,
    };
    // Batches parsed in place and lent (`try_for_each_ref`): moving each out by value costs
    // one-record batches a measurable share of their CPU.
    chunk.batches().try_for_each_ref_or_skip(
        on_corrupt,
        |batch| state.write_batch(batch),
        |skipped| report_skipped(chunk, progress, skipped),
    )?;
    let ChunkWriting {
        writer,
        written,
        scanned,
        last_written,
        reached,
        passed_end,
        ..
    } = state;
    writer.flush().map_err(output_error)?;
    // Cut short by `-c`: written up to the last record; otherwise the whole chunk (control
    // records and compacted gaps included).
    let next_offset = if reached {
        last_written.map(|offset| offset + 1)
    } else {
        Some(chunk.next_offset())
    };
    Ok(ChunkWritten {
        reached,
        passed_end,
        records: written,
        scanned,
        next_offset,
    })
}

/// One report line on stderr for a skipped corrupt batch of `chunk`, counted in `progress`.
fn report_skipped(
    chunk: &PartitionChunk,
    progress: &Progress,
    skipped: &Skipped,
) -> Result<(), Error> {
    let source = SkipSource {
        command: "consume",
        file: None,
        topic: Some(chunk.topic()),
        partition: Some(chunk.partition()),
        fetch_offset: Some(chunk.fetch_offset()),
    };
    let line = report_line(&source, skipped);
    writeln!(io::stderr().lock(), "{line}").map_err(|source| Error::Io {
        context: "reporting a skipped batch".to_owned(),
        source,
    })?;
    progress.batches_skipped.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

fn output_error(source: io::Error) -> Error {
    Error::output("writing records", source)
}

/// What [`write_chunk`] keeps while it writes a chunk's batches.
struct ChunkWriting<'w, W: Write> {
    writer: &'w mut RecordWriter<W>,
    context: &'w RecordContext<'w>,
    progress: &'w Progress,
    limit: Option<u64>,
    /// Where the partition's range ends.
    end: Option<PartitionEnd>,
    written: u64,
    /// Data records decoded, written or not (filters).
    scanned: u64,
    last_written: Option<i64>,
    /// `-c`'s count was reached by a record of this chunk.
    reached: bool,
    /// A record past the range's end was met: nothing after it is written.
    passed_end: bool,
}

impl<W: Write> ChunkWriting<'_, W> {
    /// Writes one batch: its control records if they are printed, else its data records.
    fn write_batch(&mut self, batch: ChunkBatchRef<'_, '_>) -> Result<ControlFlow<()>, Error> {
        if !batch.batch().is_control() {
            return self.write_records(batch);
        }
        if self.writer.prints_control() {
            for control in batch.control_records() {
                self.writer
                    .write_control(self.context, &control?)
                    .map_err(output_error)?;
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Writes the data records of `batch`; `Break` once `-c`'s count is reached.
    // A function of its own, so that the record loop gets the record iterator inlined (inside
    // the batch closure the compiler called it once per record).
    #[inline(never)]
    fn write_records(&mut self, batch: ChunkBatchRef<'_, '_>) -> Result<ControlFlow<()>, Error> {
        let mut records = batch.records_in_place();
        while let Some(record) = records.next_ref() {
            let record = record?;
            if let Some(end) = &self.end {
                if end.excludes(record.offset(), record.timestamp()) {
                    self.passed_end = true;
                    return Ok(ControlFlow::Break(()));
                }
                if record.offset() < end.from {
                    continue;
                }
            }
            self.scanned += 1;
            if !self.writer.admits(record) {
                continue;
            }
            if let Some(limit) = self.limit {
                let slot = self.progress.claimed.fetch_add(1, Ordering::Relaxed);
                if slot >= limit {
                    return Ok(ControlFlow::Break(()));
                }
                if slot + 1 == limit {
                    self.progress.count_reached.store(true, Ordering::Relaxed);
                    self.reached = true;
                }
            }
            self.writer
                .write_record(self.context, record)
                .map_err(output_error)?;
            self.last_written = Some(record.offset());
            self.written += 1;
            if self.reached {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }
}

/// SIGTERM, handled like Ctrl-C (a clean stop: write out, commit, leave the group).
fn terminate_signal() -> Result<tokio::signal::unix::Signal, Error> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(|source| {
        Error::Io {
            context: "installing the SIGTERM handler".to_owned(),
            source,
        }
    })
}

/// `krec consume -G`: a group member writing the partitions assigned to it.
async fn consume_group(
    args: &ConsumeArgs,
    config: ConsumerConfig,
    group_config: GroupConfig,
    endpoint: Option<MetricsEndpoint>,
    idle_timeout: Option<Duration>,
) -> Result<u64, Error> {
    let read_committed = config.read_committed;
    let mut group = GroupConsumer::join(config.clone(), group_config, NoListener).await?;
    let written: Arc<WrittenOffsets> = group.written();
    let progress = Arc::new(Progress::default());
    let (count_done, mut count_reached) = tokio::sync::mpsc::unbounded_channel::<()>();
    let (range_done, _) = tokio::sync::mpsc::unbounded_channel();
    let outputs = Outputs {
        count_done,
        written: Some(written),
        range_ends: Arc::new(RangeEnds::default()),
        range_done,
    };
    let mut workers = start_output_workers(args, &progress, outputs)?;
    serve_metrics(endpoint, group.metrics_source(), &progress, read_committed);
    let mut ends = GroupEnds::default();
    let mut stats = stats_printer(args, read_committed)?;
    let mut terminate = terminate_signal()?;
    let mut idle = IdleTimer::new(idle_timeout);
    let outcome = loop {
        tokio::select! {
            fetched = group.poll() => match fetched {
                Ok(Fetched::Chunk(chunk)) => {
                    idle.touch();
                    ends.fetched(chunk.topic(), chunk.partition());
                    if let Err(error) = workers.submit(chunk) {
                        break Err(error);
                    }
                }
                Ok(Fetched::EndOfPartition { topic, partition, offset }) => {
                    tracing::debug!(%topic, partition, offset, "reached the end of the partition");
                    ends.reached(topic, partition);
                    if args.exit_at_end && ends.all_reached(group.assignment()) {
                        break Ok(());
                    }
                }
                // The group's assignment follows the subscription (rebalances).
                Ok(_) => {}
                Err(error) => break Err(error.into()),
            },
            error = workers.failure() => break Err(error),
            _ = count_reached.recv() => break Ok(()),
            _ = idle.expired() => {
                tracing::info!("no record for the --idle-timeout; exiting");
                break Ok(());
            }
            // Ctrl-C or SIGTERM: stop fetching, write out what was fetched, commit, leave.
            _ = tokio::signal::ctrl_c() => break Ok(()),
            _ = terminate.recv() => break Ok(()),
            _ = stats.tick() => stats.print(&group.positions(), &progress),
        }
    };
    group.stop_fetching();
    let finished = tokio::task::spawn_blocking(move || workers.finish())
        .await
        .unwrap_or(Err(krec_consumer::Error::Stopped.into()));
    let closed = group.close().await;
    stats.finish(&progress);
    outcome.and(finished).and(closed.map_err(Error::from))?;
    Ok(progress.batches_skipped.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Line {
        #[command(flatten)]
        args: ConsumeArgs,
    }

    fn parse(line: &[&str]) -> ConsumeArgs {
        let words = std::iter::once("krec").chain(line.iter().copied());
        Line::try_parse_from(words).expect("valid arguments").args
    }

    #[test]
    fn the_refresh_flag_wins_over_the_properties_which_win_over_the_default() {
        let from_properties = ClientProperties {
            metadata_refresh_ms: Some(2_000),
            ..ClientProperties::default()
        };
        let plain = parse(&["-b", "h:1", "-t", "^a"]);
        let refresh = |args: &ConsumeArgs, properties: &ClientProperties| {
            args.consumer_config(properties).map(|c| c.metadata_refresh)
        };
        let none = ClientProperties::default();
        assert_eq!(refresh(&plain, &none).unwrap(), Duration::from_secs(300));
        assert_eq!(
            refresh(&plain, &from_properties).unwrap(),
            Duration::from_secs(2)
        );
        let flagged = parse(&["-b", "h:1", "-t", "^a", "--metadata-refresh-ms", "500"]);
        assert_eq!(
            refresh(&flagged, &from_properties).unwrap(),
            Duration::from_millis(500)
        );
        let zero = parse(&["-b", "h:1", "-t", "^a", "--metadata-refresh-ms", "0"]);
        assert!(refresh(&zero, &none).is_err());
    }

    #[test]
    fn a_group_member_is_at_the_end_when_every_assigned_partition_is() {
        let assigned = |list: &[(&str, i32)]| -> std::collections::BTreeSet<TopicPartition> {
            list.iter()
                .map(|&(t, p)| TopicPartition::new(t, p))
                .collect()
        };
        let mut ends = GroupEnds::default();
        assert!(!ends.all_reached(&assigned(&[])), "nothing assigned yet");
        ends.reached(Arc::from("a"), 0);
        ends.reached(Arc::from("b"), 1);
        assert!(!ends.all_reached(&assigned(&[("a", 0), ("a", 1)])));
        // More came for a/0 after its end: it must reach the end again.
        ends.fetched("a", 0);
        ends.reached(Arc::from("a"), 1);
        assert!(!ends.all_reached(&assigned(&[("a", 0), ("a", 1)])));
        ends.reached(Arc::from("a"), 0);
        assert!(ends.all_reached(&assigned(&[("a", 0), ("a", 1)])));
        // b/1 was revoked: it no longer counts towards a later, larger assignment.
        let larger = assigned(&[("a", 0), ("a", 1), ("c", 0)]);
        assert!(!ends.all_reached(&larger));
        ends.reached(Arc::from("c"), 0);
        assert!(ends.all_reached(&larger));
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
