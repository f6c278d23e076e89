//! krec-copy: copies Kafka record batches as they are, exactly once.
//!
//! One pipeline ([`Pipeline`]) moves batches from a source of batches ([`BatchSource`]) to a
//! sink of batches ([`BatchSink`]). `krec mirror` puts a cluster at each end
//! ([`ClusterSource`], [`ClusterSink`]; [`MirrorConfig`]):
//!
//! - **Shallow.** A RecordBatch v2 goes to the target with its records' bytes untouched,
//!   compressed as it came: only the fields a producer owns (base offset, producer id and
//!   epoch, base sequence, the transactional bit) are re-stamped and the CRC updated. A batch
//!   the target broker would refuse as it is (a legacy message set, LogAppendTime, offset
//!   gaps left by compaction, one larger than the target topic's `max.message.bytes`, one
//!   that starts before the position) is written again record by record, decided before it
//!   is sent; a batch compaction emptied is skipped. Both are counted.
//! - **Committed data only.** The source is read `read_committed`: aborted transactions and
//!   control batches never reach the target.
//! - **Exactly once.** Each target transaction carries batches and, in the same transaction
//!   (TxnOffsetCommit), the source positions they reach, as the committed offsets of the
//!   mirror's group in the target, keyed by the target partitions. A restart reads them back
//!   (waiting out a transaction still open) and fences its predecessor through the stable
//!   `transactional.id`, so a crash at any moment neither loses nor repeats a record.
//! - **Scale-out on Kafka's group protocol.** The sink is a member of the mirror's group in
//!   the target (membership only: it reads nothing there): processes with the same name
//!   share the partitions, each with a `group.instance.id` of its own (a restart takes its
//!   partitions back at once); a member that dies is replaced within the session timeout,
//!   and one the group gave up cannot commit (its generation is refused, KIP-447).
//!
//! ```no_run
//! # async fn demo() -> Result<(), krec_copy::Error> {
//! use krec_consumer::{ConsumerConfig, GroupConfig, TopicSubscription};
//! use krec_copy::{MirrorConfig, PipelineSettings};
//! use krec_producer::ProducerConfig;
//!
//! let mirror = MirrorConfig {
//!     source: ConsumerConfig::from_properties([("bootstrap.servers", "source:9092")])?,
//!     target: ProducerConfig::from_properties([("bootstrap.servers", "target:9092")])?,
//!     topics: TopicSubscription::parse(["orders", "^logs-"])?,
//!     name: "dr".to_owned(),
//!     member: "host-1".to_owned(),
//!     group: GroupConfig::new("dr", Vec::new()),
//!     topic_prefix: String::new(),
//!     stop_at_end: true,
//!     settings: PipelineSettings::default(),
//! }
//! .connect()
//! .await?;
//! let copied = mirror.run(std::future::pending()).await?;
//! println!("{} records in {} transactions", copied.records, copied.transactions);
//! # Ok(())
//! # }
//! ```
//!
//! `krec backup` puts a backup location at the sink's end ([`BackupSink`]; [`BackupConfig`]):
//! each source partition's batches, bytes as fetched (compressed batches stay compressed),
//! go into Kafka's log layout, `<topic>-<partition>/<20-digit base offset>.log`, in a
//! directory or an object store (S3, GCS, Azure). Read committed: aborted data and control
//! batches are not kept. A commit publishes each segment whole (a rename on a disk, one PUT
//! or a completed multipart upload in an object store), then rewrites `manifest.json`
//! (conditionally: one backup at a time) with each topic's id, settings and partition count,
//! each partition's segments, offsets, timestamps, the ranges the source no longer had, and
//! where the next run resumes; the consumer groups' committed offsets on the topics too. A
//! crash leaves at worst segments the manifest does not list; run again, a backup continues
//! where its manifest says.
//!
//! `krec restore` puts a backup at the source end ([`BackupSource`], [`RestoreConfig`]): the
//! segments its manifest lists, read in ranges with every CRC checked, go through the same
//! transactional [`ClusterSink`], so a restore cut short and run again, or run again after a
//! later backup, sends only what the target lacks (its positions: the group
//! `krec-restore-<backup_id>` in the target). With an end time each partition stops at its
//! first record stamped at or after it, the batch holding that record re-encoded up to it. A
//! segment that is not what the manifest says stops the restore naming the file and byte.
//!
//! Layers, bottom up: `error`; `ends` (the two traits and what crosses them); `stats`;
//! `shape` (as it is, written again, or skipped); `connect`, `positions` (where a copy
//! stands, in the target), `target_topics` and `group_offsets` (consumer groups' offsets
//! translated to the target); the two cluster ends; `pipeline`; `mirror`; `store` and
//! `manifest` (a backup's location and its index), `backup_sink`, `backup`,
//! `backup_source`, `restore`.

//!
//! # Public surface
//!
//! Everything public is named here; `tests/public_surface.rs` fails when an item becomes
//! public without a line here and in `public-surface.txt`.
//!
//! - The mirror: [`MirrorConfig`], [`Mirror`] (a [`Pipeline`] of a [`ClusterSource`] and a
//!   [`ClusterSink`]), [`PipelineSettings`], [`CopyStats`] and its [`CopySnapshot`], [`Error`].
//! - The backup: [`BackupConfig`], [`Backup`] (a [`Pipeline`] of a [`ClusterSource`] and a
//!   [`BackupSink`]).
//! - The restore: [`RestoreConfig`], [`Restore`] (a [`Pipeline`] of a [`BackupSource`], a
//!   backup's segments, and a [`ClusterSink`]).
//! - The ends, for other sources and sinks: [`BatchSource`], [`BatchSink`], [`SourceTopic`],
//!   [`SourceRun`], [`SourceBatch`], [`Positions`], [`Ownership`].

#![deny(missing_docs)]

mod backup;
mod backup_sink;
mod backup_source;
mod cluster_sink;
mod cluster_source;
mod connect;
mod ends;
mod error;
mod group_offsets;
mod manifest;
mod mirror;
mod pipeline;
mod positions;
mod restore;
mod shape;
mod stats;
mod store;
mod target_topics;

pub use backup::{Backup, BackupConfig};
pub use backup_sink::BackupSink;
pub use backup_source::BackupSource;
pub use cluster_sink::ClusterSink;
pub use cluster_source::ClusterSource;
pub use ends::{BatchSink, BatchSource, Ownership, Positions, SourceBatch, SourceRun, SourceTopic};
pub use error::Error;
pub use mirror::{Mirror, MirrorConfig};
pub use pipeline::{Pipeline, PipelineSettings};
pub use restore::{Restore, RestoreConfig};
pub use stats::{CopySnapshot, CopyStats};
