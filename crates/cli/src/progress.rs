//! What `krec consume` has written out: records and bytes in all (for `--stats` and `-c`), and
//! per partition the records written and where writing stands, behind the lag that `--stats`
//! and `--metrics` report.
//!
//! The lag counts from the next offset to *write*, not to fetch: fetched chunks can wait in
//! the decode threads' queues (a slow reader of stdout), and those records are not out yet.
//! The next offset to write is the start of the oldest chunk handed out and not yet written,
//! or, with none outstanding, the fetch position.
//!
//! Each partition has its own cell, locked once per chunk by the tokio thread (handed out) and
//! by the decode thread that owns the partition (written); each thread finds the cells through
//! an index of its own ([`Cells`]), so no lock is shared by two partitions and nothing is
//! counted per record.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use krec_consumer::{PartitionChunk, PartitionPosition};

use crate::workers::{PartitionWorkers, Partitioned};
use crate::Error;

/// Counters shared by the decode threads, the stats printer and the metrics endpoint.
#[derive(Debug, Default)]
pub struct Progress {
    /// Records written out.
    pub records: AtomicU64,
    /// Data records decoded, matching the filters or not.
    pub scanned: AtomicU64,
    /// Record bytes (as fetched) of the chunks written out.
    pub bytes: AtomicU64,
    /// Records claimed for output, for `-c`.
    pub claimed: AtomicU64,
    /// Set once `-c` is satisfied.
    pub count_reached: AtomicBool,
    /// Corrupt batches skipped and reported (`--on-corrupt skip`).
    pub batches_skipped: AtomicU64,
    partitions: Mutex<BTreeMap<(Arc<str>, i32), Cell>>,
    /// Chunks handed to the decode threads and not yet written, over all partitions.
    in_output: AtomicU64,
    /// When a decode thread last finished a chunk: milliseconds after [`CLOCK_START`], plus
    /// one (0: never).
    last_written_ms: AtomicU64,
}

/// What [`Progress`] measures its times from.
static CLOCK_START: LazyLock<Instant> = LazyLock::new(Instant::now);

type Cell = Arc<Mutex<PartitionOutput>>;

/// One partition's output, as its cell holds it.
#[derive(Debug, Default)]
struct PartitionOutput {
    records: u64,
    scanned: u64,
    /// Chunks handed to a decode thread and not yet written.
    outstanding: u64,
    /// While chunks are outstanding: the first offset not yet written.
    next_to_write: i64,
}

/// What writing one chunk did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkOutput {
    /// Records written.
    pub records: u64,
    /// Data records decoded, matching the filters or not.
    pub scanned: u64,
    /// The chunk's record bytes, as fetched.
    pub bytes: u64,
    /// The partition is written up to here (none: nothing of the chunk was written, `-c` was
    /// reached before it).
    pub next_offset: Option<i64>,
}

/// One partition's output at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionWritten {
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition id.
    pub partition: i32,
    /// Records written out.
    pub records: u64,
    /// Data records decoded, matching the filters or not.
    pub scanned: u64,
    /// The first offset not yet written, while fetched chunks wait to be written (none: the
    /// fetch position is the next offset to write).
    pub next_to_write: Option<i64>,
}

/// One thread's index of the partition cells it has used.
#[derive(Debug, Default)]
pub struct Cells {
    by_topic: HashMap<Arc<str>, HashMap<i32, Cell>>,
}

/// Cells hold plain numbers: a panic elsewhere leaves nothing half-updated.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Cells {
    fn cell(&mut self, progress: &Progress, topic: &str, partition: i32) -> Cell {
        if let Some(cell) = self.by_topic.get(topic).and_then(|p| p.get(&partition)) {
            return cell.clone();
        }
        let topic: Arc<str> = Arc::from(topic);
        let cell = lock(&progress.partitions)
            .entry((topic.clone(), partition))
            .or_default()
            .clone();
        self.by_topic
            .entry(topic)
            .or_default()
            .insert(partition, cell.clone());
        cell
    }
}

/// One chunk's part in `-c`: the count, and whether this chunk reached it or was stopped by it.
#[derive(Clone, Copy, Debug)]
pub struct ChunkCount {
    limit: Option<u64>,
    /// The count's last record is this chunk's.
    pub reached: bool,
    /// The count stopped this chunk: reached here, or by other threads (before it began, when
    /// made with `cut`, or meanwhile).
    pub cut: bool,
}

impl ChunkCount {
    /// `limit` is `-c`'s count (none: no count).
    pub fn new(limit: Option<u64>, cut: bool) -> Self {
        ChunkCount {
            limit,
            reached: false,
            cut,
        }
    }

    /// Claims the next record's place across every decode thread: false when it is past the
    /// count (other threads took the rest), and the chunk stops before it.
    #[inline]
    pub fn claim(&mut self, progress: &Progress) -> bool {
        let Some(limit) = self.limit else {
            return true;
        };
        let slot = progress.claimed.fetch_add(1, Ordering::Relaxed);
        if slot >= limit {
            self.cut = true;
            return false;
        }
        if slot + 1 == limit {
            progress.count_reached.store(true, Ordering::Relaxed);
            (self.reached, self.cut) = (true, true);
        }
        true
    }
}

impl Progress {
    /// A chunk of the partition, starting at `fetch_offset`, went to a decode thread (called
    /// by the thread that hands chunks out).
    pub fn handed_out(&self, cells: &mut Cells, topic: &str, partition: i32, fetch_offset: i64) {
        let cell = cells.cell(self, topic, partition);
        let mut output = lock(&cell);
        if output.outstanding == 0 {
            output.next_to_write = fetch_offset;
        }
        output.outstanding += 1;
        self.in_output.fetch_add(1, Ordering::Release);
    }

    /// A decode thread is done with a chunk of the partition.
    pub fn written(&self, cells: &mut Cells, topic: &str, partition: i32, chunk: ChunkOutput) {
        self.records.fetch_add(chunk.records, Ordering::Relaxed);
        self.scanned.fetch_add(chunk.scanned, Ordering::Relaxed);
        if chunk.next_offset.is_some() {
            self.bytes.fetch_add(chunk.bytes, Ordering::Relaxed);
        }
        let cell = cells.cell(self, topic, partition);
        let mut output = lock(&cell);
        output.records += chunk.records;
        output.scanned += chunk.scanned;
        output.outstanding = output.outstanding.saturating_sub(1);
        if let Some(next_offset) = chunk.next_offset {
            output.next_to_write = next_offset;
        }
        drop(output);
        // The time first: whoever sees no chunk left in the output sees when it was written.
        let since_start = CLOCK_START.elapsed().as_millis() as u64;
        self.last_written_ms
            .fetch_max(since_start + 1, Ordering::Release);
        let _ = self
            .in_output
            .fetch_update(Ordering::Release, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// Whether the decode threads hold chunks not written yet: output is behind (or busy),
    /// and fetching waits for it, not for the broker.
    pub fn output_behind(&self) -> bool {
        self.in_output.load(Ordering::Acquire) > 0
    }

    /// When a decode thread last finished a chunk (none yet: `None`).
    pub fn last_written(&self) -> Option<Instant> {
        match self.last_written_ms.load(Ordering::Acquire) {
            0 => None,
            ms => Some(*CLOCK_START + Duration::from_millis(ms - 1)),
        }
    }

    /// Every partition written to or handed out so far.
    pub fn partitions(&self) -> Vec<PartitionWritten> {
        let cells: Vec<((Arc<str>, i32), Cell)> = lock(&self.partitions)
            .iter()
            .map(|(key, cell)| (key.clone(), cell.clone()))
            .collect();
        cells
            .into_iter()
            .map(|((topic, partition), cell)| {
                let output = lock(&cell);
                PartitionWritten {
                    topic,
                    partition,
                    records: output.records,
                    scanned: output.scanned,
                    next_to_write: (output.outstanding > 0).then_some(output.next_to_write),
                }
            })
            .collect()
    }

    /// The lag of each position, counted from the next offset to write.
    pub fn lags(&self, positions: &[PartitionPosition], read_committed: bool) -> Vec<Lag> {
        let written = self.partitions();
        let next_of: HashMap<(&str, i32), Option<i64>> = written
            .iter()
            .map(|p| ((&*p.topic, p.partition), p.next_to_write))
            .collect();
        positions
            .iter()
            .map(|position| {
                let next = next_of
                    .get(&(
                        &*position.topic_partition.topic,
                        position.topic_partition.partition,
                    ))
                    .copied()
                    .flatten();
                Lag {
                    topic: position.topic_partition.topic.clone(),
                    partition: position.topic_partition.partition,
                    lag: written_lag(position, next, read_committed),
                }
            })
            .collect()
    }
}

/// One partition's lag: records between what has been written out and the end it reads to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lag {
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition id.
    pub partition: i32,
    /// The lag (0 while the position or the end is unknown).
    pub lag: i64,
}

/// The lag of `position` when writing stands at `next_to_write` (none: at the fetch position).
fn written_lag(
    position: &PartitionPosition,
    next_to_write: Option<i64>,
    read_committed: bool,
) -> i64 {
    let mut written = position.clone();
    if next_to_write.is_some() {
        written.offset = next_to_write;
    }
    written.lag(read_committed)
}

/// The decode threads of `krec consume`, with each chunk marked handed out as it is queued.
#[derive(Debug)]
pub struct OutputWorkers<T: Partitioned = PartitionChunk> {
    workers: PartitionWorkers<T>,
    progress: Arc<Progress>,
    cells: Cells,
}

impl<T: Partitioned> OutputWorkers<T> {
    /// Wraps started workers that report to `progress`.
    pub fn new(workers: PartitionWorkers<T>, progress: Arc<Progress>) -> Self {
        Self {
            workers,
            progress,
            cells: Cells::default(),
        }
    }

    /// Queues a chunk on its partition's worker.
    pub fn submit(&mut self, chunk: T) -> Result<(), Error> {
        let (topic, partition) = (chunk.topic(), chunk.partition());
        self.progress
            .handed_out(&mut self.cells, topic, partition, chunk.fetch_offset());
        self.workers.submit(chunk)
    }

    /// Waits for a worker to fail (pending forever while all is well).
    pub async fn failure(&mut self) -> Error {
        self.workers.failure().await
    }

    /// Lets the workers drain their queues, waits for them, and returns the first error.
    pub fn finish(self) -> Result<(), Error> {
        self.workers.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn position(offset: Option<i64>, high_watermark: i64) -> PartitionPosition {
        PartitionPosition {
            topic_partition: krec_consumer::TopicPartition::new("t", 0),
            offset,
            high_watermark: Some(high_watermark),
            last_stable_offset: Some(high_watermark - 5),
        }
    }

    fn written(records: u64, next_offset: i64) -> ChunkOutput {
        ChunkOutput {
            records,
            scanned: records,
            bytes: 100,
            next_offset: Some(next_offset),
        }
    }

    fn lag(progress: &Progress, position: &PartitionPosition, read_committed: bool) -> i64 {
        progress.lags(std::slice::from_ref(position), read_committed)[0].lag
    }

    #[test]
    fn lag_counts_from_the_next_offset_to_write_not_to_fetch() {
        let progress = Progress::default();
        let (mut fetching, mut writing) = (Cells::default(), Cells::default());
        // Fetched up to 30 (the cursor), in chunks 0..10, 10..20, 20..30, none written yet.
        let fetched = position(Some(30), 50);
        for start in [0, 10, 20] {
            progress.handed_out(&mut fetching, "t", 0, start);
        }
        assert_eq!(lag(&progress, &fetched, false), 50);
        assert_eq!(
            lag(&progress, &fetched, true),
            45,
            "to the last stable offset"
        );
        progress.written(&mut writing, "t", 0, written(10, 10));
        assert_eq!(lag(&progress, &fetched, false), 40);
        progress.written(&mut writing, "t", 0, written(10, 20));
        progress.written(&mut writing, "t", 0, written(10, 30));
        // Nothing outstanding: writing stands where fetching does.
        assert_eq!(lag(&progress, &fetched, false), 20);
        assert_eq!(lag(&progress, &position(Some(42), 50), false), 8);
        assert_eq!(
            progress.partitions(),
            vec![PartitionWritten {
                topic: Arc::from("t"),
                partition: 0,
                records: 30,
                scanned: 30,
                next_to_write: None,
            }]
        );
        assert_eq!(progress.records.load(Ordering::Relaxed), 30);
        assert_eq!(progress.bytes.load(Ordering::Relaxed), 300);
    }

    #[test]
    fn partitions_are_counted_apart_and_unknown_positions_lag_nothing() {
        let progress = Progress::default();
        let mut cells = Cells::default();
        progress.handed_out(&mut cells, "t", 1, 100);
        progress.written(&mut cells, "t", 1, written(3, 103));
        progress.handed_out(&mut cells, "u", 1, 7);
        // A chunk cut short by `-c` before any of it was written: counted as done, no bytes.
        progress.written(
            &mut cells,
            "u",
            1,
            ChunkOutput {
                records: 0,
                scanned: 0,
                bytes: 100,
                next_offset: None,
            },
        );
        let records: Vec<(String, i32, u64)> = progress
            .partitions()
            .into_iter()
            .map(|p| (p.topic.to_string(), p.partition, p.records))
            .collect();
        assert_eq!(records, [("t".into(), 1, 3), ("u".into(), 1, 0)]);
        assert_eq!(progress.bytes.load(Ordering::Relaxed), 100);
        // Start offset not looked up yet: no made-up lag.
        assert_eq!(lag(&progress, &position(None, 50), false), 0);
    }
}
