//! RecordBatch v2 (magic 2): the header, and the records inside.

use crate::batch_header::{BatchHeader, Compression, TimestampType};
use crate::error::Field;
use crate::index::{fits_inline, HeaderCount, InlineIndex, Span};
use crate::layout::v2::{
    attributes, ATTRIBUTES_AT, BASE_TIMESTAMP_AT, CRC_AT, HEADER_SIZE, LAST_OFFSET_DELTA_AT,
    MAX_TIMESTAMP_AT, MIN_LENGTH, MIN_RECORD_SIZE, RECORD_COUNT_AT,
};
use crate::layout::{be_i16, be_i32, be_i64, magic, BASE_OFFSET_AT, LENGTH_AT};
use crate::varint::{
    read_varint, read_varint_encoded, read_varlong, zigzag32, VarintError, SHORT_LENGTH_MASK,
};
use crate::{DecodeConfig, Error};

/// Reads and checks the header of one whole v2 batch (`bytes` is exactly the batch, entry
/// header included) into `header`, the CRC over the whole batch included. Written in place
/// because the walk fills its batch in place (see `Batch::fill_v2`).
#[inline(always)]
pub(crate) fn parse_header(
    bytes: &[u8],
    position: usize,
    config: &DecodeConfig,
    header: &mut BatchHeader,
) -> Result<(), Error> {
    let base_offset = be_i64(bytes, BASE_OFFSET_AT);
    if bytes.len() < HEADER_SIZE {
        return Err(Error::BatchTooSmall {
            position,
            offset: base_offset,
            length: be_i32(bytes, LENGTH_AT),
            minimum: MIN_LENGTH,
        });
    }
    let invalid = |field: &'static str, value: i64| Error::InvalidBatchField {
        position,
        offset: base_offset,
        field,
        value,
    };
    if config.verify_crc {
        check_crc(bytes, position, base_offset)?;
    }
    let attrs = be_i16(bytes, ATTRIBUTES_AT);
    let codec_id = (attrs & attributes::CODEC_MASK) as u8;
    let compression = Compression::from_id(codec_id).ok_or(Error::UnknownCompression {
        position,
        offset: base_offset,
        codec: codec_id,
    })?;
    let last_offset_delta = be_i32(bytes, LAST_OFFSET_DELTA_AT);
    if last_offset_delta < 0 {
        return Err(invalid("last offset delta", last_offset_delta as i64));
    }
    if base_offset < 0
        || base_offset
            .checked_add(last_offset_delta as i64 + 1)
            .is_none()
    {
        return Err(invalid("base offset", base_offset));
    }
    let count = be_i32(bytes, RECORD_COUNT_AT);
    if count < 0 {
        return Err(invalid("record count", count as i64));
    }
    if count as usize > config.max_records_per_batch {
        return Err(Error::TooManyRecords {
            position,
            offset: base_offset,
            count: count as i64,
            limit: config.max_records_per_batch as u64,
        });
    }
    *header = BatchHeader {
        base_offset,
        last_offset_delta,
        magic: magic::V2,
        attributes: attrs,
        compression,
        timestamp_type: if attrs & attributes::LOG_APPEND_TIME != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        },
        base_timestamp: be_i64(bytes, BASE_TIMESTAMP_AT),
        max_timestamp: be_i64(bytes, MAX_TIMESTAMP_AT),
        record_count: count as u32,
        position,
        size: bytes.len(),
    };
    Ok(())
}

/// Checks the stored CRC32C against the one computed over the batch from its attributes on.
#[inline(always)]
fn check_crc(bytes: &[u8], position: usize, base_offset: i64) -> Result<(), Error> {
    let stored = be_i32(bytes, CRC_AT) as u32;
    let computed = crate::crc::crc32c(&bytes[ATTRIBUTES_AT..]);
    if stored != computed {
        return Err(Error::ChecksumMismatch {
            position,
            offset: base_offset,
            stored,
            computed,
        });
    }
    Ok(())
}

/// Checks that `records_len` bytes of records can hold the header's record count, before a
/// hostile count makes the record iterator try that many.
#[inline(always)]
pub(crate) fn check_record_count(header: &BatchHeader, records_len: usize) -> Result<(), Error> {
    let count = header.record_count as usize;
    // `count` is below 2^31: the product cannot overflow, and it is cheaper than dividing.
    if count * MIN_RECORD_SIZE > records_len {
        return Err(Error::TooManyRecords {
            position: header.position,
            offset: header.base_offset,
            count: count as i64,
            limit: (records_len / MIN_RECORD_SIZE) as u64,
        });
    }
    Ok(())
}

/// Iterates the v2 records of a batch, checking each as it is yielded.
pub(crate) struct V2Records<'b> {
    data: &'b [u8],
    header: &'b BatchHeader,
    pos: usize,
    index: u32,
    /// Smallest offset delta the next record may have.
    min_delta: i64,
    done: bool,
}

/// What went wrong reading a field, before the batch context is added.
enum FieldError {
    Truncated {
        field: Field,
        at: usize,
        needed: u64,
        available: usize,
    },
    Varint {
        at: usize,
    },
    Length {
        field: Field,
        length: i64,
    },
    Mismatch {
        declared: u64,
        used: u64,
    },
}

impl FieldError {
    /// A length or count field holding `value`, which does not fit (negative, or too large).
    #[cold]
    fn bad_length(field: Field, value: i32) -> FieldError {
        FieldError::Length {
            field,
            length: value as i64,
        }
    }

    /// `field` declares `needed` bytes from `at`, past the end of `data`.
    #[cold]
    fn truncated(field: Field, data: &[u8], at: usize, needed: usize) -> FieldError {
        FieldError::Truncated {
            field,
            at,
            needed: needed as u64,
            available: data.len() - at,
        }
    }

    /// A record declared `declared` bytes and its fields used `used`.
    #[cold]
    fn mismatch(declared: usize, used: usize) -> FieldError {
        FieldError::Mismatch {
            declared: declared as u64,
            used: used as u64,
        }
    }
}

#[inline(always)]
fn varint(data: &[u8], pos: &mut usize, field: Field) -> Result<i32, FieldError> {
    let at = *pos;
    read_varint(data, pos).map_err(|e| varint_field_error(e, field, at))
}

#[inline(always)]
fn varlong(data: &[u8], pos: &mut usize, field: Field) -> Result<i64, FieldError> {
    let at = *pos;
    read_varlong(data, pos).map_err(|e| varint_field_error(e, field, at))
}

/// Reads a length field: `Ok(length)`, or `Err(value)` for a negative value (-1 is null where
/// the field allows it). Told apart by the encoding's low bit, before zigzag decoding.
#[inline(always)]
fn length(data: &[u8], pos: &mut usize, field: Field) -> Result<Result<usize, i32>, FieldError> {
    let at = *pos;
    let encoded = read_varint_encoded(data, pos).map_err(|e| varint_field_error(e, field, at))?;
    Ok(if encoded & 1 == 0 {
        Ok((encoded >> 1) as usize)
    } else {
        Err(zigzag32(encoded))
    })
}

/// Names the field and the byte where a varint of it started.
#[cold]
fn varint_field_error(error: VarintError, field: Field, at: usize) -> FieldError {
    match error {
        VarintError::Truncated => FieldError::Truncated {
            field,
            at,
            needed: 1,
            available: 0,
        },
        VarintError::TooLong => FieldError::Varint { at },
    }
}

/// Reads a varint length then that many bytes; -1 is null when `nullable`.
#[inline(always)]
fn bytes_field<'d>(
    data: &'d [u8],
    pos: &mut usize,
    field: Field,
    nullable: bool,
) -> Result<Option<&'d [u8]>, FieldError> {
    // Keys, header keys and header values are mostly under 64 bytes (one test, see
    // `SHORT_LENGTH_MASK`). Values are mostly 64 bytes or longer (two-byte lengths) and go
    // straight to `varint`.
    if field != Field::Value {
        if let Some(&first) = data.get(*pos) {
            if first & SHORT_LENGTH_MASK == 0 {
                let start = *pos + 1;
                let len = (first >> 1) as usize;
                if len <= data.len() - start {
                    *pos = start + len;
                    return Ok(Some(&data[start..start + len]));
                }
            }
        }
    }
    let len = match length(data, pos, field)? {
        Ok(len) => len,
        Err(-1) if nullable => return Ok(None),
        Err(negative) => {
            return Err(FieldError::Length {
                field,
                length: negative as i64,
            })
        }
    };
    let start = *pos;
    // `start` is at most `data.len()` and `len` below 2^31: the sum cannot overflow.
    let end = start + len;
    match data.get(start..end) {
        Some(bytes) => {
            *pos = end;
            Ok(Some(bytes))
        }
        None => Err(FieldError::Truncated {
            field,
            at: start,
            needed: len as u64,
            available: data.len() - start,
        }),
    }
}

/// Walks the headers section starting at `*pos`, calling `each(key, value)` for every header.
#[inline(always)]
pub(crate) fn walk_headers<'d>(
    data: &'d [u8],
    pos: &mut usize,
    count: usize,
    mut each: impl FnMut(&'d [u8], Option<&'d [u8]>),
) -> Result<(), ()> {
    for _ in 0..count {
        let key = bytes_field(data, pos, Field::HeaderKey, false).map_err(|_| ())?;
        let value = bytes_field(data, pos, Field::HeaderValue, true).map_err(|_| ())?;
        each(key.unwrap_or_default(), value);
    }
    Ok(())
}

/// Indexes the headers at the start of `section` into `spans` while their keys and values are
/// short (a one-byte length under 64, see [`SHORT_LENGTH_MASK`]) and inside the section, as
/// most headers are; returns how many it indexed and the bytes they take. The first header
/// that is not short is left to the general reader, which also names what is wrong with it.
/// Out of line, the loop has the registers to itself; inlined into the record reader it
/// kept its positions on the stack.
#[inline(never)]
fn index_short_headers(section: &[u8], spans: &mut [Span]) -> (usize, usize) {
    let mut at = 0;
    let mut indexed = 0;
    while indexed < spans.len() {
        let Some(&key_length) = section.get(at) else {
            break;
        };
        let value_length_at = at + 1 + (key_length >> 1) as usize;
        let Some(&value_length) = section.get(value_length_at) else {
            break;
        };
        let value_end = value_length_at + 1 + (value_length >> 1) as usize;
        // Both length bytes tested at once; the positions computed from a key length that
        // fails the test are only ever used to read one byte through `get`.
        if (key_length | value_length) & SHORT_LENGTH_MASK != 0 || value_end > section.len() {
            break;
        }
        // The section is shorter than 64 KiB (the inline index's condition).
        spans[indexed] = Span {
            key_start: (at + 1) as u16,
            value_length_at: value_length_at as u16,
        };
        at = value_end;
        indexed += 1;
    }
    (indexed, at)
}

/// A record's fields as read from the wire.
pub(crate) struct RawRecord<'d> {
    pub(crate) timestamp_delta: i64,
    pub(crate) offset_delta: i32,
    pub(crate) key: Option<&'d [u8]>,
    pub(crate) value: Option<&'d [u8]>,
    /// The headers section (after the header count).
    pub(crate) headers: &'d [u8],
    pub(crate) header_count: HeaderCount,
}

/// Reads one record at `*pos` and checks it uses exactly its declared length. Header spans
/// go into `index` when the section fits the inline index. One function: it is the per-record
/// hot path, each step reading from the position the one before left; its errors are built
/// by cold functions.
#[inline(always)]
fn read_record<'d>(
    data: &'d [u8],
    pos: &mut usize,
    index: &mut InlineIndex,
) -> Result<RawRecord<'d>, FieldError> {
    let length = length(data, pos, Field::RecordLength)?
        .map_err(|negative| FieldError::bad_length(Field::RecordLength, negative))?;
    let start = *pos;
    let end = start + length;
    // Fields are read within the record only, so none can run into the next record.
    let rec = data
        .get(..end)
        .ok_or_else(|| FieldError::truncated(Field::RecordLength, data, start, length))?;
    let mut p = start;
    if p >= end {
        return Err(FieldError::mismatch(length, 1));
    }
    p += 1; // attributes: unused by every record version so far
    let timestamp_delta = varlong(rec, &mut p, Field::TimestampDelta)?;
    let offset_delta = varint(rec, &mut p, Field::OffsetDelta)?;
    let key = bytes_field(rec, &mut p, Field::Key, true)?;
    let value = bytes_field(rec, &mut p, Field::Value, true)?;
    let header_count = varint(rec, &mut p, Field::HeaderCount)?;
    // Each header takes at least two bytes, so a larger count cannot fit. A negative count
    // becomes a huge unsigned one, so one comparison rejects both.
    if header_count as u32 as usize > (end - p) / 2 {
        return Err(FieldError::bad_length(Field::HeaderCount, header_count));
    }
    let headers_start = p;
    let header_count = if fits_inline(header_count as usize, end - headers_start) {
        // Positions fit in 16 bits: the section is shorter than 64 KiB.
        // Tested first so that records without headers, the most common, skip the call and
        // the loop's setup.
        if header_count != 0 {
            let spans = &mut index[..header_count as usize];
            let (indexed, used) = index_short_headers(&rec[headers_start..], spans);
            p += used;
            for span in &mut spans[indexed..] {
                let key = bytes_field(rec, &mut p, Field::HeaderKey, false)?.unwrap_or_default();
                let value_length_at = p - headers_start;
                bytes_field(rec, &mut p, Field::HeaderValue, true)?;
                *span = Span {
                    key_start: (value_length_at - key.len()) as u16,
                    value_length_at: value_length_at as u16,
                };
            }
        }
        HeaderCount::inline(header_count as u32)
    } else {
        for _ in 0..header_count {
            bytes_field(rec, &mut p, Field::HeaderKey, false)?;
            bytes_field(rec, &mut p, Field::HeaderValue, true)?;
        }
        HeaderCount::wide(header_count as u32)
    };
    if p != end {
        return Err(FieldError::mismatch(length, p - start));
    }
    *pos = end;
    Ok(RawRecord {
        timestamp_delta,
        offset_delta,
        key,
        value,
        headers: &data[headers_start..end],
        header_count,
    })
}

impl<'d> RawRecord<'d> {
    /// The key, `None` when null.
    pub(crate) fn key(&self) -> Option<&'d [u8]> {
        self.key
    }
    /// The value, `None` when null.
    pub(crate) fn value(&self) -> Option<&'d [u8]> {
        self.value
    }
}

impl<'b> V2Records<'b> {
    /// The records in `data` (the batch's records bytes, decompressed if need be) of the batch
    /// whose header is `header`.
    pub(crate) fn new(data: &'b [u8], header: &'b BatchHeader) -> Self {
        V2Records {
            data,
            header,
            pos: 0,
            index: 0,
            min_delta: 0,
            done: false,
        }
    }

    /// Records left to yield, as declared.
    pub(crate) fn remaining(&self) -> usize {
        if self.done {
            0
        } else {
            (self.header.record_count - self.index) as usize
        }
    }

    pub(crate) fn header(&self) -> &'b BatchHeader {
        self.header
    }

    /// Names a record's error with its batch and index. Cold, out of line, and given the two
    /// values it needs rather than `&self`, so that the iterator's state never has its address
    /// passed to a call and stays in registers in the record loop.
    #[cold]
    #[inline(never)]
    fn error(header: &BatchHeader, record: u32, e: FieldError) -> Error {
        let (position, offset) = (header.position, header.base_offset);
        match e {
            FieldError::Truncated {
                field,
                at,
                needed,
                available,
            } => Error::RecordTruncated {
                position,
                offset,
                record,
                field,
                at,
                needed,
                available,
            },
            FieldError::Varint { at } => Error::BadVarint {
                position,
                offset,
                record,
                at,
            },
            FieldError::Length { field, length } => Error::InvalidLength {
                position,
                offset,
                record,
                field,
                length,
            },
            FieldError::Mismatch { declared, used } => Error::RecordLengthMismatch {
                position,
                offset,
                record,
                declared,
                used,
            },
        }
    }

    /// The next raw record with its index, or the end-of-batch check.
    #[inline]
    pub(crate) fn next_raw(
        &mut self,
        index: &mut InlineIndex,
    ) -> Option<Result<(u32, RawRecord<'b>), Error>> {
        if self.done {
            return None;
        }
        if self.index == self.header.record_count {
            self.done = true;
            if self.pos != self.data.len() {
                return Some(Err(Error::RecordCountMismatch {
                    position: self.header.position,
                    offset: self.header.base_offset,
                    declared: self.header.record_count,
                    found: self.index,
                    trailing: self.data.len() - self.pos,
                }));
            }
            return None;
        }
        if self.pos == self.data.len() {
            self.done = true;
            return Some(Err(Error::RecordCountMismatch {
                position: self.header.position,
                offset: self.header.base_offset,
                declared: self.header.record_count,
                found: self.index,
                trailing: 0,
            }));
        }
        let raw = match read_record(self.data, &mut self.pos, index) {
            Ok(raw) => raw,
            Err(e) => {
                self.done = true;
                return Some(Err(Self::error(self.header, self.index, e)));
            }
        };
        let delta = raw.offset_delta as i64;
        let max = self.header.last_offset_delta as i64;
        // `min_delta <= delta <= max` in one unsigned comparison: below `min_delta` wraps to
        // a huge difference. `min_delta` is at most `max + 1` (the delta before was at most
        // `max`), so the count of allowed deltas is never negative; 0 rejects every delta.
        if (delta.wrapping_sub(self.min_delta) as u64) >= (max + 1 - self.min_delta) as u64 {
            self.done = true;
            return Some(Err(Error::OffsetOutOfOrder {
                position: self.header.position,
                offset: self.header.base_offset,
                record: self.index,
                delta,
                min: self.min_delta,
                max,
            }));
        }
        self.min_delta = delta + 1;
        let index = self.index;
        self.index += 1;
        Some(Ok((index, raw)))
    }
}

#[cfg(all(test, feature = "encode"))]
mod stored_lz4_tests {
    use bytes::Bytes;

    use crate::encode::BatchBuilder;
    use crate::{BatchWalk, Compression, DecodeConfig};

    fn incompressible(len: usize) -> Vec<u8> {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as u8
            })
            .collect()
    }

    fn lz4_batch(value: &[u8]) -> Bytes {
        Bytes::from(
            BatchBuilder::new(7)
                .compression(Compression::Lz4)
                .record(Some(b"k"), Some(value), &[(b"h", Some(b"v"))])
                .build(),
        )
    }

    #[test]
    fn a_stored_lz4_block_is_read_in_place_and_shared_without_copy() {
        let value = incompressible(100);
        let input = lz4_batch(&value);
        let config = DecodeConfig::default();
        let batch = BatchWalk::new_shared(&input, &config)
            .next()
            .unwrap()
            .unwrap();
        let record = batch.records().next().unwrap().unwrap();
        assert_eq!(record.value(), Some(&value[..]));
        assert_eq!(record.key(), Some(&b"k"[..]));
        assert_eq!(record.headers().get(b"h").unwrap().value, Some(&b"v"[..]));
        let in_input = input.as_ptr_range();
        assert!(in_input.contains(&record.value().unwrap().as_ptr()));
        let shared = record.value_bytes().unwrap();
        assert!(in_input.contains(&shared.as_ptr()), "value_bytes copied");
    }

    #[test]
    fn a_compressed_lz4_block_still_decodes_into_a_buffer() {
        let value = vec![b'a'; 1000];
        let input = lz4_batch(&value);
        let config = DecodeConfig::default();
        let batch = BatchWalk::new_shared(&input, &config)
            .next()
            .unwrap()
            .unwrap();
        let record = batch.records().next().unwrap().unwrap();
        assert_eq!(record.value(), Some(&value[..]));
        assert!(!input
            .as_ptr_range()
            .contains(&record.value().unwrap().as_ptr()));
    }
}
