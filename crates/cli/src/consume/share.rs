//! `krec consume --share-group`: a member of a share group (KIP-932), one more source of the
//! run loop. The decode threads acknowledge each chunk once written out; at the end the
//! member stops fetching, lets them write out what they hold, and closes: records acquired
//! and not written are released, so another member gets them at once.

use std::sync::Arc;

use krec_consumer::share::ShareCounters;
use krec_consumer::{
    AcknowledgeType, Acknowledger, ConsumerConfig, MetricsSource, ShareChunk, ShareConsumer,
    ShareStopper,
};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::ConsumeArgs;
use crate::Error;

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

/// A member of a share group. One task drives the [`ShareConsumer`] (its fetches are not to
/// be cancelled halfway) and passes its chunks on; they hold their share of the buffer budget,
/// so fetching pauses while the output is behind.
pub(super) struct Member {
    group: String,
    chunks: Option<mpsc::Receiver<ShareChunk>>,
    stopper: ShareStopper,
    acknowledger: Acknowledger,
    counters: Arc<ShareCounters>,
    metrics: MetricsSource,
    /// Told once the decode threads have written out (and acknowledged) what they hold.
    written: oneshot::Sender<()>,
    driver: JoinHandle<Result<(), krec_consumer::Error>>,
}

impl Member {
    /// Joins share group `group`, reading `topics`.
    pub(super) async fn join(
        config: ConsumerConfig,
        group: &str,
        topics: &[String],
    ) -> Result<Self, Error> {
        let config = config.with("group.id", group)?;
        let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
        let share = ShareConsumer::subscribe(config, &topics).await?;
        let (chunks_tx, chunks) = mpsc::channel(1);
        let (written, written_rx) = oneshot::channel();
        Ok(Self {
            group: group.to_owned(),
            chunks: Some(chunks),
            stopper: share.stopper(),
            acknowledger: share.acknowledger(),
            counters: share.counters(),
            metrics: share.metrics_source(),
            written,
            driver: tokio::spawn(drive(share, chunks_tx, written_rx)),
        })
    }

    /// The next chunk acquired; `None` once the driver stopped (its error comes at close).
    /// Cancel-safe.
    pub(super) async fn next(&mut self) -> Option<ShareChunk> {
        self.chunks.as_mut()?.recv().await
    }

    pub(super) fn acknowledger(&self) -> Acknowledger {
        self.acknowledger.clone()
    }

    pub(super) fn counters(&self) -> Arc<ShareCounters> {
        self.counters.clone()
    }

    pub(super) fn metrics_source(&self) -> MetricsSource {
        self.metrics.clone()
    }

    /// Stops fetching; the chunks not handed out are released at close.
    pub(super) fn stop_fetching(&mut self) {
        tracing::debug!("share group member stopping");
        self.stopper.stop();
        self.chunks = None;
    }

    /// Once the decode threads have written out what they hold: closes the consumer, which
    /// releases what was acquired and not acknowledged, and leaves the group.
    pub(super) async fn close(self) -> Result<Summary, Error> {
        let _ = self.written.send(());
        let closed = self
            .driver
            .await
            .unwrap_or(Err(krec_consumer::Error::Stopped));
        closed?;
        Ok(Summary {
            group: self.group,
            counters: self.counters,
        })
    }
}

/// The acknowledgements of a member's run, the last line of its `--stats`.
pub(super) struct Summary {
    group: String,
    counters: Arc<ShareCounters>,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counters = &self.counters;
        write!(
            f,
            "share group {}: {} accepted, {} released, {} rejected",
            self.group,
            counters.acknowledged(AcknowledgeType::Accept),
            counters.acknowledged(AcknowledgeType::Release),
            counters.acknowledged(AcknowledgeType::Reject),
        )
    }
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
