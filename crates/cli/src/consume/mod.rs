//! `krec consume`: read topics (names, or patterns followed as topics come and go) from a
//! Kafka cluster and write their records out, alone or as a member of a consumer group (`-G`).
//!
//! The network side runs on one tokio thread (the consumer's fetch loops); decoding and
//! formatting run on decode threads, one per core by default, each owning whole partitions so
//! that output is in offset order per partition.

mod args;
mod config;
mod ends;
mod sink;

pub use args::{ConsumeArgs, GroupArgs, MonitoringArgs};

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use krec_consumer::group::{GroupConfig, GroupConsumer, NoListener, WrittenOffsets};
use krec_consumer::partitioner::Partitioner;
use krec_consumer::{
    Consumer, ConsumerConfig, Fetched, StartOffset, TopicPartition, TopicSubscription,
};

use crate::corrupt::SKIPPED_EXIT_CODE;
use crate::metrics_server::{Exporter, MetricsEndpoint};
use crate::progress::Progress;
use crate::range::{self, OffsetRange, RangeEnds, RangeWatch};
use crate::stats::{Stats, StatsFormat};
use crate::time::now_ms;
use crate::Error;
use ends::{EndWatch, GroupEnds};
use sink::{start_output_workers, Outputs};

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

/// `partitions` of `topic`, in the consumer's shape.
fn topic_partitions(topic: &str, partitions: &[i32]) -> Vec<TopicPartition> {
    let topic: std::sync::Arc<str> = std::sync::Arc::from(topic);
    partitions
        .iter()
        .map(|&partition| TopicPartition::new(topic.clone(), partition))
        .collect()
}

/// With `--key` and `--partitioner`, only the partition that partitioner sends the key to;
/// otherwise all of `partitions`.
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
