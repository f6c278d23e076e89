//! Each source batch goes to the sink as it is when the target broker takes it so, and is
//! written again record by record only when it would not: decided before sending, never by
//! trial, since one refusal inside a transactional stream dooms the transaction.

use bytes::Bytes;
use krec_batch::{layout, reencode, CopyShape, DecodeConfig, ReencodedBatch};

use crate::ends::{SourceBatch, SourceRun};
use crate::stats::Carried;
use crate::Error;

/// A batch ready for the sink: its bytes and its record count.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) bytes: Bytes,
    pub(crate) records: u32,
}

/// Turns a run's batches into what the sink writes, in order; counts re-encoded and skipped
/// batches in `carried`. `max_batch_bytes` is the target topic's `max.message.bytes`; a sink
/// that takes batches as stored gets each one as it came (see [`as_stored`]).
pub(crate) fn outgoing(
    run: &SourceRun,
    max_batch_bytes: usize,
    as_stored: bool,
    decode: &DecodeConfig,
    carried: &mut Carried,
) -> Result<Vec<Outgoing>, Error> {
    if as_stored {
        return Ok(self::as_stored(run));
    }
    let mut out = Vec::with_capacity(run.batches.len());
    for batch in &run.batches {
        match batch.summary.copy_shape(run.from_offset) {
            CopyShape::Forward if batch.bytes.len() <= max_batch_bytes => out.push(Outgoing {
                bytes: batch.bytes.clone(),
                records: batch.summary.data_records,
            }),
            CopyShape::Skip => carried.skipped += 1,
            _ => {
                carried.reencoded += 1;
                rewrite(run, batch, max_batch_bytes, decode, &mut out)?;
            }
        }
    }
    Ok(out)
}

/// Every batch of the run as it came, emptied ones included; only a batch that ends before
/// the run's offset is left out, since it was copied already.
fn as_stored(run: &SourceRun) -> Vec<Outgoing> {
    (run.batches.iter())
        .filter(|batch| batch.summary.last_offset >= run.from_offset)
        .map(|batch| Outgoing {
            bytes: batch.bytes.clone(),
            records: batch.summary.data_records,
        })
        .collect()
}

/// Writes `batch`'s records from the run's offset as new batches of at most
/// `max_batch_bytes`.
fn rewrite(
    run: &SourceRun,
    batch: &SourceBatch,
    max_batch_bytes: usize,
    decode: &DecodeConfig,
    out: &mut Vec<Outgoing>,
) -> Result<(), Error> {
    let rewritten = reencode(
        &batch.bytes,
        run.from_offset,
        max_batch_bytes,
        decode,
        |written: ReencodedBatch| {
            let mut batch = written.batch;
            // The sink reads where a piece starts at the source from its header (group
            // offsets); the producer stamps the target's base offset over it.
            let base_offset = layout::BASE_OFFSET_AT..layout::BASE_OFFSET_AT + 8;
            batch[base_offset].copy_from_slice(&written.first_offset.to_be_bytes());
            out.push(Outgoing {
                bytes: Bytes::from_owner(batch),
                records: written.record_count,
            });
            Ok::<(), krec_batch::Error>(())
        },
    );
    rewritten.map_err(|source| Error::Batch {
        partition: run.partition.clone(),
        offset: batch.summary.base_offset,
        source: Box::new(source),
    })
}
