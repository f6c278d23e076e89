//! krec-consumer: the embeddable async Kafka consumer.
//!
//! Read a topic to its end, then join a group:
//!
//! ```no_run
//! # async fn demo() -> Result<(), krec_consumer::Error> {
//! use krec_consumer::{Consumer, ConsumerConfig, GroupConsumer, GroupEvent, StartOffset};
//!
//! // The same keys `krec -X` and `-F` take: librdkafka's and the Java client's names.
//! let config = ConsumerConfig::from_file("client.properties")?
//!     .with("bootstrap.servers", "127.0.0.1:9092")?;
//!
//! let mut consumer = Consumer::connect(config.clone()).await?;
//! consumer.assign_topic("orders", StartOffset::Beginning).await?; // every partition
//! consumer.stop_at_end(true); // like -e: next_chunk gives None once every partition is at its end
//! while let Some(chunk) = consumer.next_chunk().await? {
//!     for record in chunk.records() {
//!         // data records only; aborted transactions hidden under read_committed
//!         let record = record?;
//!         let trace = record.headers().get(b"traceparent").and_then(|h| h.value);
//!         println!("{}/{} {} {:?} {:?}", chunk.topic(), chunk.partition(), record.offset(),
//!                  record.value(), trace);
//!     }
//! }
//!
//! let mut group = GroupConsumer::subscribe(config.with("group.id", "billing")?, &["orders", "^refunds-"]).await?;
//! while let Some(event) = group.next_event().await? {
//!     match event {
//!         GroupEvent::Chunk(chunk) => {
//!             for record in chunk.records() { let _ = record?; }
//!             group.processed(&chunk); // committable up to the end of this chunk
//!         }
//!         GroupEvent::Assigned(partitions) | GroupEvent::Revoked(partitions) => eprintln!("{partitions:?}"),
//!         _ => {}
//!     }
//! }
//! group.close().await?; // commits what was processed, then leaves
//! # Ok(())
//! # }
//! ```
//!
//! Eight names are enough for that: [`ConsumerConfig`], [`Consumer`], [`StartOffset`],
//! [`PartitionChunk`] (with [`PartitionChunk::records`]), [`GroupConsumer`], [`GroupEvent`],
//! [`TopicPartition`] and [`Error`]. Records are [`krec_batch::Record`]s borrowed from the
//! fetched bytes, or from the chunk's decompressed batches: no copy of record bytes.
//!
//! Underneath, for programs that need it:
//! - the zero-copy fast path: [`PartitionChunk::batches`] with
//!   [`ChunkBatches::try_for_each_ref`] parses each batch in place into one reused buffer;
//! - [`Consumer::poll`] and [`GroupConsumer::poll`]: every event, end-of-partition notices
//!   and subscription changes included; [`Consumer::into_stream`]: chunks as a `Stream`;
//! - [`Consumer::subscribe`]: topic patterns followed as topics come and go;
//! - [`Consumer::positions`], [`Consumer::metrics`]: where each partition stands, counters.
//!
//! Its configuration takes the forms a command line gives, checked before anything connects:
//!
//! ```
//! use krec_consumer::{ConsumerConfig, OffsetReset, StartOffset};
//!
//! let brokers = ConsumerConfig::parse_bootstrap("127.0.0.1:9092, 127.0.0.1:9093").unwrap();
//! let mut config = ConsumerConfig::new(brokers);
//! config.offset_reset = "earliest".parse::<OffsetReset>().unwrap();
//! assert_eq!("-100".parse::<StartOffset>().unwrap(), StartOffset::FromEnd(100));
//! assert_eq!("@1700000000000".parse::<StartOffset>().unwrap(), StartOffset::Timestamp(1700000000000));
//! assert!(ConsumerConfig::parse_bootstrap("no-port").is_err());
//! ```
//!
//! Or load the `client.properties` operators already have (librdkafka's names or the Java
//! client's; `${env:NAME}` and `${file:PATH}` keep secrets out of the file), and add what the
//! program decides. Errors name the key and where it was set (`FILE:LINE`); keys for the Schema
//! Registry are kept for the program ([`ConsumerConfig::foreign_properties`]), and the group
//! settings fill [`ConsumerConfig::group`]. See [`ConsumerConfig::apply_properties`] for the keys.
//!
//! ```no_run
//! # fn demo() -> Result<(), krec_consumer::Error> {
//! use krec_consumer::ConsumerConfig;
//! let config = ConsumerConfig::from_file("client.properties")?
//!     .with("bootstrap.servers", "127.0.0.1:9092")?
//!     .with("group.id", "billing")?;
//! assert_eq!(config.group.group_id, "billing");
//! # Ok(())
//! # }
//! ```
//!
//! # Public surface
//!
//! - Reading: [`Consumer`], [`ConsumerConfig`], [`StartOffset`], [`OffsetReset`],
//!   [`TopicSubscription`], [`TopicPartition`], [`Fetched`]; [`PartitionChunk`] and its
//!   views in [`chunk`] ([`ChunkBatches`], [`ChunkBatch`], [`ChunkBatchRef`],
//!   [`ChunkRecords`], [`ChunkRecordIter`]).
//! - Groups: [`GroupConsumer`], [`GroupConfig`], [`GroupEvent`], and in [`group`] the
//!   protocol and assignor choices, [`group::RebalanceListener`],
//!   [`group::WrittenOffsets`] and [`group::Ownership`].
//! - Share groups (KIP-932): [`ShareConsumer`], [`ShareChunk`], [`AcknowledgeType`] and the
//!   counters in [`share`]: records acknowledged one by one, no offsets (see [`share`]).
//! - Watching: [`Consumer::positions`] ([`PartitionPosition`]), [`MetricsSnapshot`] and the
//!   counters in [`metrics`], [`MetricsSource`].
//! - Helpers: [`partitioner::Partitioner`], [`config::Property`], [`Error`].
//!
//! Internal (`pub(crate)`, free to change): the per-partition cursors and what a fetch
//! response does to them, the fetch loops, the chunk's batch gate (offset skipping and
//! aborted transactions), the coordinator and the subscription refresh. No type of the
//! `kafka-protocol` crate appears in this crate's public API.
//!
//! Layout, from the bottom up: [`config`] (settings, start offsets, reset policy, client
//! properties),
//! [`subscription`] (names and patterns), `cursor` (per-partition positions), [`chunk`]
//! (fetched data and its decoding), `coordinator` (Metadata, ListOffsets, one fetch loop per
//! node), `fetch_loop` (one fetch in flight per broker), `refresh` (follows a subscription),
//! [`metrics`], [`group`] (classic and KIP-848 groups over the same fetch pipeline, committing
//! only what was processed), [`share`] (share groups: heartbeat, share sessions per leader,
//! acknowledgements as ranges), [`partitioner`], [`error`].
//!
//! `examples/consume.rs`, `examples/group.rs` and `examples/share.rs` run against a broker (each starts with its
//! `cargo run` line). How this crate fits into krec (the crates, the hot path, the
//! invariants): `docs/ARCHITECTURE.md` in the repository.
#![deny(missing_docs)]

pub mod chunk;
pub mod config;
mod consumer;
mod coordinator;
mod cursor;
pub mod error;
mod fetch_loop;
pub mod group;
pub mod metrics;
pub mod partitioner;
mod position;
mod refresh;
pub mod share;
mod shared;
pub mod subscription;

pub use chunk::{
    ChunkBatch, ChunkBatchRef, ChunkBatches, ChunkRecordIter, ChunkRecords, PartitionChunk,
};
pub use config::{ConsumerConfig, OffsetReset, Property, StartOffset};
pub use consumer::{Consumer, Fetched, UNKNOWN_TOPIC_LOOKUPS, UNKNOWN_TOPIC_RETRY_DELAY};
pub use error::Error;
pub use group::{GroupConfig, GroupConsumer, GroupEvent};
pub use krec_client::TopicPartition;
pub use metrics::MetricsSnapshot;
pub use position::{MetricsSource, PartitionPosition};
pub use share::{AcknowledgeType, Acknowledger, ShareChunk, ShareConsumer, ShareStopper};
pub use subscription::TopicSubscription;
