//! `krec` against the three-node Kafka cluster that `scripts/test.sh` starts: leader changes,
//! rack-aware fetching, metadata with replicas. These tests stop and start the cluster's
//! nodes, so test.sh runs them one at a time. `cargo test` leaves this binary out
//! (`test = false`); run it by name: `cargo test -p krec-cli --test cluster`.

#[path = "../support/mod.rs"]
mod support;

mod leader_change;
mod questions;
mod rack;
