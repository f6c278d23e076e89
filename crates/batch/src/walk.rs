//! Walking the concatenated batches of one buffer.

use bytes::Bytes;

use crate::batch::Batch;
use crate::batch_header::{BatchHeader, Compression, TimestampType};
use crate::control::ControlKind;
use crate::corrupt::{BatchSpan, OnCorrupt, Skipped};
use crate::layout::{self, magic, EntryHeader, ENTRY_HEADER_SIZE, MAGIC_AT};
use crate::{DecodeConfig, Error};

/// No entry of any magic is shorter than a magic 0 message, so a shorter length is corrupt
/// before the magic byte is even read.
const MIN_LENGTH: usize = layout::legacy::V0_MIN_LENGTH;

/// How a walk ended, once the iterator has returned `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkEnd {
    /// Every byte of the input was consumed by whole batches.
    Complete,
    /// A batch starts at `position` but the input ends inside it: normal at the end of a fetch
    /// response (fetch again from `base_offset`), truncation in a file.
    Partial {
        /// Byte position of the cut batch.
        position: usize,
        /// Its base offset, if its first 8 bytes are present.
        base_offset: Option<i64>,
        /// Its total size in bytes (log overhead included), if its length field is present.
        needed: Option<usize>,
    },
}

/// What one batch holds, as far as counting and copying need: read from a v2 header without
/// decompressing the records ([`BatchWalk::next_summary`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchSummary {
    /// First offset the batch covers.
    pub base_offset: i64,
    /// Last offset the batch covers (compaction may have removed records before it).
    pub last_offset: i64,
    /// Data records in the batch; 0 for a control batch.
    pub data_records: u32,
    /// Records the header declares, data or control (legacy: the messages the entry holds),
    /// whatever `data_records` counts. Below `last_offset - base_offset + 1` when compaction
    /// removed records from the batch.
    pub record_count: u32,
    /// 2 for RecordBatch v2, 0 or 1 for a legacy message.
    pub magic: u8,
    /// What the records' timestamps mean (LogAppendTime: the broker's, stamped on the batch).
    pub timestamp_type: TimestampType,
    /// The codec of the records.
    pub compression: Compression,
    /// Producer id (-1 when none; legacy batches have none).
    pub producer_id: i64,
    /// Part of a transaction.
    pub transactional: bool,
    /// A control batch (transaction markers), whose records are never data.
    pub control: bool,
    /// What a control batch's last marker says.
    pub marker: Option<ControlKind>,
    /// Byte position of the batch in the input.
    pub position: usize,
    /// Its size in bytes, log overhead included.
    pub size: usize,
}

/// Where a walk is, in one field so that each step tests one value.
#[derive(Clone, Copy, Debug)]
enum State {
    Walking,
    /// Stopped on an error. The failed batch's span when its length and magic were sound, so
    /// [`BatchWalk::skip_failed`] can step over it; none when the next boundary is unknown.
    Failed(Option<BatchSpan>),
    /// Reached the end of the input, or a batch the input cuts off.
    Ended(WalkEnd),
}

/// Walks the concatenated batches (v2 batches or legacy v0/v1 messages) in one buffer: a fetch
/// response's `records` field, or a whole segment file.
///
/// Yields one [`Batch`] per v2 batch or top-level legacy message. After an error the walk
/// stops and [`BatchWalk::end`] stays `None`, unless [`BatchWalk::skip_failed`] steps over
/// the failed batch.
///
/// Two ways to read it: as an [`Iterator`] of owned batches, or with [`BatchWalk::next_ref`],
/// which parses each batch in place and lends it out; the second is the hot path (see there).
pub struct BatchWalk<'a> {
    input: &'a [u8],
    shared: Option<&'a Bytes>,
    config: &'a DecodeConfig,
    position: usize,
    state: State,
    /// The batch [`BatchWalk::next_ref`] fills in place.
    current: Batch<'a>,
}

impl<'a> BatchWalk<'a> {
    /// Walks `input`; records borrow from it (or from a batch's decompression buffer).
    pub fn new(input: &'a [u8], config: &'a DecodeConfig) -> Self {
        BatchWalk {
            input,
            shared: None,
            config,
            position: 0,
            state: State::Walking,
            current: Batch::placeholder(),
        }
    }

    /// Same as [`BatchWalk::new`], but records of uncompressed batches can also be handed out
    /// as owned [`Bytes`] without a copy ([`Record::key_bytes`](crate::Record::key_bytes)).
    pub fn new_shared(input: &'a Bytes, config: &'a DecodeConfig) -> Self {
        let mut walk = BatchWalk::new(input.as_ref(), config);
        walk.shared = Some(input);
        walk
    }

    /// Byte position (from the start of input) of the next unread batch.
    pub fn position(&self) -> usize {
        self.position
    }

    /// After the iterator returned `None`: how the walk ended. `None` while walking, or if the
    /// walk stopped on an error.
    pub fn end(&self) -> Option<WalkEnd> {
        match self.state {
            State::Ended(end) => Some(end),
            State::Walking | State::Failed(_) => None,
        }
    }

    /// For segment files, where every batch must be whole: `Ok` if the walk consumed the
    /// whole input, [`Error::Truncated`] if it ended on a partial batch. Call after `None`.
    pub fn end_of_file(&self) -> Result<(), Error> {
        match self.state {
            State::Ended(WalkEnd::Partial {
                position,
                base_offset,
                needed,
            }) => Err(Error::Truncated {
                position,
                offset: base_offset,
                available: self.input.len() - position,
                needed,
            }),
            _ => Ok(()),
        }
    }

    /// The next batch, parsed in place and lent until the next call; `None` at the end (see
    /// [`BatchWalk::end`]) or after the first error. Yields exactly what the [`Iterator`]
    /// would. Handing a `Batch` out by value through `Option<Result<..>>` copies it twice and
    /// stalls on store forwarding, a large share of a one-record batch's decode time.
    ///
    /// ```
    /// # use krec_batch::{BatchWalk, DecodeConfig};
    /// # fn count(input: &[u8]) -> Result<u64, krec_batch::Error> {
    /// let config = DecodeConfig::default();
    /// let mut walk = BatchWalk::new(input, &config);
    /// let mut records = 0;
    /// while let Some(batch) = walk.next_ref() {
    ///     records += u64::from(batch?.record_count());
    /// }
    /// walk.end_of_file()?;
    /// # Ok(records)
    /// # }
    /// ```
    #[inline]
    pub fn next_ref(&mut self) -> Option<Result<&Batch<'a>, Error>> {
        if !matches!(self.state, State::Walking) {
            return None;
        }
        let bytes = match self.frame()? {
            Ok(bytes) => bytes,
            Err(e) => return Some(Err(self.fail(e, None))),
        };
        let (position, shared) = (self.position, self.shared);
        let filled = match bytes[MAGIC_AT] {
            magic::V2 => self.current.fill_v2(bytes, position, self.config, shared),
            // Legacy batches decompress into a buffer of their own.
            _ => Batch::parse_legacy(bytes, position, self.config, shared)
                .map(|batch| self.current = batch),
        };
        match filled {
            Ok(()) => {
                self.position += bytes.len();
                Some(Ok(&self.current))
            }
            Err(e) => Some(Err(self.fail(e, Some(bytes)))),
        }
    }

    /// Takes the batch [`BatchWalk::next_ref`] lent last, for a caller that keeps batches
    /// (an iterator of owned batches built on the in-place walk); a placeholder stays behind.
    pub fn take_lent(&mut self) -> Batch<'a> {
        std::mem::replace(&mut self.current, Batch::placeholder())
    }

    /// The next batch's summary: a v2 data batch's header is checked (CRC included) and read,
    /// its records left compressed; a control batch's marker and a legacy message's records
    /// (which no header counts) are decoded. The same errors and end as [`BatchWalk::next_ref`].
    pub fn next_summary(&mut self) -> Option<Result<BatchSummary, Error>> {
        if !matches!(self.state, State::Walking) {
            return None;
        }
        let bytes = match self.frame()? {
            Ok(bytes) => bytes,
            Err(e) => return Some(Err(self.fail(e, None))),
        };
        match self.summarize(bytes) {
            Ok(summary) => {
                self.position += summary.size;
                Some(Ok(summary))
            }
            Err(e) => Some(Err(self.fail(e, Some(bytes)))),
        }
    }

    /// Stops the walk on `error`, met in `entry` (whole, at the walk's position) or in front
    /// of any whole entry.
    fn fail(&mut self, error: Error, entry: Option<&[u8]>) -> Error {
        let span = entry.map(|entry| BatchSpan::of_entry(entry, self.position));
        self.state = State::Failed(span);
        error
    }

    /// After the walk stopped on `error`: skips the failed batch and walks on from the next
    /// one if `on_corrupt` says so and the batch's length could be trusted (its bytes are all
    /// present and its magic is known); otherwise gives `error` back and stays stopped.
    pub fn skip_failed(&mut self, on_corrupt: OnCorrupt, error: Error) -> Result<Skipped, Error> {
        let span = match self.state {
            State::Failed(span) => span,
            State::Walking | State::Ended(_) => None,
        };
        let skipped = on_corrupt.decide(error, span)?;
        self.position = skipped.span.end();
        self.state = State::Walking;
        Ok(skipped)
    }

    fn summarize(&mut self, bytes: &'a [u8]) -> Result<BatchSummary, Error> {
        let position = self.position;
        if bytes[MAGIC_AT] == magic::V2 {
            let mut header = BatchHeader::placeholder();
            crate::v2::parse_header(bytes, position, self.config, &mut header)?;
            if header.attributes & layout::v2::attributes::CONTROL == 0 {
                let producer_id = layout::be_i64(bytes, layout::v2::PRODUCER_ID_AT);
                return Ok(BatchSummary {
                    base_offset: header.base_offset,
                    last_offset: header.base_offset + i64::from(header.last_offset_delta),
                    data_records: header.record_count,
                    record_count: header.record_count,
                    magic: header.magic,
                    timestamp_type: header.timestamp_type,
                    compression: header.compression,
                    producer_id,
                    transactional: header.attributes & layout::v2::attributes::TRANSACTIONAL != 0,
                    control: false,
                    marker: None,
                    position,
                    size: bytes.len(),
                });
            }
        }
        // Control batches hold one small marker; legacy messages have no record count.
        let batch = match bytes[MAGIC_AT] {
            magic::V2 => Batch::parse_v2(bytes, position, self.config, self.shared)?,
            _ => Batch::parse_legacy(bytes, position, self.config, self.shared)?,
        };
        BatchSummary::counting(&batch, bytes.len(), |_| true)
    }

    /// The bytes of the next whole batch, checked for length and magic; `None` (with
    /// [`BatchWalk::end`] set) when the input ends at or inside it.
    #[inline(always)]
    fn frame(&mut self) -> Option<Result<&'a [u8], Error>> {
        let position = self.position;
        let rest = &self.input[position..];
        if rest.is_empty() {
            self.state = State::Ended(WalkEnd::Complete);
            return None;
        }
        let Some(head) = rest.first_chunk::<ENTRY_HEADER_SIZE>() else {
            self.state = State::Ended(WalkEnd::Partial {
                position,
                base_offset: EntryHeader::peek_base_offset(rest),
                needed: None,
            });
            return None;
        };
        let EntryHeader {
            base_offset: offset,
            length,
        } = EntryHeader::read(head);
        if length < MIN_LENGTH as i32 {
            return Some(Err(Error::BatchTooSmall {
                position,
                offset,
                length,
                minimum: MIN_LENGTH,
            }));
        }
        let size = ENTRY_HEADER_SIZE + length as usize;
        if size > self.config.max_batch_bytes {
            return Some(Err(Error::BatchTooLarge {
                position,
                offset,
                size,
                limit: self.config.max_batch_bytes,
            }));
        }
        if rest.len() < size {
            self.state = State::Ended(WalkEnd::Partial {
                position,
                base_offset: Some(offset),
                needed: Some(size),
            });
            return None;
        }
        let bytes = &rest[..size];
        match bytes[MAGIC_AT] {
            magic::V0..=magic::V2 => Some(Ok(bytes)),
            other => Some(Err(Error::UnsupportedMagic {
                position,
                offset,
                magic: other as i8,
            })),
        }
    }

    fn next_batch(&mut self) -> Option<Result<Batch<'a>, Error>> {
        let bytes = match self.frame()? {
            Ok(bytes) => bytes,
            Err(e) => return Some(Err(self.fail(e, None))),
        };
        let (position, shared) = (self.position, self.shared);
        let result = match bytes[MAGIC_AT] {
            magic::V2 => Batch::parse_v2(bytes, position, self.config, shared),
            _ => Batch::parse_legacy(bytes, position, self.config, shared),
        };
        match result {
            Ok(batch) => {
                self.position = position + bytes.len();
                Some(Ok(batch))
            }
            Err(e) => Some(Err(self.fail(e, Some(bytes)))),
        }
    }
}

impl BatchSummary {
    /// The summary of a decoded batch `size` bytes long, its data records counted where
    /// `counts` says so (a filter's matches, say). Every record is decoded and checked.
    pub fn counting(
        batch: &Batch<'_>,
        size: usize,
        mut counts: impl FnMut(&crate::Record<'_>) -> bool,
    ) -> Result<Self, Error> {
        let mut marker = None;
        for control in batch.control_records() {
            marker = Some(control?.kind);
        }
        let mut data_records = 0u32;
        for record in batch.records() {
            data_records += u32::from(counts(&record?));
        }
        Ok(Self {
            base_offset: batch.base_offset(),
            last_offset: batch.last_offset(),
            data_records,
            record_count: batch.record_count(),
            magic: batch.magic(),
            timestamp_type: batch.timestamp_type(),
            compression: batch.compression(),
            producer_id: batch.producer_id(),
            transactional: batch.is_transactional(),
            control: batch.is_control(),
            marker,
            position: batch.position(),
            size,
        })
    }
}

impl<'a> Iterator for BatchWalk<'a> {
    type Item = Result<Batch<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if !matches!(self.state, State::Walking) {
            return None;
        }
        self.next_batch()
    }
}

impl std::iter::FusedIterator for BatchWalk<'_> {}
