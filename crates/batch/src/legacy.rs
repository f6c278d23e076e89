//! Legacy message sets, magic 0 and 1: per-message CRC32, compressed wrapper messages
//! holding an inner message set, v1 relative inner offsets and timestamps.

use bytes::Bytes;

use crate::batch::{Batch, Body, Header, Layout};
use crate::codec;
use crate::layout::legacy::{
    attributes::{CODEC_MASK, LOG_APPEND_TIME},
    ATTRIBUTES_AT, CRC_AT, FIELD_LENGTH_SIZE, TIMESTAMP_AT, V0_KEY_LENGTH_AT, V0_MIN_LENGTH,
    V1_KEY_LENGTH_AT, V1_MIN_LENGTH,
};
use crate::layout::{be_i32, be_i64, magic, EntryHeader, BASE_OFFSET_AT, MAGIC_AT};
use crate::record::Record;
use crate::{Compression, DecodeConfig, Error, TimestampType};

/// One legacy message as read from the wire.
#[derive(Clone, Copy, Debug)]
struct Message<'d> {
    offset: i64,
    magic: u8,
    attributes: u8,
    timestamp: i64,
    key: Option<&'d [u8]>,
    value: Option<&'d [u8]>,
    /// Bytes the message takes, log overhead included.
    size: usize,
}

/// Reads the message at the start of `data`; `Ok(None)` if `data` ends inside it.
fn read_message(data: &[u8], verify_crc: bool) -> Result<Option<Message<'_>>, &'static str> {
    let Some(entry) = EntryHeader::peek(data) else {
        return Ok(None);
    };
    let Some(size) = entry.size() else {
        return Err("negative message size");
    };
    let (offset, length) = (entry.base_offset, entry.length);
    if data.len() < size {
        return Ok(None);
    }
    let msg = &data[..size];
    if size <= MAGIC_AT {
        return Err("message size below the minimum");
    }
    let magic = msg[MAGIC_AT];
    let fixed = match magic {
        magic::V0 => V0_MIN_LENGTH,
        magic::V1 => V1_MIN_LENGTH,
        _ => return Err("unsupported magic in legacy message"),
    };
    if (length as usize) < fixed {
        return Err("message size below the minimum");
    }
    if verify_crc {
        let stored = be_i32(msg, CRC_AT) as u32;
        if crc32fast::hash(&msg[MAGIC_AT..]) != stored {
            return Err("CRC32 mismatch");
        }
    }
    let attributes = msg[ATTRIBUTES_AT];
    let (timestamp, mut at) = if magic == magic::V1 {
        (be_i64(msg, TIMESTAMP_AT), V1_KEY_LENGTH_AT)
    } else {
        (-1, V0_KEY_LENGTH_AT)
    };
    let field = |at: &mut usize| -> Result<Option<&[u8]>, &'static str> {
        let len_bytes = msg
            .get(*at..*at + FIELD_LENGTH_SIZE)
            .ok_or("field length past the end")?;
        let len = be_i32(len_bytes, 0);
        *at += FIELD_LENGTH_SIZE;
        if len == -1 {
            return Ok(None);
        }
        if len < 0 {
            return Err("negative field length other than -1");
        }
        let bytes = msg
            .get(*at..*at + len as usize)
            .ok_or("field runs past the end")?;
        *at += len as usize;
        Ok(Some(bytes))
    };
    let key = field(&mut at)?;
    let value = field(&mut at)?;
    if at != size {
        return Err("message size does not match its fields");
    }
    Ok(Some(Message {
        offset,
        magic,
        attributes,
        timestamp,
        key,
        value,
        size,
    }))
}

fn compression(attributes: u8) -> Result<Compression, &'static str> {
    match attributes & CODEC_MASK {
        0 => Ok(Compression::None),
        1 => Ok(Compression::Gzip),
        2 => Ok(Compression::Snappy),
        3 => Ok(Compression::Lz4),
        _ => Err("unknown or v2-only compression codec in legacy message"),
    }
}

/// Parses one whole top-level legacy message (`bytes` is exactly the message).
pub(crate) fn parse<'a>(
    bytes: &'a [u8],
    position: usize,
    config: &DecodeConfig,
    shared: Option<&'a Bytes>,
) -> Result<Batch<'a>, Error> {
    let wrapper_offset = be_i64(bytes, BASE_OFFSET_AT);
    let invalid = |record: Option<u32>, reason: &'static str| Error::InvalidLegacyMessage {
        position,
        offset: wrapper_offset,
        record,
        reason,
    };
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
    let message = match read_message(bytes, false) {
        Ok(Some(m)) => m,
        Ok(None) => return Err(invalid(None, "message cut")),
        Err(reason) => return Err(invalid(None, reason)),
    };
    let codec = compression(message.attributes).map_err(|r| invalid(None, r))?;
    let log_append = message.magic == magic::V1 && message.attributes & LOG_APPEND_TIME != 0;
    let timestamp_type = match (message.magic, log_append) {
        (magic::V0, _) => TimestampType::NoTimestamp,
        (_, true) => TimestampType::LogAppendTime,
        _ => TimestampType::CreateTime,
    };
    let mut header = Header {
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
        return Ok(Batch {
            header,
            layout: Layout::LegacySingle,
            body: Body::Borrowed(bytes, shared),
            v2_header: None,
        });
    }
    let payload = message
        .value
        .ok_or_else(|| invalid(None, "compressed wrapper with a null value"))?;
    let inner = codec::decompress(codec, payload, config.max_decompressed_bytes, message.magic)
        .map_err(|e| e.into_error(position, wrapper_offset, codec, config))?;
    // First pass: check every inner message and find the last inner offset, which v1 needs
    // to turn relative inner offsets into absolute ones.
    let mut at = 0;
    let mut count: u32 = 0;
    let mut first_inner = None;
    let mut last_inner = 0;
    while at < inner.len() {
        let m = match read_message(&inner[at..], config.verify_crc) {
            Ok(Some(m)) => m,
            Ok(None) => return Err(invalid(Some(count), "inner message cut")),
            Err(reason) => return Err(invalid(Some(count), reason)),
        };
        if m.magic != message.magic {
            return Err(invalid(
                Some(count),
                "inner message magic differs from the wrapper's",
            ));
        }
        if m.attributes & CODEC_MASK != 0 {
            return Err(invalid(Some(count), "nested compression"));
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
            return Err(invalid(Some(count), "inner offsets not increasing"));
        }
        first_inner.get_or_insert(m.offset);
        last_inner = m.offset;
        count += 1;
        at += m.size;
    }
    let first_inner =
        first_inner.ok_or_else(|| invalid(None, "compressed wrapper holds no messages"))?;
    let offset_base = if message.magic == magic::V0 {
        0
    } else {
        wrapper_offset
            .checked_sub(last_inner)
            .ok_or_else(|| invalid(None, "inner offsets overflow"))?
    };
    let base_offset = offset_base
        .checked_add(first_inner)
        .ok_or_else(|| invalid(None, "inner offsets overflow"))?;
    let last_offset = offset_base + last_inner;
    let span = last_offset
        .checked_sub(base_offset)
        .filter(|s| (0..=i32::MAX as i64).contains(s))
        .ok_or_else(|| invalid(None, "inner offsets go backwards"))?;
    header.base_offset = base_offset;
    header.last_offset_delta = span as i32;
    header.record_count = count;
    Ok(Batch {
        header,
        layout: Layout::LegacyWrapper { offset_base },
        body: Body::Pooled(inner),
        v2_header: None,
    })
}

/// Iterates the messages of a legacy batch: the message itself, or a wrapper's inner set.
pub(crate) struct LegacyRecords<'b> {
    data: &'b [u8],
    shared: Option<&'b Bytes>,
    header: &'b Header,
    offset_base: i64,
    pos: usize,
    index: u32,
}

impl<'b> LegacyRecords<'b> {
    pub(crate) fn new(batch: &'b Batch<'_>) -> Self {
        let (data, shared) = batch.body.bytes_and_shared();
        let offset_base = match batch.layout {
            Layout::LegacyWrapper { offset_base } => offset_base,
            _ => 0,
        };
        LegacyRecords {
            data,
            shared,
            header: &batch.header,
            offset_base,
            pos: 0,
            index: 0,
        }
    }

    pub(crate) fn remaining(&self) -> usize {
        (self.header.record_count - self.index.min(self.header.record_count)) as usize
    }

    /// The next message, written into `record` as the v2 iterator writes its records.
    /// Out of line, and with the v2 side's result type, so that the record loop the two
    /// share handles no `Record` returned by value: with the legacy arm returning one, the v2
    /// records took 18 more instructions a batch and about 6 more a record (1 x 100 B and
    /// 10 x 100 B batches, `scripts/decode-instructions.sh`).
    #[inline(never)]
    pub(crate) fn fill_next(&mut self, record: &mut Record<'b>) -> Option<Result<(), Error>> {
        match self.next()? {
            Ok(next) => {
                *record = next;
                Some(Ok(()))
            }
            Err(e) => Some(Err(e)),
        }
    }

    fn next(&mut self) -> Option<Result<Record<'b>, Error>> {
        if self.pos >= self.data.len() {
            return None;
        }
        // Checked when the batch was built; an error here would mean a bug, not bad input,
        // but is still reported rather than trusted.
        let m = match read_message(&self.data[self.pos..], false) {
            Ok(Some(m)) => m,
            _ => {
                self.pos = self.data.len();
                return Some(Err(Error::InvalidLegacyMessage {
                    position: self.header.position,
                    offset: self.header.base_offset,
                    record: Some(self.index),
                    reason: "message changed after it was checked",
                }));
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
        Some(Ok(Record::without_headers(
            self.offset_base + m.offset,
            timestamp,
            timestamp_type,
            m.key,
            m.value,
            self.shared,
        )))
    }
}
