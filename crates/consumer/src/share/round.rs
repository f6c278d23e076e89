//! One round of share fetching: each leader of an assigned partition gets a ShareFetch that
//! carries the acknowledgements waiting for its partitions; what comes back becomes chunks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use krec_client::share::{share_codes, AcknowledgeType, ShareFetchAnswer, SharePartitionResponse};
use krec_client::{codes, error_name};
use tokio::sync::OwnedSemaphorePermit;

use super::acks::PartitionKey;
use krec_client::share::AcknowledgementRange;

/// Acknowledgements sent in one request, per partition.
type SentAcks = (PartitionKey, Vec<AcknowledgementRange>);
use super::chunk::{share_chunks, ChunkPlace};
use super::leader::{LeaderSession, Member};
use super::membership::Assignment;
use super::ShareConsumer;
use crate::metrics::ErrorKind;
use crate::Error;

/// TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED.
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const GROUP_AUTHORIZATION_FAILED: i16 = 30;

/// Where the assigned partitions are: their topic names and leaders.
#[derive(Debug, Default)]
pub(super) struct Placement {
    /// The assignment this placement was made for.
    assignment: Option<Arc<Assignment>>,
    /// `key -> (topic name, leader node)`.
    partitions: BTreeMap<PartitionKey, (Arc<str>, i32)>,
    /// A leader moved or a topic was unknown: look again.
    stale: bool,
}

impl Placement {
    fn fits(&self, assignment: &Arc<Assignment>) -> bool {
        !self.stale
            && self
                .assignment
                .as_ref()
                .is_some_and(|a| Arc::ptr_eq(a, assignment))
    }
}

impl ShareConsumer {
    /// One ShareFetch per leader of the assigned partitions; the chunks go to `ready`.
    pub(super) async fn fetch_round(&mut self) -> Result<(), Error> {
        self.wait_for_queued().await;
        self.take_queued();
        let assignment = self.state.borrow().assignment.clone();
        if assignment.is_empty() {
            // Not assigned yet (or nothing to read): wait for the coordinator's word.
            let _ = tokio::time::timeout(self.config.max_wait, self.state.changed()).await;
            return Ok(());
        }
        if !self.placement.fits(&assignment) {
            self.place(&assignment).await?;
        }
        let mut wanted: BTreeMap<i32, BTreeSet<PartitionKey>> = BTreeMap::new();
        for (key, (_, node)) in &self.placement.partitions {
            wanted.entry(*node).or_default().insert(*key);
        }
        // No leader to ask (a topic or leader unknown for now) counts as a failed round, so
        // that looking again backs off.
        let mut failed = self.placement.partitions.is_empty();
        for index in 0..self.leaders.len() {
            let wanted = wanted.remove(&self.leaders[index].node).unwrap_or_default();
            if wanted.is_empty() && self.leaders[index].in_session.is_empty() {
                continue;
            }
            failed |= !self.fetch_from(index, &wanted).await?;
        }
        if failed {
            tokio::time::sleep(self.backoff.next_delay()).await;
        } else {
            self.backoff.reset();
        }
        Ok(())
    }

    /// One ShareFetch to leader `index` for `wanted`, carrying the acknowledgements of its
    /// partitions, once its records fit in the buffer budget; false when the session was lost.
    async fn fetch_from(
        &mut self,
        index: usize,
        wanted: &BTreeSet<PartitionKey>,
    ) -> Result<bool, Error> {
        let mut budget = self.reserve_budget().await;
        if self.stopping.load(Ordering::Relaxed) {
            // Asked to stop while waiting for room: acquire nothing more.
            return Ok(true);
        }
        let mut params = self.params;
        if let Some(permit) = &budget {
            // The records come back within what was reserved for them.
            params.max_bytes = params.max_bytes.min(permit.num_permits() as i32);
        }
        self.take_queued();
        let session = &self.leaders[index];
        let node = session.node;
        let keys: Vec<PartitionKey> = wanted.union(&session.in_session).copied().collect();
        let acks = self.book.take_pending_of(&keys);
        let member = Member {
            group: &self.group,
            member_id: &self.member_id,
            settings: &self.config.connection,
        };
        let session = &mut self.leaders[index];
        tracing::debug!(node, ?acks, partitions = wanted.len(), "ShareFetch");
        let sent = std::time::Instant::now();
        let answer = session.fetch(member, &params, wanted, &acks).await;
        let counters = self.shared.metrics.broker(node);
        counters.fetched(answer.is_ok().then(|| sent.elapsed()));
        let Some(answer) = self.check_answer(index, answer, &keys)? else {
            return Ok(false);
        };
        for partition in answer.partitions {
            if partition.acknowledge_error_code != 0 {
                self.refused(&acks, &partition);
            }
            self.take_partition(index, partition, &mut budget)?;
        }
        self.counters
            .in_flight
            .store(self.book.in_flight(), Ordering::Relaxed);
        Ok(true)
    }

    /// Waits until a fetch's worth of records fits in the buffer budget: records are acquired
    /// only when there is room to hold them, so a member whose output falls behind leaves
    /// them to the others. Acknowledgements queued meanwhile go out at once (ShareAcknowledge),
    /// before the locks of records already written run out.
    async fn reserve_budget(&mut self) -> Option<OwnedSemaphorePermit> {
        // At most half the budget: the next fetch can go out while one is being written.
        let wanted = (self.params.max_bytes.max(1) as usize)
            .min(self.config.buffer_bytes / 2)
            .clamp(1, u32::MAX as usize) as u32;
        let budget = self.shared.budget.clone();
        loop {
            // Room at once: the acknowledgements ride on the fetch.
            tokio::select! {
                biased;
                permit = budget.clone().acquire_many_owned(wanted) => return permit.ok(),
                Some(ack) = self.queued.recv() => {
                    self.apply_queued(ack);
                    self.take_queued();
                    // A failure ends the session (its records go back to the group) and is
                    // logged; fetching goes on.
                    let _ = self.acknowledge_all(false).await;
                }
            }
        }
    }

    /// The answer of a leader if it is one to take, `None` when the session was lost (the
    /// caller backs off). Errors that no retry can mend end the consumer.
    fn check_answer(
        &mut self,
        index: usize,
        answer: Result<ShareFetchAnswer, Error>,
        keys: &[PartitionKey],
    ) -> Result<Option<ShareFetchAnswer>, Error> {
        let session = &self.leaders[index];
        match answer {
            Ok(answer) if answer.error_code == 0 => Ok(Some(answer)),
            Ok(answer) => {
                let code = answer.error_code;
                if matches!(
                    code,
                    TOPIC_AUTHORIZATION_FAILED | GROUP_AUTHORIZATION_FAILED
                ) {
                    return Err(self.refusal(index, code));
                }
                self.shared.metrics.error(ErrorKind::Fetch);
                if !share_codes::is_session_error(code) {
                    tracing::warn!(broker = %session.address, code, name = %error_name(code),
                        message = ?answer.error_message, "ShareFetch refused");
                }
                self.lose_session(index, keys);
                Ok(None)
            }
            Err(error) if error.is_connection_failure() => {
                self.shared.metrics.error(ErrorKind::Connection);
                tracing::warn!(%error, "share session lost; its records go back to the group");
                self.lose_session(index, keys);
                self.placement.stale = true;
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }

    /// Turns one partition of a leader's answer into chunks for `ready`, each holding its
    /// share of `budget`; what was acquired and not sent is released at once.
    fn take_partition(
        &mut self,
        index: usize,
        partition: SharePartitionResponse,
        budget: &mut Option<OwnedSemaphorePermit>,
    ) -> Result<(), Error> {
        let key = (partition.topic_id, partition.partition);
        if partition.error_code != 0 {
            if partition.error_code == TOPIC_AUTHORIZATION_FAILED {
                return Err(self.refusal(index, partition.error_code));
            }
            if codes::needs_metadata_refresh(partition.error_code) {
                self.placement.stale = true;
            }
            tracing::warn!(partition = partition.partition, code = partition.error_code,
                name = %error_name(partition.error_code), "ShareFetch partition error");
            return Ok(());
        }
        if partition.acquired.is_empty() {
            return Ok(());
        }
        tracing::debug!(partition = partition.partition, acquired = ?partition.acquired,
            "records acquired");
        let topic = match self.placement.partitions.get(&key) {
            Some((topic, _)) => topic.clone(),
            None => Arc::from(""),
        };
        let place = ChunkPlace {
            topic: &topic,
            key,
            decode: &self.decode,
            generation: self.book.generation(&key),
        };
        let (chunks, uncovered) =
            share_chunks(&place, &partition.records, &partition.acquired, budget);
        for chunk in &chunks {
            self.book
                .acquire(key, chunk.first_offset(), chunk.last_offset());
        }
        for (first, last) in uncovered {
            // Acquired but not sent: released at once, for a member that can read them.
            self.book.acquire(key, first, last);
            let released = self
                .book
                .acknowledge(key, first, last, AcknowledgeType::Release);
            self.counters.count(AcknowledgeType::Release, released);
        }
        let bytes = chunks
            .iter()
            .map(|c| c.records_bytes().len())
            .sum::<usize>();
        let metrics = &self.shared.metrics;
        metrics.fetched_bytes(std::iter::once((&topic, bytes)));
        self.ready
            .extend(chunks.into_iter().map(|c| c.with_metrics(metrics.clone())));
        Ok(())
    }

    /// The leader refused the acknowledgements `sent` for `partition` (their locks had run
    /// out, or their session ended): those records are delivered again, so they no longer
    /// count as acknowledged.
    fn refused(&self, sent: &[SentAcks], partition: &SharePartitionResponse) {
        let key = (partition.topic_id, partition.partition);
        tracing::warn!(partition = partition.partition, code = partition.acknowledge_error_code,
            message = ?partition.acknowledge_error_message,
            "acknowledgements refused; those records are delivered again");
        self.counters
            .refuse(sent.iter().filter(|(k, _)| *k == key).flat_map(|(_, r)| r));
    }

    /// The leader ended the session (or the connection broke): it released every record it
    /// had acquired for this member, so nothing held for those partitions is acknowledged.
    fn lose_session(&mut self, index: usize, keys: &[PartitionKey]) {
        let held = self.leaders[index].lose();
        for key in held.iter().chain(keys) {
            self.book.forget(key);
        }
        self.counters
            .in_flight
            .store(self.book.in_flight(), Ordering::Relaxed);
    }

    fn refusal(&self, index: usize, code: i16) -> Error {
        let broker = self.leaders[index].address.clone();
        if code == GROUP_AUTHORIZATION_FAILED {
            return Error::Group {
                group: self.group.clone(),
                broker,
                api: "ShareFetch",
                code,
                name: error_name(code),
            };
        }
        Error::Client(krec_client::Error::Broker {
            broker,
            api: "ShareFetch",
            topic: Some(self.topics.join(",")),
            partition: None,
            code,
            name: error_name(code),
        })
    }

    /// Looks up the assigned partitions' topic names and leaders.
    async fn place(&mut self, assignment: &Arc<Assignment>) -> Result<(), Error> {
        let cluster = self.metadata.fetch(&self.topics).await?;
        let mut partitions = BTreeMap::new();
        let mut stale = false;
        for (topic_id, assigned) in assignment.iter() {
            let Some(topic) = cluster.topics.values().find(|t| t.topic_id == *topic_id) else {
                stale = true;
                continue;
            };
            let name: Arc<str> = Arc::from(topic.name.as_str());
            for partition in assigned {
                let leader = topic
                    .partitions
                    .iter()
                    .find(|p| p.partition == *partition)
                    .map_or(-1, |p| p.leader);
                let Some(address) = cluster.brokers.get(&leader) else {
                    stale = true;
                    continue;
                };
                if !self.leaders.iter().any(|l| l.node == leader) {
                    self.leaders
                        .push(LeaderSession::new(leader, address.clone()));
                }
                partitions.insert((*topic_id, *partition), (name.clone(), leader));
            }
        }
        self.placement = Placement {
            assignment: Some(assignment.clone()),
            partitions,
            stale,
        };
        Ok(())
    }

    /// Delivers every waiting acknowledgement with ShareAcknowledge; with `close`, ends each
    /// share session too. Acknowledgements of partitions in no open session are dropped.
    pub(super) async fn acknowledge_all(&mut self, close: bool) -> Result<(), Error> {
        let mut first_error = None;
        for index in 0..self.leaders.len() {
            let held: Vec<PartitionKey> = self.leaders[index].in_session.iter().copied().collect();
            let acks = self.book.take_pending_of(&held);
            let member = Member {
                group: &self.group,
                member_id: &self.member_id,
                settings: &self.config.connection,
            };
            tracing::debug!(?acks, close, "ShareAcknowledge");
            match self.leaders[index].acknowledge(member, &acks, close).await {
                Ok(answers) => {
                    for (key, _) in answers.iter().filter(|(_, code)| *code != 0) {
                        let ranges = acks.iter().filter(|(k, _)| k == key);
                        self.counters.refuse(ranges.flat_map(|(_, r)| r));
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "ShareAcknowledge failed");
                    self.lose_session(index, &held);
                    first_error.get_or_insert(error);
                }
            }
        }
        for key in self.book.keys() {
            let _ = self.book.take_pending(&key);
        }
        first_error.map_or(Ok(()), Err)
    }
}
