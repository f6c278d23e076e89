//! The one owner of the producer id, its epoch and the sequence of every partition, as the
//! Java client's TransactionManager is: the accumulator asks it for each finished batch's
//! producer fields, and for an epoch bump (KIP-360) when a partition's sequences broke; at
//! the last epoch it waits for a new producer id instead (Java's resetIdempotentProducerId),
//! which a sender asks InitProducerId for. A transactional producer's owner is driven by its
//! transaction coordinator instead (crate::transaction): its batches carry the transactional
//! bit, and a broken sequence dooms the transaction: nothing more goes out (what waits fails
//! at once) until the abort brings the coordinator's next epoch.

use std::collections::HashMap;
use std::sync::Arc;

use krec_batch::ProducerFields;
use krec_client::producer_id::ProducerIdentity;

/// Producer id, epoch and next sequence per partition; or none of it without idempotence.
#[derive(Debug)]
pub(crate) struct Identity {
    current: Option<ProducerIdentity>,
    renewal: Renewal,
    next_sequence: HashMap<(Arc<str>, i32), i32>,
    /// `transactional.id`, if set: batches carry the transactional bit and epochs come from
    /// the transaction coordinator.
    transactional_id: Option<Arc<str>>,
}

/// Where a new producer id stands once the epoch is exhausted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Renewal {
    /// The current id serves.
    NotNeeded,
    /// The epoch ran out: nothing goes out until a new id comes.
    Needed,
    /// A sender is asking InitProducerId for it.
    Asked,
}

/// The epoch cannot go higher: a new producer id is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EpochExhausted;

impl Identity {
    /// An idempotent producer's identity, as InitProducerId gave it.
    pub(crate) fn idempotent(identity: ProducerIdentity) -> Self {
        Identity {
            current: Some(identity),
            renewal: Renewal::NotNeeded,
            next_sequence: HashMap::new(),
            transactional_id: None,
        }
    }

    /// A transactional producer's identity: none until `init_transactions` hands it the
    /// coordinator's ([`reset_producer_id`](Self::reset_producer_id)).
    pub(crate) fn transactional(transactional_id: &str) -> Self {
        Identity {
            transactional_id: Some(Arc::from(transactional_id)),
            ..Identity::none()
        }
    }

    /// A producer without idempotence: every batch carries no producer id.
    pub(crate) fn none() -> Self {
        Identity {
            current: None,
            renewal: Renewal::NotNeeded,
            next_sequence: HashMap::new(),
            transactional_id: None,
        }
    }

    pub(crate) fn is_idempotent(&self) -> bool {
        self.current.is_some()
    }

    /// Whether batches carry the transactional bit (a `transactional.id` is set).
    pub(crate) fn is_transactional(&self) -> bool {
        self.transactional_id.is_some()
    }

    /// `transactional.id`, if set.
    pub(crate) fn transactional_id(&self) -> Option<&str> {
        self.transactional_id.as_deref()
    }

    /// The fields of the partition's next batch of `records` records; its sequences are
    /// taken (Kafka's sequences wrap from `i32::MAX` to 0).
    pub(crate) fn next_batch(
        &mut self,
        topic: &Arc<str>,
        partition: i32,
        records: i32,
    ) -> ProducerFields {
        let Some(identity) = self.current else {
            return ProducerFields::NONE;
        };
        let next = self
            .next_sequence
            .entry((topic.clone(), partition))
            .or_insert(0);
        let base = *next;
        *next = increment_sequence(base, records);
        ProducerFields {
            transactional: self.is_transactional(),
            ..ProducerFields::idempotent(identity.producer_id, identity.producer_epoch, base)
        }
    }

    /// KIP-360 for an idempotent producer: the next epoch of the same id, every partition's
    /// sequences from 0 (the broker accepts sequence 0 of a higher epoch and fences the old
    /// one). The caller re-stamps the batches not yet acknowledged, in order. At the last
    /// epoch (or while a new id is awaited) a new producer id is needed first. A
    /// transactional producer never bumps on its own: nothing goes out until its abort brings
    /// the coordinator's next epoch.
    pub(crate) fn bump_epoch(&mut self) -> Result<(), EpochExhausted> {
        let Some(identity) = self.current.as_mut() else {
            return Ok(());
        };
        let exhausted = identity.producer_epoch == i16::MAX || self.transactional_id.is_some();
        if exhausted || self.renewal != Renewal::NotNeeded {
            if self.renewal == Renewal::NotNeeded {
                self.renewal = Renewal::Needed;
            }
            return Err(EpochExhausted);
        }
        identity.producer_epoch += 1;
        self.next_sequence.clear();
        Ok(())
    }

    /// Whether batches must wait for a new producer id ([`reset_producer_id`](Self::reset_producer_id)).
    pub(crate) fn awaits_new_id(&self) -> bool {
        self.renewal != Renewal::NotNeeded
    }

    /// Claims the asking for a new producer id: true for one caller until it gets an answer
    /// or gives up ([`new_id_not_given`](Self::new_id_not_given)).
    pub(crate) fn ask_new_id(&mut self) -> bool {
        // A transactional producer's new epoch comes from its coordinator, never a sender.
        let claimed = self.renewal == Renewal::Needed && !self.is_transactional();
        if claimed {
            self.renewal = Renewal::Asked;
        }
        claimed
    }

    /// The InitProducerId asked for failed: the next caller of [`ask_new_id`](Self::ask_new_id) asks again.
    pub(crate) fn new_id_not_given(&mut self) {
        if self.renewal == Renewal::Asked {
            self.renewal = Renewal::Needed;
        }
    }

    /// Java's resetIdempotentProducerId, done: a new producer id (from InitProducerId) and
    /// every partition's sequences from 0. The caller re-stamps the batches not yet
    /// acknowledged, in order.
    pub(crate) fn reset_producer_id(&mut self, identity: ProducerIdentity) {
        self.current = Some(identity);
        self.renewal = Renewal::NotNeeded;
        self.next_sequence.clear();
    }

    /// Whether batches wait for a new epoch (a transactional producer's sequences broke).
    pub(crate) fn needs_new_epoch(&self) -> bool {
        self.renewal != Renewal::NotNeeded
    }

    /// The current producer id and epoch, if idempotent.
    pub(crate) fn current(&self) -> Option<ProducerIdentity> {
        self.current
    }
}

/// Kafka's `DefaultRecordBatch.incrementSequence`: sequences wrap to 0 past `i32::MAX`.
pub(crate) fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment {
        increment - (i32::MAX - sequence) - 1
    } else {
        sequence + increment
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> Identity {
        Identity::idempotent(ProducerIdentity {
            producer_id: 7,
            producer_epoch: 3,
        })
    }

    #[test]
    fn sequences_count_records_per_partition_and_restart_on_a_bump() {
        let mut owner = identity();
        let topic: Arc<str> = Arc::from("t");
        assert_eq!(owner.next_batch(&topic, 0, 5).base_sequence, 0);
        assert_eq!(owner.next_batch(&topic, 0, 2).base_sequence, 5);
        assert_eq!(owner.next_batch(&topic, 1, 1).base_sequence, 0);
        owner.bump_epoch().unwrap();
        let fields = owner.next_batch(&topic, 0, 1);
        assert_eq!((fields.producer_epoch, fields.base_sequence), (4, 0));
        assert_eq!(fields.producer_id, 7);
    }

    #[test]
    fn a_transactional_owner_marks_its_batches_and_waits_for_its_coordinator() {
        let topic: Arc<str> = Arc::from("t");
        let mut owner = Identity::transactional("tx");
        assert_eq!(owner.next_batch(&topic, 0, 1), ProducerFields::NONE);
        owner.reset_producer_id(ProducerIdentity {
            producer_id: 9,
            producer_epoch: 2,
        });
        let fields = owner.next_batch(&topic, 0, 3);
        assert!(fields.transactional);
        assert_eq!((fields.producer_epoch, fields.base_sequence), (2, 0));
        assert_eq!(
            owner.bump_epoch(),
            Err(EpochExhausted),
            "no bump of its own"
        );
        assert!(owner.needs_new_epoch());
        assert!(!owner.ask_new_id(), "no sender asks InitProducerId");
        owner.reset_producer_id(ProducerIdentity {
            producer_id: 9,
            producer_epoch: 3,
        });
        assert!(!owner.needs_new_epoch());
        assert_eq!(owner.next_batch(&topic, 0, 1).base_sequence, 0);
    }

    #[test]
    fn sequences_wrap_as_kafkas_do() {
        assert_eq!(increment_sequence(i32::MAX - 1, 1), i32::MAX);
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
    }

    #[test]
    fn without_idempotence_no_fields_and_an_exhausted_epoch_is_said() {
        let topic: Arc<str> = Arc::from("t");
        assert_eq!(
            Identity::none().next_batch(&topic, 0, 3),
            ProducerFields::NONE
        );
        let mut owner = Identity::idempotent(ProducerIdentity {
            producer_id: 1,
            producer_epoch: i16::MAX,
        });
        assert_eq!(owner.bump_epoch(), Err(EpochExhausted));
    }

    #[test]
    fn an_exhausted_epoch_waits_for_one_new_producer_id_then_counts_from_zero() {
        let topic: Arc<str> = Arc::from("t");
        let mut owner = Identity::idempotent(ProducerIdentity {
            producer_id: 1,
            producer_epoch: i16::MAX,
        });
        assert_eq!(owner.next_batch(&topic, 0, 4).base_sequence, 0);
        assert!(!owner.awaits_new_id());
        assert_eq!(owner.bump_epoch(), Err(EpochExhausted));
        assert!(owner.awaits_new_id());
        assert!(owner.ask_new_id(), "the first sender asks");
        assert!(!owner.ask_new_id(), "one InitProducerId at a time");
        assert_eq!(owner.bump_epoch(), Err(EpochExhausted), "no bump meanwhile");
        owner.new_id_not_given();
        assert!(owner.ask_new_id(), "asked again after a failure");
        owner.reset_producer_id(ProducerIdentity {
            producer_id: 2,
            producer_epoch: 0,
        });
        assert!(!owner.awaits_new_id());
        assert_eq!(
            owner.next_batch(&topic, 0, 1),
            ProducerFields::idempotent(2, 0, 0)
        );
        owner.bump_epoch().expect("the new id's next epoch");
        assert_eq!(owner.current().map(|i| i.producer_epoch), Some(1));
    }
}
