//! What `Producer::send_batch` checks before a copied batch takes its sequences: that it is one
//! whole, sound RecordBatch v2 the broker takes from a producer as it is. A batch refused
//! after it took its sequences would break its partition's sequence (and doom a transaction),
//! so every refusal the broker would give for the batch itself is given here, up front.
//!
//! The header and the CRC32C are read through krec-batch (a summary: the records stay
//! compressed and are never parsed); the attributes and base timestamp at their named places.

use krec_batch::layout::{magic, v2, EntryHeader};
use krec_batch::{BatchWalk, DecodeConfig};

use crate::error::BatchRefusal;
use crate::{Error, ProducerConfig};

/// A batch `send_batch` may send: where it goes and what the accumulator needs of it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CheckedBatch<'a> {
    pub(crate) topic: &'a str,
    pub(crate) partition: i32,
    pub(crate) bytes: &'a [u8],
    /// The header's record count.
    pub(crate) records: i32,
    /// The header's base timestamp, or its max one behind a delete horizon (what
    /// `Delivered::timestamp` answers).
    pub(crate) timestamp: i64,
}

/// `batch` as `send_batch` may send it to `partition` of `topic`, or the refusal naming them.
pub(crate) fn check<'a>(
    topic: &'a str,
    partition: i32,
    batch: &'a [u8],
    config: &ProducerConfig,
) -> Result<CheckedBatch<'a>, Error> {
    match inspect(batch, config) {
        Ok((records, timestamp)) => Ok(CheckedBatch {
            topic,
            partition,
            bytes: batch,
            records,
            timestamp,
        }),
        Err(reason) => Err(Error::BatchRefused {
            topic: topic.to_owned(),
            partition,
            reason,
        }),
    }
}

/// The batch's record count and timestamp, or why it cannot go as it is.
fn inspect(batch: &[u8], config: &ProducerConfig) -> Result<(i32, i64), BatchRefusal> {
    let size = batch.len() as u64;
    let limits = [
        ("max.request.size", config.write.max_record_size as u64),
        ("buffer.memory", config.buffer_memory),
    ];
    if let Some(&(key, limit)) = limits.iter().find(|(_, limit)| size > *limit) {
        return Err(BatchRefusal::TooLarge { size, key, limit });
    }
    if let Some(found @ (magic::V0 | magic::V1)) = EntryHeader::peek_magic(batch) {
        return Err(BatchRefusal::Legacy { magic: found });
    }
    whole(batch)?;
    let decode = DecodeConfig {
        verify_crc: true,
        max_batch_bytes: batch.len(),
        ..DecodeConfig::default()
    };
    let summary = match BatchWalk::new(batch, &decode).next_summary() {
        Some(Ok(summary)) => summary,
        Some(Err(error)) => return Err(malformed(error.to_string())),
        None => return Err(malformed("no whole batch".to_owned())),
    };
    // A whole v2 batch (the walk checked its length and magic): its header is all there.
    let header = batch
        .first_chunk::<{ v2::HEADER_SIZE }>()
        .ok_or_else(|| malformed("no whole batch header".to_owned()))?;
    if summary.control {
        return Err(BatchRefusal::Control);
    }
    let records = summary.data_records;
    let last_offset_delta = (summary.last_offset - summary.base_offset) as i32;
    if records == 0 {
        return Err(BatchRefusal::Empty);
    }
    if i64::from(records) != i64::from(last_offset_delta) + 1 {
        return Err(BatchRefusal::OffsetGaps {
            records,
            last_offset_delta,
        });
    }
    let attributes = i16::from_be_bytes(field(header, v2::ATTRIBUTES_AT));
    if attributes & v2::attributes::LOG_APPEND_TIME != 0 {
        return Err(BatchRefusal::LogAppendTime);
    }
    // The base timestamp is the first record's, unless the log cleaner put its delete
    // horizon there.
    let timestamp_at = if attributes & v2::attributes::DELETE_HORIZON != 0 {
        v2::MAX_TIMESTAMP_AT
    } else {
        v2::BASE_TIMESTAMP_AT
    };
    let timestamp = i64::from_be_bytes(field(header, timestamp_at));
    // The walk refuses counts past `max_records_per_batch`, far below i32::MAX.
    Ok((records as i32, timestamp))
}

fn malformed(detail: String) -> BatchRefusal {
    BatchRefusal::Malformed { detail }
}

/// Whether the batch's length field says it is all of `batch`.
fn whole(batch: &[u8]) -> Result<(), BatchRefusal> {
    let Some(entry) = EntryHeader::peek(batch) else {
        let detail = format!("{} bytes do not hold a batch header", batch.len());
        return Err(malformed(detail));
    };
    let detail = match entry.size() {
        Some(size) if size == batch.len() => return Ok(()),
        Some(size) if size < batch.len() => {
            format!("{} bytes follow the batch", batch.len() - size)
        }
        Some(size) => format!("{} of its {size} bytes are there", batch.len()),
        None => format!("its length field is negative ({})", entry.length),
    };
    Err(malformed(detail))
}

/// The `N` bytes of the header field at `at`.
fn field<const N: usize>(header: &[u8; v2::HEADER_SIZE], at: usize) -> [u8; N] {
    let mut bytes = [0u8; N];
    bytes.copy_from_slice(&header[at..at + N]);
    bytes
}

#[cfg(test)]
mod tests;
