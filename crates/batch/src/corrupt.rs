//! What to do with a batch that fails its checks: stop (the default), or skip it whole and
//! say so. [`OnCorrupt::decide`] is the one place that choice is made, so a program's own
//! per-record errors (a schema that does not decode, say) can follow the same policy.

use std::str::FromStr;

use crate::batch::Batch;
use crate::layout::{self, magic, ENTRY_HEADER_SIZE, MAGIC_AT};

/// The policy for a corrupt batch (a CRC mismatch, a payload that does not decompress, a
/// record count or record framing that lies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnCorrupt {
    /// Stop with the batch's error (the Java consumer's behaviour).
    #[default]
    Stop,
    /// Step over the whole batch, to be reported by the caller, and go on with the next.
    Skip,
}

impl FromStr for OnCorrupt {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "stop" => Ok(Self::Stop),
            "skip" => Ok(Self::Skip),
            other => Err(format!("{other:?}: expected stop or skip")),
        }
    }
}

/// Where a batch lies and what its header says it covers, read from the fields that locate it
/// (base offset, length, last offset delta) without trusting the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchSpan {
    /// Byte position of the batch in the walked input.
    pub position: usize,
    /// Its size in bytes, log overhead included: the next batch starts at `position + size`.
    pub size: usize,
    /// First offset the header names.
    pub base_offset: i64,
    /// Last offset the header names (a legacy message: its own offset).
    pub last_offset: i64,
}

impl BatchSpan {
    /// The span of `entry`, one whole entry (length and magic already checked) at `position`.
    pub fn of_entry(entry: &[u8], position: usize) -> Self {
        let base_offset = layout::be_i64(entry, layout::BASE_OFFSET_AT);
        let last_offset = match entry.get(MAGIC_AT) {
            Some(&magic::V2) if entry.len() >= layout::v2::HEADER_SIZE => base_offset
                .saturating_add(layout::be_i32(entry, layout::v2::LAST_OFFSET_DELTA_AT).into()),
            _ => base_offset,
        };
        Self {
            position,
            size: entry.len().max(ENTRY_HEADER_SIZE),
            base_offset,
            last_offset,
        }
    }

    /// The span of a batch that parsed but whose records do not.
    pub fn of_batch(batch: &Batch<'_>) -> Self {
        Self {
            position: batch.position(),
            size: batch.size(),
            base_offset: batch.base_offset(),
            last_offset: batch.last_offset(),
        }
    }

    /// Byte position of the batch after this one.
    pub fn end(&self) -> usize {
        self.position + self.size
    }
}

/// A batch skipped under [`OnCorrupt::Skip`]: where it lies and why it was skipped.
#[derive(Debug)]
pub struct Skipped<E = crate::Error> {
    /// Where the batch lies.
    pub span: BatchSpan,
    /// What was wrong with it.
    pub error: E,
}

impl OnCorrupt {
    /// Whether to go on past `error`, found in the batch at `span`: `Ok` to skip it (then the
    /// caller reports it), `Err(error)` to stop. No span (the batch's length cannot be trusted,
    /// so the next batch cannot be found) always stops.
    pub fn decide<E>(self, error: E, span: Option<BatchSpan>) -> Result<Skipped<E>, E> {
        match (self, span) {
            (OnCorrupt::Skip, Some(span)) => Ok(Skipped { span, error }),
            _ => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_skip_with_a_span_goes_on() {
        let span = BatchSpan {
            position: 10,
            size: 80,
            base_offset: 5,
            last_offset: 9,
        };
        assert_eq!(
            OnCorrupt::Stop.decide("bad", Some(span)).unwrap_err(),
            "bad"
        );
        assert_eq!(OnCorrupt::Skip.decide("bad", None).unwrap_err(), "bad");
        let skipped = OnCorrupt::Skip.decide("bad", Some(span)).unwrap();
        assert_eq!((skipped.span.end(), skipped.error), (90, "bad"));
        assert_eq!("skip".parse(), Ok(OnCorrupt::Skip));
        assert!("Skip".parse::<OnCorrupt>().is_err());
    }
}
