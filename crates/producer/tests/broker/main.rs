//! krec-producer against the suite's real broker (`KREC_TEST_BOOTSTRAP`, see scripts/test.sh):
//! the front door, keyed records read back in order, the bounds of `buffer.memory` and
//! `max.block.ms`, unknown topics, every codec, a connection cut under idempotence, the
//! allocations of the write path, transactions (commit, abort, fencing, offsets), stored
//! batches copied whole (`send_batch`), and the root package's `examples/produce.rs` and
//! `examples/transactions.rs`.

mod support;

mod allocations;
mod batches;
mod bounds;
mod delivery;
mod example;
mod faults;
mod throttle;
mod too_large;
mod transaction_ends;
mod transactions;

/// The producer under faults that need a Toxiproxy lane or the broker to themselves:
/// scripts/test.sh runs the `solo::` tests one at a time, after the others.
#[path = "../faults/mod.rs"]
mod solo;

/// Counts heap allocations per thread for `allocations` (forwards to the system allocator).
#[global_allocator]
static ALLOCATOR: krec_testkit::alloc::CountingAllocator =
    krec_testkit::alloc::CountingAllocator::new();
