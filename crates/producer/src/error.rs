//! The producer crate's one error type.

use std::sync::Arc;

use krec_client::client_properties::PropertyError;

/// What can go wrong: configuration, connecting, a record refused by `send`, or a delivery
/// that failed (each naming the topic and partition, and why).
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A client property is unknown, unsupported or invalid; a secret's value is never shown.
    #[error("{}{detail}", property_text(origin, key))]
    Property {
        /// The property's key (empty when a whole properties file is at fault).
        key: String,
        /// Where it was set: `FILE:LINE`, a file, or how it was given
        /// (`ProducerConfig::with`, ...).
        origin: String,
        /// What is wrong, and how to fix it.
        detail: String,
    },

    /// Two settings that cannot hold together, each named with where it was set.
    #[error("{first} conflicts with {second}: {detail}")]
    Conflict {
        /// The first key, with its value and origin (`enable.idempotence=true (FILE:3)`).
        first: String,
        /// The second key, with its value and origin.
        second: String,
        /// Why, and how to fix it.
        detail: String,
    },

    /// The cluster could not be reached or refused the producer (bootstrap, InitProducerId).
    #[error("{context}: {source}")]
    Client {
        /// What the producer was doing.
        context: String,
        /// The client's error.
        #[source]
        source: Arc<krec_client::Error>,
    },

    /// The topic is not in the cluster's metadata (and the cluster did not create it) within
    /// `max.block.ms`, or the principal may not describe it.
    #[error("topic {topic}: {detail}")]
    UnknownTopic {
        /// The topic.
        topic: String,
        /// What the cluster answered and how long `send` waited.
        detail: String,
    },

    /// The record names a partition the topic does not have (in the metadata refreshed
    /// within `max.block.ms`).
    #[error("topic {topic}: partition {partition} does not exist (the topic has {count})")]
    UnknownPartition {
        /// The topic.
        topic: String,
        /// The partition asked for.
        partition: i32,
        /// How many partitions the topic has.
        count: i32,
    },

    /// The record alone is larger than a batch may be (`max.request.size`) or than the
    /// producer may hold (`buffer.memory`): no wait can make room for it.
    #[error("topic {topic}: a record of {size} bytes is larger than {key} ({limit} bytes)")]
    RecordTooLarge {
        /// The topic.
        topic: String,
        /// The record's size in a batch (header included), or its estimate.
        size: u64,
        /// The configuration key that limits it.
        key: &'static str,
        /// Its value in bytes.
        limit: u64,
    },

    /// The broker refused the record's batch as too large for the topic (MESSAGE_TOO_LARGE:
    /// over its `max.message.bytes`, or the broker's `message.max.bytes`) with the record
    /// alone in it: no split of the batch makes it fit. A batch of several records is split
    /// and sent again instead, but for a batch of [`Producer::send_batch`](crate::Producer::send_batch),
    /// which goes whole or not at all.
    #[error(
        "topic {topic} partition {partition}: a batch of {records} record(s), {size} bytes, is \
         too large for the topic (its max.message.bytes): {detail}"
    )]
    MessageTooLarge {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The refused batch's size in bytes, as sent (compressed, header included).
        size: u64,
        /// How many records it held: one, unless splitting it failed.
        records: i32,
        /// The broker's answer.
        detail: String,
    },

    /// [`Producer::send_batch`](crate::Producer::send_batch) refused the batch before
    /// sending anything: it cannot go to the broker as it is ([`BatchRefusal`] says why).
    #[error("topic {topic} partition {partition}: the batch cannot be sent as it is: {reason}")]
    BatchRefused {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// Why.
        reason: BatchRefusal,
    },

    /// `send` found no room in `buffer.memory` within `max.block.ms`.
    #[error(
        "topic {topic}: no room for the record in buffer.memory ({buffer_memory} bytes) \
         within max.block.ms ({waited_ms} ms): the brokers take records slower than they come"
    )]
    BufferFull {
        /// The topic.
        topic: String,
        /// `buffer.memory`.
        buffer_memory: u64,
        /// How long `send` waited.
        waited_ms: u64,
    },

    /// The broker refused the record's batch with an error that retrying does not cure, or
    /// `retries` ran out.
    #[error("topic {topic} partition {partition}: {detail} after {retries} retries")]
    Refused {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The broker's error (its name, code and message).
        detail: String,
        /// How many times the batch was sent again before this answer.
        retries: u32,
    },

    /// The record's batch was not acknowledged within `delivery.timeout.ms`. With `retries`
    /// above 0 it may have reached the broker, whose answer was lost: the record may be in
    /// the topic (once; never twice with idempotence), its outcome is unknown.
    #[error(
        "topic {topic} partition {partition}: delivery.timeout.ms ({timeout_ms} ms) passed \
         after {retries} retries; last: {last}"
    )]
    DeliveryTimeout {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// `delivery.timeout.ms`.
        timeout_ms: u64,
        /// How many times the batch was sent again.
        retries: u32,
        /// The last failure seen, or that it was never sent (no leader, no connection).
        last: String,
    },

    /// The producer was closed or dropped, or stopped on a fatal error, before the record
    /// was delivered.
    #[error("the producer stopped before the record was delivered: {reason}")]
    Stopped {
        /// Why: closed, dropped, or the fatal error (a fenced producer, a refused ACL).
        reason: String,
    },

    /// A transactional call out of turn: `send` outside `begin` and `commit`, `begin` twice,
    /// anything before `init_transactions`, or on a producer that is not transactional.
    #[error("transactional.id {transactional_id}: {call} is not allowed {state}")]
    TransactionState {
        /// `transactional.id` (empty on a producer without one).
        transactional_id: String,
        /// The call refused.
        call: &'static str,
        /// Where the producer stands, and what is allowed instead.
        state: String,
    },

    /// The open transaction cannot commit (a batch failed, TRANSACTION_ABORTABLE, the group
    /// refused the offsets after a rebalance): only `abort` is allowed; the producer goes on
    /// after it.
    #[error("transactional.id {transactional_id}: the transaction must be aborted: {detail}")]
    TransactionAbortable {
        /// `transactional.id`.
        transactional_id: String,
        /// What failed.
        detail: String,
    },

    /// A newer producer with the same `transactional.id` took over (PRODUCER_FENCED,
    /// INVALID_PRODUCER_EPOCH from the coordinator): this producer has stopped; nothing of its
    /// open transaction becomes visible. Close it. (A Produce answer's INVALID_PRODUCER_EPOCH
    /// only dooms the transaction: a timed-out abort answers the same; `abort` tells which.)
    #[error("transactional.id {transactional_id}: fenced by a newer producer with the same id: {detail}")]
    Fenced {
        /// `transactional.id`.
        transactional_id: String,
        /// The coordinator's answer.
        detail: String,
    },

    /// The transaction coordinator refused the producer for good (an ACL, INVALID_TXN_STATE,
    /// an answer it cannot act on): the producer has stopped.
    #[error("transactional.id {transactional_id}: {detail}")]
    TransactionFatal {
        /// `transactional.id`.
        transactional_id: String,
        /// What failed, with the coordinator's answer.
        detail: String,
    },
}

/// Why [`Producer::send_batch`](crate::Producer::send_batch) refused a batch
/// ([`Error::BatchRefused`]). The broker would refuse most of these too, but only after the
/// batch took its sequences: inside an idempotent or transactional stream that refusal breaks
/// the partition's sequence (and dooms a transaction), so they are refused before sending.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BatchRefusal {
    /// Not exactly one whole, sound RecordBatch v2: cut short, bytes after it, a CRC32C that
    /// does not match, an unknown codec or magic.
    #[error("not one whole RecordBatch v2: {detail}")]
    Malformed {
        /// What is wrong, as krec-batch found it.
        detail: String,
    },
    /// A legacy (v0/v1) message set: re-encode its records as a v2 batch.
    #[error("a legacy message set (magic {magic}); re-encode its records as a v2 batch")]
    Legacy {
        /// Its magic byte.
        magic: u8,
    },
    /// A control batch (transaction markers): only a broker writes those.
    #[error("a control batch (transaction markers are written by the broker)")]
    Control,
    /// No record in it (what the log cleaner leaves): nothing to send.
    #[error("it holds no record")]
    Empty,
    /// Its record count is not its last offset delta + 1 (compaction removed records from
    /// it): the broker refuses such a batch from a producer; re-encode its records with
    /// offset deltas from 0.
    #[error(
        "it holds {records} records over offset deltas 0..={last_offset_delta} (offsets with \
         gaps); re-encode its records with consecutive offset deltas"
    )]
    OffsetGaps {
        /// The header's record count.
        records: u32,
        /// The header's last offset delta.
        last_offset_delta: i32,
    },
    /// Its timestamps are the broker's append time (LogAppendTime), a flag the broker refuses
    /// from a producer: re-encode it with those times as CreateTime.
    #[error(
        "its timestamp type is LogAppendTime, which brokers refuse from a producer; re-encode \
         it with those times as CreateTime"
    )]
    LogAppendTime,
    /// Larger than the producer may send (`max.request.size`) or hold (`buffer.memory`).
    #[error("{size} bytes is larger than {key} ({limit} bytes)")]
    TooLarge {
        /// The batch's size in bytes.
        size: u64,
        /// The configuration key that limits it.
        key: &'static str,
        /// Its value in bytes.
        limit: u64,
    },
}

impl Error {
    pub(crate) fn client(context: impl Into<String>, source: krec_client::Error) -> Self {
        Error::Client {
            context: context.into(),
            source: Arc::new(source),
        }
    }
}

impl From<PropertyError> for Error {
    fn from(error: PropertyError) -> Self {
        let PropertyError {
            key,
            origin,
            detail,
        } = error;
        Error::Property {
            key,
            origin,
            detail,
        }
    }
}

fn property_text(origin: &str, key: &str) -> String {
    let mut text = String::new();
    if !origin.is_empty() {
        text = format!("{origin}: ");
    }
    if !key.is_empty() {
        text.push_str(&format!("property {key}: "));
    }
    text
}
