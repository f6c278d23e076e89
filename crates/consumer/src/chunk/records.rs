//! [`PartitionChunk::records`]: the chunk's data records as a plain iterator. Each delivered
//! batch is decoded when the iteration reaches it, from its own bytes (a slice of the chunk's,
//! not a copy), and kept with the chunk, so the records handed out borrow the chunk, not the
//! iterator, while each batch is read right after it is decompressed.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use krec_batch::{Batch, BatchWalk, DecodeConfig, Record, Records};

use super::{ChunkBatches, PartitionChunk};
use crate::Error;

/// A batch's bytes and the limits to decode them with: what a [`KeptBatch`] borrows.
struct BatchBytes {
    bytes: Bytes,
    config: Arc<DecodeConfig>,
}

self_cell::self_cell!(
    /// One batch decoded from its own bytes, kept with them.
    struct KeptBatch {
        owner: BatchBytes,
        #[covariant]
        dependent: Batch,
    }
);

/// The batches [`PartitionChunk::records`] decoded, in delivery order. Append-only: a batch,
/// once kept, stays at its place (boxed) until the chunk is dropped.
#[derive(Default)]
pub(super) struct KeptBatches {
    batches: elsa::sync::FrozenVec<Box<KeptBatch>>,
    /// Held while a batch is decoded and pushed, so two iterations keep one copy of each.
    pushing: Mutex<()>,
}

impl std::fmt::Debug for KeptBatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptBatches")
            .field("batches", &self.batches.len())
            .finish()
    }
}

impl PartitionChunk {
    /// The data records the chunk delivers, in order: those at or after its fetch offset, with
    /// control records and (under `read_committed`) aborted transactions left out; an error
    /// ends the iteration. Each batch is decoded once, when an iteration first reaches it,
    /// and kept with the chunk (so a record may outlive the iterator, not the chunk).
    ///
    /// For a loop that awaits between records, keeps them past the step or wants an
    /// [`Iterator`]; otherwise [`PartitionChunk::for_each_record`] is faster: it decodes every
    /// batch into one reused buffer, where this keeps one buffer per batch until the chunk is
    /// dropped (BENCHMARKS.md, "Embedding").
    ///
    /// ```no_run
    /// # fn print(chunk: &krec_consumer::PartitionChunk) -> Result<(), krec_consumer::Error> {
    /// for record in chunk.records() {
    ///     let record = record?;
    ///     println!("{} {:?}", record.offset(), record.value());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn records(&self) -> ChunkRecordIter<'_> {
        // The walk below checks each batch's CRC already; the batch decoded again need not.
        let config = DecodeConfig {
            verify_crc: false,
            ..self.decode_config().clone()
        };
        ChunkRecordIter {
            chunk: self,
            summaries: self.batches(),
            config: Arc::new(config),
            delivered: 0,
            current: None,
            done: false,
        }
    }

    /// The `index`th delivered batch: kept already, or decoded from `bytes` and kept now. A
    /// batch that does not decode is not kept: every iteration that reaches it fails there.
    fn kept_batch(
        &self,
        index: usize,
        bytes: Bytes,
        config: &Arc<DecodeConfig>,
    ) -> Result<&Batch<'_>, Error> {
        let _pushing = self.kept.pushing.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(kept) = self.kept.batches.get(index) {
            return Ok(kept.borrow_dependent());
        }
        let owner = BatchBytes {
            bytes,
            config: config.clone(),
        };
        let kept = KeptBatch::try_new(owner, |owner| {
            // The summary walk found this batch whole, so the walk yields it; if not, say so.
            let mut walk = BatchWalk::new_shared(&owner.bytes, &owner.config);
            walk.next().unwrap_or(Err(krec_batch::Error::Truncated {
                position: 0,
                offset: None,
                available: owner.bytes.len(),
                needed: None,
            }))
        })
        .map_err(|source| self.decode_error(source))?;
        Ok(self
            .kept
            .batches
            .push_get(Box::new(kept))
            .borrow_dependent())
    }
}

/// The data records of a chunk, in order (see [`PartitionChunk::records`]).
pub struct ChunkRecordIter<'c> {
    chunk: &'c PartitionChunk,
    /// Where the delivered batches are, their records left compressed.
    summaries: ChunkBatches<'c>,
    config: Arc<DecodeConfig>,
    /// Delivered batches reached so far.
    delivered: usize,
    current: Option<Records<'c>>,
    done: bool,
}

impl<'c> Iterator for ChunkRecordIter<'c> {
    type Item = Result<Record<'c>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            if let Some(records) = self.current.as_mut() {
                match records.next() {
                    Some(Ok(record)) => return Some(Ok(record)),
                    Some(Err(source)) => return self.fail(self.chunk.decode_error(source)),
                    None => self.current = None,
                }
            }
            let summary = match self.summaries.next_data_summary()? {
                Ok(summary) => summary,
                Err(error) => return self.fail(error),
            };
            let range = summary.position..summary.position + summary.size;
            let bytes = self.chunk.data.records.slice(range);
            match self.chunk.kept_batch(self.delivered, bytes, &self.config) {
                Ok(batch) => {
                    self.delivered += 1;
                    self.current = Some(
                        batch
                            .records()
                            .from_offset(self.chunk.data.fetch_offset)
                            .until_offset(self.chunk.until),
                    );
                }
                Err(error) => return self.fail(error),
            }
        }
        None
    }
}

impl ChunkRecordIter<'_> {
    fn fail(&mut self, error: Error) -> Option<Result<Record<'static>, Error>> {
        self.done = true;
        Some(Err(error))
    }
}
