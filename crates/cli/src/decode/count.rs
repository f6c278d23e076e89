//! Counting the data records of segment files from their batch headers (`krec count FILE...`),
//! read run by run like `krec decode` reads them.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

use krec_batch::{BatchSummary, BatchWalk, ControlKind, DecodeConfig};

use super::runs::{RunLimits, RunReader};
use super::{read_error, ContextFromPath};
use crate::format::RecordFilter;
use crate::Error;

/// Where the files are and how they are read.
#[derive(Debug)]
pub struct FileCount<'a> {
    /// The files, in order (several of one partition: oldest segment first).
    pub files: &'a [PathBuf],
    /// Topic for every file (default: from its `TOPIC-PARTITION` directory).
    pub topic: Option<&'a str>,
    /// Partition for every file (default: from its directory).
    pub partition: Option<i32>,
    /// Batch limits and the CRC check.
    pub config: &'a DecodeConfig,
    /// Input bytes read at a time.
    pub run_bytes: usize,
    /// Largest file accepted.
    pub max_file_bytes: u64,
    /// Leave out aborted transactions, and transactions the files never close.
    pub read_committed: bool,
    /// Count only the records it selects (each batch is then decoded).
    pub filter: Option<&'a RecordFilter>,
}

/// Data records per `(topic, partition)`, either unknown when no directory names it.
pub type Tallies = BTreeMap<(Option<String>, Option<i32>), u64>;

impl FileCount<'_> {
    /// Counts every file into its partition's tally.
    pub fn count(&self) -> Result<Tallies, Error> {
        let mut counters: BTreeMap<(Option<String>, Option<i32>), PartitionCounter> =
            BTreeMap::new();
        for path in self.files {
            let context = ContextFromPath::new(path, self.topic, self.partition);
            let counter = counters
                .entry((context.topic, context.partition))
                .or_insert_with(|| PartitionCounter::new(self.read_committed));
            self.count_file(path, counter)?;
        }
        Ok(counters
            .into_iter()
            .map(|(key, counter)| (key, counter.records))
            .collect())
    }

    fn count_file(&self, path: &Path, counter: &mut PartitionCounter) -> Result<(), Error> {
        let limits = RunLimits {
            run_bytes: self.run_bytes,
            max_entry_bytes: self.config.max_batch_bytes,
            max_input_bytes: self.max_file_bytes,
        };
        let mut runs = RunReader::new(self.open(path)?, limits);
        let mut buffer = Vec::new();
        loop {
            let run = runs
                .next_run(buffer)
                .map_err(|error| read_error(path, error, self.max_file_bytes))?;
            let Some(run) = run else {
                return Ok(());
            };
            let mut walk = BatchWalk::new(run.bytes(), self.config);
            loop {
                let at = run.start + walk.position();
                let summary = match self.filter {
                    None => walk.next_summary(),
                    // The counter reads no size: the walk has already moved past the batch.
                    Some(filter) => walk.next_ref().map(|batch| {
                        BatchSummary::counting(batch?, 0, |record| filter.matches(record))
                    }),
                };
                let Some(summary) = summary else { break };
                counter.add(&summary.map_err(|source| decode_error(path, at, source))?);
            }
            let at = run.start + walk.position();
            walk.end_of_file()
                .map_err(|source| decode_error(path, at, source))?;
            buffer = run.into_buffer();
        }
    }

    fn open(&self, path: &Path) -> Result<Box<dyn Read>, Error> {
        if path == Path::new("-") {
            return Ok(Box::new(std::io::stdin().lock()));
        }
        let io_error = |source| Error::Io {
            context: format!("reading {}", path.display()),
            source,
        };
        let file = std::fs::File::open(path).map_err(io_error)?;
        let size = file.metadata().map_err(io_error)?.len();
        if size > self.max_file_bytes {
            return Err(Error::InputTooLarge {
                file: path.display().to_string(),
                size,
                limit: self.max_file_bytes,
            });
        }
        Ok(Box::new(file))
    }
}

/// A batch error at `position` in the file, where the walk stood.
fn decode_error(path: &Path, position: usize, source: krec_batch::Error) -> Error {
    Error::DecodeInput {
        file: path.display().to_string(),
        position,
        offset: source.offset(),
        source,
    }
}

/// One partition's count, and under read_committed the records of transactions not yet
/// closed by a marker, by producer.
#[derive(Debug)]
struct PartitionCounter {
    records: u64,
    read_committed: bool,
    open: HashMap<i64, u64>,
}

impl PartitionCounter {
    fn new(read_committed: bool) -> Self {
        Self {
            records: 0,
            read_committed,
            open: HashMap::new(),
        }
    }

    fn add(&mut self, batch: &BatchSummary) {
        if batch.control {
            let held = self.open.remove(&batch.producer_id).unwrap_or(0);
            if batch.marker == Some(ControlKind::Commit) {
                self.records += held;
            }
            return;
        }
        if self.read_committed && batch.transactional {
            *self.open.entry(batch.producer_id).or_default() += u64::from(batch.data_records);
        } else {
            self.records += u64::from(batch.data_records);
        }
    }
}
