//! Decode threads: chunks of one partition always go to the same thread, in order, so output
//! stays ordered per partition while partitions decode in parallel.

use std::collections::HashMap;
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use krec_consumer::PartitionChunk;
use tokio::sync::mpsc;

use crate::Error;

/// Work that belongs to one partition: a fetched chunk (or, in tests, a stand-in for one).
pub trait Partitioned: Send + 'static {
    /// The topic's name.
    fn topic(&self) -> &str;
    /// The partition's id.
    fn partition(&self) -> i32;
    /// The first offset it holds.
    fn fetch_offset(&self) -> i64;
}

impl Partitioned for PartitionChunk {
    fn topic(&self) -> &str {
        PartitionChunk::topic(self)
    }

    fn partition(&self) -> i32 {
        PartitionChunk::partition(self)
    }

    fn fetch_offset(&self) -> i64 {
        PartitionChunk::fetch_offset(self)
    }
}

/// Decode threads, each owning the partitions dealt to it. Memory held by queued chunks is
/// bounded by the consumer's buffer budget, which each chunk (a share group's too) keeps
/// reserved until a worker drops it.
#[derive(Debug)]
pub struct PartitionWorkers<T: Partitioned = PartitionChunk> {
    senders: Vec<std_mpsc::Sender<T>>,
    threads: Vec<JoinHandle<()>>,
    failures: mpsc::UnboundedReceiver<Error>,
    /// The worker of each partition seen so far. Partitions are dealt round-robin in the order
    /// they first arrive, so N partitions on N threads get one each; a hash of the partition can
    /// give one thread most of them and leave another idle (BENCHMARKS.md, end to end).
    worker_of: HashMap<Arc<str>, HashMap<i32, usize>>,
    /// Partitions dealt so far.
    dealt: usize,
}

/// One worker per available core: the default thread count of [`PartitionWorkers::start`].
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl<T: Partitioned> PartitionWorkers<T> {
    /// Starts `threads` workers (at least one); `make_worker(i)` builds the function thread `i`
    /// runs on each chunk. A worker's first error stops that worker and is reported by
    /// [`PartitionWorkers::failure`].
    pub fn start<F, W>(threads: usize, mut make_worker: F) -> Result<Self, Error>
    where
        F: FnMut(usize) -> W,
        W: FnMut(T) -> Result<(), Error> + Send + 'static,
    {
        let (report, failures) = mpsc::unbounded_channel();
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for index in 0..threads.max(1) {
            let (sender, receiver) = std_mpsc::channel::<T>();
            let mut worker = make_worker(index);
            let report = report.clone();
            let handle = std::thread::Builder::new()
                .name(format!("krec-decode-{index}"))
                .spawn(move || {
                    for chunk in receiver {
                        if let Err(error) = worker(chunk) {
                            let _ = report.send(error);
                            return;
                        }
                    }
                })
                .map_err(|source| Error::Io {
                    context: "starting a decode thread".to_owned(),
                    source,
                })?;
            senders.push(sender);
            handles.push(handle);
        }
        Ok(Self {
            senders,
            threads: handles,
            failures,
            worker_of: HashMap::new(),
            dealt: 0,
        })
    }

    /// Queues a chunk on its partition's worker. Fails with the consumer's `Stopped` when that
    /// worker has stopped (its error comes from [`PartitionWorkers::failure`]).
    pub fn submit(&mut self, chunk: T) -> Result<(), Error> {
        let index = self.worker_of(chunk.topic(), chunk.partition());
        self.senders[index]
            .send(chunk)
            .map_err(|_| krec_consumer::Error::Stopped.into())
    }

    /// The worker of a partition, dealt the next one if the partition is new. The topic's name
    /// is copied only the first time the topic arrives.
    fn worker_of(&mut self, topic: &str, partition: i32) -> usize {
        if let Some(&index) = self.worker_of.get(topic).and_then(|p| p.get(&partition)) {
            return index;
        }
        let index = self.dealt % self.senders.len();
        self.dealt += 1;
        match self.worker_of.get_mut(topic) {
            Some(partitions) => {
                partitions.insert(partition, index);
            }
            None => {
                let partitions = HashMap::from([(partition, index)]);
                self.worker_of.insert(Arc::from(topic), partitions);
            }
        }
        index
    }

    /// Waits for a worker to fail (pending forever while all is well).
    pub async fn failure(&mut self) -> Error {
        match self.failures.recv().await {
            Some(error) => error,
            None => std::future::pending().await,
        }
    }

    /// Lets the workers drain their queues, waits for them, and returns the first error.
    pub fn finish(mut self) -> Result<(), Error> {
        self.senders.clear();
        for thread in self.threads.drain(..) {
            if thread.join().is_err() {
                return Err(krec_consumer::Error::Stopped.into());
            }
        }
        match self.failures.try_recv() {
            Ok(error) => Err(error),
            Err(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A chunk as the workers see it: its partition, and an offset to tell chunks apart.
    #[derive(Debug)]
    struct Chunk {
        topic: Arc<str>,
        partition: i32,
        offset: i64,
    }

    impl Partitioned for Chunk {
        fn topic(&self) -> &str {
            &self.topic
        }

        fn partition(&self) -> i32 {
            self.partition
        }

        fn fetch_offset(&self) -> i64 {
            self.offset
        }
    }

    fn chunk(partition: i32, offset: i64) -> Chunk {
        Chunk {
            topic: Arc::from("t"),
            partition,
            offset,
        }
    }

    fn stopped() -> Error {
        krec_consumer::Error::Stopped.into()
    }

    #[tokio::test]
    async fn chunks_of_a_partition_stay_in_order() {
        let seen: Arc<Mutex<Vec<(i32, i64)>>> = Arc::default();
        let mut pool = PartitionWorkers::start(3, |_| {
            let seen = seen.clone();
            move |chunk: Chunk| {
                seen.lock().unwrap().push((chunk.partition, chunk.offset));
                Ok(())
            }
        })
        .unwrap();
        for offset in 0..200 {
            for partition in 0..5 {
                pool.submit(chunk(partition, offset)).unwrap();
            }
        }
        pool.finish().unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1000);
        for partition in 0..5 {
            let offsets: Vec<i64> = seen
                .iter()
                .filter(|(p, _)| *p == partition)
                .map(|(_, o)| *o)
                .collect();
            assert_eq!(
                offsets,
                (0..200).collect::<Vec<_>>(),
                "partition {partition}"
            );
        }
    }

    #[tokio::test]
    async fn a_worker_error_is_reported() {
        let mut pool = PartitionWorkers::start(2, |_| {
            |chunk: Chunk| {
                if chunk.offset == 3 {
                    Err(stopped())
                } else {
                    Ok(())
                }
            }
        })
        .unwrap();
        for offset in 0..5 {
            let _ = pool.submit(chunk(0, offset));
        }
        assert!(matches!(
            pool.failure().await,
            Error::Consumer(krec_consumer::Error::Stopped)
        ));
    }

    #[tokio::test]
    async fn partitions_are_dealt_evenly_over_the_workers() {
        let seen: Arc<Mutex<Vec<(usize, i32)>>> = Arc::default();
        let mut pool = PartitionWorkers::start(2, |worker| {
            let seen = seen.clone();
            move |chunk: Chunk| {
                seen.lock().unwrap().push((worker, chunk.partition));
                Ok(())
            }
        })
        .unwrap();
        for offset in 0..3 {
            for partition in [7, 3, 12, 0] {
                pool.submit(chunk(partition, offset)).unwrap();
            }
        }
        pool.finish().unwrap();
        let seen = seen.lock().unwrap();
        let mut per_worker = [std::collections::BTreeSet::new(), Default::default()];
        for (worker, partition) in seen.iter() {
            per_worker[*worker].insert(*partition);
        }
        // Each partition stays on one worker, dealt in the order partitions first arrived.
        assert_eq!(per_worker[0], [7, 12].into());
        assert_eq!(per_worker[1], [3, 0].into());
    }
}
