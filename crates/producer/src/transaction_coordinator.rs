//! The connections to the transaction coordinator and to a group's coordinator, and each
//! transactional request sent through them until it is answered for good: a passing error is
//! sent again after `retry.backoff.ms`, a coordinator that moved is found again, all within
//! `max.block.ms` (as the Java client bounds `initTransactions` and `commitTransaction`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use krec_client::group::{self, Committer, CoordinatorType};
use krec_client::producer_id::{self, ProducerIdentity};
use krec_client::transaction::{
    self as wire, classify_error, PartitionCodes, TransactionProtocol, TransactionalProducer,
    TxnApi, TxnErrorClass, TxnOffset,
};
use krec_client::{Connection, TopicPartition};

use crate::ProducerConfig;

/// One transactional request.
#[derive(Debug)]
pub(crate) enum Call<'a> {
    /// InitProducerId: the first identity, or (KIP-360) the next epoch of `current`.
    InitProducerId(Option<ProducerIdentity>),
    /// AddPartitionsToTxn (v1), topic -> partitions.
    AddPartitions(&'a BTreeMap<String, Vec<i32>>),
    /// AddOffsetsToTxn (v1) of a group.
    AddOffsets(&'a str),
    /// TxnOffsetCommit, to the group's coordinator.
    OffsetCommit(&'a Committer<'a>, &'a BTreeMap<TopicPartition, TxnOffset>),
    /// EndTxn: commit or abort.
    EndTxn { commit: bool },
}

impl Call<'_> {
    fn api(&self) -> TxnApi {
        match self {
            Call::InitProducerId(_) => TxnApi::InitProducerId,
            Call::AddPartitions(_) => TxnApi::AddPartitionsToTxn,
            Call::AddOffsets(_) => TxnApi::AddOffsetsToTxn,
            Call::OffsetCommit(..) => TxnApi::TxnOffsetCommit,
            Call::EndTxn { .. } => TxnApi::EndTxn,
        }
    }
}

/// What a request answered.
#[derive(Debug)]
pub(crate) enum Answer {
    /// InitProducerId's identity.
    Identity(ProducerIdentity),
    /// EndTxn's next identity (v2), or none (v1).
    Ended(Option<ProducerIdentity>),
    /// Done, nothing to take.
    Done,
}

/// A request that failed for good: what the failure means, and the client's error.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) class: TxnErrorClass,
    /// Boxed: a `Result` of it stays small.
    pub(crate) error: Box<krec_client::Error>,
    /// Still passing when `max.block.ms` ran out.
    pub(crate) timed_out: bool,
}

/// Who sends: `transactional.id`, the identity and protocol of the moment.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sender<'a> {
    pub(crate) config: &'a ProducerConfig,
    pub(crate) transactional_id: &'a str,
    pub(crate) identity: ProducerIdentity,
    pub(crate) protocol: TransactionProtocol,
}

/// The coordinators' connections, found when first needed and found again when they move.
#[derive(Debug, Default)]
pub(crate) struct Coordinators {
    transaction: Option<Connection>,
    /// The group whose coordinator the connection reaches, and the connection.
    group: Option<(String, Connection)>,
}

impl Coordinators {
    /// The protocol the transaction coordinator offers (finding it first if needed).
    pub(crate) async fn protocol(
        &mut self,
        config: &ProducerConfig,
        transactional_id: &str,
    ) -> Result<TransactionProtocol, Failure> {
        let deadline = Instant::now() + config.max_block;
        loop {
            match self.transaction_coordinator(config, transactional_id).await {
                Ok(connection) => return Ok(wire::protocol(connection.versions())),
                Err(failure) => self.pause_or_fail(config, failure, deadline).await?,
            }
        }
    }

    /// Sends `call` until it is answered for good or `max.block.ms` passes.
    pub(crate) async fn call(
        &mut self,
        sender: Sender<'_>,
        call: &Call<'_>,
    ) -> Result<Answer, Failure> {
        let deadline = Instant::now() + sender.config.max_block;
        loop {
            match self.call_once(sender, call).await {
                Ok(answer) => return Ok(answer),
                Err(failure) => {
                    tracing::debug!(call = call.api().name(), error = %failure.error,
                        class = ?failure.class, "transactional request failed");
                    self.pause_or_fail(sender.config, failure, deadline).await?
                }
            }
        }
    }

    /// After a passing failure, waits `retry.backoff.ms` (forgetting the coordinator if it
    /// moved); any other failure, or one past the deadline, is returned.
    async fn pause_or_fail(
        &mut self,
        config: &ProducerConfig,
        mut failure: Failure,
        deadline: Instant,
    ) -> Result<(), Failure> {
        if !matches!(
            failure.class,
            TxnErrorClass::Retry | TxnErrorClass::Rediscover
        ) {
            return Err(failure);
        }
        if Instant::now() >= deadline {
            failure.timed_out = true;
            return Err(failure);
        }
        if failure.class == TxnErrorClass::Rediscover {
            self.transaction = None;
            self.group = None;
        }
        tokio::time::sleep(config.retry_backoff.max(Duration::from_millis(10))).await;
        Ok(())
    }

    async fn call_once(&mut self, sender: Sender<'_>, call: &Call<'_>) -> Result<Answer, Failure> {
        let api = call.api();
        let producer = TransactionalProducer {
            transactional_id: sender.transactional_id,
            identity: sender.identity,
            protocol: sender.protocol,
        };
        let connection = match call {
            Call::OffsetCommit(committer, _) => {
                self.group_coordinator(sender.config, committer.group)
                    .await?
            }
            _ => {
                self.transaction_coordinator(sender.config, sender.transactional_id)
                    .await?
            }
        };
        let timeout_ms = sender
            .config
            .transaction_timeout
            .as_millis()
            .min(i32::MAX as u128) as i32;
        let answer = match call {
            Call::InitProducerId(current) => producer_id::init_transactional_producer_id(
                connection,
                sender.transactional_id,
                timeout_ms,
                *current,
            )
            .await
            .map(Answer::Identity),
            Call::AddPartitions(partitions) => {
                let codes = wire::add_partitions_to_txn(connection, &producer, partitions).await;
                return codes.map_err(|e| failure(api, e)).and_then(verdict);
            }
            Call::AddOffsets(group) => wire::add_offsets_to_txn(connection, &producer, group)
                .await
                .map(|()| Answer::Done),
            Call::OffsetCommit(committer, offsets) => {
                let codes =
                    wire::txn_offset_commit(connection, &producer, committer, offsets).await;
                return codes.map_err(|e| failure(api, e)).and_then(verdict);
            }
            Call::EndTxn { commit } => wire::end_txn(connection, &producer, *commit)
                .await
                .map(Answer::Ended),
        };
        answer.map_err(|e| failure(api, e))
    }

    async fn transaction_coordinator(
        &mut self,
        config: &ProducerConfig,
        transactional_id: &str,
    ) -> Result<&mut Connection, Failure> {
        let connection = match self.transaction.take() {
            Some(connection) => connection,
            None => find(config, CoordinatorType::Transaction, transactional_id).await?,
        };
        Ok(self.transaction.insert(connection))
    }

    async fn group_coordinator(
        &mut self,
        config: &ProducerConfig,
        group_id: &str,
    ) -> Result<&mut Connection, Failure> {
        let connection = match self.group.take() {
            Some((group, connection)) if group == group_id => connection,
            _ => find(config, CoordinatorType::Group, group_id).await?,
        };
        Ok(&mut self.group.insert((group_id.to_owned(), connection)).1)
    }
}

/// Finds the coordinator of `key` through the first bootstrap broker that answers, and
/// connects to it.
async fn find(
    config: &ProducerConfig,
    kind: CoordinatorType,
    key: &str,
) -> Result<Connection, Failure> {
    let api = TxnApi::FindCoordinator;
    let mut last = None;
    for address in &config.bootstrap {
        let mut connection = match Connection::connect(address, &config.connection).await {
            Ok(connection) => connection,
            Err(error) => {
                last = Some(error);
                continue;
            }
        };
        let address = match group::find_coordinator_of(&mut connection, kind, key).await {
            Ok(Ok((_, address))) => address,
            Ok(Err(code)) => {
                return Err(failure(
                    api,
                    krec_client::Error::Broker {
                        broker: connection.address().to_owned(),
                        api: "FindCoordinator",
                        topic: None,
                        partition: None,
                        code,
                        name: krec_client::error_name(code),
                    },
                ))
            }
            Err(error) => return Err(failure(api, error)),
        };
        return Connection::connect(&address, &config.connection)
            .await
            .map_err(|e| failure(api, e));
    }
    let error = last.unwrap_or_else(|| krec_client::Error::InvalidArgument {
        what: "bootstrap.servers",
        detail: "no broker given".to_owned(),
    });
    Err(failure(api, error))
}

fn failure(api: TxnApi, error: krec_client::Error) -> Failure {
    Failure {
        class: classify_error(api, &error),
        error: Box::new(error),
        timed_out: false,
    }
}

/// Every partition done, or the gravest failure among them.
fn verdict(codes: PartitionCodes) -> Result<Answer, Failure> {
    match codes.verdict() {
        None => Ok(Answer::Done),
        Some((class, error)) => Err(Failure {
            class,
            error: Box::new(error),
            timed_out: false,
        }),
    }
}
