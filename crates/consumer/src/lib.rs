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
//!     chunk.for_each_record(|record| {
//!         // data records only; aborted transactions hidden under read_committed
//!         let trace = record.headers().get(b"traceparent").and_then(|h| h.value);
//!         println!("{}/{} {} {:?} {:?}", chunk.topic(), chunk.partition(), record.offset(),
//!                  record.value(), trace);
//!     })?;
//! }
//!
//! let mut group = GroupConsumer::subscribe(config.with("group.id", "billing")?, &["orders", "^refunds-"]).await?;
//! while let Some(event) = group.next_event().await? {
//!     match event {
//!         GroupEvent::Chunk(chunk) => {
//!             chunk.for_each_record(|record| println!("{}", record.offset()))?;
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
//! That is the front door's eight names (see [Public surface](#public-surface)). Records are
//! [`krec_batch::Record`]s lent to the closure, borrowed from the fetched bytes or from one
//! reused decompression buffer: no copy of record bytes, the fast path's speed. The closure may
//! stop early ([`std::ops::ControlFlow`]) or return the program's own error ([`RecordFlow`]).
//!
//! Underneath, for programs that need it:
//! - [`PartitionChunk::records`]: the records as an [`Iterator`], for a loop that awaits
//!   between records or keeps them until the chunk is dropped (each batch keeps its own buffer);
//! - batch by batch: [`PartitionChunk::batches`] with [`ChunkBatches::try_for_each_ref`]
//!   parses each batch in place into one reused buffer (batch headers, control records);
//!   [`PartitionChunk::data_batches`] hands out the data batches as the bytes the broker sent,
//!   checked, for a copy;
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
//! Everything public is named here; `tests/public_surface.rs` fails when an item becomes
//! public without a line here and in `public-surface.txt` (the listing of every public item
//! and member, with its signature).
//!
//! The front door is eight names: [`ConsumerConfig`], [`Consumer`], [`StartOffset`],
//! [`PartitionChunk`], [`GroupConsumer`], [`GroupEvent`], [`TopicPartition`], [`Error`].
//!
//! - Reading: [`Consumer`], [`ConsumerConfig`], [`StartOffset`], [`OffsetReset`],
//!   [`TopicSubscription`] (in [`subscription`]), [`Fetched`]; [`PartitionChunk`] and its
//!   views in [`chunk`] ([`ChunkBatches`], [`ChunkBatch`], [`ChunkBatchRef`],
//!   [`ChunkRecords`], [`ChunkRecordIter`], and for a copy [`DataBatches`] of [`DataBatch`]es,
//!   the bytes the broker sent) and [`RecordFlow`], what a
//!   [`PartitionChunk::for_each_record`] closure returns. Settings come from [`config`]: client
//!   properties ([`config::Property`]) or fields.
//! - Groups, in [`group`]: [`GroupConsumer`], [`GroupEvent`], [`GroupProgress`] (the one way
//!   to mark what was processed: [`GroupProgress::processed`], from the polling task or any
//!   thread), [`GroupConfig`] (the one place of group settings: [`ConsumerConfig::group`]),
//!   [`group::GroupProtocol`], [`group::Assignor`], [`group::RebalanceListener`] and
//!   [`group::NoListener`]; [`group::GroupMetadata`]
//!   ([`GroupConsumer::group_metadata`]), what a transactional producer commits offsets with.
//! - Share groups (KIP-932), in [`share`]: [`ShareConsumer`], [`ShareChunk`],
//!   [`AcknowledgeType`], [`Acknowledger`], [`ShareStopper`], [`share::ShareCounters`],
//!   [`share::DEFAULT_MAX_RECORDS`]: records acknowledged one by one, no offsets.
//! - Watching: [`Consumer::positions`] ([`PartitionPosition`]), [`MetricsSnapshot`],
//!   [`MetricsSource`], and in [`metrics`] [`metrics::BrokerMetrics`],
//!   [`metrics::GroupMetrics`], [`metrics::LatencyHistogram`] with
//!   [`metrics::FETCH_LATENCY_BUCKETS`], [`metrics::ErrorKind`], [`metrics::CommitResult`].
//! - Helpers: [`partitioner::Partitioner`] (the partition a key goes to, in [`partitioner`]:
//!   krec-client's, re-exported where consumers have always found it), [`Error`] (in
//!   [`error`]).
//! - Types of the crates underneath, re-exported on purpose so that a program needs no
//!   dependency of its own on them: [`TopicPartition`] (krec-client's, shared with it and
//!   with krec-producer), [`ConnectionSettings`] (the type of [`ConsumerConfig::connection`];
//!   its `security` field is a [`krec_client::SecurityConfig`], which client properties
//!   fill), [`AcknowledgeType`] (krec-client's share-group acknowledgement), and the record
//!   layer, [`krec_batch`], whose [`krec_batch::Record`]s the chunks lend.
//!
//! Internal (`pub(crate)`, free to change): the per-partition cursors and what a fetch
//! response does to them, the fetch loops, the chunk's batch gate (offset skipping and
//! aborted transactions), the coordinator, the subscription refresh, the assignors' code and
//! the group's processed positions behind [`GroupProgress`]. No type of the `kafka-protocol`
//! crate appears in this crate's public API.
//!
//! # Layout
//!
//! From the bottom up: [`config`] (settings, start offsets, reset policy, client
//! properties), [`subscription`] (names and patterns), `cursor` (per-partition positions),
//! [`chunk`] (fetched data and its decoding), `coordinator` (Metadata, ListOffsets, one fetch
//! loop per node), `fetch_loop` (one fetch in flight per broker), `refresh` (follows a
//! subscription), [`metrics`], [`group`] (classic and KIP-848 groups over the same fetch
//! pipeline, committing only what was processed), [`share`] (share groups: heartbeat, share
//! sessions per leader, acknowledgements as ranges), [`partitioner`], [`error`].
//!
//! `examples/consume.rs`, `examples/group.rs` and `examples/share.rs` run against a broker
//! (each starts with its `cargo run` line). How this crate fits into krec (the crates, the hot
//! path, the invariants): `docs/ARCHITECTURE.md` in the repository.
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
    ChunkBatch, ChunkBatchRef, ChunkBatches, ChunkRecordIter, ChunkRecords, DataBatch, DataBatches,
    PartitionChunk, RecordFlow,
};
pub use config::{ConsumerConfig, OffsetReset, Property, StartOffset};
pub use consumer::{Consumer, Fetched};
pub(crate) use consumer::{UNKNOWN_TOPIC_LOOKUPS, UNKNOWN_TOPIC_RETRY_DELAY};
pub use error::Error;
pub use group::{GroupConfig, GroupConsumer, GroupEvent, GroupProgress};
pub use metrics::MetricsSnapshot;
pub use position::{MetricsSource, PartitionPosition};
pub use share::{AcknowledgeType, Acknowledger, ShareChunk, ShareConsumer, ShareStopper};
pub use subscription::TopicSubscription;
// Re-exported on purpose (see "Public surface"): types of the crates underneath in this API.
pub use krec_batch;
pub use krec_client::{ConnectionSettings, TopicPartition};
