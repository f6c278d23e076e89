//! krec: a fast Kafka consumer, producer and record-batch toolkit.
//!
//! This crate is a facade: it re-exports the crates that do the work, so an embedding
//! program can depend on `krec` alone. Each depends only on those listed above it.
//!
//! - [`lz4`]: Kafka's LZ4 frames decoded into per-thread pooled buffers (`krec-lz4`).
//! - [`batch`]: RecordBatch v2 and legacy message-set decoding (`krec-batch`).
//! - [`client`]: the Kafka wire client: connections, Metadata, ListOffsets, Fetch, group
//!   calls (`krec-client`).
//! - [`consumer`]: the embeddable async consumer and consumer groups (`krec-consumer`).
//! - [`producer`]: the embeddable async producer: `send` a record, await its offset;
//!   idempotent, batched per partition, Java's partitioning (`krec-producer`).
//! - [`copy`]: topics copied as they are, exactly once: one pipeline from a source of
//!   batches to a sink of batches, with a cluster at each end for `krec mirror` and a
//!   backup location (a directory or an object store) at the sink's for `krec backup`, at
//!   the source's for `krec restore` (`krec-copy`).
//! - [`schema`]: Schema Registry values (Avro, Protobuf, JSON Schema) to JSON text
//!   (`krec-schema`); it depends on none of the crates above.
//!
//! The `krec` command itself is the `krec-cli` package (`cargo install --path crates/cli`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), krec::consumer::Error> {
//! use krec::consumer::{Consumer, ConsumerConfig, StartOffset};
//! let config = ConsumerConfig::from_properties([("bootstrap.servers", "127.0.0.1:9092")])?;
//! let mut consumer = Consumer::connect(config).await?;
//! consumer.assign_topic("events", StartOffset::Beginning).await?;
//! consumer.stop_at_end(true);
//! while let Some(chunk) = consumer.next_chunk().await? {
//!     for record in chunk.records() {
//!         let record = record?;
//!         println!("{} {:?}", record.offset(), record.value());
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! ```no_run
//! # async fn demo() -> Result<(), krec::producer::Error> {
//! use krec::producer::{Producer, ProducerConfig, ProducerRecord};
//! let config = ProducerConfig::from_properties([("bootstrap.servers", "127.0.0.1:9092")])?;
//! let producer = Producer::connect(config).await?;
//! let delivery = producer.send(ProducerRecord::new("orders").key(b"k1").value(b"v1")).await?;
//! println!("offset {}", delivery.await?.offset());
//! producer.close().await?;
//! # Ok(())
//! # }
//! ```
//!
//! How this crate fits into krec (the crates, the hot path, the invariants):
//! `docs/ARCHITECTURE.md` in the repository.
#![deny(missing_docs)]

pub use krec_batch as batch;
pub use krec_client as client;
pub use krec_consumer as consumer;
pub use krec_copy as copy;
pub use krec_lz4 as lz4;
pub use krec_producer as producer;
pub use krec_schema as schema;
