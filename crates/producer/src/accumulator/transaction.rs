//! What a transactional producer asks of the accumulator: its identity, whether its batches
//! wait for the coordinator's next epoch, and failing the batches an abort leaves unsent.

use krec_batch::BatchWriter;
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
        let (mut held, mut records) = (0, 0);
        for state in self.topics.values_mut() {
            for queue in &mut state.partitions {
                if let Some(open) = queue.open.take() {
                    records += queue.writer.as_ref().map_or(0, BatchWriter::record_count);
                    if let Some(writer) = queue.writer.as_mut() {
                        writer.reset();
                    }
                    held += open.held;
                    open.completion.complete(Err(error.clone()));
                }
                for batch in queue.closed.drain(queue.in_flight..) {
                    records += batch.records.max(0) as usize;
                    held += batch.held;
                    batch.completion.complete(Err(error.clone()));
                }
                if queue.in_flight == 0 {
                    queue.resend = false;
                }
            }
        }
        self.counters.failed(records);
        self.release(held);
    }

    /// Why the producer stopped (a fenced Produce, a refused ACL, closed), if it did.
    pub(crate) fn stopped_reason(&self) -> Option<&str> {
        self.stopped.as_deref()
    }
}
