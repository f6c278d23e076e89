//! Consumer groups' committed offsets at the source, translated to the target exactly (for
//! `krec restore --groups`). A source offset G of a partition becomes the target offset of
//! the first record copied at or after G: read from the delivery of the batch that covers
//! it, or, when the partition's position passes G with no batch covering it (G past the
//! data, or in a gap the copy leaves out: aborted or compacted records), the target offset
//! the partition reached. Each is committed for its group in the transaction that carries
//! the batch, so a translation happens exactly once.
//!
//! A batch's source offsets come from its header (base offset, last offset delta). A batch
//! written as it came holds its records at dense offsets, so record `G - base` of it is the
//! one at G; a piece of a batch written again starts at its first record's source offset,
//! but compaction gaps inside it are gone, so G lands at most `G - base` records into it.

use std::collections::{BTreeMap, HashMap};

use krec_batch::layout::{self, v2};
use krec_client::group::Committer;
use krec_client::groups::{describe_group, GROUP_ID_NOT_FOUND};
use krec_client::metadata::MetadataClient;
use krec_client::transaction::TxnOffset;
use krec_client::{ConnectionSettings, TopicPartition};
use krec_producer::{Delivery, Error as ProducerError, Producer};

use crate::ends::Positions;
use crate::Error;

/// A group's committed offset at the source.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Watched {
    offset: i64,
    group: String,
}

/// A batch of the open transaction that covers watched offsets, and where it landed.
#[derive(Debug)]
struct Covering<D> {
    partition: TopicPartition,
    source_base: i64,
    records: u32,
    delivery: Option<D>,
    /// The target offset of its first record, once delivered.
    landed: Option<i64>,
    offsets: Vec<Watched>,
}

/// Translated offsets of one transaction: group -> source partition -> target offset.
pub(crate) type Translated = BTreeMap<String, BTreeMap<TopicPartition, i64>>;

/// The watched offsets not translated yet, and the open transaction's share of them. `D` is
/// a batch's delivery (the producer's; a plain value in the tests).
#[derive(Debug)]
pub(crate) struct GroupOffsets<D> {
    /// By source partition, ascending offsets: none covered by a batch yet.
    waiting: HashMap<TopicPartition, Vec<Watched>>,
    covering: Vec<Covering<D>>,
    /// Offsets the open transaction's positions passed with no batch covering them.
    passed: Vec<(TopicPartition, Watched)>,
}

impl<D> Default for GroupOffsets<D> {
    fn default() -> Self {
        GroupOffsets {
            waiting: HashMap::new(),
            covering: Vec::new(),
            passed: Vec::new(),
        }
    }
}

/// A v2 batch's first and last source offsets, from its header.
pub(crate) fn source_offsets(batch: &[u8]) -> Option<(i64, i64)> {
    let base = batch.get(layout::BASE_OFFSET_AT..layout::BASE_OFFSET_AT + 8)?;
    let delta = batch.get(v2::LAST_OFFSET_DELTA_AT..v2::LAST_OFFSET_DELTA_AT + 4)?;
    if batch.get(layout::MAGIC_AT) != Some(&layout::magic::V2) {
        return None;
    }
    let base = i64::from_be_bytes(base.try_into().ok()?);
    let delta = i32::from_be_bytes(delta.try_into().ok()?);
    Some((base, base.saturating_add(i64::from(delta))))
}

impl<D> GroupOffsets<D> {
    /// Watches `offsets`: (group, source partition, source offset).
    pub(crate) fn watch(&mut self, offsets: Vec<(String, TopicPartition, i64)>) {
        for (group, partition, offset) in offsets {
            let waiting = self.waiting.entry(partition).or_default();
            waiting.push(Watched { offset, group });
            waiting.sort_by_key(|w| w.offset);
        }
    }

    /// Whether offsets of `partition` wait for a translation.
    pub(crate) fn watches(&self, partition: &TopicPartition) -> bool {
        self.waiting.get(partition).is_some_and(|w| !w.is_empty())
    }

    /// `partition` resumes at `at`: the offsets at or before it were translated by an
    /// earlier run.
    pub(crate) fn resumed(&mut self, partition: &TopicPartition, at: i64) {
        if let Some(waiting) = self.waiting.get_mut(partition) {
            waiting.retain(|w| w.offset > at);
        }
    }

    /// A batch of `partition` covering source offsets `source` (first, last) with `records`
    /// records was sent in the open transaction: keeps its delivery when it covers waiting
    /// offsets, else gives it back.
    pub(crate) fn written(
        &mut self,
        partition: &TopicPartition,
        source: Option<(i64, i64)>,
        records: u32,
        delivery: D,
    ) -> Option<D> {
        let (Some((source_base, last)), Some(waiting)) = (source, self.waiting.get_mut(partition))
        else {
            return Some(delivery);
        };
        let covered = waiting.partition_point(|w| w.offset <= last);
        if covered == 0 {
            return Some(delivery);
        }
        self.covering.push(Covering {
            partition: partition.clone(),
            source_base,
            records,
            delivery: Some(delivery),
            landed: None,
            offsets: waiting.drain(..covered).collect(),
        });
        None
    }

    /// The deliveries kept in the open transaction, to await, each with its index for
    /// [`GroupOffsets::landed`].
    pub(crate) fn take_deliveries(&mut self) -> Vec<(usize, D)> {
        (self.covering.iter_mut().enumerate())
            .filter_map(|(index, c)| c.delivery.take().map(|d| (index, d)))
            .collect()
    }

    /// The first record of kept batch `index` is at `target` in the target.
    pub(crate) fn landed(&mut self, index: usize, target: i64) {
        if let Some(covering) = self.covering.get_mut(index) {
            covering.landed = Some(target);
        }
    }

    /// The target offset after each kept batch, in the order written: a later one of a
    /// partition supersedes an earlier one.
    pub(crate) fn reached(&self) -> Vec<(TopicPartition, i64)> {
        (self.covering.iter())
            .filter_map(|c| Some((c.partition.clone(), c.landed? + i64::from(c.records))))
            .collect()
    }

    /// The open transaction's translations: its kept batches' (landed) offsets, and the
    /// waiting offsets its `positions` pass, at the target offset each partition reached
    /// (`target_next`; one with none yet keeps its offsets waiting).
    pub(crate) fn translate(
        &mut self,
        positions: &Positions,
        target_next: &HashMap<TopicPartition, i64>,
    ) -> Translated {
        let mut translated = Translated::new();
        for covering in &self.covering {
            let Some(landed) = covering.landed else {
                continue;
            };
            for watched in &covering.offsets {
                let into = watched.offset.saturating_sub(covering.source_base).max(0);
                let at = landed.saturating_add(into);
                let group = translated.entry(watched.group.clone()).or_default();
                group.insert(covering.partition.clone(), at);
            }
        }
        for (partition, &position) in positions {
            let (Some(waiting), Some(&next)) =
                (self.waiting.get_mut(partition), target_next.get(partition))
            else {
                continue;
            };
            let passed = waiting.partition_point(|w| w.offset <= position);
            for watched in waiting.drain(..passed) {
                let group = translated.entry(watched.group.clone()).or_default();
                group.insert(partition.clone(), next);
                self.passed.push((partition.clone(), watched));
            }
        }
        translated
    }

    /// The open transaction committed: its translations are done.
    pub(crate) fn committed(&mut self) {
        self.covering.clear();
        self.passed.clear();
    }

    /// Warns of each offset never translated: the copy did not reach it (no record at or
    /// after it, and its partition's position never passed it).
    pub(crate) fn warn_untranslated(&self) {
        for (partition, waiting) in &self.waiting {
            for watched in waiting {
                tracing::warn!(group = %watched.group, %partition, offset = watched.offset,
                    "group offset not translated: the copy did not reach it");
            }
        }
    }

    /// The open transaction aborted: its offsets wait again.
    pub(crate) fn aborted(&mut self) {
        let back = (self.covering.drain(..))
            .flat_map(|c| {
                let partition = c.partition;
                c.offsets.into_iter().map(move |w| (partition.clone(), w))
            })
            .chain(self.passed.drain(..));
        let back: Vec<(String, TopicPartition, i64)> = back
            .map(|(partition, w)| (w.group, partition, w.offset))
            .collect();
        self.watch(back);
    }
}

impl GroupOffsets<Delivery> {
    /// Awaits the kept deliveries; the target offset after each kept batch, in the order
    /// written (see [`GroupOffsets::reached`]).
    pub(crate) async fn land(&mut self) -> Result<Vec<(TopicPartition, i64)>, Error> {
        for (index, delivery) in self.take_deliveries() {
            let delivered = delivery.await?;
            if !delivered.has_offset() {
                // A retried batch the broker took as a duplicate: where it is is unknown.
                return Err(Error::Unsafe {
                    partition: TopicPartition::new(delivered.topic(), delivered.partition()),
                    detail: "the target did not say where a batch covering a group's offset \
                             landed, so the offset cannot be translated: run again"
                        .to_owned(),
                });
            }
            self.landed(index, delivered.offset());
        }
        Ok(self.reached())
    }
}

/// The target cluster's groups, for the check that one has no active members.
pub(crate) struct Groups<'a> {
    pub(crate) metadata: &'a mut MetadataClient,
    pub(crate) settings: &'a ConnectionSettings,
}

/// Commits `translated` for their groups in `producer`'s open transaction, each source
/// partition's offset on its copy (`prefix` before the topic's name). A group with active
/// members, or one that refuses, stops the copy (the transaction aborted): copying again
/// would not change it.
pub(crate) async fn commit(
    producer: &Producer,
    mut groups: Groups<'_>,
    translated: Translated,
    prefix: &str,
) -> Result<(), Error> {
    for (group, offsets) in translated {
        if let Err(refusal) = check_idle(&mut groups, &group).await {
            producer.abort().await?;
            return Err(refusal);
        }
        let offsets: BTreeMap<TopicPartition, TxnOffset> = (offsets.into_iter())
            .map(|(source, at)| {
                let target =
                    TopicPartition::new(format!("{prefix}{}", source.topic), source.partition);
                (target, TxnOffset::from(at))
            })
            .collect();
        let committer = Committer {
            group: &group,
            generation: -1,
            member_id: "",
            instance_id: None,
        };
        match producer
            .send_offsets_to_transaction(&offsets, &committer)
            .await
        {
            Ok(()) => {}
            Err(ProducerError::TransactionAbortable { detail, .. }) => {
                producer.abort().await?;
                return Err(refused(&group, &detail));
            }
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// Refuses `group` while it has members: they would commit over the translated offsets (the
/// broker takes a transactional commit from outside a group even then).
async fn check_idle(groups: &mut Groups<'_>, group: &str) -> Result<(), Error> {
    match describe_group(groups.metadata, groups.settings, group, false).await {
        Ok(described) if !described.members.is_empty() => {
            let members = described.members.len();
            Err(refused(group, &format!("it has {members} active members")))
        }
        Ok(_) => Ok(()),
        Err(krec_client::Error::Group { code, .. }) if code == GROUP_ID_NOT_FOUND => Ok(()),
        Err(error) => Err(Error::target_client(error)),
    }
}

fn refused(group: &str, detail: &str) -> Error {
    Error::Refused {
        cluster: "target",
        what: format!("the committed offsets of group {group:?}"),
        detail: format!(
            "{detail}; a group's offsets are set only while it has no active members: stop \
             its consumers, then run again"
        ),
    }
}

#[cfg(test)]
#[path = "group_offsets_tests.rs"]
mod tests;
