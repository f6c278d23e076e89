//! What a transactional producer does about each error, as Java's `TransactionManager`
//! handlers (and its `Sender`, for Produce) decide it, in one place.
//!
//! One departure: authorization failures (`TRANSACTIONAL_ID_`, `CLUSTER_`, `TOPIC_`,
//! `GROUP_AUTHORIZATION_FAILED`) are fatal here, where Java makes some of them abortable:
//! an ACL does not change between two transactions, and krec ends on a missing ACL with a
//! clear error rather than abort after abort.

use crate::group::group_codes;
use crate::{Error, TopicPartition};

use super::PartitionCodes;

/// Transaction error codes this classifier decides on by name.
pub mod txn_codes {
    /// REQUEST_TIMED_OUT.
    pub const REQUEST_TIMED_OUT: i16 = 7;
    /// NETWORK_EXCEPTION.
    pub const NETWORK_EXCEPTION: i16 = 13;
    /// NOT_ENOUGH_REPLICAS.
    pub const NOT_ENOUGH_REPLICAS: i16 = 19;
    /// NOT_ENOUGH_REPLICAS_AFTER_APPEND.
    pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: i16 = 20;
    /// TOPIC_AUTHORIZATION_FAILED.
    pub const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
    /// GROUP_AUTHORIZATION_FAILED.
    pub const GROUP_AUTHORIZATION_FAILED: i16 = 30;
    /// CLUSTER_AUTHORIZATION_FAILED.
    pub const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
    /// OUT_OF_ORDER_SEQUENCE_NUMBER.
    pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
    /// INVALID_PRODUCER_EPOCH: an older epoch than the coordinator's (fenced, before Kafka 2.8
    /// had PRODUCER_FENCED; in a Produce answer, an epoch bumped by a timed-out abort).
    pub const INVALID_PRODUCER_EPOCH: i16 = 47;
    /// INVALID_TXN_STATE: the request does not fit the transaction's state.
    pub const INVALID_TXN_STATE: i16 = 48;
    /// INVALID_PRODUCER_ID_MAPPING: the transactional id is mapped to another producer id.
    pub const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
    /// CONCURRENT_TRANSACTIONS: the previous transaction is still completing.
    pub const CONCURRENT_TRANSACTIONS: i16 = 51;
    /// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
    pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
    /// OPERATION_NOT_ATTEMPTED: not tried because another partition of the request failed.
    pub const OPERATION_NOT_ATTEMPTED: i16 = 55;
    /// UNKNOWN_PRODUCER_ID: the broker no longer knows the producer (its state expired).
    pub const UNKNOWN_PRODUCER_ID: i16 = 59;
    /// PRODUCER_FENCED: a newer producer with the same transactional id took over.
    pub const PRODUCER_FENCED: i16 = 90;
    /// TRANSACTION_ABORTABLE (KIP-890): the transaction must be aborted, the producer goes on.
    pub const TRANSACTION_ABORTABLE: i16 = 120;
}

use txn_codes::*;

/// The request an error answered, as far as its meaning depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TxnApi {
    /// FindCoordinator of a transactional id or of a group.
    FindCoordinator,
    /// InitProducerId with a transactional id.
    InitProducerId,
    /// AddPartitionsToTxn.
    AddPartitionsToTxn,
    /// AddOffsetsToTxn.
    AddOffsetsToTxn,
    /// TxnOffsetCommit (to the group's coordinator).
    TxnOffsetCommit,
    /// EndTxn.
    EndTxn,
    /// Produce of a transactional batch (a partition's answer).
    Produce,
}

impl TxnApi {
    /// Its name in Kafka's protocol guide.
    pub fn name(self) -> &'static str {
        match self {
            TxnApi::FindCoordinator => "FindCoordinator",
            TxnApi::InitProducerId => "InitProducerId",
            TxnApi::AddPartitionsToTxn => "AddPartitionsToTxn",
            TxnApi::AddOffsetsToTxn => "AddOffsetsToTxn",
            TxnApi::TxnOffsetCommit => "TxnOffsetCommit",
            TxnApi::EndTxn => "EndTxn",
            TxnApi::Produce => "Produce",
        }
    }
}

/// What the producer does next, from the mildest to the gravest (the order [`Ord`] follows,
/// which [`PartitionCodes::verdict`] uses to pick one failure among several).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum TxnErrorClass {
    /// Passing (loading, a transaction still completing, a replica short): send the same
    /// request again after the back-off.
    Retry,
    /// The coordinator moved or cannot be reached: find it again (the transaction's, or the
    /// group's for TxnOffsetCommit), then send again.
    Rediscover,
    /// The transaction cannot commit: abort it; the producer goes on (TRANSACTION_ABORTABLE,
    /// a group refusing the offsets after a rebalance, a batch that failed).
    Abort,
    /// Abort, then bump the epoch (InitProducerId with the current identity, KIP-360) before
    /// the next transaction: the broker lost the producer's state or its sequences broke. Fatal
    /// if the broker cannot bump (before Kafka 2.5).
    AbortWithEpochBump,
    /// Fatal: the producer must close (an ACL refusal, INVALID_TXN_STATE, an answer the
    /// client cannot act on).
    Fatal,
    /// Fatal: a newer producer with the same `transactional.id` took over (PRODUCER_FENCED,
    /// INVALID_PRODUCER_EPOCH from a coordinator); this one must close, never retry.
    Fenced,
}

impl TxnErrorClass {
    /// Whether the producer must close.
    pub fn is_fatal(self) -> bool {
        matches!(self, TxnErrorClass::Fatal | TxnErrorClass::Fenced)
    }
}

/// What `code` (a request's or a partition's error) from `api` means for a transactional
/// producer; `None` for 0 (no error).
pub fn classify(api: TxnApi, code: i16) -> Option<TxnErrorClass> {
    use TxnErrorClass::*;
    let class = match code {
        0 => return None,
        // A Produce answer's old epoch may be the coordinator's own bump after a timed-out
        // abort: abort, and the abort's EndTxn says whether the producer was fenced.
        INVALID_PRODUCER_EPOCH if api == TxnApi::Produce => Abort,
        PRODUCER_FENCED | INVALID_PRODUCER_EPOCH => Fenced,
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        | CLUSTER_AUTHORIZATION_FAILED
        | TOPIC_AUTHORIZATION_FAILED
        | GROUP_AUTHORIZATION_FAILED
        | INVALID_TXN_STATE => Fatal,
        TRANSACTION_ABORTABLE | OPERATION_NOT_ATTEMPTED => Abort,
        UNKNOWN_PRODUCER_ID | INVALID_PRODUCER_ID_MAPPING => AbortWithEpochBump,
        OUT_OF_ORDER_SEQUENCE_NUMBER if api == TxnApi::Produce => AbortWithEpochBump,
        group_codes::COORDINATOR_NOT_AVAILABLE | group_codes::NOT_COORDINATOR
            if api != TxnApi::Produce =>
        {
            Rediscover
        }
        REQUEST_TIMED_OUT if api == TxnApi::TxnOffsetCommit => Rediscover,
        group_codes::FENCED_INSTANCE_ID if api == TxnApi::TxnOffsetCommit => Abort,
        code if api == TxnApi::TxnOffsetCommit && group_codes::is_membership_change(code) => Abort,
        code if is_retriable(code) => Retry,
        // Java aborts on any other partition failure of these two, and closes on the rest.
        _ if matches!(api, TxnApi::AddPartitionsToTxn | TxnApi::Produce) => Abort,
        _ => Fatal,
    };
    Some(class)
}

/// What a failed call of [`crate::transaction`] (or of InitProducerId, FindCoordinator or
/// Produce in a transaction) means: a broker's code as [`classify`] says; a broken connection
/// or a missing answer means finding the coordinator again (for Produce, retrying); anything
/// else (a malformed answer, no common version, a security failure) is fatal.
pub fn classify_error(api: TxnApi, error: &Error) -> TxnErrorClass {
    match error {
        Error::Broker { code, .. } => classify(api, *code).unwrap_or(TxnErrorClass::Fatal),
        error if error.is_connection_failure() && api == TxnApi::Produce => TxnErrorClass::Retry,
        error if error.is_connection_failure() => TxnErrorClass::Rediscover,
        _ => TxnErrorClass::Fatal,
    }
}

/// Kafka's retriable errors (Java's `RetriableException`s) a transactional request or a
/// Produce answer can carry.
fn is_retriable(code: i16) -> bool {
    crate::codes::needs_metadata_refresh(code)
        || matches!(
            code,
            crate::codes::CORRUPT_MESSAGE
                | REQUEST_TIMED_OUT
                | NETWORK_EXCEPTION
                | group_codes::COORDINATOR_LOAD_IN_PROGRESS
                | group_codes::COORDINATOR_NOT_AVAILABLE
                | group_codes::NOT_COORDINATOR
                | NOT_ENOUGH_REPLICAS
                | NOT_ENOUGH_REPLICAS_AFTER_APPEND
                | CONCURRENT_TRANSACTIONS
                | group_codes::UNSTABLE_OFFSET_COMMIT
        )
}

impl PartitionCodes {
    /// The partitions that failed, with their codes.
    pub fn failed(&self) -> impl Iterator<Item = &(TopicPartition, i16)> {
        self.partitions.iter().filter(|(_, code)| *code != 0)
    }

    /// `None` when every partition succeeded; otherwise the gravest failure's class and the
    /// error naming its partition ([`Error::Broker`]).
    pub fn verdict(&self) -> Option<(TxnErrorClass, Error)> {
        let (partition, code, class) = self
            .failed()
            .filter_map(|(tp, code)| Some((tp, *code, classify(self.api, *code)?)))
            .max_by_key(|(_, _, class)| *class)?;
        let error = Error::Broker {
            broker: self.broker.clone(),
            api: self.api.name(),
            topic: Some(partition.topic.to_string()),
            partition: Some(partition.partition),
            code,
            name: crate::error_name(code),
        };
        Some((class, error))
    }
}
