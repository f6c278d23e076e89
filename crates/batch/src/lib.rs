//! krec-batch: Kafka record batches (work in progress).
