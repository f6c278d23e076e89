//! State shared by the consumer handle, the coordinator task and the per-broker fetch loops.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{mpsc, Notify, Semaphore};
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::chunk::PartitionChunk;
use super::config::ConsumerConfig;
use super::cursor::Cursor;
use super::metrics::Metrics;
use crate::Error;
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
}

/// Everything the tasks share.
#[derive(Debug)]
pub struct Shared {
    /// Settings.
    pub config: ConsumerConfig,
    state: Mutex<State>,
    /// Wakes the coordinator (metadata or offsets needed).
    pub coordinator_wakeup: Notify,
    /// Wakes the fetch loops (cursors became ready).
    pub fetch_wakeup: Notify,
    /// Bytes of fetched data that may be held at once.
    pub budget: Arc<Semaphore>,
    /// Where events go.
    pub events: mpsc::UnboundedSender<Event>,
    /// Set when the consumer is dropped.
    pub stopping: AtomicBool,
    /// Background tasks, aborted when the consumer is dropped.
    pub tasks: Mutex<Vec<JoinHandle<()>>>,
    /// What the tasks count.
    pub metrics: Arc<Metrics>,
}

impl Shared {
    /// Shared state for a new consumer.
    pub fn new(config: ConsumerConfig, events: mpsc::UnboundedSender<Event>) -> Arc<Self> {
        let budget = Arc::new(Semaphore::new(config.buffer_bytes.max(1)));
        let metrics = Arc::new(Metrics::new(config.give_up_after));
        Arc::new(Self {
            config,
            state: Mutex::new(State::default()),
            coordinator_wakeup: Notify::new(),
            fetch_wakeup: Notify::new(),
            budget,
            events,
            stopping: AtomicBool::new(false),
            tasks: Mutex::new(Vec::new()),
            metrics,
        })
    }

    /// Locks the state. A task that panicked while holding the lock left nothing half-done
    /// that matters more than stopping, so poisoning is ignored.
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
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
