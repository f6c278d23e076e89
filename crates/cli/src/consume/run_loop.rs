//! The one loop of `krec consume`, whatever the [`Source`]: chunks to the decode threads until
//! `-e`, `-c`, a range's end, `--idle-timeout`, a failure or a signal ends it; then the
//! shutdown tail: stop fetching, write out what was fetched, close (a group member commits).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use krec_consumer::{Fetched, TopicPartition};
use tokio::signal::unix::Signal;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use super::ends::wait_until_ms;
use super::sink::{start_output_workers, Outputs};
use super::source::Source;
use super::ConsumeArgs;
use crate::metrics_server::{Exporter, MetricsEndpoint};
use crate::progress::{OutputWorkers, Progress};
use crate::stats::{Stats, StatsFormat};
use crate::Error;

/// Consumes `source` as `args` say; the number of corrupt batches skipped.
pub(super) async fn consume_from(
    args: &ConsumeArgs,
    source: Source,
    endpoint: Option<MetricsEndpoint>,
    idle_timeout: Option<Duration>,
    read_committed: bool,
) -> Result<u64, Error> {
    let progress = Arc::new(Progress::default());
    let (count_done, count_reached) = unbounded_channel::<()>();
    let (range_done, range_passed) = unbounded_channel();
    let outputs = Outputs {
        count_done,
        group: source.group_progress(),
        range_ends: source.range_ends(),
        range_done,
    };
    let workers = start_output_workers(args, &progress, outputs)?;
    serve_metrics(endpoint, source.metrics_source(), &progress, read_committed);
    let mut running = Running {
        source,
        workers,
        stats: stats_printer(args, read_committed)?,
        terminate: terminate_signal()?,
        idle: IdleTimer::new(idle_timeout),
        count_reached,
        range_passed,
        exit_at_end: args.exit_at_end,
        progress: progress.clone(),
    };
    let outcome = running.run().await;
    let Running {
        mut source,
        workers,
        stats,
        ..
    } = running;
    // Whatever ended the loop: stop fetching, let the decode threads write out what was
    // fetched, then close (a group member commits what was written, then leaves).
    source.stop_fetching();
    let finished = tokio::task::spawn_blocking(move || workers.finish())
        .await
        .unwrap_or(Err(krec_consumer::Error::Stopped.into()));
    let closed = source.close().await;
    stats.finish(&progress);
    outcome.and(finished).and(closed)?;
    Ok(progress.batches_skipped.load(Ordering::Relaxed))
}

/// What the loop watches besides its source.
struct Running {
    source: Source,
    workers: OutputWorkers,
    stats: Stats,
    terminate: Signal,
    idle: IdleTimer,
    /// Told when `-c` is satisfied.
    count_reached: UnboundedReceiver<()>,
    /// Told when a partition's records passed its range's end.
    range_passed: UnboundedReceiver<(String, i32)>,
    exit_at_end: bool,
    progress: Arc<Progress>,
}

impl Running {
    /// Hands out chunks until something ends the run: `Ok` for a clean stop.
    async fn run(&mut self) -> Result<(), Error> {
        // Looked at only when a partition reaches its end or the topics change, not per chunk.
        let mut check_ends = self.exit_at_end;
        loop {
            if check_ends && self.source.all_at_end() {
                return Ok(());
            }
            check_ends = false;
            if self.source.ranges_read() {
                return Ok(());
            }
            let settle_at = self.source.settle_at();
            tokio::select! {
                fetched = self.source.poll() => match fetched? {
                    Fetched::Chunk(chunk) => {
                        self.idle.touch();
                        self.source.hand_out(chunk, &mut self.workers)?;
                    }
                    Fetched::EndOfPartition { topic_partition, offset } => {
                        let TopicPartition { topic, partition } = topic_partition;
                        tracing::debug!(%topic, partition, offset, "reached the end of the partition");
                        self.source.reached_end(topic, partition);
                        check_ends = self.exit_at_end;
                    }
                    // Added topics have partitions to read; dropped ones no longer count for -e.
                    Fetched::SubscriptionChanged { .. } => check_ends = self.exit_at_end,
                    // A group's assignment follows the subscription (rebalances).
                    _ => {}
                },
                Some((topic, partition)) = self.range_passed.recv() => {
                    self.source.range_passed(&topic, partition);
                }
                _ = wait_until_ms(settle_at), if settle_at.is_some() => self.source.settle().await?,
                error = self.workers.failure() => return Err(error),
                _ = self.count_reached.recv() => return Ok(()),
                _ = self.idle.expired() => {
                    tracing::info!("no record for the --idle-timeout; exiting");
                    return Ok(());
                }
                // Ctrl-C or SIGTERM: stop fetching, write out what was fetched (a group member
                // then commits it and leaves).
                _ = tokio::signal::ctrl_c() => return Ok(()),
                _ = self.terminate.recv() => return Ok(()),
                _ = self.stats.tick() => self.stats.print(&self.source.positions(), &self.progress),
            }
        }
    }
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
