//! The loop's bookkeeping with an in-memory source and sink: what is rewound after an abort,
//! and what a lost partition leaves behind.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use krec_batch::encode::BatchBuilder;
use krec_batch::{BatchWalk, DecodeConfig};

use super::*;
use crate::ends::SourceBatch;

/// One batch of `count` records at `base`, with its header's summary.
fn batch(base: i64, count: usize) -> SourceBatch {
    built(records(BatchBuilder::new(base), count))
}

fn records(mut builder: BatchBuilder, count: usize) -> BatchBuilder {
    for _ in 0..count {
        builder = builder.record(Some(b"k"), Some(b"v"), &[]);
    }
    builder
}

fn built(builder: BatchBuilder) -> SourceBatch {
    let bytes = Bytes::from(builder.build());
    let config = DecodeConfig::default();
    let summary = BatchWalk::new(&bytes, &config)
        .next_summary()
        .expect("a batch");
    SourceBatch {
        summary: summary.expect("sound"),
        bytes,
    }
}

fn partition() -> TopicPartition {
    TopicPartition::new("t", 0)
}

/// A source of one partition: ten records in one batch, read again after a rewind.
#[derive(Default)]
struct Source {
    position: Option<i64>,
    rewinds: Vec<Positions>,
    unassigned: Vec<TopicPartition>,
}

impl BatchSource for Source {
    async fn topics(&mut self) -> Result<Vec<SourceTopic>, Error> {
        let topic = SourceTopic {
            name: "t".into(),
            id: None,
            partitions: 1,
            configs: Vec::new(),
        };
        Ok(vec![topic])
    }

    async fn assign(&mut self, partitions: &[(TopicPartition, Option<i64>)]) -> Result<(), Error> {
        self.position = Some(partitions[0].1.unwrap_or(0));
        Ok(())
    }

    fn unassign(&mut self, partitions: &[TopicPartition]) {
        self.unassigned.extend_from_slice(partitions);
        self.position = None;
    }

    fn rewind(&mut self, positions: &Positions) -> Result<(), Error> {
        self.rewinds.push(positions.clone());
        self.position = positions.get(&partition()).copied().or(self.position);
        Ok(())
    }

    async fn next_run(&mut self) -> Result<Option<SourceRun>, Error> {
        match self.position {
            Some(0) => {
                self.position = Some(10);
                let run = SourceRun {
                    partition: partition(),
                    from_offset: 0,
                    batches: vec![batch(0, 10)],
                    next_offset: 10,
                };
                Ok(Some(run))
            }
            _ => Ok(None),
        }
    }

    fn lag(&self) -> Vec<(TopicPartition, i64)> {
        Vec::new()
    }
}

/// Hands out the runs it was given, in order, then ends.
struct Scripted {
    runs: VecDeque<SourceRun>,
}

impl Scripted {
    fn new(runs: impl IntoIterator<Item = SourceRun>) -> Self {
        Scripted {
            runs: runs.into_iter().collect(),
        }
    }
}

fn run(from_offset: i64, batches: Vec<SourceBatch>, next_offset: i64) -> SourceRun {
    SourceRun {
        partition: partition(),
        from_offset,
        batches,
        next_offset,
    }
}

impl BatchSource for Scripted {
    async fn topics(&mut self) -> Result<Vec<SourceTopic>, Error> {
        Source::default().topics().await
    }

    async fn assign(&mut self, _: &[(TopicPartition, Option<i64>)]) -> Result<(), Error> {
        Ok(())
    }

    fn unassign(&mut self, _: &[TopicPartition]) {}

    fn rewind(&mut self, _: &Positions) -> Result<(), Error> {
        Ok(())
    }

    async fn next_run(&mut self) -> Result<Option<SourceRun>, Error> {
        Ok(self.runs.pop_front())
    }

    fn lag(&self) -> Vec<(TopicPartition, i64)> {
        Vec::new()
    }
}

/// What the sink was asked to do.
#[derive(Debug, Default)]
struct Seen {
    writes: usize,
    written: Vec<Bytes>,
    /// Each loss the sink was told of, with the writes done before it.
    lost: Vec<(TopicPartition, std::ops::Range<i64>, usize)>,
    commits: Vec<Positions>,
    aborts: usize,
}

/// A sink that owns the partition at once, refuses its first `refusals` commits, and loses
/// the partition after `lose_after_writes` writes.
struct Sink {
    seen: Arc<Mutex<Seen>>,
    changes: VecDeque<Ownership>,
    refusals: usize,
    lose_after_writes: Option<usize>,
    max_batch_bytes: usize,
    as_stored: bool,
    resume_at: Option<i64>,
}

impl Sink {
    fn new(refusals: usize, lose_after_writes: Option<usize>) -> (Self, Arc<Mutex<Seen>>) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let changes = VecDeque::from([Ownership::Assigned(vec![partition()])]);
        let sink = Sink {
            seen: seen.clone(),
            changes,
            refusals,
            lose_after_writes,
            max_batch_bytes: 1 << 20,
            as_stored: false,
            resume_at: None,
        };
        (sink, seen)
    }
}

impl BatchSink for Sink {
    async fn prepare(&mut self, _topics: &[SourceTopic]) -> Result<(), Error> {
        Ok(())
    }

    async fn next_change(&mut self) -> Result<Option<Ownership>, Error> {
        if let Some(change) = self.changes.pop_front() {
            return Ok(Some(change));
        }
        let writes = self.seen.lock().unwrap().writes;
        if self.lose_after_writes.is_some_and(|after| writes >= after) {
            self.lose_after_writes = None;
            return Ok(Some(Ownership::Lost(vec![partition()])));
        }
        std::future::pending().await
    }

    async fn resume(
        &mut self,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<i64>)>, Error> {
        let at = self.resume_at;
        Ok(partitions.iter().map(|p| (p.clone(), at)).collect())
    }

    fn max_batch_bytes(&self, _partition: &TopicPartition) -> usize {
        self.max_batch_bytes
    }

    fn takes_batches_as_stored(&self) -> bool {
        self.as_stored
    }

    fn lost(&mut self, partition: &TopicPartition, range: std::ops::Range<i64>) {
        let mut seen = self.seen.lock().unwrap();
        let writes = seen.writes;
        seen.lost.push((partition.clone(), range, writes));
    }

    async fn begin(&mut self) -> Result<(), Error> {
        Ok(())
    }

    async fn write(&mut self, _: &TopicPartition, batch: Bytes, _: u32) -> Result<(), Error> {
        let mut seen = self.seen.lock().unwrap();
        seen.writes += 1;
        seen.written.push(batch);
        Ok(())
    }

    async fn commit(&mut self, positions: &Positions) -> Result<bool, Error> {
        if self.refusals > 0 {
            self.refusals -= 1;
            self.seen.lock().unwrap().aborts += 1;
            return Ok(false);
        }
        self.seen.lock().unwrap().commits.push(positions.clone());
        Ok(true)
    }

    async fn abort(&mut self) -> Result<(), Error> {
        self.seen.lock().unwrap().aborts += 1;
        Ok(())
    }

    async fn close(self) -> Result<(), Error> {
        Ok(())
    }
}

fn settings() -> PipelineSettings {
    PipelineSettings {
        idle_timeout: Some(Duration::from_millis(200)),
        ..PipelineSettings::default()
    }
}

#[tokio::test]
async fn an_aborted_first_transaction_is_copied_again_from_where_it_started() {
    let (sink, seen) = Sink::new(1, None);
    let copied = Pipeline::new(Source::default(), sink, settings())
        .run(std::future::pending())
        .await
        .expect("copied");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.writes, 2, "the batch written, aborted, written again");
    assert_eq!(seen.commits, [Positions::from([(partition(), 10)])]);
    assert_eq!(
        (copied.records, copied.transactions, copied.aborted),
        (10, 1, 1)
    );
}

#[tokio::test]
async fn a_lost_partition_aborts_and_commits_nothing_of_it() {
    let (sink, seen) = Sink::new(0, Some(1));
    let source = Source::default();
    let pipeline = Pipeline::new(source, sink, settings());
    let copied = pipeline.run(std::future::pending()).await.expect("ended");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.writes, 1);
    assert_eq!(seen.aborts, 1, "the open transaction aborted");
    assert!(seen.commits.is_empty(), "{:?}", seen.commits);
    assert_eq!((copied.records, copied.aborted), (0, 1));
}

/// Batches a cluster sink would change: LogAppendTime (written again), one compaction emptied
/// (left out), one over the sink's size limit (split).
fn batches_a_cluster_sink_changes() -> Vec<SourceBatch> {
    vec![
        built(records(BatchBuilder::new(0), 3).log_append_time(true)),
        built(BatchBuilder::new(3).last_offset_delta(4)),
        batch(8, 40),
    ]
}

async fn copy_with(as_stored: bool) -> (Vec<Bytes>, CopySnapshot) {
    let (mut sink, seen) = Sink::new(0, None);
    sink.max_batch_bytes = 200;
    sink.as_stored = as_stored;
    let source = Scripted::new([run(0, batches_a_cluster_sink_changes(), 48)]);
    let copied = Pipeline::new(source, sink, settings())
        .run(std::future::pending())
        .await
        .expect("copied");
    let written = seen.lock().unwrap().written.clone();
    (written, copied)
}

#[tokio::test]
async fn a_sink_that_takes_batches_as_stored_gets_each_one_as_it_came() {
    let stored: Vec<Bytes> = (batches_a_cluster_sink_changes().into_iter())
        .map(|batch| batch.bytes)
        .collect();
    assert!(stored[2].len() > 200, "the last batch is over the limit");
    let (written, copied) = copy_with(true).await;
    assert_eq!(written, stored);
    assert_eq!((copied.records, copied.batches), (43, 3));
    assert_eq!((copied.reencoded, copied.skipped), (0, 0));

    let (written, copied) = copy_with(false).await;
    assert_ne!(written, stored, "a cluster sink's batches are changed");
    assert_eq!((copied.reencoded, copied.skipped), (2, 1));
    // Pieces written again start at their first record's source offset.
    let offsets: Vec<(i64, i64)> = (written.iter())
        .map(|piece| crate::group_offsets::source_offsets(piece).expect("v2"))
        .collect();
    assert_eq!(offsets.first(), Some(&(0, 2)));
    assert_eq!(offsets.get(1).map(|o| o.0), Some(8));
    assert_eq!(offsets.last().map(|o| o.1), Some(47));
    assert!(offsets.windows(2).skip(1).all(|w| w[1].0 == w[0].1 + 1));
}

/// Copies `runs` with a sink where the partition resumes at `resume_at`: the losses the sink
/// was told of (with the writes before each), and the counters.
async fn losses(
    resume_at: Option<i64>,
    runs: Vec<SourceRun>,
) -> (
    Vec<(TopicPartition, std::ops::Range<i64>, usize)>,
    CopySnapshot,
) {
    let (mut sink, seen) = Sink::new(0, None);
    sink.resume_at = resume_at;
    let copied = Pipeline::new(Scripted::new(runs), sink, settings())
        .run(std::future::pending())
        .await
        .expect("copied");
    let lost = seen.lock().unwrap().lost.clone();
    (lost, copied)
}

#[tokio::test]
async fn a_run_that_starts_past_the_position_tells_the_sink_what_was_lost() {
    let runs = vec![
        run(0, vec![batch(0, 10)], 10),
        run(25, vec![batch(25, 5)], 30),
    ];
    let (lost, copied) = losses(None, runs).await;
    assert_eq!(lost, [(partition(), 10..25, 1)], "before the second write");
    assert_eq!((copied.records, copied.lost_records), (15, 15));
}

#[tokio::test]
async fn a_resumed_partition_read_past_its_position_lost_the_gap() {
    let (lost, copied) = losses(Some(100), vec![run(120, vec![batch(120, 5)], 125)]).await;
    assert_eq!(lost, [(partition(), 100..120, 0)]);
    assert_eq!(copied.lost_records, 20);

    let (lost, copied) = losses(Some(100), vec![run(100, vec![batch(100, 5)], 105)]).await;
    assert_eq!(
        (lost, copied.lost_records),
        (vec![], 0),
        "read from its position"
    );
}

#[tokio::test]
async fn a_partition_first_read_from_its_start_lost_nothing() {
    let (lost, copied) = losses(None, vec![run(40, vec![batch(40, 5)], 45)]).await;
    assert_eq!((lost, copied.lost_records), (vec![], 0));
}
