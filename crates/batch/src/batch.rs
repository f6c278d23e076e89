//! One batch (v2) or one top-level legacy message, with its records' bytes.

use bytes::Bytes;

use crate::batch_header::{BatchHeader, Compression, TimestampType};
use crate::buffer::PooledBuf;
use crate::control::ControlRecords;
use crate::layout::v2::{attributes, HEADER_SIZE as V2_HEADER_SIZE};
use crate::layout::{self, magic};
use crate::legacy::{self, LegacyBatch, LegacyRecords, Wrapper};
use crate::record::Records;
use crate::v2::{self, V2Records};
use crate::{codec, DecodeConfig, Error};

/// Where the records' bytes live.
pub(crate) enum Body<'a> {
    /// Uncompressed: a slice of the walked input, and that input as shared `Bytes` when the
    /// walk was given them (kept here rather than in [`Batch`] so a batch fits in 128 bytes).
    Borrowed(&'a [u8], Option<&'a Bytes>),
    /// Decompressed into a buffer from the per-thread buffer pool, which it goes back to on
    /// drop.
    Pooled(PooledBuf),
}

impl<'a> Body<'a> {
    #[inline(always)]
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Body::Borrowed(bytes, _) => bytes,
            Body::Pooled(buf) => buf,
        }
    }

    /// Makes the body borrow `bytes`. A body that already borrows is overwritten in place:
    /// plain assignment would call the drop glue of the old body on every batch, pooled or not.
    /// A buffer it held goes back to the per-thread buffer pool.
    #[inline(always)]
    pub(crate) fn set_borrowed(&mut self, bytes: &'a [u8], shared: Option<&'a Bytes>) {
        match self {
            Body::Borrowed(old_bytes, old_shared) => {
                *old_bytes = bytes;
                *old_shared = shared;
            }
            Body::Pooled(_) => *self = Body::Borrowed(bytes, shared),
        }
    }

    /// The buffer to decompress into: the one the body has, else one from the per-thread
    /// buffer pool.
    #[inline]
    pub(crate) fn pooled_mut(&mut self) -> &mut PooledBuf {
        if let Body::Borrowed(..) = self {
            *self = Body::Pooled(PooledBuf::take());
        }
        match self {
            Body::Pooled(buf) => buf,
            Body::Borrowed(..) => unreachable!("made pooled just above"),
        }
    }

    /// [`Body::bytes`] and, when the bytes are the input's own, the shared input they are in;
    /// one match.
    #[inline(always)]
    pub(crate) fn bytes_and_shared(&self) -> (&[u8], Option<&'a Bytes>) {
        match self {
            Body::Borrowed(bytes, shared) => (bytes, *shared),
            Body::Pooled(buf) => (buf, None),
        }
    }
}

impl<'a> Body<'a> {
    /// Makes the body the records of a v2 batch whose payload (the bytes after its header) is
    /// `payload`; returns their length, which each branch knows without matching on the body
    /// again. Each branch writes the body straight into place: a `Body` built first and then
    /// moved in is copied with wide loads over narrow stores, which stall.
    #[inline(always)]
    fn decode_v2(
        &mut self,
        header: &BatchHeader,
        payload: &'a [u8],
        config: &DecodeConfig,
        shared: Option<&'a Bytes>,
    ) -> Result<usize, Error> {
        let compression = header.compression;
        let error = |e: codec::CodecError| {
            e.into_error(header.position, header.base_offset, compression, config)
        };
        // The log cleaner writes empty batches with no payload whatever the codec; there is
        // nothing to decompress.
        if compression == Compression::None || (header.record_count == 0 && payload.is_empty()) {
            self.set_borrowed(payload, shared);
            return Ok(payload.len());
        }
        if let Some(content) = codec::stored_in_place(compression, payload, config) {
            // Records stay slices of the input, so shared-input zero copy holds here too.
            self.set_borrowed(content, shared);
            return Ok(content.len());
        }
        // Into the buffer the batch before used, if it had one: no pool round trip.
        let buf = self.pooled_mut();
        let limit = config.max_decompressed_bytes;
        codec::decompress_into(compression, payload, limit, magic::V2, buf).map_err(error)?;
        Ok(buf.len())
    }
}

/// How to read the records of a batch.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Layout {
    /// RecordBatch v2 records.
    V2,
    /// One uncompressed legacy message: the body is the whole message (log overhead included).
    LegacySingle,
    /// A decompressed legacy inner message set; absolute offset = `offset_base` + inner offset.
    LegacyWrapper {
        /// Added to each inner message's offset (0 for magic 0, whose inner offsets are absolute).
        offset_base: i64,
    },
}

/// One batch (v2) or one top-level legacy message (v0/v1, possibly a compressed wrapper).
/// Owns its decompression buffer (a pooled buffer) when compressed.
pub struct Batch<'a> {
    pub(crate) header: BatchHeader,
    pub(crate) layout: Layout,
    pub(crate) body: Body<'a>,
    /// A v2 batch's header bytes, from which the fields that decoding never reads (producer,
    /// sequence, leader epoch) are read when asked for rather than copied for every batch.
    /// `None` for legacy messages, which have none of them.
    pub(crate) v2_header: Option<&'a [u8; V2_HEADER_SIZE]>,
}

impl<'a> Batch<'a> {
    /// An empty batch for [`crate::v2::parse_into`] to fill (never handed out as is).
    pub(crate) fn placeholder() -> Self {
        Batch {
            header: BatchHeader::placeholder(),
            layout: Layout::V2,
            body: Body::Borrowed(&[], None),
            v2_header: None,
        }
    }

    /// Parses one whole v2 batch (`bytes` is exactly the batch, entry header included).
    pub(crate) fn parse_v2(
        bytes: &'a [u8],
        position: usize,
        config: &DecodeConfig,
        shared: Option<&'a Bytes>,
    ) -> Result<Batch<'a>, Error> {
        let mut batch = Batch::placeholder();
        batch.fill_v2(bytes, position, config, shared)?;
        Ok(batch)
    }

    /// [`Batch::parse_v2`], written field by field into this batch (whose old body is dropped
    /// first, so its pooled buffer is the one reused). Filling it in place saves moving the
    /// whole batch out through `Result` and `Option`, whose copy stalls on store forwarding.
    #[inline]
    pub(crate) fn fill_v2(
        &mut self,
        bytes: &'a [u8],
        position: usize,
        config: &DecodeConfig,
        shared: Option<&'a Bytes>,
    ) -> Result<(), Error> {
        v2::parse_header(bytes, position, config, &mut self.header)?;
        self.v2_header = bytes.first_chunk();
        let payload = &bytes[V2_HEADER_SIZE..];
        let records_len = self.body.decode_v2(&self.header, payload, config, shared)?;
        v2::check_record_count(&self.header, records_len)?;
        self.layout = Layout::V2;
        Ok(())
    }

    /// Parses one whole top-level legacy message (`bytes` is exactly the message).
    pub(crate) fn parse_legacy(
        bytes: &'a [u8],
        position: usize,
        config: &DecodeConfig,
        shared: Option<&'a Bytes>,
    ) -> Result<Batch<'a>, Error> {
        let LegacyBatch { header, wrapper } = legacy::parse(bytes, position, config)?;
        let (layout, body) = match wrapper {
            None => (Layout::LegacySingle, Body::Borrowed(bytes, shared)),
            Some(Wrapper { offset_base, inner }) => {
                (Layout::LegacyWrapper { offset_base }, Body::Pooled(inner))
            }
        };
        Ok(Batch {
            header,
            layout,
            body,
            v2_header: None,
        })
    }

    /// First offset of the batch.
    pub fn base_offset(&self) -> i64 {
        self.header.base_offset
    }
    /// `base_offset + lastOffsetDelta`: the last offset the batch covers (even if compaction
    /// removed that record).
    pub fn last_offset(&self) -> i64 {
        self.header.base_offset + self.header.last_offset_delta as i64
    }
    /// `last_offset + 1`: where the next fetch starts.
    pub fn next_offset(&self) -> i64 {
        self.last_offset() + 1
    }
    /// 2 for RecordBatch v2, 0 or 1 for legacy messages.
    pub fn magic(&self) -> u8 {
        self.header.magic
    }
    /// Compression codec of the batch.
    pub fn compression(&self) -> Compression {
        self.header.compression
    }
    /// What the timestamps mean.
    pub fn timestamp_type(&self) -> TimestampType {
        self.header.timestamp_type
    }
    /// Written by a transactional producer.
    pub fn is_transactional(&self) -> bool {
        self.header.attributes & attributes::TRANSACTIONAL != 0
    }
    /// Holds control records (transaction markers) rather than data.
    pub fn is_control(&self) -> bool {
        self.header.attributes & attributes::CONTROL != 0
    }
    /// The log cleaner set a delete horizon (stored in the base timestamp field).
    pub fn delete_horizon(&self) -> Option<i64> {
        (self.header.attributes & attributes::DELETE_HORIZON != 0)
            .then_some(self.header.base_timestamp)
    }
    /// Raw attributes (v2: 16 bits; legacy: the message's 8 bits).
    pub fn attributes(&self) -> i16 {
        self.header.attributes
    }
    /// Producer id, -1 when none or legacy.
    pub fn producer_id(&self) -> i64 {
        self.v2_header.map_or(-1, |header| {
            layout::be_i64(header, layout::v2::PRODUCER_ID_AT)
        })
    }
    /// Producer epoch, -1 when none or legacy.
    pub fn producer_epoch(&self) -> i16 {
        self.v2_header.map_or(-1, |header| {
            layout::be_i16(header, layout::v2::PRODUCER_EPOCH_AT)
        })
    }
    /// Sequence number of the first record, -1 when none or legacy.
    pub fn base_sequence(&self) -> i32 {
        self.v2_header.map_or(-1, |header| {
            layout::be_i32(header, layout::v2::BASE_SEQUENCE_AT)
        })
    }
    /// Leader epoch stamped by the broker, -1 when none or legacy.
    pub fn partition_leader_epoch(&self) -> i32 {
        self.v2_header.map_or(-1, |header| {
            layout::be_i32(header, layout::v2::PARTITION_LEADER_EPOCH_AT)
        })
    }
    /// Base timestamp (legacy v1: the message timestamp; v0: -1).
    pub fn base_timestamp(&self) -> i64 {
        self.header.base_timestamp
    }
    /// Max timestamp (legacy v1: the message timestamp; v0: -1).
    pub fn max_timestamp(&self) -> i64 {
        self.header.max_timestamp
    }
    /// Declared record count (the record iterator checks it against the records present).
    pub fn record_count(&self) -> u32 {
        self.header.record_count
    }
    /// Byte position of the batch in the walked input.
    pub fn position(&self) -> usize {
        self.header.position
    }
    /// Total bytes of the batch in the input (log overhead included).
    pub fn size(&self) -> usize {
        self.header.size
    }
    /// The bytes the records are read from (decompressed when the batch is compressed).
    pub fn records_bytes(&self) -> &[u8] {
        self.body.bytes()
    }

    /// Data records, in order. Empty for control batches (never yields a control record).
    #[inline]
    pub fn records(&self) -> Records<'_> {
        if self.is_control() {
            return Records::empty();
        }
        let (data, shared) = self.body.bytes_and_shared();
        let header = &self.header;
        match self.layout {
            Layout::V2 => Records::v2(V2Records::new(data, header), shared),
            Layout::LegacySingle => Records::legacy(LegacyRecords::new(data, header, 0), shared),
            Layout::LegacyWrapper { offset_base } => {
                Records::legacy(LegacyRecords::new(data, header, offset_base), shared)
            }
        }
    }

    /// Decodes every record, data or control, once: for a caller that must know the whole
    /// batch is sound before it uses any record (one that skips corrupt batches whole).
    pub fn check_records(&self) -> Result<(), Error> {
        let mut records = self.records();
        while let Some(record) = records.next_ref() {
            record?;
        }
        self.control_records()
            .try_for_each(|control| control.map(drop))
    }

    /// Control records (transaction markers). Empty for data batches.
    pub fn control_records(&self) -> ControlRecords<'_> {
        if self.is_control() && matches!(self.layout, Layout::V2) {
            ControlRecords::new(V2Records::new(self.body.bytes(), &self.header))
        } else {
            ControlRecords::empty()
        }
    }
}

impl std::fmt::Debug for Batch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("header", &self.header)
            .field("partition_leader_epoch", &self.partition_leader_epoch())
            .field("producer_id", &self.producer_id())
            .field("producer_epoch", &self.producer_epoch())
            .field("base_sequence", &self.base_sequence())
            .field("layout", &self.layout)
            .field("records_bytes", &self.body.bytes().len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_batch_stays_within_two_cache_lines() {
        // Moved once per batch out of the walk; past 128 bytes that move is a memcpy call.
        assert!(std::mem::size_of::<super::Batch<'_>>() <= 128);
    }
}
