//! What a transactional producer asks of the accumulator: its identity, whether its batches
//! wait for the coordinator's next epoch, and failing the batches of a doomed transaction and
//! those an abort leaves unsent.

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

    /// A transactional producer whose batch failed (the transaction is doomed) sends nothing
    /// until its abort brings the next epoch: every batch not in flight fails at once, as
    /// Java's Sender aborts the undrained batches, rather than wait for `delivery.timeout.ms`.
    pub(super) fn fail_doomed_transaction(&mut self) {
        let Some(transactional_id) = self.identity.transactional_id() else {
            return;
        };
        let error = Error::TransactionAbortable {
            transactional_id: transactional_id.to_owned(),
            detail: "an earlier record of the transaction failed (its Delivery says why)"
                .to_owned(),
        };
        self.fail_unsent(&error, true);
    }

    /// Why the producer stopped (a fenced Produce, a refused ACL, closed), if it did.
    pub(crate) fn stopped_reason(&self) -> Option<&str> {
        self.stopped.as_deref()
    }
}
