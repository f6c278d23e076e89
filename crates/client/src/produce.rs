//! Produce: one request to one broker carrying one finished RecordBatch v2 per partition, for
//! any number of partitions and topics, and its answer as one typed result per partition.
//!
//! Versions 3 and later only (RecordBatch v2, exactly one batch per partition); the highest
//! version both sides speak, topics named by id (v13, KIP-516) when every topic of the request
//! has its id, by name otherwise. The batch bytes are copied once, into the request frame (the
//! transport writes one buffer; no vectored write). With acks=0 nothing is read back: the
//! broker sends no response, and the connection stays usable for the next request.
//!
//! [`produce`] sends and waits. A producer keeping several requests in flight on one
//! connection calls [`send_produce`], which returns once the request is written, and later
//! [`ProduceInFlight::answer`], oldest first; `answer` is cancel-safe, so one task can race
//! it against new batches becoming ready (see [`Connection::read_response`]).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::PartitionProduceResponse;
use kafka_protocol::messages::{ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::connection::PendingResponse;
use super::Connection;
use crate::{Error, TopicPartition};

mod outcome;

pub use outcome::{LeaderHint, ProduceError, ProduceErrorKind, RecordError};

/// The last Produce version that names topics; v13 names them by id.
const LAST_VERSION_BY_NAME: i16 = 12;

/// How many replicas must have a batch before the broker answers (`acks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Acks {
    /// `acks=0`: the broker sends no response at all.
    None,
    /// `acks=1`: the leader has written it.
    Leader,
    /// `acks=all` (`-1`): every in-sync replica has it; what idempotence requires.
    All,
}

impl Acks {
    /// The value on the wire: 0, 1 or -1.
    pub fn wire(self) -> i16 {
        match self {
            Acks::None => 0,
            Acks::Leader => 1,
            Acks::All => -1,
        }
    }

    /// The `acks` setting by its client property values: `0`, `1`, `-1` or `all`.
    pub fn from_property(value: &str) -> Option<Acks> {
        match value.trim() {
            "0" => Some(Acks::None),
            "1" => Some(Acks::Leader),
            "-1" | "all" => Some(Acks::All),
            _ => None,
        }
    }
}

/// One partition's batch in a request.
#[derive(Clone, Debug)]
pub struct ProducePartition {
    /// Partition id.
    pub partition: i32,
    /// One finished RecordBatch v2 (a `BatchWriter`'s; `Bytes::from_owner` takes its
    /// pooled buffer without a copy).
    pub batch: Bytes,
}

/// One topic's partitions in a request.
#[derive(Clone, Debug)]
pub struct ProduceTopic {
    /// Topic name.
    pub name: Arc<str>,
    /// Topic id from Metadata; nil when unknown, which sends the request at v12 or lower.
    pub topic_id: Uuid,
    /// Its partitions, each at most once.
    pub partitions: Vec<ProducePartition>,
}

/// How the broker must treat a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProduceParams {
    /// Replicas that must have each batch before the answer.
    pub acks: Acks,
    /// How long the broker waits for those replicas (`request.timeout.ms` in the Java
    /// producer). The client waits for the answer no longer than its own request timeout,
    /// this wait included, as Java's NetworkClient does.
    pub timeout_ms: i32,
}

/// A batch the broker appended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    /// Offset of the batch's first record.
    pub base_offset: i64,
    /// The broker's append time when the topic keeps LogAppendTime, `None` when it answered
    /// -1 (CreateTime; a duplicate's answer may carry the batch's own timestamp here).
    pub log_append_time_ms: Option<i64>,
    /// The partition's log start offset after the append (-1 when the broker did not say).
    pub log_start_offset: i64,
}

/// One partition's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionProduced {
    /// The partition.
    pub partition: TopicPartition,
    /// Its batch appended, or why not.
    pub result: Result<Appended, ProduceError>,
}

/// The broker's answer to a Produce request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProduceAnswer {
    /// The version the request was sent at.
    pub version: i16,
    /// Time the broker throttled this client for (quota), in milliseconds.
    pub throttle_time_ms: i32,
    /// One answer per partition sent; empty with [`Acks::None`], which has no answer.
    pub partitions: Vec<PartitionProduced>,
}

/// A Produce request written to a connection, its answer not read yet.
#[derive(Debug)]
#[must_use = "its answer must be read before any later request's"]
pub struct ProduceInFlight {
    /// The answer's token; `None` with acks=0, which has no answer.
    pending: Option<PendingResponse>,
    version: i16,
    /// The topics sent, by name and id, to match the answer's topics with.
    topics: Vec<(Arc<str>, Uuid)>,
    partitions_sent: usize,
}

impl ProduceInFlight {
    /// The version the request was sent at.
    pub fn version(&self) -> i16 {
        self.version
    }

    /// Reads the answer from `connection` (the one it was sent on): one [`PartitionProduced`]
    /// per partition sent, or none with acks=0, which resolves at once. A partition the broker
    /// did not answer for is a protocol error.
    ///
    /// Cancel-safe (see [`Connection::read_response`]): raced in `select!` and dropped, it
    /// loses nothing, and the next call reads on. Answers come in the order requests were
    /// sent: only the oldest request's `answer` reads; a later one is refused.
    pub async fn answer(&self, connection: &mut Connection) -> Result<ProduceAnswer, Error> {
        let Some(pending) = self.pending.as_ref() else {
            return Ok(ProduceAnswer {
                version: self.version,
                throttle_time_ms: 0,
                partitions: Vec::new(),
            });
        };
        let response = connection.read_response::<ProduceRequest>(pending).await?;
        let version = self.version;
        let mut partitions = Vec::new();
        for answer in response.responses {
            let (name, _) = self
                .topics
                .iter()
                .find(|(name, id)| {
                    if version > LAST_VERSION_BY_NAME {
                        *id == answer.topic_id
                    } else {
                        **name == *answer.name.0
                    }
                })
                .ok_or_else(|| unasked(connection, format!("{:?}", answer.name.0)))?;
            for p in answer.partition_responses {
                let partition = TopicPartition::new(name.clone(), p.index);
                partitions.push(PartitionProduced {
                    result: partition_result(&partition, p),
                    partition,
                });
            }
        }
        if partitions.len() != self.partitions_sent {
            return Err(unasked(
                connection,
                format!(
                    "{} partition answers for {} partitions sent",
                    partitions.len(),
                    self.partitions_sent
                ),
            ));
        }
        Ok(ProduceAnswer {
            version,
            throttle_time_ms: response.throttle_time_ms,
            partitions,
        })
    }
}

/// Sends one batch per partition of `topics` to `connection`'s broker (the leader of every
/// one of them) and waits for the answer (none with acks=0): [`send_produce`], then
/// [`ProduceInFlight::answer`].
pub async fn produce(
    connection: &mut Connection,
    params: ProduceParams,
    topics: &[ProduceTopic],
) -> Result<ProduceAnswer, Error> {
    send(connection, params, topics, None, true)
        .await?
        .answer(connection)
        .await
}

/// Writes one Produce request carrying one batch per partition of `topics` to `connection`'s
/// broker (the leader of every one of them) and returns once it is written, without waiting
/// for the answer; read that with [`ProduceInFlight::answer`], after the answers of requests
/// sent earlier on the connection. The answer is due within the connection's request timeout
/// (not extended by the broker's `timeout_ms`). Not cancel-safe (see
/// [`Connection::send_request`]).
pub async fn send_produce(
    connection: &mut Connection,
    params: ProduceParams,
    topics: &[ProduceTopic],
) -> Result<ProduceInFlight, Error> {
    send(connection, params, topics, None, false).await
}

/// [`send_produce`] for a transactional producer: the request carries `transactional_id`
/// (a broker refuses a transactional batch without it) and goes at `max_version` or lower
/// (`TransactionProtocol::max_produce_version`: under Transactions v1 a v12+ request would
/// add the partitions to the transaction implicitly).
pub async fn send_produce_in_transaction(
    connection: &mut Connection,
    params: ProduceParams,
    topics: &[ProduceTopic],
    transactional_id: &str,
    max_version: i16,
) -> Result<ProduceInFlight, Error> {
    let transaction = Some((transactional_id, max_version));
    send(connection, params, topics, transaction, false).await
}

/// Writes the request, pipelined or for [`produce`] (`sequential`: nothing else in flight,
/// and the connection broken if the answer is never read), within a transaction (its id and
/// the highest Produce version it allows) or not.
async fn send(
    connection: &mut Connection,
    params: ProduceParams,
    topics: &[ProduceTopic],
    transaction: Option<(&str, i16)>,
    sequential: bool,
) -> Result<ProduceInFlight, Error> {
    let mut negotiated = connection
        .versions()
        .negotiate::<ProduceRequest>(connection.address())?;
    if let Some((_, max_version)) = transaction {
        negotiated = negotiated.min(max_version);
    }
    let by_id = topics.iter().all(|topic| !topic.topic_id.is_nil());
    let version = if by_id {
        negotiated
    } else {
        negotiated.min(LAST_VERSION_BY_NAME)
    };
    let request = ProduceRequest::default()
        .with_transactional_id(transaction.map(|(id, _)| {
            kafka_protocol::messages::TransactionalId(StrBytes::from_string(id.to_owned()))
        }))
        .with_acks(params.acks.wire())
        .with_timeout_ms(params.timeout_ms)
        .with_topic_data(topics.iter().map(|t| topic_data(t, version)).collect());
    let sent = ProduceInFlight {
        pending: None,
        version,
        topics: topics
            .iter()
            .map(|t| (t.name.clone(), t.topic_id))
            .collect(),
        partitions_sent: topics.iter().map(|t| t.partitions.len()).sum(),
    };
    if params.acks == Acks::None {
        connection.send_unanswered(&request, version).await?;
        return Ok(sent);
    }
    // Java's producer waits request.timeout.ms in all, the broker's wait included: a request
    // black-holed leaves delivery.timeout.ms room for a retry.
    let timeout = connection.request_timeout();
    let pending = if sequential {
        connection
            .send_sequential(&request, version, timeout)
            .await?
    } else {
        connection.send_request(&request, version, timeout).await?
    };
    Ok(ProduceInFlight {
        pending: Some(pending),
        ..sent
    })
}

fn topic_data(topic: &ProduceTopic, version: i16) -> TopicProduceData {
    let data = TopicProduceData::default().with_partition_data(
        topic
            .partitions
            .iter()
            .map(|p| {
                PartitionProduceData::default()
                    .with_index(p.partition)
                    .with_records(Some(p.batch.clone()))
            })
            .collect(),
    );
    if version > LAST_VERSION_BY_NAME {
        data.with_topic_id(topic.topic_id)
    } else {
        data.with_name(TopicName(StrBytes::from_string(topic.name.to_string())))
    }
}

fn partition_result(
    partition: &TopicPartition,
    answer: PartitionProduceResponse,
) -> Result<Appended, ProduceError> {
    if answer.error_code == 0 {
        return Ok(Appended {
            base_offset: answer.base_offset,
            log_append_time_ms: (answer.log_append_time_ms >= 0)
                .then_some(answer.log_append_time_ms),
            log_start_offset: answer.log_start_offset,
        });
    }
    let leader = answer.current_leader;
    Err(ProduceError {
        partition: partition.clone(),
        kind: ProduceErrorKind::from_code(answer.error_code),
        code: answer.error_code,
        message: answer.error_message.map(|m| m.to_string()),
        record_errors: answer
            .record_errors
            .into_iter()
            .map(|e| RecordError {
                batch_index: e.batch_index,
                message: e.batch_index_error_message.map(|m| m.to_string()),
            })
            .collect(),
        current_leader: (leader.leader_id.0 >= 0).then_some(LeaderHint {
            leader_id: leader.leader_id.0,
            leader_epoch: leader.leader_epoch,
        }),
    })
}

fn unasked(connection: &Connection, what: String) -> Error {
    Error::Protocol {
        broker: connection.address().to_owned(),
        api: "Produce",
        detail: format!("the answer does not match the request: {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::Acks;

    #[test]
    fn acks_by_their_property_values() {
        for (text, acks, wire) in [
            ("0", Acks::None, 0),
            ("1", Acks::Leader, 1),
            ("-1", Acks::All, -1),
            ("all", Acks::All, -1),
        ] {
            assert_eq!(Acks::from_property(text), Some(acks));
            assert_eq!(acks.wire(), wire);
        }
        assert_eq!(Acks::from_property("2"), None);
    }
}
