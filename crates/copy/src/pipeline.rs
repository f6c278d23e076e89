//! The one copy loop: batches move from a [`BatchSource`] to a [`BatchSink`] in
//! transactions, each committed with the source positions its batches reach, so a restart
//! after any crash resumes exactly where the last commit left off.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use krec_batch::DecodeConfig;
use krec_client::TopicPartition;
use tokio::time::{sleep_until, Instant};

use crate::ends::{BatchSink, BatchSource, Ownership, Positions, SourceRun, SourceTopic};
use crate::shape::outgoing;
use crate::stats::{Carried, CopySnapshot, CopyStats};
use crate::Error;

/// How the loop paces itself.
#[derive(Clone, Debug)]
pub struct PipelineSettings {
    /// A transaction commits this long after its first batch.
    pub commit_interval: Duration,
    /// ... or once it carries this many bytes.
    pub max_transaction_bytes: u64,
    /// How often the source's topics are looked at again (new topics, new partitions).
    pub refresh: Duration,
    /// Stop after this long without a batch.
    pub idle_timeout: Option<Duration>,
    /// Write at most this many batch bytes per second.
    pub max_bytes_per_second: Option<u64>,
    /// Limits for batches decoded to be written again.
    pub decode: DecodeConfig,
}

impl Default for PipelineSettings {
    fn default() -> Self {
        PipelineSettings {
            commit_interval: Duration::from_millis(500),
            max_transaction_bytes: 64 << 20,
            refresh: Duration::from_secs(30),
            idle_timeout: None,
            max_bytes_per_second: None,
            decode: DecodeConfig::default(),
        }
    }
}

/// A source, a sink, and the loop between them.
pub struct Pipeline<S, K> {
    source: S,
    sink: K,
    settings: PipelineSettings,
    stats: Arc<CopyStats>,
    /// Partition counts of the topics prepared so far.
    known: BTreeMap<String, i32>,
    /// The source partitions this copy owns now.
    owned: BTreeSet<TopicPartition>,
    /// Where each partition stands in the target, as last committed.
    committed: Positions,
    throttle: Throttle,
}

/// The open transaction.
#[derive(Default)]
struct Open {
    since: Option<Instant>,
    positions: Positions,
    carried: Carried,
}

impl<S: BatchSource + Send, K: BatchSink + Send> Pipeline<S, K> {
    /// A pipeline from `source` to `sink`.
    pub fn new(source: S, sink: K, settings: PipelineSettings) -> Self {
        let throttle = Throttle::new(settings.max_bytes_per_second);
        Pipeline {
            source,
            sink,
            settings,
            stats: Arc::new(CopyStats::default()),
            known: BTreeMap::new(),
            owned: BTreeSet::new(),
            committed: Positions::new(),
            throttle,
        }
    }

    /// The source (its own counters, say), before [`Pipeline::run`].
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The counters, readable while [`Pipeline::run`] runs.
    pub fn stats(&self) -> Arc<CopyStats> {
        self.stats.clone()
    }

    /// The sink, for what it reports of itself.
    pub fn sink(&self) -> &K {
        &self.sink
    }

    /// Copies until the source ends, the idle timeout passes or `stop` completes; the open
    /// transaction is committed before returning.
    pub async fn run(mut self, stop: impl Future<Output = ()>) -> Result<CopySnapshot, Error> {
        tokio::pin!(stop);
        self.refresh().await?;
        let mut open = Open::default();
        let mut refresh_at = Instant::now() + self.settings.refresh;
        let mut last_run = Instant::now();
        loop {
            let commit_at = open
                .since
                .map(|since| since + self.settings.commit_interval);
            let idle_at = (self.settings.idle_timeout).map(|idle| last_run + idle);
            // The throttle holds the next read back, never a write: an open transaction
            // still commits on time.
            let paced = self.throttle.held_until();
            let reading = !self.owned.is_empty() && paced.is_none();
            tokio::select! {
                biased;
                () = &mut stop => break,
                () = sleep_until(commit_at.unwrap_or(refresh_at)), if commit_at.is_some() => {
                    self.commit(&mut open).await?;
                }
                change = self.sink.next_change() => match change? {
                    None => break,
                    Some(change) => self.change_owner(change, &mut open).await?,
                },
                () = sleep_until(refresh_at) => {
                    self.refresh().await?;
                    refresh_at = Instant::now() + self.settings.refresh;
                }
                () = sleep_until(idle_at.unwrap_or(refresh_at)), if idle_at.is_some() => break,
                () = sleep_until(paced.unwrap_or(refresh_at)), if paced.is_some() => {}
                run = self.source.next_run(), if reading => match self.or_commit(run, &mut open).await? {
                    None => {
                        // At the end: done once the last transaction commits; after an
                        // abort the source was sent back, and copies those batches again.
                        if open.since.is_none() || self.commit(&mut open).await? {
                            break;
                        }
                    }
                    Some(run) => {
                        last_run = Instant::now();
                        self.carry(run, &mut open).await?;
                        if open.carried.bytes >= self.settings.max_transaction_bytes {
                            self.commit(&mut open).await?;
                        }
                    }
                },
            }
        }
        if open.since.is_some() {
            self.commit(&mut open).await?;
        }
        self.stats.set_lag(self.source.lag());
        self.sink.close().await?;
        Ok(self.stats.snapshot())
    }

    /// A source that fails stops the copy, but the runs it gave before are sound: the open
    /// transaction commits first, so the target holds everything read up to the failure (a
    /// backup's corrupt batch, say) and a restart resumes right there.
    async fn or_commit<T>(&mut self, read: Result<T, Error>, open: &mut Open) -> Result<T, Error> {
        if read.is_err() && open.since.is_some() {
            if let Err(error) = self.commit(open).await {
                tracing::warn!(%error, "what was copied before the source failed is not committed");
            }
        }
        read
    }

    /// Starts reading newly owned partitions where they resume; before giving partitions up,
    /// commits what was copied of them (or, when they are lost, aborts it).
    async fn change_owner(&mut self, change: Ownership, open: &mut Open) -> Result<(), Error> {
        match change {
            Ownership::Assigned(partitions) => {
                // A target partition with no source partition behind it is not copied to.
                let partitions: Vec<TopicPartition> = (partitions.into_iter())
                    .filter(|p| (self.known.get(&*p.topic)).is_some_and(|&n| p.partition < n))
                    .collect();
                let resume = self.sink.resume(&partitions).await?;
                for (partition, at) in &resume {
                    if let Some(at) = at {
                        self.committed.insert(partition.clone(), *at);
                    }
                }
                self.owned.extend(partitions);
                self.source.assign(&resume).await?;
            }
            Ownership::Revoked(partitions) => {
                if open.since.is_some() {
                    self.commit(open).await?;
                }
                self.give_up(&partitions);
            }
            Ownership::Lost(partitions) => {
                if open.since.is_some() {
                    let done = std::mem::take(open);
                    self.sink.abort().await?;
                    self.stats.aborted();
                    self.rewind(&done.positions)?;
                }
                self.give_up(&partitions);
            }
        }
        Ok(())
    }

    fn give_up(&mut self, partitions: &[TopicPartition]) {
        self.source.unassign(partitions);
        for partition in partitions {
            self.owned.remove(partition);
            self.committed.remove(partition);
        }
    }

    /// Writes a run's batches in the open transaction (opening one if none is).
    async fn carry(&mut self, run: SourceRun, open: &mut Open) -> Result<(), Error> {
        if open.since.is_none() {
            self.sink.begin().await?;
            open.since = Some(Instant::now());
        }
        self.notice_loss(&run, open);
        // A partition with no position yet rewinds to where it was first read from.
        (self.committed)
            .entry(run.partition.clone())
            .or_insert(run.from_offset);
        let max_batch_bytes = self.sink.max_batch_bytes(&run.partition);
        let as_stored = self.sink.takes_batches_as_stored();
        let decode = &self.settings.decode;
        let batches = outgoing(&run, max_batch_bytes, as_stored, decode, &mut open.carried)?;
        for batch in batches {
            open.carried.records += u64::from(batch.records);
            open.carried.bytes += batch.bytes.len() as u64;
            open.carried.batches += 1;
            self.throttle.take(batch.bytes.len() as u64);
            self.sink
                .write(&run.partition, batch.bytes, batch.records)
                .await?;
        }
        open.positions.insert(run.partition, run.next_offset);
        Ok(())
    }

    /// Tells the sink when `run` starts past where its partition stands (the open
    /// transaction's position, else the committed one): the source's retention deleted those
    /// records before they were copied, and its reading started again at its log start. A
    /// partition with no position yet loses nothing.
    fn notice_loss(&mut self, run: &SourceRun, open: &mut Open) {
        let partition = &run.partition;
        let stands = (open.positions.get(partition)).or_else(|| self.committed.get(partition));
        let Some(&stood) = stands.filter(|&&at| run.from_offset > at) else {
            return;
        };
        let lost = stood..run.from_offset;
        tracing::warn!(
            %partition,
            from = lost.start,
            to = lost.end,
            "records deleted at the source before they were copied: lost"
        );
        open.carried.lost_records += (lost.end - lost.start) as u64;
        self.sink.lost(partition, lost);
    }

    /// Commits the open transaction; after an abort, the source goes back to the positions
    /// last committed and the batches are read again. Whether it committed.
    async fn commit(&mut self, open: &mut Open) -> Result<bool, Error> {
        let done = std::mem::take(open);
        let committed = self.sink.commit(&done.positions).await?;
        if committed {
            self.committed.extend(done.positions);
            self.stats.committed(&done.carried);
        } else {
            self.stats.aborted();
            self.rewind(&done.positions)?;
        }
        self.stats.set_lag(self.source.lag());
        Ok(committed)
    }

    /// Sends the partitions an aborted transaction carried back to their committed positions.
    fn rewind(&mut self, carried: &Positions) -> Result<(), Error> {
        let back: Positions = (carried.keys())
            .filter(|p| self.owned.contains(*p))
            .filter_map(|p| self.committed.get(p).map(|&at| (p.clone(), at)))
            .collect();
        self.source.rewind(&back)
    }

    /// Makes ready the copies of topics and partitions the source has that the pipeline did
    /// not know yet (the sink's group then assigns them).
    async fn refresh(&mut self) -> Result<(), Error> {
        let topics = self.source.topics().await?;
        let new: Vec<SourceTopic> = topics
            .into_iter()
            .filter(|t| self.known.get(&t.name).is_none_or(|&n| n < t.partitions))
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        self.sink.prepare(&new).await?;
        for topic in &new {
            self.known.insert(topic.name.clone(), topic.partitions);
        }
        Ok(())
    }
}

/// [`PipelineSettings::max_bytes_per_second`]: the next run is read once the bytes written so
/// far fit the rate.
struct Throttle {
    rate: Option<u64>,
    started: Instant,
    bytes: u64,
}

impl Throttle {
    fn new(rate: Option<u64>) -> Self {
        Throttle {
            rate: rate.filter(|&r| r > 0),
            started: Instant::now(),
            bytes: 0,
        }
    }

    fn take(&mut self, bytes: u64) {
        self.bytes += bytes;
    }

    /// When reading may go on, if not now.
    fn held_until(&self) -> Option<Instant> {
        let rate = self.rate?;
        let due = self.started + Duration::from_secs_f64(self.bytes as f64 / rate as f64);
        (due > Instant::now()).then_some(due)
    }
}

#[cfg(test)]
#[path = "pipeline_tests.rs"]
mod tests;
