//! krec-cli: the `krec` command, `krec decode` for segment files and `krec consume` for a
//! live cluster.
//!
//! This library is what the binary, its tests and its benches share; it is not a public API
//! (embed `krec-consumer` and `krec-batch` instead).
//!
//! Layout, from the bottom up:
//! - [`error`]: the crate's one error enum; the consumer's errors wrap into it.
//! - [`corrupt`]: `--on-corrupt`: the report line of a skipped batch, exit status 3.
//! - [`format`](mod@format): decoded records into output bytes (JSON lines, kcat-style
//!   templates, raw values).
//! - [`decode`]: `krec decode`: segment files read in runs of whole batches, decoded on many
//!   threads, written in input order.
//! - [`properties`]: `-X`, `-F` and `$KREC_CONFIG` into security and client settings.
//! - [`time`]: instants as written on the command line (milliseconds, RFC 3339, `-15m`).
//! - [`range`]: `-o` ranges (`s@T`, `e@T`, `START:END`) and where each partition ends.
//! - [`cluster`]: `-b`, the client properties and the runtime every cluster command shares.
//! - [`workers`]: decode threads that keep each partition's order.
//! - [`progress`]: what `krec consume` has written out, per partition and in all.
//! - [`stats`]: `--stats` lines, text or JSON.
//! - [`metrics_server`]: `--metrics`, Prometheus exposition and `/health` over HTTP.
//! - [`consume`]: `krec consume`: arguments into a consumer configuration, records out, logging.
//! - [`produce`]: `krec produce`: lines, files or JSON lines into records, each with where it
//!   was read, and the producer's configuration from the same properties.
//! - [`metadata`], [`offsets`]: `krec metadata` and `krec offsets`, questions about a cluster.
//! - [`count`]: `krec count`, exact record counts of a topic or of segment files.
//! - [`groups`](mod@groups): `krec groups`, the cluster's groups, or one group's members and lag.
//! - [`completions`], [`man`], [`version`]: shell completions, man pages, and what this build
//!   can do (`krec version -v`).
//!
//! ```
//! use krec_cli::format::{OutputFormat, RecordContext, RecordWriter};
//!
//! let file = std::fs::read("../../tests/data/java-lz4.bin").unwrap();
//! let mut out = Vec::new();
//! let mut writer = RecordWriter::new(&mut out, OutputFormat::Json);
//! let context = RecordContext::default();
//! for batch in krec_batch::BatchWalk::new(&file, &Default::default()) {
//!     for record in batch.unwrap().records() {
//!         writer.write_record(&context, &record.unwrap()).unwrap();
//!     }
//! }
//! writer.flush().unwrap();
//! assert!(out.starts_with(b"{\"topic\""));
//! ```
//!
//! How this crate fits into krec (the crates, the hot path, the invariants):
//! `docs/ARCHITECTURE.md` in the repository.
#![deny(missing_docs)]

pub mod backup;
pub mod cluster;
pub mod completions;
pub mod consume;
mod copy_run;
pub mod corrupt;
pub mod count;
pub mod decode;
pub mod error;
pub mod format;
pub mod groups;
pub mod man;
pub mod metadata;
pub mod metrics_server;
pub mod mirror;
pub mod offsets;
pub mod produce;
pub mod progress;
pub mod properties;
pub mod range;
pub mod restore;
pub mod stats;
pub mod time;
pub mod version;
pub mod workers;

pub use error::Error;
