//! The one loop of `krec consume`, whatever the [`Source`] (assigned partitions, a consumer
//! group or a share group): chunks to the decode threads until `-e`, `-c`, a range's end,
//! `--idle-timeout`, a failure or a signal ends it; then the shutdown tail: stop fetching,
//! write out what was fetched, close (a group member commits, a share group member releases
//! what it did not write).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::signal::unix::Signal;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use super::ends::wait_until_ms;
use super::sink::{start_output_workers, OutputChunk, Outputs};
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
        acknowledger: source.acknowledger(),
        range_ends: source.range_ends(),
        range_done,
    };
    let workers = start_output_workers(args, &progress, outputs)?;
    serve_metrics(endpoint, &source, &progress, read_committed);
    let mut running = Running {
        source,
        workers,
        stats: stats_printer(args, read_committed)?,
        terminate: terminate_signal()?,
        idle: IdleTimer::new(idle_timeout),
        count_reached,
        range_passed,
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
    if let (true, Ok(Some(summary))) = (args.monitoring.stats.is_some(), &closed) {
        eprintln!("{summary}");
    }
    outcome.and(finished).and(closed)?;
    Ok(progress.batches_skipped.load(Ordering::Relaxed))
}

/// What the loop watches besides its source.
struct Running {
    source: Source,
    workers: OutputWorkers<OutputChunk>,
    stats: Stats,
    terminate: Signal,
    idle: IdleTimer,
    /// Told when `-c` is satisfied.
    count_reached: UnboundedReceiver<()>,
    /// Told when a partition's records passed its range's end.
    range_passed: UnboundedReceiver<(String, i32)>,
    progress: Arc<Progress>,
}

impl Running {
    /// Hands out chunks until something ends the run: `Ok` for a clean stop.
    async fn run(&mut self) -> Result<(), Error> {
        loop {
            if self.source.ranges_read() {
                return Ok(());
            }
            let settle_at = self.source.settle_at();
            tokio::select! {
                chunk = self.source.next() => {
                    // None: every partition is at its end (-e), or fetching stopped.
                    let Some(chunk) = chunk? else { return Ok(()) };
                    self.idle.touch();
                    self.source.hand_out(chunk, &mut self.workers)?;
                }
                Some((topic, partition)) = self.range_passed.recv() => {
                    self.source.range_passed(&topic, partition);
                }
                _ = wait_until_ms(settle_at), if settle_at.is_some() => self.source.settle().await?,
                error = self.workers.failure() => return Err(error),
                _ = self.count_reached.recv() => return Ok(()),
                _ = self.idle.expired(&self.progress) => {
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

/// `--idle-timeout`: a deadline pushed back by every chunk that arrives, and by the output
/// while it holds fetched records: time paused by back-pressure is not idle.
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

    /// Completes once the timeout has passed with no chunk arriving and none waiting to be
    /// written (never without a timeout). Cancel-safe.
    async fn expired(&mut self, progress: &Progress) {
        let Some(timeout) = self.timeout else {
            return std::future::pending().await;
        };
        loop {
            tokio::time::sleep_until(self.deadline).await;
            if progress.output_behind() {
                // Idle time starts once the output has caught up: not before now.
                self.deadline = tokio::time::Instant::now() + timeout;
                continue;
            }
            let written = progress.last_written().map(|at| at + timeout);
            match written.map(tokio::time::Instant::from_std) {
                Some(deadline) if deadline > self.deadline => self.deadline = deadline,
                _ => return,
            }
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
    source: &Source,
    progress: &Arc<Progress>,
    read_committed: bool,
) {
    let Some(endpoint) = endpoint else {
        return;
    };
    let exporter = Exporter::new(source.metrics_source(), progress.clone(), read_committed);
    match source.share_counters() {
        Some(counters) => endpoint.serve(exporter.with_share(counters)),
        None => endpoint.serve(exporter),
    }
}

/// SIGTERM, handled like Ctrl-C (a clean stop: write out, commit or release, leave the group).
fn terminate_signal() -> Result<tokio::signal::unix::Signal, Error> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(|source| {
        Error::Io {
            context: "installing the SIGTERM handler".to_owned(),
            source,
        }
    })
}
