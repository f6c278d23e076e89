//! The two ends of a copy: a source of batches and a sink of batches. A mirror is a cluster
//! at each end; a backup or a restore puts a directory or an object store at one of them.
//!
//! The pipeline asks the source which topics there are and has the sink make their copies
//! ready; the sink says which source partitions this copy owns (a mirror's members share them
//! through a group) and where each resumes; then runs of batches move from the source to the
//! sink inside the sink's transactions, each committed with the source positions it reaches.

use std::collections::BTreeMap;
use std::future::Future;
use std::ops::Range;

use bytes::Bytes;
use krec_batch::BatchSummary;
use krec_client::TopicPartition;

use crate::Error;

/// A topic at the source: what the sink needs to create its copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceTopic {
    /// Its name at the source.
    pub name: String,
    /// Its topic id at the source, as UUID text; `None` where the source does not say (a
    /// broker too old to have topic ids). A topic deleted and created again has a new one.
    pub id: Option<String>,
    /// How many partitions it has now.
    pub partitions: i32,
    /// Its own settings (cleanup.policy, retention.ms, ...): those set on the topic, not the
    /// broker's defaults.
    pub configs: Vec<(String, String)>,
}

/// One batch as the source stored it.
#[derive(Clone, Debug)]
pub struct SourceBatch {
    /// Its header, read once.
    pub summary: BatchSummary,
    /// The whole batch, log overhead included.
    pub bytes: Bytes,
}

/// Batches of one source partition in offset order, and where the partition continues after
/// them (past any aborted or control batches left out).
#[derive(Debug)]
pub struct SourceRun {
    /// The source partition.
    pub partition: TopicPartition,
    /// The offset the run was read from: records before it in `batches` were copied already.
    pub from_offset: i64,
    /// The data batches.
    pub batches: Vec<SourceBatch>,
    /// The next offset to read.
    pub next_offset: i64,
}

/// Where a source partition resumes.
pub type Positions = BTreeMap<TopicPartition, i64>;

/// A change in the source partitions a copy owns.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ownership {
    /// Now owned: copy them from where the sink says they resume.
    Assigned(Vec<TopicPartition>),
    /// To be given up: commit what was copied of them, then stop reading them. The sink
    /// lets them go at its next [`BatchSink::next_change`].
    Revoked(Vec<TopicPartition>),
    /// Gone without a chance to commit: abort, and stop reading them.
    Lost(Vec<TopicPartition>),
}

/// Gives batches, partition by partition.
pub trait BatchSource {
    /// The topics to copy now (called at start and again every `refresh`).
    fn topics(&mut self) -> impl Future<Output = Result<Vec<SourceTopic>, Error>> + Send;

    /// Reads `partitions` from these offsets (`None`: from the first one there is).
    fn assign(
        &mut self,
        partitions: &[(TopicPartition, Option<i64>)],
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// Stops reading `partitions`.
    fn unassign(&mut self, partitions: &[TopicPartition]);

    /// Goes back to `positions` (after the sink aborted what was read past them).
    fn rewind(&mut self, positions: &Positions) -> Result<(), Error>;

    /// The next run of batches; `None` once every partition reached its end (when asked to
    /// stop there). Cancel-safe: the pipeline waits for it beside its timers.
    fn next_run(&mut self) -> impl Future<Output = Result<Option<SourceRun>, Error>> + Send;

    /// Records each assigned partition still has to copy (the source's end minus its
    /// position), as far as the source knows.
    fn lag(&self) -> Vec<(TopicPartition, i64)>;
}

/// Takes batches in transactions, each committed with the source positions it reaches.
pub trait BatchSink {
    /// Makes ready the copies of `topics` (creating what is missing); the first call also
    /// fences an earlier incarnation of this sink.
    fn prepare(&mut self, topics: &[SourceTopic])
        -> impl Future<Output = Result<(), Error>> + Send;

    /// The next change in the source partitions this copy owns; `None` when it can own none
    /// any more. Cancel-safe: the pipeline waits for it beside the source.
    fn next_change(&mut self) -> impl Future<Output = Result<Option<Ownership>, Error>> + Send;

    /// Where each of `partitions` (source partitions just assigned) resumes: the position
    /// committed with the data, `None` for one never copied.
    fn resume(
        &mut self,
        partitions: &[TopicPartition],
    ) -> impl Future<Output = Result<Vec<(TopicPartition, Option<i64>)>, Error>> + Send;

    /// The largest batch the copy of `partition` (a source partition) takes: larger ones
    /// are written again in pieces.
    fn max_batch_bytes(&self, partition: &TopicPartition) -> usize;

    /// Whether the sink takes every batch exactly as the source stored it (a backup keeps
    /// legacy message sets, LogAppendTime, compaction gaps and emptied batches): the pipeline
    /// then never writes one again, splits one, or leaves one out.
    fn takes_batches_as_stored(&self) -> bool {
        false
    }

    /// Records of `partition` (a source partition) in `range` are gone from the source
    /// (retention deleted them before they were copied): the next batch written for it
    /// starts past them. Called inside the open transaction, before that batch; an abort
    /// forgets it (the loss is met again when the records are read again).
    fn lost(&mut self, partition: &TopicPartition, range: Range<i64>) {
        let _ = (partition, range);
    }

    /// Opens a transaction.
    fn begin(&mut self) -> impl Future<Output = Result<(), Error>> + Send;

    /// Writes one batch of `partition` (a source partition) in the open transaction.
    fn write(
        &mut self,
        partition: &TopicPartition,
        batch: Bytes,
        records: u32,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// Commits the open transaction with `positions`, the source positions its batches reach.
    /// `Ok(false)`: the transaction was aborted (the sink stays usable); the source goes back
    /// to the last committed positions.
    fn commit(&mut self, positions: &Positions)
        -> impl Future<Output = Result<bool, Error>> + Send;

    /// Aborts the open transaction.
    fn abort(&mut self) -> impl Future<Output = Result<(), Error>> + Send;

    /// Flushes and lets go (nothing open stays open).
    fn close(self) -> impl Future<Output = Result<(), Error>> + Send;
}
