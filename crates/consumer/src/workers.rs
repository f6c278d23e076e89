//! Decode threads: chunks of one partition always go to the same thread, in order, so output
//! stays ordered per partition while partitions decode in parallel.

use std::collections::HashMap;
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use super::chunk::PartitionChunk;
use crate::Error;

/// Decode threads, each owning the partitions dealt to it. Memory held by queued chunks is
/// bounded by the consumer's buffer budget, which each chunk keeps reserved until a worker
/// drops it. A worker fails with `E`, the embedding program's error (the consumer's by default).
#[derive(Debug)]
pub struct PartitionWorkers<E = Error> {
    senders: Vec<std_mpsc::Sender<PartitionChunk>>,
    threads: Vec<JoinHandle<()>>,
    failures: mpsc::UnboundedReceiver<E>,
    /// The worker of each partition seen so far. Partitions are dealt round-robin in the order
    /// they first arrive, so N partitions on N threads get one each; a hash of the partition can
    /// give one thread most of them and leave another idle (BENCHMARKS.md, end to end).
    worker_of: HashMap<(Arc<str>, i32), usize>,
}

/// One worker per available core: the default thread count of [`PartitionWorkers::start`].
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl<E: From<Error> + Send + 'static> PartitionWorkers<E> {
    /// Starts `threads` workers (at least one); `make_worker(i)` builds the function thread `i`
    /// runs on each chunk. A worker's first error stops that worker and is reported by
    /// [`PartitionWorkers::failure`].
    pub fn start<F, W>(threads: usize, mut make_worker: F) -> Result<Self, E>
    where
        F: FnMut(usize) -> W,
        W: FnMut(PartitionChunk) -> Result<(), E> + Send + 'static,
    {
        let (report, failures) = mpsc::unbounded_channel();
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for index in 0..threads.max(1) {
            let (sender, receiver) = std_mpsc::channel::<PartitionChunk>();
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
                .map_err(|source| {
                    E::from(Error::Io {
                        context: "starting a decode thread".to_owned(),
                        source,
                    })
                })?;
            senders.push(sender);
            handles.push(handle);
        }
        Ok(Self {
            senders,
            threads: handles,
            failures,
            worker_of: HashMap::new(),
        })
    }

    /// Queues a chunk on its partition's worker. Fails with [`Error::Stopped`] when that worker
    /// has stopped (its error comes from [`PartitionWorkers::failure`]).
    pub fn submit(&mut self, chunk: PartitionChunk) -> Result<(), E> {
        let next = self.worker_of.len() % self.senders.len();
        let index = *self
            .worker_of
            .entry((chunk.topic_arc().clone(), chunk.partition()))
            .or_insert(next);
        self.senders[index]
            .send(chunk)
            .map_err(|_| E::from(Error::Stopped))
    }

    /// Waits for a worker to fail (pending forever while all is well).
    pub async fn failure(&mut self) -> E {
        match self.failures.recv().await {
            Some(error) => error,
            None => std::future::pending().await,
        }
    }

    /// Lets the workers drain their queues, waits for them, and returns the first error.
    pub fn finish(mut self) -> Result<(), E> {
        self.senders.clear();
        for thread in self.threads.drain(..) {
            if thread.join().is_err() {
                return Err(Error::Stopped.into());
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
    use crate::cursor::ChunkData;
    use bytes::Bytes;
    use std::sync::{Arc, Mutex};

    fn chunk(partition: i32, offset: i64) -> PartitionChunk {
        let data = ChunkData {
            fetch_offset: offset,
            next_offset: offset + 1,
            high_watermark: 0,
            last_stable_offset: 0,
            aborted: Vec::new(),
            records: Bytes::new(),
        };
        PartitionChunk::new(Arc::from("t"), partition, 0, data, false, None)
    }

    #[tokio::test]
    async fn chunks_of_a_partition_stay_in_order() {
        let seen: Arc<Mutex<Vec<(i32, i64)>>> = Arc::default();
        let mut pool = PartitionWorkers::<Error>::start(3, |_| {
            let seen = seen.clone();
            move |chunk: PartitionChunk| {
                seen.lock()
                    .unwrap()
                    .push((chunk.partition(), chunk.fetch_offset()));
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
        let mut pool = PartitionWorkers::<Error>::start(2, |_| {
            |chunk: PartitionChunk| {
                if chunk.fetch_offset() == 3 {
                    Err(Error::Stopped)
                } else {
                    Ok(())
                }
            }
        })
        .unwrap();
        for offset in 0..5 {
            let _ = pool.submit(chunk(0, offset));
        }
        assert!(matches!(pool.failure().await, Error::Stopped));
    }

    #[tokio::test]
    async fn partitions_are_dealt_evenly_over_the_workers() {
        let seen: Arc<Mutex<Vec<(usize, i32)>>> = Arc::default();
        let mut pool = PartitionWorkers::<Error>::start(2, |worker| {
            let seen = seen.clone();
            move |chunk: PartitionChunk| {
                seen.lock().unwrap().push((worker, chunk.partition()));
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
