//! The front door: `Producer::connect`, `send`, `flush`, `close`, `stats`, over the accumulator,
//! one sender task per broker and the metadata task.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use krec_client::metadata::{ClusterMetadata, MetadataClient};
use krec_client::produce::Acks as WireAcks;
use krec_client::producer_id::{self, ProducerIdentity};
use krec_client::Connection;
use tokio::sync::{watch, Notify, Semaphore};
use tokio::task::JoinHandle;

use crate::accumulator::{Accumulator, Appended, Limits, Route};
use crate::delivery::{Delivery, Settled};
use crate::identity::Identity;
use crate::record::ProducerRecord;
use crate::stats::{Counters, ProducerStats};
use crate::transaction::{self, Transactions};
use crate::{copied, routing, sender, Acks, Error, ProducerConfig};

/// An async Kafka producer: `send` appends a record to its partition's batch and returns its
/// [`Delivery`], one sender task per broker sends the batches, and every `Delivery` resolves
/// with the record's offset or the reason it failed.
///
/// All methods take `&self`, and a `Producer` is `Send + Sync`: share it between tasks in an
/// `Arc` (it is not `Clone`). Dropping it stops its tasks and fails the records not yet
/// acknowledged; [`close`](Self::close) delivers them first.
///
/// ```no_run
/// # async fn demo(brokers: &str) -> Result<(), krec_producer::Error> {
/// use krec_producer::{Producer, ProducerConfig, ProducerRecord};
///
/// let config = ProducerConfig::from_properties([("linger.ms", "10")])?
///     .with("bootstrap.servers", brokers)?;
/// let producer = Producer::connect(config).await?;
/// let record = ProducerRecord::new("orders").key(b"k1").value(b"v1");
/// let delivery = producer.send(record).await?;
/// let delivered = delivery.await?;
/// println!("{} {}", delivered.partition(), delivered.offset());
/// producer.close().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Producer {
    pub(crate) shared: Arc<Shared>,
}

/// What the producer's tasks share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: ProducerConfig,
    pub(crate) acks: WireAcks,
    state: Mutex<Accumulator>,
    /// `buffer.memory`, in bytes of records held.
    memory: Arc<Semaphore>,
    /// Senders look again: a batch filled or started, an answer came, a flush began.
    pub(crate) work: Notify,
    /// The metadata task refreshes now.
    pub(crate) refresh: Notify,
    /// Bumped after each metadata refresh (`send` waits on it for a topic).
    pub(crate) metadata_version: watch::Sender<u64>,
    counters: Arc<Counters>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// With `transactional.id`: the transaction's state (crate::transaction).
    pub(crate) transactions: Option<Transactions>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Accumulator> {
        // Every change to the accumulator completes under the lock or not at all.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn spawn_sender(self: &Arc<Self>, node: i32) {
        let task = tokio::spawn(sender::run(self.clone(), node));
        self.tasks_lock().push(task);
    }

    fn tasks_lock(&self) -> MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.tasks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Fails what is not acknowledged and ends the tasks.
    fn stop(&self, reason: &str) -> Vec<JoinHandle<()>> {
        self.lock().stop(reason);
        let tasks = std::mem::take(&mut *self.tasks_lock());
        for task in &tasks {
            task.abort();
        }
        tasks
    }
}

impl Producer {
    /// Connects to the cluster (`bootstrap.servers`), takes a producer id when idempotent
    /// (InitProducerId, retried within `max.block.ms`), and starts the metadata task and a
    /// sender per broker. Must be called within a Tokio runtime.
    pub async fn connect(config: ProducerConfig) -> Result<Self, Error> {
        if config.bootstrap.is_empty() {
            return Err(Error::Property {
                key: "bootstrap.servers".to_owned(),
                origin: String::new(),
                detail: "no broker given".to_owned(),
            });
        }
        let mut client = MetadataClient::new(config.bootstrap.clone(), config.connection.clone());
        let metadata = client
            .fetch(&[])
            .await
            .map_err(|e| Error::client("bootstrap.servers: no broker answered Metadata", e))?;
        let identity = if let Some(transactional_id) = &config.transactional_id {
            transaction::check_config(&config)?;
            Identity::transactional(transactional_id)
        } else if config.idempotence {
            Identity::idempotent(init_identity(&config, &metadata).await?)
        } else {
            Identity::none()
        };
        let memory = Arc::new(Semaphore::new(
            usize::try_from(config.buffer_memory)
                .unwrap_or(usize::MAX)
                .min(Semaphore::MAX_PERMITS),
        ));
        let counters = Arc::new(Counters::default());
        let accumulator = Accumulator::new(
            Limits::new(&config),
            identity,
            memory.clone(),
            counters.clone(),
        );
        let acks = match config.acks {
            Acks::None => WireAcks::None,
            Acks::Leader => WireAcks::Leader,
            Acks::All => WireAcks::All,
        };
        let transactions = config.transactional_id.as_deref().map(Transactions::new);
        let shared = Arc::new(Shared {
            transactions,
            config,
            acks,
            state: Mutex::new(accumulator),
            memory,
            work: Notify::new(),
            refresh: Notify::new(),
            metadata_version: watch::Sender::new(0),
            counters,
            tasks: Mutex::new(Vec::new()),
        });
        for node in shared.lock().apply_metadata(&metadata) {
            shared.spawn_sender(node);
        }
        let task = tokio::spawn(routing::run(shared.clone(), client));
        shared.tasks_lock().push(task);
        Ok(Producer { shared })
    }

    /// Appends the record to its partition's batch and returns its [`Delivery`], which
    /// resolves once the broker acknowledged it. Waits only for the topic's metadata (and for a
    /// partition it does not show yet) and for room in `buffer.memory`, all within
    /// `max.block.ms`; a record larger than
    /// `max.request.size` or `buffer.memory` fails at once. The record's bytes are copied
    /// once, into the batch.
    pub async fn send(&self, record: ProducerRecord<'_>) -> Result<Delivery, Error> {
        // A transaction's end waits for the sends that began in it.
        let _in_transaction = match &self.shared.transactions {
            Some(transactions) => Some(transactions.enter_send().await?),
            None => None,
        };
        let config = &self.shared.config;
        let held = record.held_bytes();
        if held > config.buffer_memory {
            return Err(Error::RecordTooLarge {
                topic: record.topic().to_owned(),
                size: held,
                key: "buffer.memory",
                limit: config.buffer_memory,
            });
        }
        self.append_with_room(record.topic(), held, |accumulator, held| {
            let timestamp = record.timestamp.unwrap_or_else(now_ms);
            accumulator.append(&record, timestamp, held, None)
        })
        .await
    }

    /// Sends `batch`, one whole RecordBatch v2 as a broker stored it (any codec), to
    /// `partition` of `topic` unchanged but for the fields a producer owns, which are
    /// re-stamped when it is sent (base offset, producer id and epoch, base sequence, the
    /// transactional bit; CRC updated). Resolves to the offset the target gave its first record.
    ///
    /// The copy of `krec mirror`: the records' bytes go out as they came, compressed as they
    /// came, as one batch of the partition, behind the records sent to it before (its open
    /// batch is closed first), with everything a batch of [`send`](Self::send) has:
    /// sequences, transactions, retries in order, `delivery.timeout.ms`, `buffer.memory`
    /// (the batch's size, until it is acknowledged or failed), [`stats`](Self::stats) (its
    /// header's record count). Its bytes are copied once, into a pooled buffer. The
    /// [`Delivery`] is its first record's offset; its timestamp is the header's base
    /// timestamp (the first record's, as producers write batches; the max timestamp when the
    /// base holds the log cleaner's delete horizon).
    ///
    /// A batch the broker would refuse from a producer is refused here, before it takes any
    /// sequence ([`Error::BatchRefused`], [`BatchRefusal`](crate::BatchRefusal) says why): not
    /// one whole v2 batch with a sound CRC32C, a control batch, no record, offsets with gaps
    /// (a record count other than its last offset delta + 1), LogAppendTime, larger than
    /// `max.request.size` or `buffer.memory`. It is never split: a broker's MESSAGE_TOO_LARGE
    /// fails it ([`Error::MessageTooLarge`]); check it against the topic's
    /// `max.message.bytes` first.
    pub async fn send_batch(
        &self,
        topic: &str,
        partition: i32,
        batch: bytes::Bytes,
    ) -> Result<Delivery, Error> {
        let _in_transaction = match &self.shared.transactions {
            Some(transactions) => Some(transactions.enter_send().await?),
            None => None,
        };
        let checked = copied::check(topic, partition, &batch, &self.shared.config)?;
        self.append_with_room(topic, batch.len() as u64, |accumulator, held| {
            accumulator.append_copied(&checked, held, Instant::now())
        })
        .await
    }

    /// Takes `held` bytes of `buffer.memory` and appends with `append`, waiting for the
    /// topic's metadata if it is unknown or lacks the partition; all within `max.block.ms`.
    async fn append_with_room(
        &self,
        topic: &str,
        held: u64,
        mut append: impl FnMut(&mut Accumulator, u64) -> Result<Option<Appended>, Error>,
    ) -> Result<Delivery, Error> {
        let permits = u32::try_from(held).unwrap_or(u32::MAX);
        // `max.block.ms` counts from the first wait: the usual send reads no clock for it.
        let mut deadline = None;
        loop {
            self.take_room(topic, permits, &mut deadline).await?;
            let appended = append(&mut self.shared.lock(), u64::from(permits));
            match appended {
                Ok(Some(appended)) => {
                    if appended.wake_senders {
                        self.shared.work.notify_waiters();
                    }
                    return Ok(appended.delivery);
                }
                Ok(None) => {
                    self.shared.memory.add_permits(permits as usize);
                    let max_block = self.shared.config.max_block;
                    let until = *deadline.get_or_insert_with(|| Instant::now() + max_block);
                    self.wait_for_topic(topic, until).await?;
                }
                // Partitions just added to the topic: the metadata learns of them on refresh,
                // as Java's producer waits for them (both within max.block.ms).
                Err(error @ Error::UnknownPartition { .. }) => {
                    self.shared.memory.add_permits(permits as usize);
                    let max_block = self.shared.config.max_block;
                    let until = *deadline.get_or_insert_with(|| Instant::now() + max_block);
                    self.wait_for_refresh(until, error).await?;
                }
                Err(error) => {
                    self.shared.memory.add_permits(permits as usize);
                    return Err(error);
                }
            }
        }
    }

    /// Asks for fresh metadata and waits for it until `deadline`; then fails with `error`.
    async fn wait_for_refresh(&self, deadline: Instant, error: Error) -> Result<(), Error> {
        if Instant::now() >= deadline {
            return Err(error);
        }
        let mut refreshed = self.shared.metadata_version.subscribe();
        self.shared.refresh.notify_one();
        match tokio::time::timeout_at(deadline.into(), refreshed.changed()).await {
            Ok(_) => Ok(()),
            Err(_) => Err(error),
        }
    }

    /// Takes `permits` bytes of `buffer.memory`, waiting for them until the deadline (set
    /// now if this is the first wait).
    async fn take_room(
        &self,
        topic: &str,
        permits: u32,
        deadline: &mut Option<Instant>,
    ) -> Result<(), Error> {
        let memory = &self.shared.memory;
        if let Ok(permit) = memory.try_acquire_many(permits) {
            permit.forget();
            return Ok(());
        }
        let config = &self.shared.config;
        let until = *deadline.get_or_insert_with(|| Instant::now() + config.max_block);
        match tokio::time::timeout_at(until.into(), memory.acquire_many(permits)).await {
            Ok(Ok(permit)) => {
                permit.forget();
                Ok(())
            }
            Ok(Err(_)) => Err(memory_closed()),
            Err(_) => Err(Error::BufferFull {
                topic: topic.to_owned(),
                buffer_memory: config.buffer_memory,
                waited_ms: config.max_block.as_millis() as u64,
            }),
        }
    }

    /// Waits until the metadata has the topic, asking for it, within `deadline`.
    async fn wait_for_topic(&self, topic: &str, deadline: Instant) -> Result<(), Error> {
        loop {
            let mut refreshed = self.shared.metadata_version.subscribe();
            let route = self.shared.lock().route(topic, deadline);
            match route {
                Route::Known => return Ok(()),
                Route::Refused(answer) => {
                    return Err(Error::UnknownTopic {
                        topic: topic.to_owned(),
                        detail: answer,
                    })
                }
                Route::Unknown => self.shared.refresh.notify_one(),
            }
            let changed = tokio::time::timeout_at(deadline.into(), refreshed.changed()).await;
            if changed.is_err() {
                let waited = self.shared.config.max_block.as_millis();
                return Err(Error::UnknownTopic {
                    topic: topic.to_owned(),
                    detail: format!(
                        "not in the cluster's metadata within max.block.ms ({waited} ms); \
                         create it, or let the brokers create topics (auto.create.topics.enable)"
                    ),
                });
            }
        }
    }

    /// Waits until every record sent before the call is acknowledged or failed (each
    /// `Delivery` says which); batches still lingering go out at once.
    pub async fn flush(&self) -> Result<(), Error> {
        let pending = self.shared.lock().flush_begin();
        let _flushing = FlushGuard(&self.shared);
        self.shared.work.notify_waiters();
        for batch in pending {
            Settled::new(batch).await;
        }
        Ok(())
    }

    /// Flushes, aborts the transaction left open (as Java's close does: its records never
    /// become visible, and the coordinator need not wait for `transaction.timeout.ms`), then
    /// stops the tasks and closes the connections. Records sent after it fail with
    /// [`Error::Stopped`]. A failed abort is the answer; the producer stops all the same.
    pub async fn close(&self) -> Result<(), Error> {
        self.flush().await?;
        let aborted = match &self.shared.transactions {
            Some(transactions) if transactions.is_open() => self.abort().await,
            _ => Ok(()),
        };
        for task in self.shared.stop("the producer was closed") {
            let _ = task.await;
        }
        aborted
    }

    /// What the producer has done so far: records and bytes acknowledged, batches, retries,
    /// records failed.
    pub fn stats(&self) -> ProducerStats {
        self.shared.counters.snapshot()
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.shared.stop("the producer was dropped");
    }
}

/// Ends a flush, even when its future is dropped.
struct FlushGuard<'a>(&'a Shared);

impl Drop for FlushGuard<'_> {
    fn drop(&mut self) {
        self.0.lock().flush_end();
    }
}

/// What `send` answers if the semaphore of `buffer.memory` were closed (it never is).
fn memory_closed() -> Error {
    Error::Stopped {
        reason: "buffer.memory is closed".to_owned(),
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// InitProducerId from any broker, asked again after a passing error within `max.block.ms`.
async fn init_identity(
    config: &ProducerConfig,
    metadata: &ClusterMetadata,
) -> Result<ProducerIdentity, Error> {
    let deadline = Instant::now() + config.max_block;
    let mut addresses: Vec<String> = metadata.brokers.values().cloned().collect();
    addresses.sort();
    addresses.extend(config.bootstrap.iter().cloned());
    let mut attempt = 0usize;
    loop {
        let address = &addresses[attempt % addresses.len()];
        attempt += 1;
        let result = match Connection::connect(address, &config.connection).await {
            Ok(mut connection) => producer_id::init_producer_id(&mut connection, None).await,
            Err(error) => Err(error),
        };
        match result {
            Ok(identity) => return Ok(identity),
            Err(error) if producer_id::is_retriable(&error) && Instant::now() < deadline => {
                tracing::debug!(%error, "InitProducerId failed; asking again");
                tokio::time::sleep(config.retry_backoff.max(Duration::from_millis(10))).await;
            }
            Err(error) => {
                return Err(Error::client(
                    "InitProducerId (enable.idempotence=true)",
                    error,
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// What the docs promise: a `Producer` shared between tasks, futures sent between them.
    #[test]
    fn the_front_door_types_cross_tasks() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<super::Producer>();
        send::<crate::Delivery>();
        send::<crate::ProducerRecord<'static>>();
        send_sync::<crate::Error>();
    }

    /// No broker listening: `connect` fails at once naming the key and the broker tried.
    #[tokio::test]
    async fn connect_without_a_broker_names_bootstrap_servers() {
        let config = crate::ProducerConfig::new(vec!["127.0.0.1:1".to_owned()]);
        let error = super::Producer::connect(config).await.unwrap_err();
        let text = error.to_string();
        assert!(matches!(error, crate::Error::Client { .. }), "{error:?}");
        assert!(
            text.contains("bootstrap.servers") && text.contains("127.0.0.1:1"),
            "{text}"
        );
        let config = crate::ProducerConfig::new(Vec::new());
        let error = super::Producer::connect(config).await.unwrap_err();
        assert!(error.to_string().contains("bootstrap.servers"), "{error}");
    }
}
