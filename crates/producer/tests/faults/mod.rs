//! The producer under faults (issue 40): keyed records, idempotent with acks=all and five
//! requests in flight, sent through a cut connection, added latency and a broker restart.
//! Afterwards every `Delivery` has resolved, every record is in the topic exactly once at the
//! offset its delivery gave, and each partition holds its records in send order.
//!
//! These tests hold a Toxiproxy lane or the broker itself: they live under `solo::`, which
//! scripts/test.sh runs one at a time after the other broker tests.

pub mod check;

mod cut;
mod expiry;
mod latency;
mod restart;
mod timeout;
