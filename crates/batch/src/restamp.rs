//! The shallow copy's seam: a fetched v2 batch gets a new base offset and new producer fields
//! (id, epoch, base sequence, the transactional bit) while its records' bytes stay as they
//! came, as Kafka's broker rewrites header fields of a batch it treats as opaque bytes.
//!
//! The CRC32C covers the producer fields and the records, so it changes; it is updated from
//! the header bytes that changed alone (the CRC is linear, see [`crc32c_change`]), never
//! recomputed over the records. So the records are not read, and a batch that arrived
//! corrupt stays detectably corrupt: a fresh CRC over its bytes would hide the damage.

use crate::crc::crc32c_change;
use crate::layout::{magic, v2, EntryHeader, BASE_OFFSET_AT, MAGIC_AT};
use crate::producer_fields::{put, ProducerFields};
use crate::Error;

/// Bytes the CRC covers in the header: from the attributes to the end of the header.
const COVERED: usize = v2::HEADER_SIZE - v2::ATTRIBUTES_AT;

/// Re-stamps the v2 batch `batch` (exactly one whole batch) in place: base offset,
/// producer fields and CRC32C; the records section is neither written nor read. The other
/// header fields stay as they came (attributes but the transactional bit, timestamps, the
/// partition leader epoch, which the broker overwrites). Control batches are the broker's to
/// write: a copy leaves them out rather than re-stamping them.
///
/// ```
/// use krec_batch::encode::BatchBuilder;
/// use krec_batch::{restamp, BatchWalk, DecodeConfig, ProducerFields};
///
/// let mut batch = BatchBuilder::new(0).record(Some(b"k"), Some(b"v"), &[]).build();
/// let records = batch[61..].to_vec();
/// restamp(&mut batch, 500, ProducerFields::idempotent(7, 1, 42))?;
/// assert_eq!(&batch[61..], &records[..]);
/// let config = DecodeConfig::default(); // checks the CRC
/// let read = BatchWalk::new(&batch, &config).next().unwrap()?;
/// assert_eq!(read.records().next().unwrap()?.offset(), 500);
/// # Ok::<(), krec_batch::Error>(())
/// ```
pub fn restamp(batch: &mut [u8], base_offset: i64, producer: ProducerFields) -> Result<(), Error> {
    let header = restamped_header(batch, base_offset, producer)?;
    batch[..v2::HEADER_SIZE].copy_from_slice(&header);
    Ok(())
}

/// The re-stamped header of the v2 batch `batch` (exactly one whole batch), left unchanged:
/// for a vectored write of the new header followed by `batch[HEADER_SIZE..]` as it came.
/// Only the header is read.
pub fn restamped_header(
    batch: &[u8],
    base_offset: i64,
    producer: ProducerFields,
) -> Result<[u8; v2::HEADER_SIZE], Error> {
    let old = whole_v2_header(batch)?;
    let mut new = old;
    put(&mut new, BASE_OFFSET_AT, &base_offset.to_be_bytes());
    producer.stamp(&mut new);
    let covered = |header: &[u8; v2::HEADER_SIZE]| {
        let mut part = [0u8; COVERED];
        part.copy_from_slice(&header[v2::ATTRIBUTES_AT..]);
        part
    };
    let at = v2::CRC_AT;
    let old_crc = u32::from_be_bytes([old[at], old[at + 1], old[at + 2], old[at + 3]]);
    let records_len = batch.len() - v2::HEADER_SIZE;
    let crc = old_crc ^ crc32c_change(&covered(&old), &covered(&new), records_len);
    put(&mut new, at, &crc.to_be_bytes());
    Ok(new)
}

/// The header of `batch`, once it is known to be one whole v2 batch.
fn whole_v2_header(batch: &[u8]) -> Result<[u8; v2::HEADER_SIZE], Error> {
    let offset = EntryHeader::peek_base_offset(batch);
    let Some(entry) = EntryHeader::peek(batch) else {
        return Err(Error::Truncated {
            position: 0,
            offset,
            available: batch.len(),
            needed: None,
        });
    };
    let base_offset = entry.base_offset;
    if let Some(&found) = batch.get(MAGIC_AT) {
        if found != magic::V2 {
            return Err(Error::UnsupportedMagic {
                position: 0,
                offset: base_offset,
                magic: found as i8,
            });
        }
    }
    let size = entry.size().filter(|&size| size >= v2::HEADER_SIZE);
    let Some(size) = size else {
        return Err(Error::BatchTooSmall {
            position: 0,
            offset: base_offset,
            length: entry.length,
            minimum: v2::MIN_LENGTH,
        });
    };
    if batch.len() < size {
        return Err(Error::Truncated {
            position: 0,
            offset,
            available: batch.len(),
            needed: Some(size),
        });
    }
    if batch.len() > size {
        return Err(Error::InvalidBatchField {
            position: 0,
            offset: base_offset,
            field: "length (bytes follow the batch)",
            value: i64::from(entry.length),
        });
    }
    let mut header = [0u8; v2::HEADER_SIZE];
    header.copy_from_slice(&batch[..v2::HEADER_SIZE]);
    Ok(header)
}
