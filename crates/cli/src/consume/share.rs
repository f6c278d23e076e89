//! `krec consume --share-group`: a member of a share group (KIP-932). One task drives the
//! [`ShareConsumer`]; the run loop hands its chunks to the decode threads, which acknowledge
//! each chunk once written out, until `-c`, `--idle-timeout`, a failure or a signal. Then it
//! stops fetching, lets the threads write out what they hold, and closes: records acquired and
//! not written are released, so another member gets them at once.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use krec_consumer::{AcknowledgeType, ConsumerConfig, ShareChunk, ShareConsumer};
use tokio::sync::mpsc::{self, unbounded_channel, UnboundedReceiver};
use tokio::sync::oneshot;

use super::share_sink::start_share_workers;
use super::ConsumeArgs;
use crate::metrics_server::Exporter;
use crate::progress::{Cells, Progress};
use crate::stats::{Stats, StatsFormat};
use crate::Error;

/// Chunks fetched ahead of the decode threads.
const CHUNKS_AHEAD: usize = 16;

/// Refuses what has no meaning for a share group, before anything connects.
pub(super) fn check_args(args: &ConsumeArgs) -> Result<(), Error> {
    let refuse = |what: &'static str, detail: &str| {
        Err(Error::InvalidArgument {
            what,
            detail: detail.to_owned(),
        })
    };
    if args.group.group_id.is_some() {
        return refuse(
            "-G",
            "--share-group and -G (a consumer group) cannot be used together",
        );
    }
    if args.exit_at_end {
        return refuse(
            "-e",
            "a share group has no end per member (its members share every partition); stop \
             with -c N or --idle-timeout instead",
        );
    }
    if !args.offset.is_empty() {
        return refuse(
            "-o",
            "a share group starts where the group stands (its share.auto.offset.reset group \
             config for a new group), not at a given offset",
        );
    }
    if !args.read.partitions.is_empty() {
        return refuse("-p", "the share group's coordinator assigns the partitions");
    }
    let subscription = args.subscription()?;
    if subscription.has_patterns() {
        return refuse(
            "topic",
            "a share group subscribes to topic names, not patterns",
        );
    }
    Ok(())
}

/// Consumes as a member of share group `group`; the number of corrupt batches skipped.
pub(super) async fn consume_shared(
    args: &ConsumeArgs,
    config: ConsumerConfig,
    group: &str,
    idle_timeout: Option<Duration>,
) -> Result<u64, Error> {
    let endpoint = match &args.monitoring.metrics {
        Some(address) => Some(crate::metrics_server::bind(address).await?),
        None => None,
    };
    let config = config.with("group.id", group)?;
    let topics = args.topic_entries();
    let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
    let share = ShareConsumer::subscribe(config, &topics).await?;
    let counters = share.counters();
    let progress = Arc::new(Progress::default());
    if let Some(endpoint) = endpoint {
        let exporter = Exporter::new(share.metrics_source(), progress.clone(), false);
        endpoint.serve(exporter.with_share(counters.clone()));
    }
    let (count_done, count_reached) = unbounded_channel();
    let workers = start_share_workers(args, &progress, &share.acknowledger(), count_done)?;
    let stopper = share.stopper();
    let (chunks_tx, chunks) = mpsc::channel(CHUNKS_AHEAD);
    let (written, written_rx) = oneshot::channel();
    let driver = tokio::spawn(drive(share, chunks_tx, written_rx));
    let monitoring = &*args.monitoring;
    let stats_format = monitoring.stats_format.parse::<StatsFormat>()?;
    let mut running = Running {
        chunks,
        workers,
        stats: Stats::new(monitoring.stats, stats_format, false),
        count_reached,
        idle_timeout,
        progress: progress.clone(),
        cells: Cells::default(),
    };
    let outcome = running.run().await;
    let Running {
        chunks,
        workers,
        stats,
        ..
    } = running;
    // Stop fetching; the chunks not handed out are released at close.
    tracing::debug!("share group member stopping");
    stopper.stop();
    drop(chunks);
    let finished = tokio::task::spawn_blocking(move || workers.finish())
        .await
        .unwrap_or(Err(krec_consumer::Error::Stopped.into()));
    let _ = written.send(());
    let closed = driver
        .await
        .unwrap_or(Err(krec_consumer::Error::Stopped))
        .map_err(Error::from);
    stats.finish(&progress);
    if monitoring.stats.is_some() {
        eprintln!(
            "share group {group}: {} accepted, {} released, {} rejected",
            counters.acknowledged(AcknowledgeType::Accept),
            counters.acknowledged(AcknowledgeType::Release),
            counters.acknowledged(AcknowledgeType::Reject),
        );
    }
    outcome.and(finished).and(closed)?;
    Ok(progress.batches_skipped.load(Ordering::Relaxed))
}

/// Fetches into `chunks` until stopped (or the receiver is gone); once the decode threads
/// have written out and acknowledged what they hold (`written`), closes the consumer, which
/// releases what was acquired and not acknowledged.
async fn drive(
    mut share: ShareConsumer,
    chunks: mpsc::Sender<ShareChunk>,
    written: oneshot::Receiver<()>,
) -> Result<(), krec_consumer::Error> {
    let fetched = loop {
        match share.next_chunk().await {
            Ok(Some(chunk)) => {
                if chunks.send(chunk).await.is_err() {
                    break Ok(());
                }
            }
            Ok(None) => break Ok(()),
            Err(error) => break Err(error),
        }
    };
    drop(chunks);
    tracing::debug!("fetching stopped; waiting for the decode threads");
    let _ = written.await;
    let closed = share.close().await;
    fetched.and(closed)
}

/// What the loop watches.
struct Running {
    chunks: mpsc::Receiver<ShareChunk>,
    workers: crate::workers::PartitionWorkers<ShareChunk>,
    stats: Stats,
    count_reached: UnboundedReceiver<()>,
    idle_timeout: Option<Duration>,
    progress: Arc<Progress>,
    cells: Cells,
}

impl Running {
    /// Hands out chunks until something ends the run: `Ok` for a clean stop.
    async fn run(&mut self) -> Result<(), Error> {
        let mut terminate = tokio::signal::unix::signal(
            tokio::signal::unix::SignalKind::terminate(),
        )
        .map_err(|source| Error::Io {
            context: "installing the SIGTERM handler".to_owned(),
            source,
        })?;
        let idle = |timeout: Option<Duration>| async move {
            match timeout {
                Some(timeout) => tokio::time::sleep(timeout).await,
                None => std::future::pending().await,
            }
        };
        let mut idle_deadline = Box::pin(idle(self.idle_timeout));
        loop {
            tokio::select! {
                chunk = self.chunks.recv() => {
                    // None: the driver stopped (its error comes from joining it).
                    let Some(chunk) = chunk else { return Ok(()) };
                    idle_deadline = Box::pin(idle(self.idle_timeout));
                    let (topic, partition) = (chunk.topic(), chunk.partition());
                    self.progress.handed_out(&mut self.cells, topic, partition, chunk.fetch_offset());
                    self.workers.submit(chunk)?;
                }
                error = self.workers.failure() => return Err(error),
                _ = self.count_reached.recv() => return Ok(()),
                _ = &mut idle_deadline => {
                    tracing::info!("no record for the --idle-timeout; exiting");
                    return Ok(());
                }
                _ = tokio::signal::ctrl_c() => return Ok(()),
                _ = terminate.recv() => return Ok(()),
                _ = self.stats.tick() => self.stats.print(&[], &self.progress),
            }
        }
    }
}
