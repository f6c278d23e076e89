//! MESSAGE_TOO_LARGE, as the Java producer's splitAndReenqueue: a refused batch of several
//! records is cut into parts that take its place in the partition's queue. Each part keeps the
//! batch's producer id and epoch and its records' own sequences, so the batches after it stay
//! in step. A part holds at most half the batch's records and bytes: a part refused again is
//! split again, until it fits or holds one record.

use bytes::Bytes;
use krec_batch::{Append, BatchWalk, BatchWriter, DecodeConfig, ProducerFields, WriteConfig};

use super::super::{ClosedBatch, Limits};
use crate::identity::increment_sequence;

/// The parts of `batch` (of two records or more), in order; an error when its own bytes do
/// not decode or a part cannot be written.
pub(super) fn split_batch(
    batch: &ClosedBatch,
    limits: &Limits,
) -> Result<Vec<ClosedBatch>, krec_batch::Error> {
    let decode = DecodeConfig::default();
    let mut walk = BatchWalk::new(&batch.bytes, &decode);
    let whole = walk.next().ok_or(krec_batch::Error::Truncated {
        position: 0,
        offset: None,
        available: batch.bytes.len(),
        needed: None,
    })??;
    let producer = (
        whole.producer_id(),
        whole.producer_epoch(),
        whole.base_sequence(),
    );
    let max_records = (batch.records.max(2) as usize).div_ceil(2);
    let write = WriteConfig {
        batch_size: (batch.bytes.len() / 2).max(1),
        ..limits.write.clone()
    };
    let mut writer = BatchWriter::new(write);
    // (first offset delta, bytes, records) of each part.
    let mut parts: Vec<(i32, Bytes, i32)> = Vec::new();
    let mut first_delta = 0i32;
    for (delta, record) in (0i32..).zip(whole.records()) {
        let record = record?;
        let headers: Vec<(&[u8], Option<&[u8]>)> = (record.headers().iter())
            .map(|h| (h.key, h.value))
            .collect();
        if writer.record_count() >= max_records {
            parts.push(finish(&mut writer, producer, first_delta, limits)?);
            first_delta = delta;
        }
        loop {
            let appended =
                writer.try_append(record.timestamp(), record.key(), record.value(), &headers)?;
            if let Append::Appended { .. } = appended {
                break;
            }
            parts.push(finish(&mut writer, producer, first_delta, limits)?);
            first_delta = delta;
        }
    }
    if !writer.is_empty() {
        parts.push(finish(&mut writer, producer, first_delta, limits)?);
    }
    let deltas: Vec<i32> = parts.iter().map(|(delta, _, _)| *delta).collect();
    let completions = batch.completion.split(&deltas);
    let mut held_left = batch.held;
    let count = parts.len();
    let parts = (parts.into_iter().zip(completions).enumerate())
        .map(|(at, ((_, bytes, records), completion))| {
            // The batch's share of buffer.memory goes with its parts, by records.
            let held = if at + 1 == count {
                held_left
            } else {
                batch.held * records.max(0) as u64 / batch.records.max(1) as u64
            };
            held_left -= held.min(held_left);
            ClosedBatch {
                bytes,
                completion,
                created: batch.created,
                held,
                records,
                retries: batch.retries,
                last_error: batch.last_error.clone(),
                copied: false,
            }
        })
        .collect();
    Ok(parts)
}

/// The writer's records as one part: the batch's producer id and epoch, the sequence of its
/// first record.
fn finish(
    writer: &mut BatchWriter,
    (producer_id, producer_epoch, base_sequence): (i64, i16, i32),
    first_delta: i32,
    limits: &Limits,
) -> Result<(i32, Bytes, i32), krec_batch::Error> {
    let records = writer.record_count() as i32;
    let fields = if producer_id < 0 {
        ProducerFields::NONE
    } else {
        let sequence = increment_sequence(base_sequence, first_delta);
        ProducerFields::idempotent(producer_id, producer_epoch, sequence)
    };
    let bytes = Bytes::from_owner(writer.finish_owned(fields, limits.codec)?);
    Ok((first_delta, bytes, records))
}
