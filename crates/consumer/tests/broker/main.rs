//! krec-consumer against the suite's real single-node broker, driven as an embedding program
//! would drive it: `Consumer` (assign, seek, stop_at_end, read_committed, patterns),
//! `GroupConsumer` (members splitting a topic, `processed` then `close`, a drop; members
//! that hold partitions and read none), an embedder's own SASL mechanism and token source
//! (the secured broker), the errors an embedder sees, and the programs in `examples/` that
//! talk to a broker.
//!
//! `cargo test` leaves this binary out (`test = false`); `scripts/test.sh` starts the brokers,
//! sets their environment (read by `krec_testkit::live`) and runs it by name, next to the
//! CLI's broker tests. By hand: start a broker (`bash scripts/kafka.sh start --name tk`),
//! export KREC_TEST_BOOTSTRAP (what it printed), KREC_KAFKA_SH (the script's absolute path)
//! and KREC_KAFKA_NAME=tk, then `cargo test -p krec-consumer --test broker`. The examples
//! module runs the example programs test.sh's build step made (`target/debug/examples/`):
//! build them first (`cargo build --examples`), and it needs the secured broker for
//! `examples/secure.rs` (KREC_TEST_SECURE_ENV, KREC_TEST_SECURE_NAME).
//!
//! Every test uses topics and groups of its own and shares the broker with the others (and
//! with the CLI's broker tests). A test that needs the broker to itself would go under a
//! `solo` module, which test.sh runs afterwards one at a time; none does yet.

mod assign;
mod copy;
mod custom_sasl;
mod errors;
mod examples;
mod group;
mod membership;
mod oidc;
mod read_committed;
mod subscribe;
mod support;
