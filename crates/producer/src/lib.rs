//! krec's Kafka producer: `send` a record, await its offset.
//!
//! [`Producer::connect`] reads the cluster's metadata, takes a producer id (idempotence is on
//! by default, as in the Java client since 3.0) and starts one sender task per broker.
//! [`Producer::send`] picks the record's partition (its own, murmur2 of its key, or KIP-794's
//! sticky partitioner, adaptive by default: a new partition is drawn by how few batches wait
//! for each; see `partitioner` and `partitioner.class` below) and appends it
//! in wire form to that partition's open batch, the one copy of its bytes; it waits only for
//! the topic's metadata (a missing topic is created where the brokers allow auto-creation, as
//! the Java producer asks) and for room in `buffer.memory`, both within `max.block.ms`. It
//! returns a [`Delivery`], a future that resolves once the broker acknowledged the record's
//! batch ([`Delivered`]: partition, offset, timestamp) or the batch failed ([`Error`], naming
//! the topic, partition and why). Every record of a batch shares one completion: no channel
//! per record.
//!
//! A batch goes out when full (`batch.size`), after `linger.ms`, or on [`Producer::flush`]
//! and [`Producer::close`]; each broker's sender puts one batch of every partition it leads
//! into one Produce request, with up to `max.in.flight.requests.per.connection` requests in
//! flight on its connection. A retry (retriable errors, a lost connection, a leader that
//! moved) waits for the partition's batches in flight, then resends them all in order with
//! the same sequences: nothing is reordered or duplicated. (Until the broker has acknowledged
//! a batch of the partition it takes any first sequence, so until then a partition has one
//! batch in flight.) The producer id, its epoch and the sequences have one owner;
//! UNKNOWN_PRODUCER_ID and OUT_OF_ORDER_SEQUENCE bump the epoch (KIP-360: the next epoch,
//! sequences from 0, the batches not yet acknowledged re-stamped), once nothing is in flight
//! (in a transaction they fail the batch instead, which dooms the transaction, as in Java);
//! at the last epoch a sender asks InitProducerId for a new producer id instead, as the Java
//! client does. A batch the broker refuses as too large for the topic (MESSAGE_TOO_LARGE) is
//! split in its place, its records keeping their sequences; a record too large alone fails
//! ([`Error::MessageTooLarge`]). A broker's quota (`throttle_time_ms`, KIP-219) holds the next
//! request to it. A request unanswered within `request.timeout.ms` (the broker's own wait
//! included, as in the Java client) is sent again. A batch not acknowledged within
//! `delivery.timeout.ms` fails its records. Dropping the producer fails what it still holds;
//! every `Delivery` resolves.
//!
//! [`Producer::send_batch`] sends a batch as a broker stored it (`krec mirror`'s shallow
//! copy): one whole RecordBatch v2, its records' bytes untouched and compressed as they came,
//! goes out as one batch of the partition, behind the records sent to it before, with only
//! the fields a producer owns re-stamped (base offset, producer id and epoch, base sequence,
//! the transactional bit; the CRC32C updated from the changed header bytes). It has
//! everything a batch of `send` has (sequences, transactions, retries, expiry,
//! `buffer.memory`, stats) but a split: a batch the broker would refuse from a producer is
//! refused before it takes a sequence ([`Error::BatchRefused`], [`BatchRefusal`] says why),
//! and MESSAGE_TOO_LARGE fails it whole.
//!
//! ```no_run
//! # async fn demo(brokers: &str) -> Result<(), krec_producer::Error> {
//! use krec_producer::{Producer, ProducerConfig, ProducerRecord};
//!
//! let config = ProducerConfig::from_file("client.properties")?.with("bootstrap.servers", brokers)?;
//! let producer = Producer::connect(config).await?;
//! let record = ProducerRecord::new("orders").key(b"k1").value(b"v1").header("traceparent", b"00-..");
//! let delivery = producer.send(record).await?; // waits only for room in buffer.memory
//! let delivered = delivery.await?; // once the broker acknowledged it
//! println!("{} {}", delivered.partition(), delivered.offset());
//! producer.flush().await?;
//! producer.close().await?;
//! # Ok(())
//! # }
//! ```
//!
//! [`ProducerConfig`] reads the client properties operators already have, with the Java
//! client's names and librdkafka's, through the same loader as krec-consumer's
//! `ConsumerConfig` (krec-client's [`krec_client::client_properties`]): one
//! `client.properties` serves both.
//!
//! ```
//! use krec_producer::{Acks, ProducerConfig};
//!
//! let config = ProducerConfig::from_properties([("acks", "1"), ("linger.ms", "20")])
//!     .unwrap()
//!     .with("bootstrap.servers", "127.0.0.1:9092")
//!     .unwrap();
//! assert_eq!(config.acks, Acks::Leader);
//! assert!(!config.idempotence, "left at its default, idempotence gives way to acks=1");
//! assert!(ProducerConfig::from_properties([("group.id", "billing")]).is_err());
//! ```
//!
//! # Keys
//!
//! Common to both clients (krec-client's loader): every security key of
//! [`krec_client::SecurityConfig::from_properties`], `bootstrap.servers`
//! (`metadata.broker.list`), `client.id`, `request.timeout.ms`, `metadata.max.age.ms`
//! (`topic.metadata.refresh.interval.ms`); `schema.registry.*` and `basic.auth.*` are kept
//! ([`ProducerConfig::foreign_properties`]); serializer classes and `client.dns.lookup` are
//! accepted with a warning.
//!
//! The producer's, Java name first, librdkafka's where it differs: `acks`
//! (`request.required.acks`), `linger.ms` (`queue.buffering.max.ms`), `batch.size`,
//! `batch.num.messages` (librdkafka's only: the most records per batch,
//! [`ProducerConfig::max_batch_records`]), `max.request.size` (`message.max.bytes`),
//! `compression.type` (`compression.codec`), `compression.gzip.level`,
//! `compression.lz4.level`, `compression.zstd.level` (in Kafka's ranges, krec-batch's
//! [`krec_batch::Codec`]), `enable.idempotence`, `max.in.flight.requests.per.connection`
//! (`max.in.flight`), `delivery.timeout.ms` (`message.timeout.ms`), `retries`
//! (`message.send.max.retries`), `transactional.id`, `transaction.timeout.ms`,
//! `retry.backoff.ms`, `buffer.memory`
//! (`queue.buffering.max.kbytes`, in KiB), `max.block.ms`, and `partitioner` (librdkafka's
//! names), `partitioner.class`, `partitioner.ignore.keys`,
//! `partitioner.adaptive.partitioning.enable` (the Java client's; `partitioner.availability.timeout.ms`
//! is accepted at 0 only), read by
//! [`krec_client::partitioner::Partitioning::from_settings`]. A consumer's key (`group.id`,
//! `auto.offset.reset`, ...) is refused as one; any other unknown key is refused.
//!
//! # Transactions
//!
//! With `transactional.id` (and `transaction.timeout.ms`) the producer is transactional (and
//! idempotent: `enable.idempotence=false` with it is refused, as in the Java client).
//! [`Producer::init_transactions`] registers the id with its transaction coordinator, fencing
//! any earlier producer with the same id; then each [`Producer::begin`] opens a transaction
//! that [`Producer::commit`] (which flushes first) or [`Producer::abort`] ends. A send outside
//! one is refused ([`Error::TransactionState`]). [`Producer::send_offsets_to_transaction`]
//! commits a consumer group's offsets in the transaction, with the group metadata of a
//! krec-consumer `GroupConsumer` (`group_metadata().committer()`, KIP-447): the
//! exactly-once consume-transform-produce loop of the root package's
//! `examples/transactions.rs`. Transactions v2 (KIP-890) where the coordinator offers it
//! (partitions join implicitly, each EndTxn hands out the next epoch, sequences from 0);
//! v1 otherwise (AddPartitionsToTxn before a partition's first batch of the transaction,
//! AddOffsetsToTxn, Produce at v11 at most, the epoch bumped after an abort). Fencing ends
//! the producer ([`Error::Fenced`], or [`Error::Stopped`] naming the fence when a Produce
//! answer said PRODUCER_FENCED first), never retried; a failed record, TRANSACTION_ABORTABLE
//! or a group refusing the offsets after a rebalance leaves `abort` the one call allowed
//! ([`Error::TransactionAbortable`]), after which the producer goes on; once a record of the
//! transaction failed, nothing more of it is sent and the records waiting fail at once with
//! that error, as the Java client's do, rather than wait for the abort. A Produce answer's
//! INVALID_PRODUCER_EPOCH is such a failed record, as in the Java client: the coordinator
//! answers so once it aborted a transaction past `transaction.timeout.ms`, and a fenced
//! producer learns of the fence from its `abort`. Abort fails the records not yet sent and
//! waits for those in flight; [`Producer::close`] aborts a transaction left open.
//!
//! # Public surface
//!
//! Everything public is named here; `tests/public_surface.rs` fails when an item becomes
//! public without a line here and in `public-surface.txt` (the listing of every public item
//! and member, with its signature).
//!
//! The front door is six names: [`Producer`], [`ProducerConfig`], [`ProducerRecord`],
//! [`Delivery`], [`Delivered`], [`Error`].
//!
//! - Sending: [`Producer`], [`ProducerRecord`] and the [`Payload`] its key, value and
//!   headers take, [`Delivery`], [`Delivered`], [`ProducerStats`]; whole batches:
//!   [`Producer::send_batch`].
//! - Configuration, in [`config`]: [`ProducerConfig`], [`Acks`],
//!   `config::MAX_IDEMPOTENT_IN_FLIGHT`.
//! - Transactions: [`Producer::init_transactions`], [`Producer::begin`],
//!   [`Producer::commit`], [`Producer::abort`], [`Producer::send_offsets_to_transaction`].
//! - Errors: [`Error`], and [`BatchRefusal`], why `send_batch` refused a batch.

mod accumulator;
pub mod config;
mod copied;
mod delivery;
mod error;
mod identity;
mod producer;
mod record;
mod routing;
mod sender;
mod stats;
mod transaction;
mod transaction_coordinator;

pub use config::{Acks, ProducerConfig};
pub use delivery::{Delivered, Delivery};
pub use error::{BatchRefusal, Error};
pub use producer::Producer;
pub use record::{Payload, ProducerRecord};
pub use stats::ProducerStats;
