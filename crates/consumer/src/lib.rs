//! krec-consumer: the async Kafka consumer, the output formats, and the `krec` command.
//!
//! Layout (each module has one job):
//! - [`format`](mod@format): turning decoded records into output bytes (JSON lines, kcat-style templates, raw).
//! - [`client`]: the Kafka wire client (connections, ApiVersions, Metadata, ListOffsets, Fetch).
//! - [`consumer`]: the fetch pipeline and the embeddable async consumer API.
//! - [`cli`]: the `krec decode` and `krec consume` subcommands.
//! - [`error`]: the crate's one error enum.
#![deny(missing_docs)]

pub mod cli;
pub mod client;
pub mod consumer;
pub mod error;
pub mod format;

pub use error::Error;
