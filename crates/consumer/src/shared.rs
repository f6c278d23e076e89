//! State shared by the consumer handle, the coordinator task and the per-broker fetch loops.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{mpsc, watch, Notify, Semaphore};
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::chunk::PartitionChunk;
use super::config::ConsumerConfig;
use super::cursor::Cursor;
use super::metrics::Metrics;
use crate::Error;
use krec_batch::DecodeConfig;
use krec_client::metadata::ClusterMetadata;

/// What the background tasks hand to the consumer handle, in order per partition.
#[derive(Debug)]
pub enum Event {
    /// Fetched data.
    Chunk(PartitionChunk),
    /// A partition reached its end offset.
    EndOfPartition {
        /// Topic name.
        topic: Arc<str>,
        /// Partition id.
        partition: i32,
        /// The end offset reached.
        offset: i64,
        /// The cursor generation this was observed under.
        generation: u64,
    },
    /// A subscription's matched set changed: topics added, and topics dropped (deleted).
    SubscriptionChanged {
        /// Topics now consumed.
        added: Vec<Arc<str>>,
        /// Topics no longer consumed.
        dropped: Vec<Arc<str>>,
    },
    /// A fault the consumer cannot recover from.
    Failed(Error),
}

impl Event {
    /// The topic and record bytes of a chunk event.
    pub fn chunk_bytes(&self) -> Option<(&Arc<str>, usize)> {
        match self {
            Event::Chunk(chunk) => Some((chunk.topic_arc(), chunk.records_bytes().len())),
            _ => None,
        }
    }
}

/// Cursors and cluster view, behind one mutex: every access is short and never awaits.
#[derive(Debug, Default)]
pub struct State {
    /// Assigned partitions by `(topic, partition)`.
    pub cursors: BTreeMap<(Arc<str>, i32), Cursor>,
    /// The last metadata.
    pub metadata: ClusterMetadata,
    /// Topic names by id, to read Fetch v13+ responses.
    pub topic_names: HashMap<Uuid, Arc<str>>,
    /// Set when some cursor needs its leader looked up again.
    pub metadata_stale: bool,
    /// Node ids that have a fetch loop running.
    pub fetch_loops: HashSet<i32>,
    /// Topics consumed because a subscription's pattern matched them (not named): one missing
    /// from the metadata was deleted, which the subscription handles, not a fault.
    pub matched_topics: HashSet<Arc<str>>,
}

/// Everything the tasks share.
#[derive(Debug)]
pub struct Shared {
    /// Settings.
    pub config: ConsumerConfig,
    /// `config.decode`, shared by every chunk so that it can decode itself.
    pub decode: Arc<DecodeConfig>,
    state: Mutex<State>,
    /// Wakes the coordinator (metadata or offsets needed).
    pub coordinator_wakeup: Notify,
    /// Wakes the fetch loops (cursors became ready).
    pub fetch_wakeup: Notify,
    /// Wakes whoever follows the subscription (a matched topic went missing).
    pub subscription_wakeup: Notify,
    /// Assignments made so far: each starts a cursor generation of its own.
    assignments: AtomicU64,
    /// Bytes of fetched data that may be held at once.
    pub budget: Arc<Semaphore>,
    /// Where events go.
    pub events: mpsc::UnboundedSender<Event>,
    /// Set when the consumer is dropped.
    pub stopping: AtomicBool,
    /// Background tasks, aborted when the consumer is dropped.
    pub tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Set when the consumer closes: the fetch loops end their fetch sessions and stop.
    pub closing: watch::Sender<bool>,
    /// Cloned into every fetch loop; taken when closing begins, so that no loop starts after.
    loop_tokens: Mutex<Option<mpsc::Sender<()>>>,
    /// Yields `None` once every fetch loop has dropped its token.
    loops_gone: Mutex<Option<mpsc::Receiver<()>>>,
    /// What the tasks count.
    pub metrics: Arc<Metrics>,
}

/// A running fetch loop's part in [`Shared::close_fetch_loops`]: dropped when the loop ends.
#[derive(Debug, Clone)]
pub struct LoopToken(#[allow(dead_code)] mpsc::Sender<()>);

impl Shared {
    /// Shared state for a new consumer.
    pub fn new(config: ConsumerConfig, events: mpsc::UnboundedSender<Event>) -> Arc<Self> {
        let budget = Arc::new(Semaphore::new(config.buffer_bytes.max(1)));
        let (loop_tokens, loops_gone) = mpsc::channel(1);
        let metrics = Arc::new(Metrics::new(config.give_up_after));
        Arc::new(Self {
            decode: Arc::new(config.decode.clone()),
            config,
            state: Mutex::new(State::default()),
            coordinator_wakeup: Notify::new(),
            fetch_wakeup: Notify::new(),
            subscription_wakeup: Notify::new(),
            assignments: AtomicU64::new(0),
            budget,
            events,
            stopping: AtomicBool::new(false),
            tasks: Mutex::new(Vec::new()),
            closing: watch::Sender::new(false),
            loop_tokens: Mutex::new(Some(loop_tokens)),
            loops_gone: Mutex::new(Some(loops_gone)),
            metrics,
        })
    }

    /// The token of a new fetch loop, or `None` once closing has begun (no loop starts then).
    pub fn fetch_loop_token(&self) -> Option<LoopToken> {
        let tokens = self.loop_tokens.lock().unwrap_or_else(|p| p.into_inner());
        tokens.clone().map(LoopToken)
    }

    /// Tells the fetch loops to end their fetch sessions and stop; returns at once.
    pub fn begin_close(&self) {
        self.closing.send_replace(true);
        self.loop_tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
    }

    /// [`Shared::begin_close`], then waits until every fetch loop has ended, at most `limit`.
    pub async fn close_fetch_loops(&self, limit: std::time::Duration) {
        self.begin_close();
        let gone = self
            .loops_gone
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(mut gone) = gone {
            let all_ended = async { while gone.recv().await.is_some() {} };
            if tokio::time::timeout(limit, all_ended).await.is_err() {
                tracing::debug!(?limit, "fetch sessions not all closed in time");
            }
        }
    }

    /// Locks the state. A task that panicked while holding the lock left nothing half-done
    /// that matters more than stopping, so poisoning is ignored.
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// True while the partition is assigned under `generation`: data of an earlier
    /// assignment, or fetched before a seek, is not.
    pub fn is_current(&self, topic: &Arc<str>, partition: i32, generation: u64) -> bool {
        self.state()
            .cursors
            .get(&(topic.clone(), partition))
            .is_some_and(|cursor| cursor.generation == generation)
    }

    /// The cursor generation for partitions of a new assignment: no chunk of an earlier
    /// assignment of the same partition, still queued, carries it.
    pub fn next_generation(&self) -> u64 {
        (self.assignments.fetch_add(1, Ordering::Relaxed) + 1) << 32
    }

    /// True once the consumer is being dropped.
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// Records a background task so that it is aborted with the consumer.
    pub fn track(&self, task: JoinHandle<()>) {
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }

    /// Stops every background task.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        let tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        for task in tasks.iter() {
            task.abort();
        }
    }

    /// Sends a fatal error to the consumer handle.
    pub fn fail(&self, error: Error) {
        tracing::error!(%error, "consumer stopped");
        self.metrics.stopped_on_error();
        let _ = self.events.send(Event::Failed(error));
    }
}

/// Exponential backoff between retries.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: std::time::Duration,
    first: std::time::Duration,
    max: std::time::Duration,
}

impl Backoff {
    /// Starts at `first`, doubling up to `max`.
    pub fn new(first: std::time::Duration, max: std::time::Duration) -> Self {
        Self {
            next: first,
            first,
            max,
        }
    }

    /// The delay to wait now; the next one is twice as long.
    pub fn next_delay(&mut self) -> std::time::Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        delay
    }

    /// Back to the first delay after a success.
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

#[cfg(test)]
mod tests {
    use super::Backoff;
    use std::time::Duration;

    #[test]
    fn backoff_doubles_up_to_its_cap_and_resets() {
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_millis(350));
        let delays: Vec<u128> = (0..5).map(|_| backoff.next_delay().as_millis()).collect();
        assert_eq!(delays, vec![100, 200, 350, 350, 350]);
        backoff.reset();
        assert_eq!(backoff.next_delay(), Duration::from_millis(100));
    }
}
