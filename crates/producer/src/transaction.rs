//! Transactions (KIP-98): `init_transactions`, `begin`, `commit`, `abort` and
//! `send_offsets_to_transaction` on a producer with a `transactional.id`, as the Java
//! client's TransactionManager drives them.
//!
//! Transactions v2 (KIP-890) where the coordinator offers it: partitions and groups join
//! implicitly, and each EndTxn hands out the epoch the next transaction's batches carry
//! (sequences from 0). v1 otherwise: each sender adds a partition with AddPartitionsToTxn
//! before its first batch of the transaction and sends Produce at v11 at most; after an abort
//! the epoch is bumped (InitProducerId with the current identity, KIP-360), since the
//! batches the abort failed had taken sequences.
//!
//! Fencing ends the producer; a failure that only dooms the transaction (a failed batch,
//! TRANSACTION_ABORTABLE, a group refusing the offsets after a rebalance) leaves `abort` the
//! one call allowed, after which the producer goes on. The epoch the abort brings (v2's
//! EndTxn, v1's bump) serves the next transaction's batches at once.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicI16, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{RwLock, RwLockReadGuard};

use krec_client::group::Committer;
use krec_client::produce::ProduceTopic;
use krec_client::producer_id::ProducerIdentity;
use krec_client::transaction::{TransactionProtocol, TxnErrorClass, TxnOffset};
use krec_client::TopicPartition;

use crate::producer::Shared;
use crate::transaction_coordinator::{Answer, Call, Coordinators, Failure, Sender};
use crate::{Error, Producer};

/// A transactional producer's state, shared by its front door and its senders.
#[derive(Debug)]
pub(crate) struct Transactions {
    id: String,
    state: Mutex<State>,
    /// One transactional request at a time.
    coordinators: tokio::sync::Mutex<Coordinators>,
    /// Held (read) by each `send` under way: `commit` and `abort` wait for them.
    sends: RwLock<()>,
    /// The highest Produce version the protocol allows.
    max_produce_version: AtomicI16,
}

#[derive(Debug)]
struct State {
    phase: Phase,
    protocol: TransactionProtocol,
    /// v1: the partitions added to the open transaction.
    added: HashSet<(Arc<str>, i32)>,
    /// v1: the groups whose offsets joined the open transaction.
    groups: HashSet<String>,
    /// Records failed before the transaction began ([`crate::ProducerStats::records_failed`]).
    failed_at_begin: u64,
}

/// Where the producer stands.
#[derive(Clone, Debug)]
enum Phase {
    Uninitialized,
    /// Between transactions.
    Ready,
    Open,
    /// `commit` or `abort` under way: no send.
    Ending,
    /// Only `abort` is allowed: why.
    Abortable(String),
    /// Stopped for good: the error every call answers.
    Failed(Error),
}

impl Transactions {
    pub(crate) fn new(transactional_id: &str) -> Self {
        Transactions {
            id: transactional_id.to_owned(),
            state: Mutex::new(State {
                phase: Phase::Uninitialized,
                protocol: TransactionProtocol::V2,
                added: HashSet::new(),
                groups: HashSet::new(),
                failed_at_begin: 0,
            }),
            coordinators: tokio::sync::Mutex::new(Coordinators::default()),
            sends: RwLock::new(()),
            max_produce_version: AtomicI16::new(i16::MAX),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every change completes under the lock.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `transactional.id`.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The highest Produce version a sender may use.
    pub(crate) fn max_produce_version(&self) -> i16 {
        self.max_produce_version.load(Ordering::Relaxed)
    }

    /// `send` is allowed between `begin` and `commit` or `abort` only; the guard keeps the
    /// transaction open until the record is in its batch.
    pub(crate) async fn enter_send(&self) -> Result<RwLockReadGuard<'_, ()>, Error> {
        let guard = self.sends.read().await;
        let state = self.lock();
        match &state.phase {
            Phase::Open => Ok(guard),
            phase => Err(self.refusal("send", phase)),
        }
    }

    /// Whether a transaction is open (abortable ones too): `close` aborts it.
    pub(crate) fn is_open(&self) -> bool {
        matches!(self.lock().phase, Phase::Open | Phase::Abortable(_))
    }

    /// Refuses new sends (the phase moved on) and waits for those under way.
    async fn close_sends(&self) {
        drop(self.sends.write().await);
    }

    fn refusal(&self, call: &'static str, phase: &Phase) -> Error {
        let state = match phase {
            Phase::Uninitialized => "before init_transactions".to_owned(),
            Phase::Ready => "outside a transaction: call begin first".to_owned(),
            Phase::Open => "while a transaction is open: commit or abort it first".to_owned(),
            Phase::Ending => "while the transaction commits or aborts".to_owned(),
            Phase::Abortable(why) => {
                return Error::TransactionAbortable {
                    transactional_id: self.id.clone(),
                    detail: why.clone(),
                }
            }
            Phase::Failed(error) => return error.clone(),
        };
        Error::TransactionState {
            transactional_id: self.id.clone(),
            call,
            state,
        }
    }

    /// Moves to `to` from a phase `from` accepts, or says why `call` is not allowed now.
    fn enter(
        &self,
        call: &'static str,
        from: fn(&Phase) -> bool,
        to: Phase,
    ) -> Result<Phase, Error> {
        let mut state = self.lock();
        if !from(&state.phase) {
            return Err(self.refusal(call, &state.phase));
        }
        Ok(std::mem::replace(&mut state.phase, to))
    }

    fn set_phase(&self, phase: Phase) {
        self.lock().phase = phase;
    }

    /// v1: the partitions of a request not yet in the transaction, topic -> partitions.
    pub(crate) fn missing_partitions(&self, topics: &[ProduceTopic]) -> BTreeMap<String, Vec<i32>> {
        let state = self.lock();
        let mut missing: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        if state.protocol != TransactionProtocol::V1 {
            return missing;
        }
        for topic in topics {
            for partition in &topic.partitions {
                if !state
                    .added
                    .contains(&(topic.name.clone(), partition.partition))
                {
                    missing
                        .entry(topic.name.to_string())
                        .or_default()
                        .push(partition.partition);
                }
            }
        }
        missing
    }

    /// v1, from a sender: AddPartitionsToTxn for `partitions` before their first batch. A
    /// failure dooms the transaction (or the producer); the sender fails the batches.
    pub(crate) async fn add_partitions(
        &self,
        shared: &Shared,
        partitions: &BTreeMap<String, Vec<i32>>,
    ) -> Result<(), Error> {
        let answer = self
            .call(
                shared,
                &Call::AddPartitions(partitions),
                "AddPartitionsToTxn",
            )
            .await;
        match answer {
            Ok(_) => {
                let mut state = self.lock();
                for (topic, ids) in partitions {
                    let topic: Arc<str> = Arc::from(topic.as_str());
                    state
                        .added
                        .extend(ids.iter().map(|&partition| (topic.clone(), partition)));
                }
                Ok(())
            }
            Err(error) => {
                let mut state = self.lock();
                if matches!(state.phase, Phase::Open) {
                    state.phase = Phase::Abortable(error.to_string());
                }
                Err(error)
            }
        }
    }

    /// Sends `call` with the current identity; a failure becomes the producer's error, and
    /// a fatal one stops the producer.
    async fn call(&self, shared: &Shared, call: &Call<'_>, what: &str) -> Result<Answer, Error> {
        let mut coordinators = self.coordinators.lock().await;
        let identity = shared
            .lock()
            .producer_identity()
            .unwrap_or(ProducerIdentity {
                producer_id: -1,
                producer_epoch: -1,
            });
        let sender = Sender {
            config: &shared.config,
            transactional_id: &self.id,
            identity,
            protocol: self.lock().protocol,
        };
        let failure = match coordinators.call(sender, call).await {
            Ok(answer) => return Ok(answer),
            Err(failure) => failure,
        };
        drop(coordinators);
        Err(self.fail(shared, failure, what))
    }

    /// What a failed request means: the producer stops on fencing and fatal errors, the
    /// transaction is doomed on abortable ones; a passing one that outlasted `max.block.ms`
    /// changes nothing (the call may be made again).
    fn fail(&self, shared: &Shared, failure: Failure, what: &str) -> Error {
        let Failure {
            class,
            error,
            timed_out,
        } = failure;
        let detail = format!("{what}: {error}");
        if timed_out {
            let context = format!("{what} (transactional.id {}) within max.block.ms", self.id);
            return Error::client(context, *error);
        }
        let transactional_id = self.id.clone();
        let error = match class {
            TxnErrorClass::Fenced => Error::Fenced {
                transactional_id,
                detail,
            },
            TxnErrorClass::Abort | TxnErrorClass::AbortWithEpochBump => {
                return Error::TransactionAbortable {
                    transactional_id,
                    detail,
                }
            }
            _ => Error::TransactionFatal {
                transactional_id,
                detail,
            },
        };
        self.set_phase(Phase::Failed(error.clone()));
        shared.lock().stop(&error.to_string());
        error
    }
}

/// A transactional producer's configuration, as `connect` takes it: idempotent.
pub(crate) fn check_config(config: &crate::ProducerConfig) -> Result<(), Error> {
    if config.idempotence {
        return Ok(());
    }
    Err(Error::Conflict {
        first: "transactional.id".to_owned(),
        second: "enable.idempotence=false".to_owned(),
        detail: "a transactional producer is idempotent".to_owned(),
    })
}

impl Producer {
    fn transactions(&self, call: &'static str) -> Result<&Transactions, Error> {
        self.shared
            .transactions
            .as_ref()
            .ok_or(Error::TransactionState {
                transactional_id: String::new(),
                call,
                state: "on a producer without transactional.id".to_owned(),
            })
    }

    /// Registers the `transactional.id` with its transaction coordinator (InitProducerId):
    /// any transaction a previous producer with the same id left open is ended, and that
    /// producer is fenced. Chooses Transactions v2 where the coordinator offers it. Call it
    /// once, before [`begin`](Self::begin); it waits within `max.block.ms`.
    ///
    /// ```no_run
    /// # async fn demo(brokers: &str) -> Result<(), krec_producer::Error> {
    /// use krec_producer::{Error, Producer, ProducerConfig, ProducerRecord};
    ///
    /// let config = ProducerConfig::from_properties([("transactional.id", "billing-1")])?
    ///     .with("bootstrap.servers", brokers)?;
    /// let producer = Producer::connect(config).await?;
    /// producer.init_transactions().await?;
    /// producer.begin()?;
    /// let sent = producer.send(ProducerRecord::new("invoices").value(b"42")).await;
    /// match sent {
    ///     Ok(_delivery) => producer.commit().await?, // flushes, then commits
    ///     Err(Error::TransactionAbortable { .. }) => producer.abort().await?,
    ///     Err(fatal) => return Err(fatal), // fenced: close this producer
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn init_transactions(&self) -> Result<(), Error> {
        let transactions = self.transactions("init_transactions")?;
        transactions.enter(
            "init_transactions",
            |phase| matches!(phase, Phase::Uninitialized),
            Phase::Ending,
        )?;
        let result = self.init_identity(transactions).await;
        let phase = match &result {
            Ok(()) => Phase::Ready,
            Err(Error::Fenced { .. } | Error::TransactionFatal { .. }) => return result,
            Err(_) => Phase::Uninitialized,
        };
        transactions.set_phase(phase);
        result
    }

    async fn init_identity(&self, transactions: &Transactions) -> Result<(), Error> {
        let shared = &self.shared;
        let protocol = {
            let mut coordinators = transactions.coordinators.lock().await;
            coordinators
                .protocol(&shared.config, &transactions.id)
                .await
                .map_err(|failure| transactions.fail(shared, failure, "FindCoordinator"))?
        };
        transactions.lock().protocol = protocol;
        transactions
            .max_produce_version
            .store(protocol.max_produce_version(), Ordering::Relaxed);
        let answer = transactions
            .call(shared, &Call::InitProducerId(None), "InitProducerId")
            .await?;
        if let Answer::Identity(identity) = answer {
            shared.lock().reset_producer_id(identity);
        }
        tracing::info!(transactional_id = %transactions.id, ?protocol, "transactions ready");
        Ok(())
    }

    /// Opens a transaction: the records sent until [`commit`](Self::commit) become visible
    /// to `read_committed` consumers together, or not at all.
    pub fn begin(&self) -> Result<(), Error> {
        let transactions = self.transactions("begin")?;
        let failed = self.stats().records_failed;
        transactions.enter("begin", |phase| matches!(phase, Phase::Ready), Phase::Open)?;
        let mut state = transactions.lock();
        state.failed_at_begin = failed;
        state.added.clear();
        state.groups.clear();
        Ok(())
    }

    /// Flushes, then commits the open transaction (EndTxn). If a record of it failed, or
    /// the transaction was doomed before, nothing is committed and
    /// [`Error::TransactionAbortable`] says to [`abort`](Self::abort).
    pub async fn commit(&self) -> Result<(), Error> {
        let transactions = self.transactions("commit")?;
        transactions.enter(
            "commit",
            |phase| matches!(phase, Phase::Open),
            Phase::Ending,
        )?;
        transactions.close_sends().await;
        self.flush().await?;
        let stopped = self.shared.lock().stopped_reason().map(str::to_owned);
        if let Some(reason) = stopped {
            // A Produce answer fenced the producer (or a refused ACL stopped it): final.
            let error = Error::Stopped { reason };
            transactions.set_phase(Phase::Failed(error.clone()));
            return Err(error);
        }
        let failed = self.stats().records_failed - transactions.lock().failed_at_begin;
        let held = self.shared.lock().needs_new_epoch();
        if failed > 0 || held {
            let detail =
                format!("{failed} record(s) of the transaction failed (each Delivery says why)");
            transactions.set_phase(Phase::Abortable(detail.clone()));
            return Err(Error::TransactionAbortable {
                transactional_id: transactions.id.clone(),
                detail,
            });
        }
        self.end(transactions, true).await
    }

    /// Aborts the open transaction: records not yet sent fail, those in flight are awaited,
    /// and EndTxn makes what was written invisible to `read_committed` consumers. The one
    /// call allowed after [`Error::TransactionAbortable`]; the producer goes on.
    pub async fn abort(&self) -> Result<(), Error> {
        let transactions = self.transactions("abort")?;
        let from = |phase: &Phase| matches!(phase, Phase::Open | Phase::Abortable(_));
        let before = transactions.enter("abort", from, Phase::Ending)?;
        transactions.close_sends().await;
        let aborted = Error::TransactionAbortable {
            transactional_id: transactions.id.clone(),
            detail: "the transaction was aborted".to_owned(),
        };
        self.shared.lock().fail_waiting(&aborted);
        self.flush().await?;
        let result = self.end(transactions, false).await;
        if let Err(Error::TransactionAbortable { .. } | Error::Client { .. }) = &result {
            transactions.set_phase(before);
        }
        result
    }

    /// EndTxn, then the identity of the next transaction: v2's from the answer; v1's after
    /// an abort from InitProducerId with the current one (KIP-360), since the batches the
    /// abort failed took sequences.
    async fn end(&self, transactions: &Transactions, commit: bool) -> Result<(), Error> {
        let shared = &self.shared;
        let what = if commit {
            "EndTxn (commit)"
        } else {
            "EndTxn (abort)"
        };
        let ended = transactions
            .call(shared, &Call::EndTxn { commit }, what)
            .await;
        let next = match ended {
            Ok(Answer::Ended(next)) => next,
            Ok(_) => None,
            Err(error) => {
                if let Error::TransactionAbortable { detail, .. } = &error {
                    transactions.set_phase(Phase::Abortable(detail.clone()));
                } else if let Error::Client { .. } = &error {
                    transactions.set_phase(Phase::Open);
                }
                return Err(error);
            }
        };
        let v1 = transactions.lock().protocol == TransactionProtocol::V1;
        let next = match next {
            Some(next) => Some(next),
            None if v1 && !commit => {
                let current = shared.lock().producer_identity();
                let call = Call::InitProducerId(current);
                match transactions
                    .call(shared, &call, "InitProducerId (epoch bump)")
                    .await?
                {
                    Answer::Identity(identity) => Some(identity),
                    _ => None,
                }
            }
            None => None,
        };
        if let Some(identity) = next {
            shared.lock().reset_producer_id(identity);
        }
        transactions.set_phase(Phase::Ready);
        Ok(())
    }

    /// Commits `offsets` (partition -> the next offset to read, or a
    /// [`TxnOffset`](krec_client::transaction::TxnOffset) with metadata kept beside it) for
    /// the consumer group that `group` describes as part of the open transaction: they become
    /// visible with its records, or not at all. `group` is the consumer's group metadata (generation or member
    /// epoch, member id, `group.instance.id`: KIP-447, krec-consumer's
    /// `GroupConsumer::group_metadata`), so a member that lost its partitions in a rebalance
    /// cannot commit for them: the group's refusal dooms the transaction
    /// ([`Error::TransactionAbortable`]).
    pub async fn send_offsets_to_transaction<O: Clone + Into<TxnOffset>>(
        &self,
        offsets: &BTreeMap<TopicPartition, O>,
        group: &Committer<'_>,
    ) -> Result<(), Error> {
        let transactions = self.transactions("send_offsets_to_transaction")?;
        transactions.enter(
            "send_offsets_to_transaction",
            |phase| matches!(phase, Phase::Open),
            Phase::Open,
        )?;
        let result = self.commit_offsets(transactions, offsets, group).await;
        if let Err(Error::TransactionAbortable { detail, .. }) = &result {
            transactions.set_phase(Phase::Abortable(detail.clone()));
        }
        result
    }

    async fn commit_offsets<O: Clone + Into<TxnOffset>>(
        &self,
        transactions: &Transactions,
        offsets: &BTreeMap<TopicPartition, O>,
        group: &Committer<'_>,
    ) -> Result<(), Error> {
        let shared = &self.shared;
        let v1 = transactions.lock().protocol == TransactionProtocol::V1;
        if v1 && !transactions.lock().groups.contains(group.group) {
            let call = Call::AddOffsets(group.group);
            transactions.call(shared, &call, "AddOffsetsToTxn").await?;
            transactions.lock().groups.insert(group.group.to_owned());
        }
        let offsets: BTreeMap<TopicPartition, TxnOffset> = offsets
            .iter()
            .map(|(partition, offset)| (partition.clone(), offset.clone().into()))
            .collect();
        let call = Call::OffsetCommit(group, &offsets);
        transactions.call(shared, &call, "TxnOffsetCommit").await?;
        Ok(())
    }
}
