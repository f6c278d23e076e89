//! Control records: the transaction markers of control batches.

use crate::batch_header::TimestampType;
use crate::index::{Span, INLINE_HEADERS};
use crate::layout;
use crate::v2::V2Records;
use crate::Error;

/// What a control record marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlKind {
    /// Type 0: the transaction was aborted.
    Abort,
    /// Type 1: the transaction was committed.
    Commit,
    /// Any other type (leader change, snapshot markers...), with its type number.
    Other(i16),
}

/// One control record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlRecord {
    /// Absolute offset: control records take an offset like data records.
    pub offset: i64,
    /// Timestamp (batch max timestamp for LogAppendTime batches).
    pub timestamp: i64,
    /// Marker type.
    pub kind: ControlKind,
    /// Version of the control record key.
    pub version: i16,
    /// Transaction coordinator epoch, for commit and abort markers.
    pub coordinator_epoch: Option<i32>,
}

/// The control records of a control batch; empty for data batches.
pub struct ControlRecords<'b> {
    inner: Option<V2Records<'b>>,
}

impl<'b> ControlRecords<'b> {
    pub(crate) fn new(records: V2Records<'b>) -> Self {
        ControlRecords {
            inner: Some(records),
        }
    }
    pub(crate) fn empty() -> Self {
        ControlRecords { inner: None }
    }
}

impl Iterator for ControlRecords<'_> {
    type Item = Result<ControlRecord, Error>;

    /// Stops after the first error, like the data record iterator.
    fn next(&mut self) -> Option<Self::Item> {
        let item = self.next_unfused();
        if matches!(item, Some(Err(_))) {
            self.inner = None;
        }
        item
    }
}

impl ControlRecords<'_> {
    fn next_unfused(&mut self) -> Option<Result<ControlRecord, Error>> {
        let records = self.inner.as_mut()?;
        let header = *records.header();
        let mut scratch = [Span::default(); INLINE_HEADERS];
        let (index, raw) = match records.next_raw(&mut scratch)? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let invalid = |reason| Error::InvalidControlRecord {
            position: header.position,
            offset: header.base_offset,
            record: index,
            reason,
        };
        // Key: version (i16) then type (i16), as the Java client's ControlRecordType reads it.
        let key = match raw.key() {
            Some(k) if k.len() >= 4 => k,
            Some(_) => return Some(Err(invalid("key shorter than 4 bytes"))),
            None => return Some(Err(invalid("null key"))),
        };
        let version = layout::be_i16(key, 0);
        if version < 0 {
            return Some(Err(invalid("negative key version")));
        }
        let kind = match layout::be_i16(key, 2) {
            0 => ControlKind::Abort,
            1 => ControlKind::Commit,
            other => ControlKind::Other(other),
        };
        // Commit/abort value: EndTransactionMarker = version (i16), coordinator epoch (i32).
        let coordinator_epoch = match kind {
            ControlKind::Abort | ControlKind::Commit => match raw.value() {
                Some(v) if v.len() >= 6 => Some(layout::be_i32(v, 2)),
                _ => {
                    return Some(Err(invalid(
                        "end transaction marker value shorter than 6 bytes",
                    )))
                }
            },
            ControlKind::Other(_) => None,
        };
        let timestamp = match header.timestamp_type {
            TimestampType::LogAppendTime => header.max_timestamp,
            _ => header.base_timestamp.wrapping_add(raw.timestamp_delta),
        };
        Some(Ok(ControlRecord {
            offset: header.base_offset + raw.offset_delta as i64,
            timestamp,
            kind,
            version,
            coordinator_epoch,
        }))
    }
}
