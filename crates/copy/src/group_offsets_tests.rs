//! The translation's bookkeeping with plain values for deliveries: batches of given source
//! offsets landing at given target offsets.

use krec_batch::encode::BatchBuilder;

use super::*;

fn partition() -> TopicPartition {
    TopicPartition::new("t", 0)
}

fn watching(offsets: &[(&str, i64)]) -> GroupOffsets<char> {
    let mut groups = GroupOffsets::default();
    let offsets = (offsets.iter())
        .map(|&(group, offset)| (group.to_owned(), partition(), offset))
        .collect();
    groups.watch(offsets);
    groups
}

/// Sends a batch of source offsets `first..=last` (dense), returns whether it was kept.
fn send(groups: &mut GroupOffsets<char>, first: i64, last: i64, delivery: char) -> bool {
    let records = (last - first + 1) as u32;
    (groups.written(&partition(), Some((first, last)), records, delivery)).is_none()
}

/// Lands every kept delivery at the target offset `at` gives it.
fn land(groups: &mut GroupOffsets<char>, at: impl Fn(char) -> i64) {
    for (index, delivery) in groups.take_deliveries() {
        groups.landed(index, at(delivery));
    }
}

fn translated(pairs: &[(&str, i64)]) -> Translated {
    (pairs.iter())
        .map(|&(group, at)| (group.to_owned(), BTreeMap::from([(partition(), at)])))
        .collect()
}

#[test]
fn an_offset_inside_a_batch_lands_on_the_same_record() {
    let mut groups = watching(&[("a", 15), ("b", 10)]);
    assert!(send(&mut groups, 10, 19, 'x'));
    land(&mut groups, |_| 100);
    assert_eq!(groups.reached(), [(partition(), 110)]);
    let positions = Positions::from([(partition(), 20)]);
    let out = groups.translate(&positions, &HashMap::from([(partition(), 110)]));
    assert_eq!(out, translated(&[("a", 105), ("b", 100)]));
}

#[test]
fn an_offset_in_a_gap_lands_on_the_next_record_copied() {
    // 0..=9 committed, 10..=19 an aborted transaction and its marker, then 20..=24.
    let mut groups = watching(&[("a", 12)]);
    assert!(!send(&mut groups, 0, 9, 'x'), "covers no watched offset");
    assert!(send(&mut groups, 20, 24, 'y'));
    land(&mut groups, |d| if d == 'y' { 50 } else { 40 });
    let positions = Positions::from([(partition(), 25)]);
    let out = groups.translate(&positions, &HashMap::from([(partition(), 55)]));
    assert_eq!(out, translated(&[("a", 50)]));
}

#[test]
fn an_offset_past_the_data_lands_where_the_partition_reached() {
    // Records up to 24, then an aborted transaction and its marker (25..=30): position 31.
    let mut groups = watching(&[("a", 28), ("b", 31), ("c", 40)]);
    assert!(!send(&mut groups, 20, 24, 'x'));
    let positions = Positions::from([(partition(), 31)]);
    let out = groups.translate(&positions, &HashMap::from([(partition(), 55)]));
    assert_eq!(out, translated(&[("a", 55), ("b", 55)]));
    groups.committed();
    assert!(groups.watches(&partition()), "40 still waits");
    let out = groups.translate(&positions, &HashMap::from([(partition(), 55)]));
    assert!(out.is_empty(), "each is translated once: {out:?}");
}

#[test]
fn a_partition_that_reached_no_target_offset_keeps_its_offsets_waiting() {
    let mut groups = watching(&[("a", 3)]);
    let out = groups.translate(&Positions::from([(partition(), 9)]), &HashMap::new());
    assert!(out.is_empty());
    assert!(groups.watches(&partition()));
}

#[test]
fn an_aborted_transaction_leaves_its_offsets_waiting_again() {
    let mut groups = watching(&[("a", 5), ("b", 30)]);
    assert!(send(&mut groups, 0, 9, 'x'));
    land(&mut groups, |_| 0);
    let positions = Positions::from([(partition(), 40)]);
    let first = groups.translate(&positions, &HashMap::from([(partition(), 10)]));
    assert_eq!(first, translated(&[("a", 5), ("b", 10)]));
    groups.aborted();
    assert!(groups.reached().is_empty());
    // Copied again, landing elsewhere this time.
    assert!(send(&mut groups, 0, 9, 'x'));
    land(&mut groups, |_| 20);
    let again = groups.translate(&positions, &HashMap::from([(partition(), 30)]));
    assert_eq!(again, translated(&[("a", 25), ("b", 30)]));
}

#[test]
fn offsets_at_or_before_where_a_partition_resumes_were_translated_already() {
    let mut groups = watching(&[("a", 10), ("b", 11)]);
    groups.resumed(&partition(), 10);
    assert!(send(&mut groups, 10, 19, 'x'));
    land(&mut groups, |_| 0);
    let out = groups.translate(&Positions::new(), &HashMap::new());
    assert_eq!(out, translated(&[("b", 1)]));
}

#[test]
fn source_offsets_come_from_the_batch_header() {
    let mut builder = BatchBuilder::new(7);
    for _ in 0..3 {
        builder = builder.record(None, Some(b"v"), &[]);
    }
    let batch = builder.build();
    assert_eq!(source_offsets(&batch), Some((7, 9)));
    assert_eq!(source_offsets(&batch[..20]), None, "cut short");
    let mut legacy = batch.clone();
    legacy[layout::MAGIC_AT] = 1;
    assert_eq!(source_offsets(&legacy), None);
}

#[test]
fn extreme_offsets_neither_overflow_nor_land_outside_the_batch() {
    let mut groups = watching(&[("low", i64::MIN), ("high", i64::MAX)]);
    assert!(send(&mut groups, 100, 109, 'x'));
    land(&mut groups, |_| 7);
    let positions = Positions::from([(partition(), 110)]);
    let out = groups.translate(&positions, &HashMap::from([(partition(), 17)]));
    assert_eq!(out, translated(&[("low", 7)]));
    assert!(groups.watches(&partition()), "i64::MAX is never reached");
}
