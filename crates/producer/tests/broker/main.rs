//! krec-producer against the suite's real broker (`KREC_TEST_BOOTSTRAP`, see scripts/test.sh):
//! the front door, keyed records read back in order, the bounds of `buffer.memory` and
//! `max.block.ms`, unknown topics, every codec, and a connection cut under idempotence.

mod support;

mod bounds;
mod delivery;
mod faults;
