//! Legacy message sets, magic 0 and 1: per-message CRC32, compressed wrapper messages
//! holding an inner message set, v1 relative inner offsets and timestamps. Parsing yields
//! plain data ([`LegacyBatch`], [`LegacyRecord`]) that the batch and record views are filled
//! from.

use crate::batch_header::{BatchHeader, Compression, TimestampType};
use crate::buffer::PooledBuf;
use crate::codec;
use crate::error::LegacyFault;
use crate::layout::legacy::{
    attributes::{CODEC_MASK, LOG_APPEND_TIME},
    ATTRIBUTES_AT, CRC_AT, FIELD_LENGTH_SIZE, TIMESTAMP_AT, V0_KEY_LENGTH_AT, V0_MIN_LENGTH,
    V1_KEY_LENGTH_AT, V1_MIN_LENGTH,
};
use crate::layout::{be_i32, be_i64, magic, EntryHeader, BASE_OFFSET_AT, MAGIC_AT};
use crate::{DecodeConfig, Error};

impl LegacyFault {
    /// The error for the top-level message at `position` (offset `offset`), about its inner
    /// message `record` when there is one.
    fn at(self, position: usize, offset: i64, record: Option<u32>) -> Error {
        Error::InvalidLegacyMessage {
            position,
            offset,
            record,
            reason: self,
        }
    }
}

/// One legacy message as read from the wire.
#[derive(Clone, Copy, Debug)]
struct Message<'d> {
    offset: i64,
    magic: u8,
    attributes: u8,
    timestamp: i64,
    key: Option<&'d [u8]>,
    value: Option<&'d [u8]>,
    /// Bytes the message takes, entry header included.
    size: usize,
}

/// Reads the message at the start of `data`; `Ok(None)` if `data` ends inside it.
fn read_message(data: &[u8], verify_crc: bool) -> Result<Option<Message<'_>>, LegacyFault> {
    let Some(entry) = EntryHeader::peek(data) else {
        return Ok(None);
    };
    let size = entry.size().ok_or(LegacyFault::NegativeSize)?;
    if data.len() < size {
        return Ok(None);
    }
    let msg = &data[..size];
    if size <= MAGIC_AT {
        return Err(LegacyFault::BelowMinimumSize);
    }
    let magic = msg[MAGIC_AT];
    let fixed = match magic {
        magic::V0 => V0_MIN_LENGTH,
        magic::V1 => V1_MIN_LENGTH,
        _ => return Err(LegacyFault::UnsupportedMagic),
    };
    if (entry.length as usize) < fixed {
        return Err(LegacyFault::BelowMinimumSize);
    }
    if verify_crc && crc32fast::hash(&msg[MAGIC_AT..]) != be_i32(msg, CRC_AT) as u32 {
        return Err(LegacyFault::Crc32Mismatch);
    }
    let (timestamp, mut at) = if magic == magic::V1 {
        (be_i64(msg, TIMESTAMP_AT), V1_KEY_LENGTH_AT)
    } else {
        (-1, V0_KEY_LENGTH_AT)
    };
    let key = bytes_field(msg, &mut at)?;
    let value = bytes_field(msg, &mut at)?;
    if at != size {
        return Err(LegacyFault::SizeMismatch);
    }
    Ok(Some(Message {
        offset: entry.base_offset,
        magic,
        attributes: msg[ATTRIBUTES_AT],
        timestamp,
        key,
        value,
        size,
    }))
}

/// Reads an `i32` length then that many bytes at `*at` of `msg`; -1 is null.
fn bytes_field<'d>(msg: &'d [u8], at: &mut usize) -> Result<Option<&'d [u8]>, LegacyFault> {
    let len_bytes = msg
        .get(*at..*at + FIELD_LENGTH_SIZE)
        .ok_or(LegacyFault::FieldLengthPastEnd)?;
    let len = be_i32(len_bytes, 0);
    *at += FIELD_LENGTH_SIZE;
    if len == -1 {
        return Ok(None);
    }
    if len < 0 {
        return Err(LegacyFault::NegativeFieldLength);
    }
    let bytes = msg
        .get(*at..*at + len as usize)
        .ok_or(LegacyFault::FieldPastEnd)?;
    *at += len as usize;
    Ok(Some(bytes))
}

fn compression(attributes: u8) -> Result<Compression, LegacyFault> {
    match attributes & CODEC_MASK {
        0 => Ok(Compression::None),
        1 => Ok(Compression::Gzip),
        2 => Ok(Compression::Snappy),
        3 => Ok(Compression::Lz4),
        _ => Err(LegacyFault::UnknownCodec),
    }
}

/// A parsed top-level legacy message, as plain data.
pub(crate) struct LegacyBatch {
    pub(crate) header: BatchHeader,
    /// The decompressed inner message set and what to add to its offsets, for a compressed
    /// wrapper; `None` for an uncompressed message, which is its own one record.
    pub(crate) wrapper: Option<Wrapper>,
}

/// A compressed wrapper's inner message set.
pub(crate) struct Wrapper {
    /// Added to each inner message's offset (0 for magic 0, whose inner offsets are absolute).
    pub(crate) offset_base: i64,
    pub(crate) inner: PooledBuf,
}

/// Parses one whole top-level legacy message (`bytes` is exactly the message); a compressed
/// wrapper is decompressed and every inner message checked.
pub(crate) fn parse(
    bytes: &[u8],
    position: usize,
    config: &DecodeConfig,
) -> Result<LegacyBatch, Error> {
    let wrapper_offset = be_i64(bytes, BASE_OFFSET_AT);
    let invalid = |e: LegacyFault| e.at(position, wrapper_offset, None);
    if config.verify_crc && bytes.len() > MAGIC_AT {
        let stored = be_i32(bytes, CRC_AT) as u32;
        let computed = crc32fast::hash(&bytes[MAGIC_AT..]);
        if stored != computed {
            return Err(Error::ChecksumMismatch {
                position,
                offset: wrapper_offset,
                stored,
                computed,
            });
        }
    }
    let message = read_message(bytes, false)
        .and_then(|m| m.ok_or(LegacyFault::Cut))
        .map_err(invalid)?;
    let codec = compression(message.attributes).map_err(invalid)?;
    let log_append = message.magic == magic::V1 && message.attributes & LOG_APPEND_TIME != 0;
    let timestamp_type = match (message.magic, log_append) {
        (magic::V0, _) => TimestampType::NoTimestamp,
        (_, true) => TimestampType::LogAppendTime,
        _ => TimestampType::CreateTime,
    };
    let mut header = BatchHeader {
        base_offset: wrapper_offset,
        last_offset_delta: 0,
        magic: message.magic,
        attributes: message.attributes as i16,
        compression: codec,
        timestamp_type,
        base_timestamp: message.timestamp,
        max_timestamp: message.timestamp,
        record_count: 1,
        position,
        size: bytes.len(),
    };
    if codec == Compression::None {
        return Ok(LegacyBatch {
            header,
            wrapper: None,
        });
    }
    let payload = message
        .value
        .ok_or(LegacyFault::NullWrapperValue)
        .map_err(invalid)?;
    let inner = codec::decompress(codec, payload, config.max_decompressed_bytes, message.magic)
        .map_err(|e| e.into_error(position, wrapper_offset, codec, config))?;
    let offset_base = check_inner(&inner, &message, &mut header, config)?;
    Ok(LegacyBatch {
        header,
        wrapper: Some(Wrapper { offset_base, inner }),
    })
}

/// Checks every inner message of the wrapper `wrapper` (whose header is `header`) and sets the
/// header's offsets and count from them; returns what turns inner offsets into absolute ones.
fn check_inner(
    inner: &[u8],
    wrapper: &Message<'_>,
    header: &mut BatchHeader,
    config: &DecodeConfig,
) -> Result<i64, Error> {
    let (position, wrapper_offset) = (header.position, wrapper.offset);
    let invalid = |e: LegacyFault, record| e.at(position, wrapper_offset, record);
    // First pass: check every inner message and find the last inner offset, which v1 needs
    // to turn relative inner offsets into absolute ones.
    let mut at = 0;
    let mut count: u32 = 0;
    let mut first_inner = None;
    let mut last_inner = 0;
    while at < inner.len() {
        let m = read_message(&inner[at..], config.verify_crc)
            .and_then(|m| m.ok_or(LegacyFault::InnerCut))
            .map_err(|e| invalid(e, Some(count)))?;
        if m.magic != wrapper.magic {
            return Err(invalid(LegacyFault::InnerMagicDiffers, Some(count)));
        }
        if m.attributes & CODEC_MASK != 0 {
            return Err(invalid(LegacyFault::NestedCompression, Some(count)));
        }
        if count as usize >= config.max_records_per_batch {
            return Err(Error::TooManyRecords {
                position,
                offset: wrapper_offset,
                count: count as i64 + 1,
                limit: config.max_records_per_batch as u64,
            });
        }
        // Producers number inner messages in increasing order; holding every offset between
        // the first and the last also keeps the absolute offsets from overflowing.
        if first_inner.is_some() && m.offset <= last_inner {
            return Err(invalid(LegacyFault::InnerOffsetsNotIncreasing, Some(count)));
        }
        first_inner.get_or_insert(m.offset);
        last_inner = m.offset;
        count += 1;
        at += m.size;
    }
    let first_inner = first_inner.ok_or_else(|| invalid(LegacyFault::EmptyWrapper, None))?;
    let overflow = || invalid(LegacyFault::InnerOffsetsOverflow, None);
    let offset_base = if wrapper.magic == magic::V0 {
        0
    } else {
        wrapper_offset
            .checked_sub(last_inner)
            .ok_or_else(overflow)?
    };
    let base_offset = offset_base.checked_add(first_inner).ok_or_else(overflow)?;
    let last_offset = offset_base + last_inner;
    let span = last_offset
        .checked_sub(base_offset)
        .filter(|s| (0..=i32::MAX as i64).contains(s))
        .ok_or_else(|| invalid(LegacyFault::InnerOffsetsBackwards, None))?;
    header.base_offset = base_offset;
    header.last_offset_delta = span as i32;
    header.record_count = count;
    Ok(offset_base)
}

/// One record of a legacy batch, as plain data.
pub(crate) struct LegacyRecord<'d> {
    pub(crate) offset: i64,
    pub(crate) timestamp: i64,
    pub(crate) timestamp_type: TimestampType,
    pub(crate) key: Option<&'d [u8]>,
    pub(crate) value: Option<&'d [u8]>,
}

/// Iterates the messages of a legacy batch: the message itself, or a wrapper's inner set.
pub(crate) struct LegacyRecords<'b> {
    data: &'b [u8],
    header: &'b BatchHeader,
    offset_base: i64,
    pos: usize,
    index: u32,
}

impl<'b> LegacyRecords<'b> {
    /// The messages in `data` (the message itself, or a wrapper's decompressed inner set) of
    /// the batch whose header is `header`; `offset_base` is the wrapper's ([`Wrapper`]).
    pub(crate) fn new(data: &'b [u8], header: &'b BatchHeader, offset_base: i64) -> Self {
        LegacyRecords {
            data,
            header,
            offset_base,
            pos: 0,
            index: 0,
        }
    }

    pub(crate) fn remaining(&self) -> usize {
        (self.header.record_count - self.index.min(self.header.record_count)) as usize
    }

    /// The next message as a record, `None` after the last.
    pub(crate) fn next_record(&mut self) -> Option<Result<LegacyRecord<'b>, Error>> {
        if self.pos >= self.data.len() {
            return None;
        }
        // Checked when the batch was built; an error here would mean a bug, not bad input,
        // but is still reported rather than trusted.
        let m = match read_message(&self.data[self.pos..], false) {
            Ok(Some(m)) => m,
            _ => {
                self.pos = self.data.len();
                return Some(Err(LegacyFault::ChangedAfterCheck.at(
                    self.header.position,
                    self.header.base_offset,
                    Some(self.index),
                )));
            }
        };
        self.pos += m.size;
        self.index += 1;
        let (timestamp, timestamp_type) = match self.header.timestamp_type {
            TimestampType::LogAppendTime => {
                (self.header.max_timestamp, TimestampType::LogAppendTime)
            }
            other => (m.timestamp, other),
        };
        Some(Ok(LegacyRecord {
            offset: self.offset_base + m.offset,
            timestamp,
            timestamp_type,
            key: m.key,
            value: m.value,
        }))
    }
}
