//! The producer fields of a v2 batch header, which the writer stamps on a new batch and
//! [`restamp`](crate::restamp) on a fetched one.

use crate::layout::v2;

/// A batch's producer id, epoch, base sequence and transactional bit: who wrote it, for the
/// broker's idempotence and transaction checks. [`ProducerFields::NONE`] is a producer
/// without idempotence (all -1, not transactional).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProducerFields {
    /// Producer id (from InitProducerId), -1 for none.
    pub producer_id: i64,
    /// Producer epoch, -1 for none.
    pub producer_epoch: i16,
    /// Sequence number of the batch's first record, -1 for none.
    pub base_sequence: i32,
    /// Written inside a transaction.
    pub transactional: bool,
}

impl ProducerFields {
    /// No producer id: a producer without idempotence.
    pub const NONE: ProducerFields = ProducerFields {
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        transactional: false,
    };

    /// An idempotent producer's fields (not transactional).
    pub fn idempotent(producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        ProducerFields {
            producer_id,
            producer_epoch,
            base_sequence,
            transactional: false,
        }
    }
}

impl Default for ProducerFields {
    fn default() -> Self {
        ProducerFields::NONE
    }
}

impl ProducerFields {
    /// Writes these fields into a v2 batch header, the transactional bit into its attributes.
    pub(crate) fn stamp(self, header: &mut [u8; v2::HEADER_SIZE]) {
        put(header, v2::PRODUCER_ID_AT, &self.producer_id.to_be_bytes());
        put(
            header,
            v2::PRODUCER_EPOCH_AT,
            &self.producer_epoch.to_be_bytes(),
        );
        put(
            header,
            v2::BASE_SEQUENCE_AT,
            &self.base_sequence.to_be_bytes(),
        );
        let at = v2::ATTRIBUTES_AT;
        let mut attributes = i16::from_be_bytes([header[at], header[at + 1]]);
        if self.transactional {
            attributes |= v2::attributes::TRANSACTIONAL;
        } else {
            attributes &= !v2::attributes::TRANSACTIONAL;
        }
        put(header, at, &attributes.to_be_bytes());
    }
}

/// Copies `bytes` into `header` at `at`.
pub(crate) fn put(header: &mut [u8; v2::HEADER_SIZE], at: usize, bytes: &[u8]) {
    header[at..at + bytes.len()].copy_from_slice(bytes);
}
