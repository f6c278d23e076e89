//! Which partition a producer sent a key to, so a reader looking for one key reads one
//! partition: krec-client's [`krec_client::partitioner`] (shared with the producer), under
//! the path consumers have always used.

pub use krec_client::partitioner::Partitioner;
