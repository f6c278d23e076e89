//! krec: a fast Kafka consumer and record-batch decoder.
//!
//! This crate is a facade: it re-exports the three crates that do the work,
//! so an embedding program can depend on `krec` alone.
//!
//! - [`lz4`]: Kafka's LZ4 frame decoding into per-thread pooled buffers (`krec-lz4`).
//! - [`batch`]: RecordBatch v2 and legacy message-set decoding (`krec-batch`).
//! - [`consumer`]: the async Kafka consumer, output formats and the `krec` binary (`krec-consumer`).
#![deny(missing_docs)]

pub use krec_batch as batch;
pub use krec_consumer as consumer;
pub use krec_lz4 as lz4;
