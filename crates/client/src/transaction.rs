//! Transactions on the wire (KIP-98): the requests a transactional producer sends to its
//! transaction coordinator (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn) and to a group's
//! coordinator (TxnOffsetCommit), which protocol the broker offers ([`protocol`]), and what
//! each error means for the producer ([`classify`]).
//!
//! Finding the coordinator is [`group::find_coordinator_of`](crate::group::find_coordinator_of)
//! with [`CoordinatorType::Transaction`](crate::group::CoordinatorType::Transaction); the
//! producer id and epoch come from
//! [`producer_id::init_transactional_producer_id`](crate::producer_id::init_transactional_producer_id);
//! the batches go in Produce requests carrying the `transactional.id`, with the
//! transactional bit set in their header.
//!
//! Transactions v2 (KIP-890), where the cluster finalized `transaction.version` 2: a
//! partition joins the transaction with the first Produce (v12+) that writes to it, and a
//! group with the first TxnOffsetCommit (v5), so neither AddPartitionsToTxn nor
//! AddOffsetsToTxn is sent; each EndTxn (v5) answers the epoch the next transaction's batches
//! carry, their sequences from 0. Under v1 the producer adds each partition and group first
//! and keeps its epoch across transactions; the requests here are then sent at v1's versions
//! (EndTxn and TxnOffsetCommit up to v4), and its Produce requests must be too (up to v11).

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest, GroupId, ProduceRequest,
    ProducerId, TopicName, TransactionalId, TxnOffsetCommitRequest,
};
use kafka_protocol::protocol::StrBytes;

use super::Connection;
use crate::group::Committer;
use crate::producer_id::ProducerIdentity;
use crate::versions::{ApiVersions, ADD_PARTITIONS_TO_TXN_CLIENT_VERSION};
use crate::wire::ApiRequest;
use crate::{Error, TopicPartition};

mod classify;

pub use classify::{classify, classify_error, txn_codes, TxnApi, TxnErrorClass};

/// The finalized feature that turns Transactions v2 on (KIP-890), and the level that does.
pub const TRANSACTION_VERSION_FEATURE: &str = "transaction.version";
const TRANSACTIONS_V2_LEVEL: i16 = 2;

/// The first versions of Transactions v2: Produce adds its partitions to the transaction,
/// TxnOffsetCommit its group, and EndTxn answers the next epoch.
const V2_PRODUCE_VERSION: i16 = 12;
const V2_TXN_OFFSET_COMMIT_VERSION: i16 = 5;
const V2_END_TXN_VERSION: i16 = 5;

/// Which transaction protocol a producer speaks with a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransactionProtocol {
    /// KIP-98: AddPartitionsToTxn and AddOffsetsToTxn before writing, one epoch for all the
    /// producer's transactions.
    V1,
    /// KIP-890 part 2: partitions and groups join implicitly, a new epoch after each EndTxn.
    V2,
}

impl TransactionProtocol {
    /// The highest Produce version a transactional producer may send under this protocol:
    /// under v1 a v12+ request would add partitions implicitly behind the producer's back.
    pub fn max_produce_version(self) -> i16 {
        match self {
            TransactionProtocol::V1 => V2_PRODUCE_VERSION - 1,
            TransactionProtocol::V2 => i16::MAX,
        }
    }
}

/// The protocol a broker offers, from its ApiVersions answer
/// ([`Connection::versions`]): v2 when its cluster finalized `transaction.version` 2 or
/// higher and it speaks Produce v12, TxnOffsetCommit v5 and EndTxn v5 (as this client does);
/// v1 otherwise. Finalized features are cluster-wide but reach each broker a little apart: a
/// producer decides once, from its transaction coordinator's connection.
pub fn protocol(versions: &ApiVersions) -> TransactionProtocol {
    let level = versions
        .finalized_feature_level(TRANSACTION_VERSION_FEATURE)
        .unwrap_or(0);
    let speaks =
        |key: i16, version: i16| versions.range(key).is_some_and(|(_, max)| max >= version);
    let v2 = level >= TRANSACTIONS_V2_LEVEL
        && speaks(ProduceRequest::KEY, V2_PRODUCE_VERSION)
        && speaks(TxnOffsetCommitRequest::KEY, V2_TXN_OFFSET_COMMIT_VERSION)
        && speaks(EndTxnRequest::KEY, V2_END_TXN_VERSION);
    if v2 {
        TransactionProtocol::V2
    } else {
        TransactionProtocol::V1
    }
}

/// Who sends a transactional request: the `transactional.id`, the producer id and epoch
/// InitProducerId (or the last EndTxn, under v2) gave it, and the protocol it speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransactionalProducer<'a> {
    /// `transactional.id`.
    pub transactional_id: &'a str,
    /// The current producer id and epoch.
    pub identity: ProducerIdentity,
    /// The protocol chosen with [`protocol`].
    pub protocol: TransactionProtocol,
}

impl TransactionalProducer<'_> {
    fn transactional_id(&self) -> TransactionalId {
        TransactionalId(StrBytes::from_string(self.transactional_id.to_owned()))
    }
}

/// One offset committed in a transaction: the next offset to read, and metadata kept with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnOffset {
    /// The next offset to read.
    pub offset: i64,
    /// The leader epoch of the last record read (-1: unknown).
    pub leader_epoch: i32,
    /// Metadata stored with the offset (OffsetFetch reads it back).
    pub metadata: Option<String>,
}

/// A bare next offset: no leader epoch, no metadata.
impl From<i64> for TxnOffset {
    fn from(offset: i64) -> Self {
        TxnOffset {
            offset,
            leader_epoch: -1,
            metadata: None,
        }
    }
}

/// Each partition's error code in an AddPartitionsToTxn or TxnOffsetCommit answer (0: done).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionCodes {
    /// The broker that answered.
    pub broker: String,
    /// The request answered.
    pub api: TxnApi,
    /// Every partition of the answer with its code.
    pub partitions: Vec<(TopicPartition, i16)>,
}

/// AddPartitionsToTxn (v1 only; sent to the transaction coordinator): adds `partitions`
/// (topic -> partition ids) to the open transaction, or opens it. Returns each partition's
/// code; [`PartitionCodes::verdict`] says what the failures mean.
pub async fn add_partitions_to_txn(
    connection: &mut Connection,
    producer: &TransactionalProducer<'_>,
    partitions: &BTreeMap<String, Vec<i32>>,
) -> Result<PartitionCodes, Error> {
    let request = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(producer.transactional_id())
        .with_v3_and_below_producer_id(ProducerId(producer.identity.producer_id))
        .with_v3_and_below_producer_epoch(producer.identity.producer_epoch)
        .with_v3_and_below_topics(
            partitions
                .iter()
                .map(|(topic, ids)| {
                    AddPartitionsToTxnTopic::default()
                        .with_name(TopicName(StrBytes::from_string(topic.clone())))
                        .with_partitions(ids.clone())
                })
                .collect(),
        );
    let timeout = connection.request_timeout();
    let (_, response) = connection
        .request_capped(&request, ADD_PARTITIONS_TO_TXN_CLIENT_VERSION, timeout)
        .await?;
    let partitions = response
        .results_by_topic_v3_and_below
        .into_iter()
        .flat_map(|topic| {
            let name: Arc<str> = Arc::from(topic.name.0.as_str());
            topic.results_by_partition.into_iter().map(move |p| {
                (
                    TopicPartition::new(name.clone(), p.partition_index),
                    p.partition_error_code,
                )
            })
        })
        .collect();
    Ok(PartitionCodes {
        broker: connection.address().to_owned(),
        api: TxnApi::AddPartitionsToTxn,
        partitions,
    })
}

/// AddOffsetsToTxn (v1 only; sent to the transaction coordinator): makes `group`'s offset
/// commits part of the open transaction, before [`txn_offset_commit`]. A refusal is
/// [`Error::Broker`] with api `AddOffsetsToTxn`.
pub async fn add_offsets_to_txn(
    connection: &mut Connection,
    producer: &TransactionalProducer<'_>,
    group: &str,
) -> Result<(), Error> {
    let request = AddOffsetsToTxnRequest::default()
        .with_transactional_id(producer.transactional_id())
        .with_producer_id(ProducerId(producer.identity.producer_id))
        .with_producer_epoch(producer.identity.producer_epoch)
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())));
    let (_, response) = connection.request(&request).await?;
    check_code(connection, TxnApi::AddOffsetsToTxn, response.error_code)
}

/// TxnOffsetCommit (sent to the group's coordinator): commits `offsets` as part of the
/// transaction, visible when it commits. `committer` is the consumer's group metadata
/// (generation or member epoch, member id, instance id: KIP-447, v3+), so a member that lost
/// its partitions in a rebalance cannot commit for them; a simple (memberless) group takes
/// generation -1 and an empty member id. Returns each partition's code.
pub async fn txn_offset_commit(
    connection: &mut Connection,
    producer: &TransactionalProducer<'_>,
    committer: &Committer<'_>,
    offsets: &BTreeMap<TopicPartition, TxnOffset>,
) -> Result<PartitionCodes, Error> {
    let mut topics: BTreeMap<&str, Vec<TxnOffsetCommitRequestPartition>> = BTreeMap::new();
    for (TopicPartition { topic, partition }, committed) in offsets {
        topics.entry(&**topic).or_default().push(
            TxnOffsetCommitRequestPartition::default()
                .with_partition_index(*partition)
                .with_committed_offset(committed.offset)
                .with_committed_leader_epoch(committed.leader_epoch)
                .with_committed_metadata(committed.metadata.clone().map(StrBytes::from_string)),
        );
    }
    let request = TxnOffsetCommitRequest::default()
        .with_transactional_id(producer.transactional_id())
        .with_group_id(GroupId(StrBytes::from_string(committer.group.to_owned())))
        .with_producer_id(ProducerId(producer.identity.producer_id))
        .with_producer_epoch(producer.identity.producer_epoch)
        .with_generation_id(committer.generation)
        .with_member_id(StrBytes::from_string(committer.member_id.to_owned()))
        .with_group_instance_id(
            committer
                .instance_id
                .map(|i| StrBytes::from_string(i.to_owned())),
        )
        .with_topics(
            topics
                .into_iter()
                .map(|(topic, partitions)| {
                    TxnOffsetCommitRequestTopic::default()
                        .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                        .with_partitions(partitions)
                })
                .collect(),
        );
    let cap = match producer.protocol {
        TransactionProtocol::V1 => V2_TXN_OFFSET_COMMIT_VERSION - 1,
        TransactionProtocol::V2 => i16::MAX,
    };
    let timeout = connection.request_timeout();
    let (_, response) = connection.request_capped(&request, cap, timeout).await?;
    let partitions = response
        .topics
        .into_iter()
        .flat_map(|topic| {
            let name: Arc<str> = Arc::from(topic.name.0.as_str());
            topic.partitions.into_iter().map(move |p| {
                (
                    TopicPartition::new(name.clone(), p.partition_index),
                    p.error_code,
                )
            })
        })
        .collect();
    Ok(PartitionCodes {
        broker: connection.address().to_owned(),
        api: TxnApi::TxnOffsetCommit,
        partitions,
    })
}

/// EndTxn (sent to the transaction coordinator): commits the open transaction, or aborts it.
/// Under v2 returns the identity the next transaction's batches carry (the same id with the
/// next epoch, or a new id once the epoch ran out); under v1 `None`: the producer keeps its
/// own. A refusal is [`Error::Broker`] with api `EndTxn`.
pub async fn end_txn(
    connection: &mut Connection,
    producer: &TransactionalProducer<'_>,
    commit: bool,
) -> Result<Option<ProducerIdentity>, Error> {
    let request = EndTxnRequest::default()
        .with_transactional_id(producer.transactional_id())
        .with_producer_id(ProducerId(producer.identity.producer_id))
        .with_producer_epoch(producer.identity.producer_epoch)
        .with_committed(commit);
    let cap = match producer.protocol {
        TransactionProtocol::V1 => V2_END_TXN_VERSION - 1,
        TransactionProtocol::V2 => i16::MAX,
    };
    let timeout = connection.request_timeout();
    let (version, response) = connection.request_capped(&request, cap, timeout).await?;
    check_code(connection, TxnApi::EndTxn, response.error_code)?;
    if version < V2_END_TXN_VERSION {
        return Ok(None);
    }
    if response.producer_id.0 < 0 || response.producer_epoch < 0 {
        return Err(Error::Protocol {
            broker: connection.address().to_owned(),
            api: "EndTxn",
            detail: format!(
                "v{version} answered no next producer id and epoch ({}, {})",
                response.producer_id.0, response.producer_epoch
            ),
        });
    }
    Ok(Some(ProducerIdentity {
        producer_id: response.producer_id.0,
        producer_epoch: response.producer_epoch,
    }))
}

fn check_code(connection: &Connection, api: TxnApi, code: i16) -> Result<(), Error> {
    if code == 0 {
        return Ok(());
    }
    Err(Error::Broker {
        broker: connection.address().to_owned(),
        api: api.name(),
        topic: None,
        partition: None,
        code,
        name: crate::error_name(code),
    })
}

#[cfg(test)]
mod tests;
