//! `krec` against a real single-node Kafka broker, and against the secured one next to it
//! (TLS, mTLS, SASL, ACLs), with the Toxiproxy lanes and the Schema Registry that
//! `scripts/test.sh` starts and describes in the environment that `support::broker`,
//! `support::secure` and `support::faults` read; `compat` reads the older releases test.sh
//! starts on ZooKeeper (`kafka.sh start --version V`). `cargo test` leaves this binary out
//! (`test = false`); run it by name: `cargo test -p krec-cli --test broker`.
//!
//! Most tests share the brokers and run concurrently, each on topics of its own. The tests
//! under a `solo` module need a broker to themselves (they stop, restart or freeze it, or
//! read its broker-wide counters): test.sh runs them afterwards, one at a time
//! (`-- solo:: --test-threads=1`), after the others (`-- --skip solo:: --test-threads=6`).

#[path = "../support/mod.rs"]
mod support;

mod backup;
mod backup_runs;
mod compat;
mod consume;
mod count;
mod faults;
mod fetch_sessions;
mod filters;
mod group;
mod groups;
mod java_partitions;
#[cfg(feature = "gssapi")]
mod kerberos;
mod metrics;
mod mirror;
mod mirror_faults;
mod mirror_follow;
mod mirror_shapes;
mod oidc;
mod produce;
mod produce_schema;
mod producers;
mod questions;
mod ranges;
mod restore;
mod schema;
mod secure;
mod share;
mod share_budget;
mod solo;
mod subscribe;
