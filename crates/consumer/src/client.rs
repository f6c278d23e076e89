//! The Kafka wire client: connections, ApiVersions, Metadata, ListOffsets and Fetch.
//!
//! Messages are encoded and decoded by the `kafka-protocol` crate (with its record codecs
//! turned off); record bytes stay opaque `Bytes` slices of the response frame and are decoded
//! by krec-batch elsewhere.

pub mod connection;
pub mod fetch;
mod frame_pool;
pub mod group;
pub mod metadata;
pub mod offsets;
mod receive_wait;
pub mod versions;

pub use connection::{Connection, ConnectionSettings};

/// Kafka's name for an error code, for messages (`"NOT_LEADER_OR_FOLLOWER"`-like text).
pub fn error_name(code: i16) -> String {
    match kafka_protocol::ResponseError::try_from_code(code) {
        Some(error) => format!("{error:?}"),
        None => format!("unknown error code {code}"),
    }
}

/// Kafka error codes this client reacts to by name.
pub mod codes {
    /// OFFSET_OUT_OF_RANGE.
    pub const OFFSET_OUT_OF_RANGE: i16 = 1;
    /// CORRUPT_MESSAGE.
    pub const CORRUPT_MESSAGE: i16 = 2;
    /// UNKNOWN_TOPIC_OR_PARTITION.
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    /// LEADER_NOT_AVAILABLE.
    pub const LEADER_NOT_AVAILABLE: i16 = 5;
    /// NOT_LEADER_OR_FOLLOWER.
    pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
    /// REPLICA_NOT_AVAILABLE.
    pub const REPLICA_NOT_AVAILABLE: i16 = 9;
    /// KAFKA_STORAGE_ERROR.
    pub const KAFKA_STORAGE_ERROR: i16 = 56;
    /// FENCED_LEADER_EPOCH.
    pub const FENCED_LEADER_EPOCH: i16 = 74;
    /// UNKNOWN_LEADER_EPOCH.
    pub const UNKNOWN_LEADER_EPOCH: i16 = 75;
    /// OFFSET_NOT_AVAILABLE.
    pub const OFFSET_NOT_AVAILABLE: i16 = 78;
    /// UNKNOWN_TOPIC_ID.
    pub const UNKNOWN_TOPIC_ID: i16 = 100;
    /// INCONSISTENT_TOPIC_ID.
    pub const INCONSISTENT_TOPIC_ID: i16 = 103;

    /// Errors after which the partition's leader must be looked up again before retrying.
    pub fn needs_metadata_refresh(code: i16) -> bool {
        matches!(
            code,
            UNKNOWN_TOPIC_OR_PARTITION
                | LEADER_NOT_AVAILABLE
                | NOT_LEADER_OR_FOLLOWER
                | REPLICA_NOT_AVAILABLE
                | KAFKA_STORAGE_ERROR
                | FENCED_LEADER_EPOCH
                | UNKNOWN_LEADER_EPOCH
                | OFFSET_NOT_AVAILABLE
                | UNKNOWN_TOPIC_ID
                | INCONSISTENT_TOPIC_ID
        )
    }
}
