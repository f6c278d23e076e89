//! The Java client's partitioning of records without a key since Kafka 3.3 (KIP-794,
//! `BuiltInPartitioner`): records stick to one partition per topic until `batch.size` bytes
//! were appended to it, then the next partition is drawn uniformly at random among the
//! partitions that have a leader (among all of them when none has).
//!
//! As in Java, the draw may give the same partition again: the switch is a fresh draw, not a
//! move away. The adaptive draw (`partitioner.adaptive.partitioning.enable`, Java's default)
//! weights each partition by how few batches wait for it: the longest queue plus one, minus its
//! own ([`StickyPartitioner::current_partition_adaptive`]). Left out:
//! `partitioner.availability.timeout.ms`, which drops the partitions of a broker that took no
//! batch for that long.

/// Where a [`StickyPartitioner`] draws its random numbers: the thread's own generator in Java,
/// a seeded one in tests.
pub trait RandomSource {
    /// The next uniformly distributed 32 bits.
    fn next_u32(&mut self) -> u32;
}

/// A small, fast generator (SplitMix64): seeded for reproducible tests, or from the operating
/// system's entropy. Not for secrets.
#[derive(Clone, Debug)]
pub struct SeededRandom {
    state: u64,
}

impl SeededRandom {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// A generator seeded from the operating system (a fixed seed if it has none to give,
    /// which only makes the draws predictable, never wrong).
    pub fn from_entropy() -> Self {
        let mut seed = [0u8; 8];
        let _ = getrandom::fill(&mut seed);
        Self::new(u64::from_le_bytes(seed))
    }
}

impl RandomSource for SeededRandom {
    fn next_u32(&mut self) -> u32 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 32) as u32
    }
}

/// One topic's sticky partition for records without a key, the producer's per-topic
/// `BuiltInPartitioner`.
///
/// The accumulator's order, as in Java: [`current_partition`](Self::current_partition)
/// (drawing one when there is none), append the record there, then
/// [`record_appended`](Self::record_appended) with its size, which switches after
/// `batch.size` bytes. [`partition`](Self::partition) does both when every partition
/// is available and switching is always allowed.
///
/// ```
/// use krec_client::partitioner::{SeededRandom, StickyPartitioner};
///
/// let mut sticky = StickyPartitioner::with_random(1000, SeededRandom::new(7));
/// let first = sticky.partition(400, 6);
/// assert_eq!(sticky.partition(400, 6), first);
/// assert_eq!(sticky.partition(400, 6), first, "1,200 bytes: the switch comes after this one");
/// assert!((0..6).contains(&sticky.partition(400, 6)));
/// ```
#[derive(Clone, Debug)]
pub struct StickyPartitioner<R = SeededRandom> {
    batch_size: u64,
    current: Option<i32>,
    produced: u64,
    random: R,
}

impl StickyPartitioner<SeededRandom> {
    /// A partitioner switching after `batch_size` bytes (the producer's `batch.size`; zero
    /// counts as one, as in Java), drawing from a generator seeded by the operating system.
    pub fn new(batch_size: usize) -> Self {
        Self::with_random(batch_size, SeededRandom::from_entropy())
    }
}

impl<R: RandomSource> StickyPartitioner<R> {
    /// A partitioner switching after `batch_size` bytes, drawing from `random`.
    pub fn with_random(batch_size: usize, random: R) -> Self {
        Self {
            batch_size: batch_size.max(1) as u64,
            current: None,
            produced: 0,
            random,
        }
    }

    /// The partition a record without a key goes to now, drawn if there is none yet:
    /// uniformly among `available` (the partitions with a leader), or among all
    /// `partition_count` partitions when `available` is empty.
    pub fn current_partition(&mut self, available: &[i32], partition_count: i32) -> i32 {
        if let Some(partition) = self.current {
            return partition;
        }
        // Java's Utils.toPositive(nextInt()): the sign bit cleared.
        let random = self.random.next_u32() & 0x7fff_ffff;
        let partition = match available.len() {
            0 => (random % partition_count.max(1) as u32) as i32,
            len => available[random as usize % len],
        };
        self.current = Some(partition);
        partition
    }

    /// [`current_partition`](Self::current_partition) with KIP-794's adaptive draw: `queued`
    /// lists the available partitions with the batches waiting for each (asked only when a
    /// partition is drawn), and each weighs the longest queue plus one, minus its own, so the
    /// partitions whose broker keeps up take more. Queues all alike (or none listed) draw as
    /// `current_partition` does.
    pub fn current_partition_adaptive(
        &mut self,
        queued: impl FnOnce() -> Vec<(i32, usize)>,
        partition_count: i32,
    ) -> i32 {
        if let Some(partition) = self.current {
            return partition;
        }
        let queued = queued();
        let longest = queued.iter().map(|&(_, batches)| batches).max();
        let shortest = queued.iter().map(|&(_, batches)| batches).min();
        if longest == shortest {
            let available: Vec<i32> = queued.iter().map(|&(partition, _)| partition).collect();
            return self.current_partition(&available, partition_count);
        }
        let heaviest = longest.unwrap_or(0) as u64 + 1;
        // Java's cumulative frequency table; a draw belongs to the first bound above it.
        let mut total = 0u64;
        let bounds: Vec<u64> = (queued.iter())
            .map(|&(_, batches)| {
                total += heaviest - batches as u64;
                total
            })
            .collect();
        let random = u64::from(self.random.next_u32() & 0x7fff_ffff) % total.max(1);
        let at = bounds.partition_point(|&bound| bound <= random);
        let partition = queued.get(at).map_or(0, |&(partition, _)| partition);
        self.current = Some(partition);
        partition
    }

    /// Counts `bytes` appended to the current partition and, once `batch.size` bytes were,
    /// lets the next record draw a new one. `switch_allowed` is false while the partition's
    /// last batch is not full (Java's choice, so a switch does not strand a small batch);
    /// at twice `batch.size` the switch comes anyway.
    pub fn record_appended(&mut self, bytes: usize, switch_allowed: bool) {
        self.produced = self.produced.saturating_add(bytes as u64);
        if (switch_allowed && self.produced >= self.batch_size)
            || self.produced >= self.batch_size.saturating_mul(2)
        {
            self.current = None;
            self.produced = 0;
        }
    }

    /// The partition of a record of `record_bytes` without a key, in a topic of
    /// `partition_count` partitions that all have a leader.
    pub fn partition(&mut self, record_bytes: usize, partition_count: i32) -> i32 {
        let partition = self.current_partition(&[], partition_count);
        self.record_appended(record_bytes, true);
        partition
    }
}

#[cfg(test)]
mod tests {
    use super::{RandomSource, SeededRandom, StickyPartitioner};

    /// Hands out the numbers it was given, in order.
    struct Scripted(Vec<u32>);

    impl RandomSource for Scripted {
        fn next_u32(&mut self) -> u32 {
            self.0.remove(0)
        }
    }

    #[test]
    fn switches_after_batch_size_bytes_and_not_before() {
        let mut sticky = StickyPartitioner::with_random(1000, Scripted(vec![4, 9, 0x8000_0002]));
        // 999 bytes stay on the first draw (4 % 6); the record reaching 1000 is still
        // appended there, the next one draws again.
        assert_eq!(sticky.partition(999, 6), 4);
        assert_eq!(sticky.partition(1, 6), 4);
        assert_eq!(sticky.partition(10, 6), 3, "9 % 6");
        assert_eq!(sticky.partition(2000, 6), 3);
        // The sign bit is cleared before the modulo, as Java's toPositive does.
        assert_eq!(sticky.partition(1, 6), 2);
    }

    #[test]
    fn a_switch_waits_for_a_full_batch_up_to_twice_batch_size() {
        let mut sticky = StickyPartitioner::with_random(100, Scripted(vec![1, 2]));
        assert_eq!(sticky.current_partition(&[], 5), 1);
        sticky.record_appended(150, false);
        assert_eq!(
            sticky.current_partition(&[], 5),
            1,
            "the batch is not full yet"
        );
        sticky.record_appended(49, false);
        assert_eq!(sticky.current_partition(&[], 5), 1);
        sticky.record_appended(1, false);
        assert_eq!(sticky.current_partition(&[], 5), 2, "twice batch.size");
    }

    #[test]
    fn draws_among_available_partitions_only() {
        let available = [2, 5, 11];
        let mut sticky = StickyPartitioner::with_random(1, SeededRandom::new(1));
        for _ in 0..300 {
            let partition = sticky.current_partition(&available, 12);
            assert!(available.contains(&partition), "{partition}");
            sticky.record_appended(1, true);
        }
        // With none available, all partitions.
        let mut sticky = StickyPartitioner::with_random(1, Scripted(vec![13]));
        assert_eq!(sticky.current_partition(&[], 12), 1);
    }

    #[test]
    fn the_adaptive_draw_favours_short_queues() {
        // Queues 5, 0, 5: weights 1, 6, 1, bounds 1, 7, 8.
        let queued = || vec![(3, 5), (4, 0), (9, 5)];
        let draws = vec![0, 1, 6, 7, 8 + 6];
        let mut sticky = StickyPartitioner::with_random(1, Scripted(draws));
        let mut drawn = Vec::new();
        for _ in 0..5 {
            drawn.push(sticky.current_partition_adaptive(queued, 12));
            sticky.record_appended(1, true);
        }
        assert_eq!(drawn, [3, 4, 4, 9, 4]);
        // Alike, or none listed: the uniform draw among them (or among all).
        let mut sticky = StickyPartitioner::with_random(1, Scripted(vec![1, 13]));
        assert_eq!(
            sticky.current_partition_adaptive(|| vec![(2, 1), (5, 1), (7, 1)], 12),
            5
        );
        sticky.record_appended(1, true);
        assert_eq!(sticky.current_partition_adaptive(Vec::new, 12), 1);
        assert_eq!(
            sticky.current_partition_adaptive(|| unreachable!("drawn already"), 12),
            1,
            "sticks until batch.size bytes"
        );
    }

    #[test]
    fn switches_are_uniform_over_partitions() {
        const PARTITIONS: i32 = 7;
        const SWITCHES: usize = 70_000;
        let mut sticky = StickyPartitioner::with_random(16_384, SeededRandom::new(42));
        let mut counts = [0usize; PARTITIONS as usize];
        let mut stays = 0;
        let mut previous = None;
        for _ in 0..SWITCHES {
            let partition = sticky.partition(16_384, PARTITIONS);
            counts[partition as usize] += 1;
            stays += usize::from(previous == Some(partition));
            previous = Some(partition);
        }
        let expected = SWITCHES / PARTITIONS as usize;
        for (partition, count) in counts.iter().enumerate() {
            assert!(
                count.abs_diff(expected) < expected / 20,
                "partition {partition}: {count} of {SWITCHES} switches, expected about {expected}"
            );
        }
        // A fresh draw each time, as Java's: the same partition again one time in seven.
        let expected_stays = SWITCHES / PARTITIONS as usize;
        assert!(
            stays.abs_diff(expected_stays) < expected_stays / 10,
            "{stays}"
        );
    }

    #[test]
    fn seeded_sources_repeat_and_differ_by_seed() {
        let draws = |seed| {
            let mut random = SeededRandom::new(seed);
            (0..8).map(|_| random.next_u32()).collect::<Vec<_>>()
        };
        assert_eq!(draws(3), draws(3));
        assert_ne!(draws(3), draws(4));
        assert_ne!(
            SeededRandom::from_entropy().next_u32(),
            SeededRandom::from_entropy().next_u32()
        );
    }
}
