//! A partition's Produce error, typed and classified: retry as is, refresh the leader first,
//! bump the producer epoch, count as delivered (a duplicate), or give up.

use std::fmt;

use crate::TopicPartition;

/// What a Produce error code means to a producer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProduceErrorKind {
    /// NOT_LEADER_OR_FOLLOWER: the leader moved (see [`ProduceError::current_leader`]).
    NotLeaderOrFollower,
    /// UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID, LEADER_NOT_AVAILABLE and the other codes
    /// after which the partition's leader must be looked up again.
    StaleMetadata,
    /// NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT and the other
    /// passing conditions: the same batch may be sent again.
    Transient,
    /// MESSAGE_TOO_LARGE: the batch is over the topic's `max.message.bytes`.
    MessageTooLarge,
    /// RECORD_LIST_TOO_LARGE: the request is over the broker's limit.
    RecordListTooLarge,
    /// INVALID_RECORD: the broker refused records (see [`ProduceError::record_errors`]).
    InvalidRecord,
    /// CORRUPT_MESSAGE: the batch's CRC or layout is wrong.
    CorruptMessage,
    /// DUPLICATE_SEQUENCE_NUMBER: the broker already has this batch; for an idempotent
    /// producer the batch is delivered.
    DuplicateSequenceNumber,
    /// OUT_OF_ORDER_SEQUENCE_NUMBER: a sequence gap; the producer bumps its epoch (KIP-360).
    OutOfOrderSequenceNumber,
    /// UNKNOWN_PRODUCER_ID: the broker lost the producer's state; bump the epoch (KIP-360).
    UnknownProducerId,
    /// INVALID_PRODUCER_EPOCH or PRODUCER_FENCED: a newer epoch of the id exists.
    ProducerFenced,
    /// TOPIC_AUTHORIZATION_FAILED: no Write ACL on the topic.
    TopicAuthorizationFailed,
    /// CLUSTER_AUTHORIZATION_FAILED: no IdempotentWrite ACL on the cluster.
    ClusterAuthorizationFailed,
    /// Any other code.
    Other,
}

impl ProduceErrorKind {
    /// The kind of a Produce error code (not 0).
    pub fn from_code(code: i16) -> ProduceErrorKind {
        use ProduceErrorKind::*;
        match code {
            6 => NotLeaderOrFollower,
            3 | 5 | 9 | 56 | 74 | 75 | 100 | 103 => StaleMetadata,
            7 | 13 | 19 | 20 | 88 => Transient,
            10 => MessageTooLarge,
            18 => RecordListTooLarge,
            87 => InvalidRecord,
            2 => CorruptMessage,
            46 => DuplicateSequenceNumber,
            45 => OutOfOrderSequenceNumber,
            59 => UnknownProducerId,
            47 | 90 => ProducerFenced,
            29 => TopicAuthorizationFailed,
            31 => ClusterAuthorizationFailed,
            _ => Other,
        }
    }
}

/// The index and message of one record an INVALID_RECORD answer refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    /// The record's index in the batch.
    pub batch_index: i32,
    /// Why, when the broker said.
    pub message: Option<String>,
}

/// The partition's new leader as the broker knows it (Produce v10 and later, KIP-951).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaderHint {
    /// Broker id of the leader.
    pub leader_id: i32,
    /// Its leader epoch.
    pub leader_epoch: i32,
}

/// A partition's batch the broker did not append, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProduceError {
    /// The partition.
    pub partition: TopicPartition,
    /// What the code means to a producer.
    pub kind: ProduceErrorKind,
    /// Kafka's error code.
    pub code: i16,
    /// The broker's message (v8 and later).
    pub message: Option<String>,
    /// The records INVALID_RECORD refused (v8 and later).
    pub record_errors: Vec<RecordError>,
    /// With NOT_LEADER_OR_FOLLOWER, the new leader when the broker knows it (v10 and later).
    pub current_leader: Option<LeaderHint>,
}

impl ProduceError {
    /// Sending the same batch again (with the same sequence) can succeed, after a leader
    /// lookup when [`needs_metadata_refresh`](Self::needs_metadata_refresh) says so.
    pub fn is_retriable(&self) -> bool {
        matches!(
            self.kind,
            ProduceErrorKind::NotLeaderOrFollower
                | ProduceErrorKind::StaleMetadata
                | ProduceErrorKind::Transient
                | ProduceErrorKind::CorruptMessage
        )
    }

    /// The partition's leader must be looked up again before the retry.
    pub fn needs_metadata_refresh(&self) -> bool {
        matches!(
            self.kind,
            ProduceErrorKind::NotLeaderOrFollower | ProduceErrorKind::StaleMetadata
        )
    }

    /// The broker has the batch already: delivered, for an idempotent producer.
    pub fn is_duplicate(&self) -> bool {
        self.kind == ProduceErrorKind::DuplicateSequenceNumber
    }

    /// The producer's state on the broker is gone or out of step: an idempotent producer
    /// bumps its epoch (InitProducerId with its current id and epoch) and restarts the
    /// partition's sequences at 0.
    pub fn needs_epoch_bump(&self) -> bool {
        matches!(
            self.kind,
            ProduceErrorKind::OutOfOrderSequenceNumber | ProduceErrorKind::UnknownProducerId
        )
    }

    /// Nothing but changing the batch, the topic's settings, the ACLs or the producer helps.
    pub fn is_fatal(&self) -> bool {
        !(self.is_retriable() || self.is_duplicate() || self.needs_epoch_bump())
    }
}

impl fmt::Display for ProduceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Produce to {}: error {} ({})",
            self.partition,
            self.code,
            crate::error_name(self.code)
        )?;
        if let Some(message) = &self.message {
            write!(f, ": {message}")?;
        }
        for record in &self.record_errors {
            write!(f, "; record {}", record.batch_index)?;
            if let Some(message) = &record.message {
                write!(f, ": {message}")?;
            }
        }
        if let Some(leader) = self.current_leader {
            write!(
                f,
                " (leader now broker {} at epoch {})",
                leader.leader_id, leader.leader_epoch
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for ProduceError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(code: i16) -> ProduceError {
        ProduceError {
            partition: TopicPartition::new("t", 1),
            kind: ProduceErrorKind::from_code(code),
            code,
            message: None,
            record_errors: Vec::new(),
            current_leader: None,
        }
    }

    #[test]
    fn each_code_is_classified_once() {
        let not_leader = error(6);
        assert!(not_leader.is_retriable() && not_leader.needs_metadata_refresh());
        assert!(!not_leader.is_fatal());
        for code in [45, 59] {
            let gap = error(code);
            assert!(gap.needs_epoch_bump() && !gap.is_retriable() && !gap.is_fatal());
        }
        assert!(error(46).is_duplicate() && !error(46).is_fatal());
        for code in [10, 18, 87, 29, 31, 47, 90, 21] {
            assert!(error(code).is_fatal(), "code {code}");
        }
        assert!(error(19).is_retriable() && !error(19).needs_metadata_refresh());
    }

    #[test]
    fn the_message_names_the_partition_the_code_and_the_records() {
        let mut invalid = error(87);
        invalid.message = Some("bad batch".into());
        invalid.record_errors = vec![RecordError {
            batch_index: 3,
            message: Some("null key in a compacted topic".into()),
        }];
        assert_eq!(
            invalid.to_string(),
            "Produce to t/1: error 87 (INVALID_RECORD): bad batch; record 3: null key in a \
             compacted topic"
        );
    }
}
