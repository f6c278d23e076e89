//! krec-testkit: what krec's tests, benches and examples share, written once.
//!
//! Four parts:
//!
//! - [`broker`] (feature `broker`): one scriptable fake Kafka broker on 127.0.0.1. It reads
//!   request frames, decodes each header and hands the [`Request`](broker::Request) (API,
//!   version, correlation id, body) to a closure the test supplies, which returns a
//!   [`Reply`](broker::Reply): a typed answer, a raw body, raw bytes, a late answer, an answer
//!   under another correlation id, or a closed connection, each followed if need be by more
//!   written unasked ([`Reply::then`](broker::Reply::then)). [`broker::answers`] builds the
//!   answers every script gives alike (ApiVersions, Metadata, ListOffsets).
//! - [`alloc`]: one counting global allocator, [`CountingAllocator`], counting allocations,
//!   bytes and live bytes per thread (and process-wide if asked), for tests that prove a path
//!   allocates nothing and benches that report allocations per operation.
//! - [`live`] (feature `live`): the real brokers `scripts/test.sh` starts for the `broker`
//!   test binaries: their environment, `kafka.sh` and Kafka's tools, unique names, topics
//!   created and records produced (plainly or in transactions) by confluent-kafka's Python
//!   client.
//! - [`surface`] (feature `surface`): a library crate's public surface listed from its source,
//!   checked against the listing kept next to it and against its crate docs.
//!
//! A fake broker that answers the handshake and closes the connection on the first Fetch:
//!
//! ```no_run
//! # #[cfg(feature = "broker")]
//! # async fn example() {
//! use kafka_protocol::messages::ApiKey;
//! use krec_testkit::broker::{self, answers, Reply};
//!
//! let address = broker::start(|request| match request.api_key {
//!     ApiKey::ApiVersions => request.answer(&answers::api_versions(&[
//!         (ApiKey::Metadata, 1, 12),
//!         (ApiKey::Fetch, 4, 12),
//!     ])),
//!     ApiKey::Metadata => request.answer(&answers::metadata(request.port, &[("t", 1)])),
//!     _ => Reply::close(),
//! })
//! .await;
//! // Point the consumer under test at `address`.
//! # }
//! ```
//!
//! The allocator, in a test that proves decoding allocates nothing:
//!
//! ```
//! use krec_testkit::CountingAllocator;
//!
//! #[global_allocator]
//! static ALLOCATOR: CountingAllocator = CountingAllocator::new();
//!
//! fn main() {
//!     let input = b"some bytes".to_vec();
//!     let (_, counts) = ALLOCATOR.during(|| input.iter().filter(|&&b| b == b' ').count());
//!     assert_eq!(counts.allocations, 0);
//! }
//! ```
//!
//! Use it as a dev-dependency only (`krec-testkit.workspace = true`, with
//! `features = ["broker"]` for the broker). It depends on no krec crate, so every krec crate's
//! tests, unit tests included, can use it without a dependency cycle.

#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod alloc;
#[cfg(feature = "broker")]
pub mod broker;
#[cfg(feature = "live")]
pub mod live;
#[cfg(feature = "surface")]
pub mod surface;

pub use alloc::{CountingAllocator, Counts};
