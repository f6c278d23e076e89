//! krec-lz4: Kafka LZ4 frames (work in progress).
