//! [`PartitionChunk::records`]: the chunk decodes its batches once and keeps them beside a
//! copy of itself (its bytes shared), so the records the iterator hands out borrow the chunk.

use std::sync::{Mutex, OnceLock};

use krec_batch::{Batch, Record, Records};

use super::PartitionChunk;
use crate::Error;

/// What one walk of a chunk delivers, and the error that ended it, if one did: handed out
/// by the first iteration that reaches it, described again to any later one.
struct Delivered<'a> {
    batches: Vec<Batch<'a>>,
    error: Mutex<Option<Error>>,
    error_text: Option<String>,
}

self_cell::self_cell!(
    /// A chunk's delivered batches, kept with a copy of the chunk (its bytes shared, not
    /// copied) that they borrow.
    pub(super) struct DecodedBatches {
        owner: PartitionChunk,
        #[covariant]
        dependent: Delivered,
    }
);

impl std::fmt::Debug for DecodedBatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let delivered = self.borrow_dependent();
        f.debug_struct("DecodedBatches")
            .field("batches", &delivered.batches.len())
            .field("error", &delivered.error)
            .finish()
    }
}

impl PartitionChunk {
    /// ```
    pub fn records(&self) -> ChunkRecordIter<'_> {
        let decoded = self.decoded.get_or_init(|| self.decode_all());
        ChunkRecordIter {
            chunk: self,
            delivered: decoded.borrow_dependent(),
            next_batch: 0,
            current: None,
            done: false,
        }
    }

    fn decode_all(&self) -> DecodedBatches {
        DecodedBatches::new(self.detached(), |chunk| {
            let mut delivered = Delivered {
                batches: Vec::new(),
                error: Mutex::new(None),
                error_text: None,
            };
            for batch in chunk.batches() {
                match batch {
                    Ok(batch) => delivered.batches.push(batch.batch),
                    Err(error) => {
                        delivered.error_text = Some(error.to_string());
                        delivered.error = Mutex::new(Some(error));
                    }
                }
            }
            delivered
        })
    }

    /// The same chunk without its hold on the buffer budget and the response slot (the
    /// original keeps those), for [`DecodedBatches`] to own.
    fn detached(&self) -> PartitionChunk {
        PartitionChunk {
            topic: self.topic.clone(),
            partition: self.partition,
            generation: self.generation,
            data: self.data.clone(),
            read_committed: self.read_committed,
            _budget: None,
            _response: None,
            metrics: None,
            decode: self.decode.clone(),
            decoded: OnceLock::new(),
        }
    }
}

/// The data records of a chunk, in order (see [`PartitionChunk::records`]).
pub struct ChunkRecordIter<'c> {
    chunk: &'c PartitionChunk,
    delivered: &'c Delivered<'c>,
    next_batch: usize,
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
                    Some(Err(source)) => {
                        self.done = true;
                        return Some(Err(self.chunk.decode_error(source)));
                    }
                    None => self.current = None,
                }
            }
            match self.delivered.batches.get(self.next_batch) {
                Some(batch) => {
                    self.next_batch += 1;
                    self.current = Some(batch.records().from_offset(self.chunk.data.fetch_offset));
                }
                None => {
                    self.done = true;
                    return self.ending_error().map(Err);
                }
            }
        }
        None
    }
}

impl ChunkRecordIter<'_> {
    /// The error that ended the chunk's walk: itself the first time, described again later.
    fn ending_error(&self) -> Option<Error> {
        let text = self.delivered.error_text.as_ref()?;
        let mut first = self
            .delivered
            .error
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        Some(first.take().unwrap_or_else(|| Error::InvalidArgument {
            what: "chunk",
            detail: format!(
                "{}/{}: its records were read before and ended in: {text}",
                self.chunk.topic, self.chunk.partition
            ),
        }))
    }
}
