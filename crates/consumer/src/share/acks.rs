//! What a share-group member holds and owes: the offsets acquired for it and not yet
//! acknowledged, and the acknowledgements not yet sent, per partition, as ranges.
//!
//! An offset is acknowledged at most once: acknowledging moves it out of the acquired set, so a
//! second acknowledgement of it (or of an offset never acquired, or acquired under a share
//! session that has since died) finds nothing and sends nothing.

use std::collections::{BTreeMap, HashMap};

use krec_client::share::{AcknowledgeType, AcknowledgementRange};
use uuid::Uuid;

/// A partition by topic id, as share requests name it.
pub(crate) type PartitionKey = (Uuid, i32);

/// Acquired offsets (`first -> last`, inclusive, disjoint) and pending acknowledgements
/// (`first -> (last, type)`) of one partition.
#[derive(Debug, Default)]
struct PartitionBook {
    acquired: BTreeMap<i64, i64>,
    pending: BTreeMap<i64, (i64, AcknowledgeType)>,
}

/// The member's acquired offsets and unsent acknowledgements.
#[derive(Debug, Default)]
pub(crate) struct AckBook {
    partitions: HashMap<PartitionKey, PartitionBook>,
    /// Offsets acquired and not acknowledged, over all partitions.
    in_flight: u64,
    /// How many times each partition's share session was lost: a chunk acquired before the
    /// last loss is not this member's any more.
    generations: HashMap<PartitionKey, u64>,
}

/// Offsets in `first..=last`.
fn width(first: i64, last: i64) -> u64 {
    (last - first + 1) as u64
}

impl AckBook {
    /// Offsets acquired and not yet acknowledged.
    pub(crate) fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// Notes `first..=last` as acquired for this member.
    pub(crate) fn acquire(&mut self, key: PartitionKey, first: i64, last: i64) {
        let book = self.partitions.entry(key).or_default();
        // A range acquired again replaces any stale overlap (a lock that ran out).
        let released = take_overlap(&mut book.acquired, first, last);
        self.in_flight -= released.iter().map(|&(f, l)| width(f, l)).sum::<u64>();
        book.acquired.insert(first, last);
        self.in_flight += width(first, last);
    }

    /// The generation of `key`'s share session, for the chunks acquired in it.
    pub(crate) fn generation(&self, key: &PartitionKey) -> u64 {
        self.generations.get(key).copied().unwrap_or(0)
    }

    /// Acknowledges the acquired offsets within `first..=last` as `kind`, if acquired in
    /// session `generation`; returns how many offsets that was (0: none of them are held,
    /// nothing is sent).
    pub(crate) fn acknowledge_in(
        &mut self,
        key: PartitionKey,
        generation: u64,
        first: i64,
        last: i64,
        kind: AcknowledgeType,
    ) -> u64 {
        if generation != self.generation(&key) {
            return 0;
        }
        self.acknowledge(key, first, last, kind)
    }

    /// Acknowledges the acquired offsets within `first..=last` as `kind`; returns how many
    /// offsets that was (0: none of them are held, nothing is sent).
    pub(crate) fn acknowledge(
        &mut self,
        key: PartitionKey,
        first: i64,
        last: i64,
        kind: AcknowledgeType,
    ) -> u64 {
        let Some(book) = self.partitions.get_mut(&key) else {
            return 0;
        };
        let mut count = 0;
        for (f, l) in take_overlap(&mut book.acquired, first, last) {
            book.pending.insert(f, (l, kind));
            count += width(f, l);
        }
        self.in_flight -= count;
        count
    }

    /// Acknowledges everything acquired and not acknowledged as `kind` (RELEASE at close);
    /// returns how many offsets that was.
    pub(crate) fn acknowledge_all(&mut self, kind: AcknowledgeType) -> u64 {
        let keys: Vec<PartitionKey> = self.partitions.keys().copied().collect();
        keys.into_iter()
            .map(|key| self.acknowledge(key, i64::MIN, i64::MAX, kind))
            .sum()
    }

    /// Whether any acknowledgement waits to be sent for `key`.
    pub(crate) fn has_pending(&self, key: &PartitionKey) -> bool {
        self.partitions
            .get(key)
            .is_some_and(|book| !book.pending.is_empty())
    }

    /// Takes `key`'s unsent acknowledgements, ordered, neighbours of one type merged.
    pub(crate) fn take_pending(&mut self, key: &PartitionKey) -> Vec<AcknowledgementRange> {
        let Some(book) = self.partitions.get_mut(key) else {
            return Vec::new();
        };
        let mut ranges: Vec<AcknowledgementRange> = Vec::with_capacity(book.pending.len());
        for (first, (last, kind)) in std::mem::take(&mut book.pending) {
            match ranges.last_mut() {
                Some(prev) if prev.kind == kind && prev.last_offset + 1 == first => {
                    prev.last_offset = last;
                }
                _ => ranges.push(AcknowledgementRange {
                    first_offset: first,
                    last_offset: last,
                    kind,
                }),
            }
        }
        ranges
    }

    /// Takes the unsent acknowledgements of each of `keys` that has any.
    pub(crate) fn take_pending_of<'k>(
        &mut self,
        keys: impl IntoIterator<Item = &'k PartitionKey>,
    ) -> Vec<(PartitionKey, Vec<AcknowledgementRange>)> {
        let mut taken = Vec::new();
        for key in keys {
            if self.has_pending(key) {
                taken.push((*key, self.take_pending(key)));
            }
        }
        taken
    }

    /// Drops everything held for `key`: its share session died, and the leader released what
    /// it had acquired for this member (acknowledgements for it would now be refused, or
    /// would apply to a later acquisition).
    pub(crate) fn forget(&mut self, key: &PartitionKey) {
        *self.generations.entry(*key).or_default() += 1;
        if let Some(book) = self.partitions.remove(key) {
            self.in_flight -= book
                .acquired
                .iter()
                .map(|(&f, &l)| width(f, l))
                .sum::<u64>();
        }
    }

    /// Partitions holding acquired offsets or unsent acknowledgements.
    pub(crate) fn keys(&self) -> Vec<PartitionKey> {
        self.partitions.keys().copied().collect()
    }
}

/// Removes the parts of `ranges` inside `first..=last` and returns them, ordered; the parts
/// outside stay.
fn take_overlap(ranges: &mut BTreeMap<i64, i64>, first: i64, last: i64) -> Vec<(i64, i64)> {
    let mut taken = Vec::new();
    let start = ranges
        .range(..=first)
        .next_back()
        .filter(|(_, &l)| l >= first)
        .map_or(first, |(&f, _)| f);
    let touched: Vec<(i64, i64)> = ranges.range(start..=last).map(|(&f, &l)| (f, l)).collect();
    for (f, l) in touched {
        ranges.remove(&f);
        if f < first {
            ranges.insert(f, first - 1);
        }
        if l > last {
            ranges.insert(last + 1, l);
        }
        taken.push((f.max(first), l.min(last)));
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::tests::ALLOCATOR;

    const KEY: PartitionKey = (Uuid::from_u128(1), 0);

    #[test]
    fn accepting_a_chunk_allocates_the_same_for_ten_records_or_a_million() {
        let allocations = |records: i64| {
            let mut book = AckBook::default();
            book.acquire(KEY, 0, 4);
            book.acquire(KEY, 1_000, 1_000 + records - 1);
            let (_, counts) = ALLOCATOR.during(|| {
                book.acknowledge(KEY, 1_000, 1_000 + records - 1, AcknowledgeType::Accept);
                book.take_pending(&KEY)
            });
            counts.allocations
        };
        let few = allocations(10);
        assert_eq!(few, allocations(1_000_000), "ranges, never offsets");
        assert!(few <= 4, "{few} allocations to accept a chunk");
    }

    fn range(first: i64, last: i64, kind: AcknowledgeType) -> AcknowledgementRange {
        AcknowledgementRange {
            first_offset: first,
            last_offset: last,
            kind,
        }
    }

    #[test]
    fn a_chunk_accepted_whole_is_one_range() {
        let mut book = AckBook::default();
        book.acquire(KEY, 10, 19);
        assert_eq!(book.in_flight(), 10);
        assert_eq!(book.acknowledge(KEY, 10, 19, AcknowledgeType::Accept), 10);
        assert_eq!(book.in_flight(), 0);
        assert_eq!(
            book.take_pending(&KEY),
            vec![range(10, 19, AcknowledgeType::Accept)]
        );
        assert!(book.take_pending(&KEY).is_empty(), "taken once");
    }

    #[test]
    fn nothing_is_acknowledged_twice_or_unacquired() {
        let mut book = AckBook::default();
        book.acquire(KEY, 0, 9);
        assert_eq!(book.acknowledge(KEY, 5, 5, AcknowledgeType::Reject), 1);
        assert_eq!(book.acknowledge(KEY, 5, 5, AcknowledgeType::Accept), 0);
        assert_eq!(book.acknowledge(KEY, 20, 30, AcknowledgeType::Accept), 0);
        assert_eq!(book.acknowledge(KEY, 0, 9, AcknowledgeType::Accept), 9);
        assert_eq!(
            book.take_pending(&KEY),
            vec![
                range(0, 4, AcknowledgeType::Accept),
                range(5, 5, AcknowledgeType::Reject),
                range(6, 9, AcknowledgeType::Accept),
            ]
        );
    }

    #[test]
    fn records_acknowledged_out_of_order_go_out_ordered_and_merged() {
        let mut book = AckBook::default();
        book.acquire(KEY, 0, 3);
        for offset in [3, 1, 0, 2] {
            book.acknowledge(KEY, offset, offset, AcknowledgeType::Accept);
        }
        assert_eq!(
            book.take_pending(&KEY),
            vec![range(0, 3, AcknowledgeType::Accept)]
        );
    }

    #[test]
    fn close_releases_what_is_left_and_forgetting_drops_it() {
        let mut book = AckBook::default();
        book.acquire(KEY, 0, 9);
        book.acquire((Uuid::from_u128(2), 1), 100, 104);
        book.acknowledge(KEY, 0, 4, AcknowledgeType::Accept);
        assert_eq!(book.acknowledge_all(AcknowledgeType::Release), 10);
        assert_eq!(
            book.take_pending(&KEY),
            vec![
                range(0, 4, AcknowledgeType::Accept),
                range(5, 9, AcknowledgeType::Release),
            ]
        );
        book.acquire(KEY, 20, 29);
        let before = book.generation(&KEY);
        book.forget(&KEY);
        assert_eq!(book.in_flight(), 0);
        assert_eq!(book.acknowledge(KEY, 20, 29, AcknowledgeType::Accept), 0);
        book.acquire(KEY, 20, 29);
        let stale = book.acknowledge_in(KEY, before, 20, 29, AcknowledgeType::Accept);
        assert_eq!(stale, 0, "a chunk of the lost session acknowledges nothing");
        let now = book.generation(&KEY);
        assert_eq!(
            book.acknowledge_in(KEY, now, 20, 29, AcknowledgeType::Accept),
            10
        );
        assert!(book.has_pending(&(Uuid::from_u128(2), 1)));
    }
}
