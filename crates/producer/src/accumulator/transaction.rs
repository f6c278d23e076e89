//! What a transactional producer asks of the accumulator: its identity, whether its batches
//! wait for the coordinator's next epoch, and failing the batches an abort leaves unsent.

use krec_client::producer_id::ProducerIdentity;

use super::Accumulator;
use crate::Error;

impl Accumulator {
    /// The producer id and epoch batches carry now, if any.
    pub(crate) fn producer_identity(&self) -> Option<ProducerIdentity> {
        self.identity.current()
    }

    /// A transactional producer's sequences broke: its batches wait for the next epoch.
    pub(crate) fn needs_new_epoch(&self) -> bool {
        self.identity.needs_new_epoch()
    }

    /// A transaction aborts: every batch not in flight fails with `error` (Java's
    /// abortUndrainedBatches); those in flight settle with their answers.
    pub(crate) fn fail_waiting(&mut self, error: &Error) {
        self.fail_unsent(error, true);
    }

    /// Why the producer stopped (a fenced Produce, a refused ACL, closed), if it did.
    pub(crate) fn stopped_reason(&self) -> Option<&str> {
        self.stopped.as_deref()
    }
}
