//! [`PartitionChunk::for_each_record`]: the chunk's data records lent one at a time to a
//! closure, the front door's shape of the fast path (each batch decoded in place into one
//! reused buffer, as [`ChunkBatches::try_for_each_ref`] does).

use std::ops::ControlFlow;

use krec_batch::Record;

use super::{ChunkBatches, PartitionChunk};
use crate::Error;

/// What a [`PartitionChunk::for_each_record`] closure returns: `()` to go on, a
/// [`ControlFlow`] to stop early ([`ControlFlow::Break`]), or either of them in a `Result` to
/// stop on the caller's own error (which must take krec's [`Error`] too: `From<Error>`).
pub trait RecordFlow {
    /// The error the walk stops with: krec's [`Error`], or the caller's.
    type Error: From<Error>;

    /// Whether the walk goes on after this record.
    fn flow(self) -> Result<ControlFlow<()>, Self::Error>;
}

impl RecordFlow for () {
    type Error = Error;

    #[inline(always)]
    fn flow(self) -> Result<ControlFlow<()>, Error> {
        Ok(ControlFlow::Continue(()))
    }
}

impl RecordFlow for ControlFlow<()> {
    type Error = Error;

    #[inline(always)]
    fn flow(self) -> Result<ControlFlow<()>, Error> {
        Ok(self)
    }
}

impl<E: From<Error>> RecordFlow for Result<(), E> {
    type Error = E;

    #[inline(always)]
    fn flow(self) -> Result<ControlFlow<()>, E> {
        self.map(|()| ControlFlow::Continue(()))
    }
}

impl<E: From<Error>> RecordFlow for Result<ControlFlow<()>, E> {
    type Error = E;

    #[inline(always)]
    fn flow(self) -> Result<ControlFlow<()>, E> {
        self
    }
}

impl PartitionChunk {
    /// Calls `each` with the data records the chunk delivers, in order, each lent for the
    /// call: those at or after its fetch offset (and before a share chunk's end), with control
    /// records and (under `read_committed`) aborted transactions left out. Stops at the first
    /// error, of decoding (with its topic, partition and offset) or of `each`, or when `each`
    /// returns [`ControlFlow::Break`]; see [`RecordFlow`] for what `each` may return.
    ///
    /// The fast way to read a chunk, and the simplest: each batch is decoded in place into one
    /// reused buffer, as [`ChunkBatches::try_for_each_ref`] does, so a record lives only for its
    /// call. [`PartitionChunk::records`] is the iterator for a loop that awaits between records
    /// or keeps them past the step; it keeps every decoded batch with the chunk, which costs
    /// CPU (BENCHMARKS.md, "Embedding").
    ///
    /// ```no_run
    /// # use std::ops::ControlFlow;
    /// # fn print(chunk: &krec_consumer::PartitionChunk) -> Result<(), krec_consumer::Error> {
    /// chunk.for_each_record(|record| {
    ///     println!("{} {:?}", record.offset(), record.value());
    /// })?;
    /// // Stopping early:
    /// chunk.for_each_record(|record| match record.value() {
    ///     Some(b"stop") => ControlFlow::Break(()),
    ///     _ => ControlFlow::Continue(()),
    /// })?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn for_each_record<R: RecordFlow>(
        &self,
        mut each: impl FnMut(&Record<'_>) -> R,
    ) -> Result<(), R::Error> {
        let mut batches: ChunkBatches<'_> = self.batches();
        batches.try_for_each_ref(|batch| {
            let mut records = batch.records_in_place();
            while let Some(record) = records.next_ref() {
                if each(record?).flow()?.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
            Ok(ControlFlow::Continue(()))
        })
    }
}
