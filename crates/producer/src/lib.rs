//! krec's Kafka producer, as far as it goes today: its configuration.
//!
//! The producer (`Producer::connect`, `send`, batching per partition, idempotence, every
//! codec) is being built; this crate holds the first part of it, [`ProducerConfig`]. The
//! `Producer` itself is not here yet: nothing in this crate connects to a broker or sends a
//! record.
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
//! (`message.send.max.retries`), `retry.backoff.ms`, `buffer.memory`
//! (`queue.buffering.max.kbytes`, in KiB), `max.block.ms`, and `partitioner` (librdkafka's
//! names), `partitioner.class`, `partitioner.ignore.keys` (the Java client's), read by
//! [`krec_client::partitioner::Partitioning::from_settings`]. A consumer's key (`group.id`,
//! `auto.offset.reset`, ...) is refused as one; any other unknown key is refused.
//!
//! # Public surface
//!
//! Everything public is named here; `tests/public_surface.rs` fails when an item becomes
//! public without a line here and in `public-surface.txt` (the listing of every public item
//! and member, with its signature).
//!
//! The front door is two names: [`ProducerConfig`], [`Error`].
//!
//! - Configuration, in [`config`]: [`ProducerConfig`], [`Acks`],
//!   `config::MAX_IDEMPOTENT_IN_FLIGHT`.
//! - Errors: [`Error`].

pub mod config;
mod error;

pub use config::{Acks, ProducerConfig};
pub use error::Error;
