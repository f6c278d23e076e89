//! Batches copied as they are (`Producer::send_batch`): a batch a broker stored joins its
//! partition's queue whole, behind the open batch (closed first, so what was sent before it
//! stays before it). From there it is a batch like the producer's own: sequences, retries in
//! order, epoch bumps (re-stamped with the rest), expiry, flush and stats. Only a broker's
//! MESSAGE_TOO_LARGE differs: a copied batch is never split, it fails.
//!
//! Its bytes are copied once, into a buffer of the per-thread pool the producer's own batches
//! use, where its producer fields and CRC are re-stamped (krec-batch's `restamp`: the records'
//! bytes are neither read nor changed).

use std::time::Instant;

use bytes::Bytes;
use krec_batch::PooledBuf;

use super::{Accumulator, Appended, ClosedBatch, Closer, TopicState};
use crate::copied::CheckedBatch;
use crate::delivery::{BatchCompletion, Delivery};
use crate::Error;

/// Said with MESSAGE_TOO_LARGE for a copied batch: why it was not split.
pub(super) const NOT_SPLIT: &str =
    "; a batch sent with send_batch goes whole: check it against the topic's max.message.bytes";

impl Accumulator {
    /// Queues the checked batch on its partition, re-stamped with the partition's next
    /// sequences; `None` when the topic is not in the metadata (yet). `held` bytes of
    /// `buffer.memory` were taken for it and go with it.
    pub(crate) fn append_copied(
        &mut self,
        batch: &CheckedBatch<'_>,
        held: u64,
        now: Instant,
    ) -> Result<Option<Appended>, Error> {
        if let Some(reason) = &self.stopped {
            return Err(Error::Stopped {
                reason: reason.clone(),
            });
        }
        let Some(state) = self.topics.get_mut(batch.topic) else {
            return Ok(None);
        };
        let TopicState {
            name: topic,
            partitions,
            ..
        } = state;
        let count = partitions.len() as i32;
        let at = usize::try_from(batch.partition).ok();
        let Some(queue) = at.and_then(|at| partitions.get_mut(at)) else {
            return Err(Error::UnknownPartition {
                topic: batch.topic.to_owned(),
                partition: batch.partition,
                count,
            });
        };
        let mut closer = Closer {
            limits: &self.limits,
            identity: &mut self.identity,
            memory: &self.memory,
            counters: &self.counters,
            topic,
            partition: batch.partition,
        };
        queue.close_open(&mut closer);
        let fields = closer
            .identity
            .next_batch(topic, batch.partition, batch.records);
        let mut copy = PooledBuf::take();
        copy.extend_from_slice(batch.bytes);
        if let Err(error) = krec_batch::restamp(&mut copy, 0, fields) {
            // Checked before: never seen. Its sequences are taken, so the next batches need a
            // new epoch, as after any batch that failed.
            self.bump_pending |= self.identity.is_idempotent();
            return Err(Error::BatchRefused {
                topic: batch.topic.to_owned(),
                partition: batch.partition,
                reason: crate::error::BatchRefusal::Malformed {
                    detail: error.to_string(),
                },
            });
        }
        let completion = BatchCompletion::new(topic.clone(), batch.partition);
        queue.closed.push_back(ClosedBatch {
            bytes: Bytes::from_owner(copy),
            completion: completion.clone(),
            created: now,
            held,
            records: batch.records,
            retries: 0,
            last_error: None,
            copied: true,
        });
        Ok(Some(Appended {
            delivery: Delivery::new(completion, 0, batch.timestamp),
            wake_senders: true,
        }))
    }
}

#[cfg(test)]
mod tests;
