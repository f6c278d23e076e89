//! krec-producer against the three-node cluster scripts/test.sh starts
//! (`KREC_TEST_CLUSTER_BOOTSTRAP`, `KREC_TEST_CLUSTER_NAME`): leaders moved while records
//! flow. These tests stop and start the cluster's nodes, so test.sh runs them one at a time.
//! `cargo test` leaves this binary out (`test = false`); run it by name:
//! `cargo test -p krec-producer --test cluster`.

// The broker tests' helpers; this binary uses some of them (no Toxiproxy lane here).
#[allow(dead_code)]
#[path = "../broker/support.rs"]
mod support;

#[allow(dead_code)]
#[path = "../faults/check.rs"]
mod check;

mod leader_move;
