//! One batch (v2) or one top-level legacy message, with its records' bytes.

use bytes::Bytes;

use crate::buffer::PooledBuf;
use crate::control::ControlRecords;
use crate::layout::v2::{attributes, HEADER_SIZE as V2_HEADER_SIZE};
use crate::layout::{self, magic};
use crate::legacy::LegacyRecords;
use crate::record::Records;
use crate::v2::V2Records;
use crate::{Compression, TimestampType};

/// The caller's decompression buffer, if the walk was lent one
/// ([`BatchWalk::with_buffer`](crate::BatchWalk::with_buffer)). While a batch body holds the
/// buffer, this holds an empty one in its place.
pub(crate) type CallerBuffer<'a> = Option<&'a mut PooledBuf>;

/// Where the records' bytes live.
pub(crate) enum Body<'a> {
    /// Uncompressed: a slice of the walked input, and that input as shared `Bytes` when the
    /// walk was given them (kept here rather than in [`Batch`] so a batch fits in 128 bytes).
    Borrowed(&'a [u8], Option<&'a Bytes>),
    /// Decompressed into a buffer from the thread's pool, or the caller's, moved in for as
    /// long as the walk's batches are compressed; a pool's goes back to the pool on drop.
    ///
    /// The caller's buffer is moved in rather than borrowed so that the hot path knows one
    /// kind of buffer: a third variant borrowing it made each match on the body cost more, 19
    /// instructions a batch in 100-batch LZ4 walks.
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
    /// A buffer it held goes back to the caller, if the walk has one, or the thread's pool.
    #[inline(always)]
    pub(crate) fn set_borrowed(
        &mut self,
        bytes: &'a [u8],
        shared: Option<&'a Bytes>,
        caller: &mut CallerBuffer<'_>,
    ) {
        match self {
            Body::Borrowed(old_bytes, old_shared) => {
                *old_bytes = bytes;
                *old_shared = shared;
            }
            Body::Pooled(_) => {
                self.return_buffer(caller);
                *self = Body::Borrowed(bytes, shared);
            }
        }
    }

    /// Moves a buffer the body holds back into the caller's place (whatever was there, the
    /// empty stand-in or a buffer of its own, is what the body drops). Without a caller's
    /// buffer, nothing: the body's drop gives its buffer back to the pool.
    #[inline(always)]
    pub(crate) fn return_buffer(&mut self, caller: &mut CallerBuffer<'_>) {
        if let (Body::Pooled(buf), Some(caller)) = (self, caller) {
            swap_buffers(buf, caller);
        }
    }

    /// The buffer to decompress into: the one the body has, else the caller's, else one from
    /// the thread's pool.
    #[inline]
    pub(crate) fn pooled_mut(&mut self, caller: &mut CallerBuffer<'_>) -> &mut PooledBuf {
        if let Body::Borrowed(..) = self {
            *self = Body::Pooled(match caller {
                Some(caller) => std::mem::replace(*caller, PooledBuf::empty()),
                None => PooledBuf::take(),
            });
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

/// Out of line, so that the test before it is all that the walk's drop adds to every walk
/// (inlined, the swap made the drop a call: 17 instructions more on a one-record uncompressed
/// batch).
#[inline(never)]
fn swap_buffers(a: &mut PooledBuf, b: &mut PooledBuf) {
    std::mem::swap(a, b);
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

/// Header fields of a batch, read once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Header {
    pub(crate) base_offset: i64,
    pub(crate) last_offset_delta: i32,
    pub(crate) magic: u8,
    pub(crate) attributes: i16,
    pub(crate) compression: Compression,
    pub(crate) timestamp_type: TimestampType,
    pub(crate) base_timestamp: i64,
    pub(crate) max_timestamp: i64,
    pub(crate) record_count: u32,
    pub(crate) position: usize,
    pub(crate) size: usize,
}

/// The `N` bytes at `at` of a v2 header; every caller's field lies inside the header.
#[inline(always)]
fn field<const N: usize>(header: &[u8; V2_HEADER_SIZE], at: usize) -> [u8; N] {
    let mut bytes = [0; N];
    bytes.copy_from_slice(&header[at..at + N]);
    bytes
}

/// One batch (v2) or one top-level legacy message (v0/v1, possibly a compressed wrapper).
/// Owns its decompression buffer (a pooled buffer) when compressed.
pub struct Batch<'a> {
    pub(crate) header: Header,
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
            header: Header {
                base_offset: 0,
                last_offset_delta: 0,
                magic: magic::V2,
                attributes: 0,
                compression: Compression::None,
                timestamp_type: TimestampType::CreateTime,
                base_timestamp: 0,
                max_timestamp: 0,
                record_count: 0,
                position: 0,
                size: 0,
            },
            layout: Layout::V2,
            body: Body::Borrowed(&[], None),
            v2_header: None,
        }
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
            i64::from_be_bytes(field(header, layout::v2::PRODUCER_ID_AT))
        })
    }
    /// Producer epoch, -1 when none or legacy.
    pub fn producer_epoch(&self) -> i16 {
        self.v2_header.map_or(-1, |header| {
            i16::from_be_bytes(field(header, layout::v2::PRODUCER_EPOCH_AT))
        })
    }
    /// Sequence number of the first record, -1 when none or legacy.
    pub fn base_sequence(&self) -> i32 {
        self.v2_header.map_or(-1, |header| {
            i32::from_be_bytes(field(header, layout::v2::BASE_SEQUENCE_AT))
        })
    }
    /// Leader epoch stamped by the broker, -1 when none or legacy.
    pub fn partition_leader_epoch(&self) -> i32 {
        self.v2_header.map_or(-1, |header| {
            i32::from_be_bytes(field(header, layout::v2::PARTITION_LEADER_EPOCH_AT))
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
        match self.layout {
            Layout::V2 => Records::v2(V2Records::new(self)),
            Layout::LegacySingle | Layout::LegacyWrapper { .. } => {
                Records::legacy(LegacyRecords::new(self))
            }
        }
    }

    /// Control records (transaction markers). Empty for data batches.
    pub fn control_records(&self) -> ControlRecords<'_> {
        if self.is_control() && matches!(self.layout, Layout::V2) {
            ControlRecords::new(V2Records::new(self))
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
