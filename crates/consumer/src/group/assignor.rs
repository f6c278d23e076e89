//! The client-side partition assignors of the classic group protocol, as pure functions.
//!
//! Each follows the algorithm of the Java client's assignor of the same name, so a group that
//! mixes krec with Java or librdkafka members gets the same answer whichever member leads:
//! - `range`: per topic, members subscribed to it in member order, each a contiguous range;
//!   the first `partitions % members` get one more.
//! - `roundrobin`: every partition of every topic (topics by name, partitions ascending) dealt
//!   in turn to the next member, in member order, subscribed to its topic.
//! - `cooperative-sticky`: keeps what members own (up to the balanced quota), fills members up
//!   to the quota with the rest, then removes from the result every partition that changes
//!   owner, so its old owner revokes it first and a follow-up rebalance hands it over.
//!
//! Member order is Java's `MemberInfo` order: static members (with a `group.instance.id`) first,
//! by instance id; then the others by member id.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

pub(crate) use crate::TopicPartition;

/// Which assignor, by its protocol name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Assignor {
    /// `range`.
    Range,
    /// `roundrobin`.
    RoundRobin,
    /// `cooperative-sticky` (incremental rebalancing).
    CooperativeSticky,
}

impl Assignor {
    /// The protocol name in JoinGroup, the same as the Java client and librdkafka use.
    pub(crate) fn protocol_name(self) -> &'static str {
        match self {
            Self::Range => "range",
            Self::RoundRobin => "roundrobin",
            Self::CooperativeSticky => "cooperative-sticky",
        }
    }

    /// The assignor of a protocol name.
    pub(crate) fn from_protocol_name(name: &str) -> Option<Self> {
        match name {
            "range" => Some(Self::Range),
            "roundrobin" => Some(Self::RoundRobin),
            "cooperative-sticky" => Some(Self::CooperativeSticky),
            _ => None,
        }
    }

    /// True when members keep their partitions during a rebalance (incremental protocol).
    pub(crate) fn is_cooperative(self) -> bool {
        matches!(self, Self::CooperativeSticky)
    }

    /// Runs the assignor.
    pub(crate) fn assign(
        self,
        members: &[MemberSubscription],
        partition_counts: &BTreeMap<String, i32>,
    ) -> BTreeMap<String, Vec<TopicPartition>> {
        match self {
            Self::Range => range(members, partition_counts),
            Self::RoundRobin => round_robin(members, partition_counts),
            Self::CooperativeSticky => cooperative_sticky(members, partition_counts),
        }
    }
}

impl std::str::FromStr for Assignor {
    type Err = crate::Error;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::from_protocol_name(text).ok_or_else(|| crate::Error::InvalidArgument {
            what: "assignor",
            detail: format!("{text:?}: expected range, roundrobin or cooperative-sticky"),
        })
    }
}

/// What one member told the group in its JoinGroup metadata.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct MemberSubscription {
    /// Member id given by the coordinator.
    pub(crate) member_id: String,
    /// `group.instance.id` of a static member.
    pub(crate) instance_id: Option<String>,
    /// Subscribed topics.
    pub(crate) topics: Vec<String>,
    /// Partitions the member owns now (cooperative protocol).
    pub(crate) owned: Vec<TopicPartition>,
    /// The generation its `owned` list belongs to (-1 when unknown).
    pub(crate) generation: i32,
}

/// Java's `MemberInfo` order.
fn member_order(a: &MemberSubscription, b: &MemberSubscription) -> Ordering {
    match (&a.instance_id, &b.instance_id) {
        (Some(x), Some(y)) => x.cmp(y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.member_id.cmp(&b.member_id),
    }
}

fn sorted_members(members: &[MemberSubscription]) -> Vec<&MemberSubscription> {
    let mut sorted: Vec<&MemberSubscription> = members.iter().collect();
    sorted.sort_by(|a, b| member_order(a, b));
    sorted
}

fn empty_assignment(members: &[MemberSubscription]) -> BTreeMap<String, Vec<TopicPartition>> {
    members
        .iter()
        .map(|m| (m.member_id.clone(), Vec::new()))
        .collect()
}

/// Java's `RangeAssignor` (without rack awareness).
pub(crate) fn range(
    members: &[MemberSubscription],
    partition_counts: &BTreeMap<String, i32>,
) -> BTreeMap<String, Vec<TopicPartition>> {
    let mut assignment = empty_assignment(members);
    let sorted = sorted_members(members);
    for (topic, &count) in partition_counts {
        let subscribed: Vec<&&MemberSubscription> = sorted
            .iter()
            .filter(|m| m.topics.iter().any(|t| t == topic))
            .collect();
        if subscribed.is_empty() || count <= 0 {
            continue;
        }
        let per_member = count as usize / subscribed.len();
        let extra = count as usize % subscribed.len();
        for (index, member) in subscribed.iter().enumerate() {
            let start = index * per_member + index.min(extra);
            let length = per_member + usize::from(index < extra);
            let partitions = assignment.entry(member.member_id.clone()).or_default();
            partitions.extend(
                (start..start + length).map(|p| TopicPartition::new(topic.as_str(), p as i32)),
            );
        }
    }
    assignment
}

/// Java's `RoundRobinAssignor`.
pub(crate) fn round_robin(
    members: &[MemberSubscription],
    partition_counts: &BTreeMap<String, i32>,
) -> BTreeMap<String, Vec<TopicPartition>> {
    let mut assignment = empty_assignment(members);
    let sorted = sorted_members(members);
    if sorted.is_empty() {
        return assignment;
    }
    let mut next = 0usize;
    for (topic, &count) in partition_counts {
        if !sorted.iter().any(|m| m.topics.iter().any(|t| t == topic)) {
            continue;
        }
        for partition in 0..count.max(0) {
            // The circular iterator keeps its place across partitions and topics.
            loop {
                let member = sorted[next % sorted.len()];
                next += 1;
                if member.topics.iter().any(|t| t == topic) {
                    assignment
                        .entry(member.member_id.clone())
                        .or_default()
                        .push(TopicPartition::new(topic.as_str(), partition));
                    break;
                }
            }
        }
    }
    assignment
}

/// Java's `CooperativeStickyAssignor`: the sticky assignment, minus the partitions that change
/// owner in this round.
pub(crate) fn cooperative_sticky(
    members: &[MemberSubscription],
    partition_counts: &BTreeMap<String, i32>,
) -> BTreeMap<String, Vec<TopicPartition>> {
    let owned = valid_owned_partitions(members, partition_counts);
    let mut assignment = sticky(members, partition_counts, &owned);
    // A partition owned by one member and given to another is held back this round.
    let mut owner: HashMap<&TopicPartition, &str> = HashMap::new();
    for (member, partitions) in &owned {
        for partition in partitions {
            owner.insert(partition, member);
        }
    }
    for (member, partitions) in assignment.iter_mut() {
        partitions.retain(|partition| match owner.get(partition) {
            Some(previous) => *previous == member,
            None => true,
        });
    }
    assignment
}

/// Each member's owned partitions that still count: only members of the highest generation
/// seen keep theirs, topics must still be assigned, and a partition claimed twice counts for
/// nobody.
fn valid_owned_partitions(
    members: &[MemberSubscription],
    partition_counts: &BTreeMap<String, i32>,
) -> BTreeMap<String, Vec<TopicPartition>> {
    let highest = members.iter().map(|m| m.generation).max().unwrap_or(-1);
    let mut claims: HashMap<&TopicPartition, usize> = HashMap::new();
    for member in members.iter().filter(|m| m.generation == highest) {
        for partition in &member.owned {
            *claims.entry(partition).or_default() += 1;
        }
    }
    members
        .iter()
        .map(|member| {
            let kept = if member.generation == highest {
                member
                    .owned
                    .iter()
                    .filter(|owned| {
                        partition_counts
                            .get(&*owned.topic)
                            .is_some_and(|&count| owned.partition >= 0 && owned.partition < count)
                            && member.topics.iter().any(|t| **t == *owned.topic)
                    })
                    .filter(|partition| claims.get(partition) == Some(&1))
                    .cloned()
                    .collect()
            } else {
                Vec::new()
            };
            (member.member_id.clone(), kept)
        })
        .collect()
}

/// The sticky assignment before the cooperative adjustment.
fn sticky(
    members: &[MemberSubscription],
    partition_counts: &BTreeMap<String, i32>,
    owned: &BTreeMap<String, Vec<TopicPartition>>,
) -> BTreeMap<String, Vec<TopicPartition>> {
    let first_topics: BTreeSet<&String> = members
        .first()
        .map(|m| m.topics.iter().collect())
        .unwrap_or_default();
    let all_equal = members
        .iter()
        .all(|m| m.topics.iter().collect::<BTreeSet<_>>() == first_topics);
    if all_equal {
        constrained(members, partition_counts, owned)
    } else {
        general(members, partition_counts, owned)
    }
}

/// Every partition of the topics some member subscribes to, topics by name.
fn subscribed_partitions(
    members: &[MemberSubscription],
    partition_counts: &BTreeMap<String, i32>,
) -> Vec<TopicPartition> {
    partition_counts
        .iter()
        .filter(|(topic, _)| members.iter().any(|m| m.topics.contains(topic)))
        .flat_map(|(topic, &count)| {
            (0..count.max(0)).map(move |p| TopicPartition::new(topic.as_str(), p))
        })
        .collect()
}

/// Java's constrained assignment, for groups whose members all subscribe to the same topics:
/// keep owned partitions up to the max quota, fill the members below the min quota in member
/// order, take from members at the max quota if partitions run out, and deal what is left one
/// each to members at the min quota.
fn constrained(
    members: &[MemberSubscription],
    partition_counts: &BTreeMap<String, i32>,
    owned: &BTreeMap<String, Vec<TopicPartition>>,
) -> BTreeMap<String, Vec<TopicPartition>> {
    let mut assignment = empty_assignment(members);
    if members.is_empty() {
        return assignment;
    }
    let all = subscribed_partitions(members, partition_counts);
    let min_quota = all.len() / members.len();
    let max_quota = all.len().div_ceil(members.len());
    let mut unassigned: BTreeSet<TopicPartition> = all.into_iter().collect();
    let mut unfilled: Vec<String> = Vec::new();
    let mut at_max: std::collections::VecDeque<String> = Default::default();
    let mut at_min: std::collections::VecDeque<String> = Default::default();
    for member in sorted_members(members) {
        let id = &member.member_id;
        let mine = assignment.get_mut(id).expect("every member has an entry");
        let previously = owned.get(id).map(Vec::as_slice).unwrap_or_default();
        for partition in previously.iter().take(max_quota) {
            if unassigned.remove(partition) {
                mine.push(partition.clone());
            }
        }
        if mine.len() < min_quota {
            unfilled.push(id.clone());
        } else {
            if mine.len() == min_quota {
                at_min.push_back(id.clone());
            }
            if mine.len() == max_quota {
                at_max.push_back(id.clone());
            }
        }
    }
    // Fill the members under the min quota, one partition each in turn.
    let mut pending: std::collections::VecDeque<TopicPartition> =
        std::mem::take(&mut unassigned).into_iter().collect();
    while !unfilled.is_empty() && !pending.is_empty() {
        let mut still_unfilled = Vec::new();
        for id in unfilled.drain(..) {
            let mine = assignment.get_mut(&id).expect("member");
            if let Some(partition) = pending.pop_front() {
                mine.push(partition);
            }
            if mine.len() == min_quota {
                at_min.push_back(id);
            } else {
                still_unfilled.push(id);
            }
        }
        unfilled = still_unfilled;
    }
    // Out of free partitions: take from the members at the max quota.
    for id in unfilled {
        while assignment[&id].len() < min_quota {
            let Some(donor) = at_max.pop_front() else {
                break;
            };
            let donor_partitions = assignment.get_mut(&donor).expect("member");
            if donor_partitions.is_empty() {
                continue;
            }
            let moved = donor_partitions.remove(0);
            assignment.get_mut(&id).expect("member").push(moved);
        }
        at_min.push_back(id);
    }
    for partition in pending {
        let Some(id) = at_min.pop_front() else {
            break;
        };
        assignment.get_mut(&id).expect("member").push(partition);
    }
    assignment
}

/// Members with different subscriptions: keep owned partitions, then give each remaining
/// partition to the subscribed member holding the fewest (member order breaks ties).
///
/// Java's general sticky algorithm also moves partitions afterwards to even out counts; this
/// one does not, so in that rare case the balance may differ from a Java leader's.
fn general(
    members: &[MemberSubscription],
    partition_counts: &BTreeMap<String, i32>,
    owned: &BTreeMap<String, Vec<TopicPartition>>,
) -> BTreeMap<String, Vec<TopicPartition>> {
    let mut assignment = empty_assignment(members);
    let mut taken: HashSet<TopicPartition> = HashSet::new();
    for (id, partitions) in owned {
        for partition in partitions {
            if taken.insert(partition.clone()) {
                assignment
                    .entry(id.clone())
                    .or_default()
                    .push(partition.clone());
            }
        }
    }
    let sorted = sorted_members(members);
    for partition in subscribed_partitions(members, partition_counts) {
        if taken.contains(&partition) {
            continue;
        }
        let best = sorted
            .iter()
            .filter(|m| m.topics.iter().any(|t| **t == *partition.topic))
            .min_by_key(|m| assignment.get(&m.member_id).map_or(0, Vec::len));
        if let Some(member) = best {
            assignment
                .entry(member.member_id.clone())
                .or_default()
                .push(partition);
        }
    }
    assignment
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, topics: &[&str]) -> MemberSubscription {
        MemberSubscription {
            member_id: id.to_owned(),
            topics: topics.iter().map(|t| (*t).to_owned()).collect(),
            generation: -1,
            ..MemberSubscription::default()
        }
    }

    fn owning(
        id: &str,
        topics: &[&str],
        generation: i32,
        owned: &[(&str, i32)],
    ) -> MemberSubscription {
        MemberSubscription {
            owned: owned
                .iter()
                .map(|(t, p)| TopicPartition::new(*t, *p))
                .collect(),
            generation,
            ..member(id, topics)
        }
    }

    /// Members, partition counts per topic, and the expected assignment as [`render`] shows it.
    type Case = (
        Vec<MemberSubscription>,
        Vec<(&'static str, i32)>,
        Vec<&'static str>,
    );

    fn counts(topics: &[(&str, i32)]) -> BTreeMap<String, i32> {
        topics.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect()
    }

    /// `"m1" => "t0:0 t0:1"` style rendering, for compact expectations.
    fn render(assignment: &BTreeMap<String, Vec<TopicPartition>>) -> Vec<String> {
        assignment
            .iter()
            .map(|(member, partitions)| {
                let mut partitions = partitions.clone();
                partitions.sort();
                let list: Vec<String> = partitions
                    .iter()
                    .map(|tp| format!("{}:{}", tp.topic, tp.partition))
                    .collect();
                format!("{member}={}", list.join(","))
            })
            .collect()
    }

    // Cases from the Java client's RangeAssignorTest / RoundRobinAssignorTest.
    #[test]
    fn range_matches_the_java_assignor() {
        let cases: Vec<Case> = vec![
            (
                vec![member("c", &["t"])],
                vec![("t", 3)],
                vec!["c=t:0,t:1,t:2"],
            ),
            // testTwoConsumersOneTopicThreePartitions
            (
                vec![member("c1", &["t"]), member("c2", &["t"])],
                vec![("t", 3)],
                vec!["c1=t:0,t:1", "c2=t:2"],
            ),
            // testMultipleConsumersMixedTopics
            (
                vec![
                    member("c1", &["t1"]),
                    member("c2", &["t1", "t2"]),
                    member("c3", &["t1"]),
                ],
                vec![("t1", 3), ("t2", 2)],
                vec!["c1=t1:0", "c2=t1:1,t2:0,t2:1", "c3=t1:2"],
            ),
            // testTwoConsumersTwoTopicsSixPartitions
            (
                vec![member("c1", &["t1", "t2"]), member("c2", &["t1", "t2"])],
                vec![("t1", 3), ("t2", 3)],
                vec!["c1=t1:0,t1:1,t2:0,t2:1", "c2=t1:2,t2:2"],
            ),
            // More members than partitions: the last ones get nothing.
            (
                vec![
                    member("a", &["t"]),
                    member("b", &["t"]),
                    member("c", &["t"]),
                ],
                vec![("t", 2)],
                vec!["a=t:0", "b=t:1", "c="],
            ),
        ];
        for (members, topics, expected) in cases {
            assert_eq!(render(&range(&members, &counts(&topics))), expected);
        }
    }

    #[test]
    fn static_members_sort_by_instance_id_before_dynamic_ones() {
        let mut z = member("a-dynamic", &["t"]);
        z.instance_id = None;
        let mut s2 = member("m2", &["t"]);
        s2.instance_id = Some("i1".into());
        let mut s1 = member("m1", &["t"]);
        s1.instance_id = Some("i2".into());
        let assignment = range(&[z, s1, s2], &counts(&[("t", 3)]));
        assert_eq!(
            render(&assignment),
            vec!["a-dynamic=t:2", "m1=t:1", "m2=t:0"]
        );
    }

    #[test]
    fn round_robin_matches_the_java_assignor() {
        let cases: Vec<Case> = vec![
            // testTwoConsumersTwoTopicsSixPartitions
            (
                vec![member("c1", &["t1", "t2"]), member("c2", &["t1", "t2"])],
                vec![("t1", 3), ("t2", 3)],
                vec!["c1=t1:0,t1:2,t2:1", "c2=t1:1,t2:0,t2:2"],
            ),
            // testMultipleConsumersMixedTopics
            (
                vec![
                    member("c1", &["t1"]),
                    member("c2", &["t1", "t2"]),
                    member("c3", &["t1"]),
                ],
                vec![("t1", 3), ("t2", 2)],
                vec!["c1=t1:0", "c2=t1:1,t2:0,t2:1", "c3=t1:2"],
            ),
            (
                vec![
                    member("a", &["t"]),
                    member("b", &["t"]),
                    member("c", &["t"]),
                ],
                vec![("t", 6)],
                vec!["a=t:0,t:3", "b=t:1,t:4", "c=t:2,t:5"],
            ),
        ];
        for (members, topics, expected) in cases {
            assert_eq!(render(&round_robin(&members, &counts(&topics))), expected);
        }
    }

    #[test]
    fn cooperative_sticky_first_assignment_deals_in_member_order() {
        let members = vec![
            member("b", &["t"]),
            member("a", &["t"]),
            member("c", &["t"]),
        ];
        let assignment = cooperative_sticky(&members, &counts(&[("t", 7)]));
        // min quota 2 dealt round by round in member order, the extra partition to the first.
        assert_eq!(
            render(&assignment),
            vec!["a=t:0,t:3,t:6", "b=t:1,t:4", "c=t:2,t:5"]
        );
    }

    #[test]
    fn cooperative_sticky_holds_back_partitions_that_change_owner() {
        // Two members owned everything; a third joins.
        let members = vec![
            owning("a", &["t"], 5, &[("t", 0), ("t", 1), ("t", 2)]),
            owning("b", &["t"], 5, &[("t", 3), ("t", 4), ("t", 5)]),
            member("c", &["t"]),
        ];
        let assignment = cooperative_sticky(&members, &counts(&[("t", 6)]));
        // Each keeps two; the partitions moving to c are held back until revoked.
        assert_eq!(render(&assignment), vec!["a=t:0,t:1", "b=t:3,t:4", "c="]);
        // Next round: a and b now own two each, c gets the two free ones.
        let members = vec![
            owning("a", &["t"], 6, &[("t", 0), ("t", 1)]),
            owning("b", &["t"], 6, &[("t", 3), ("t", 4)]),
            owning("c", &["t"], 6, &[]),
        ];
        let assignment = cooperative_sticky(&members, &counts(&[("t", 6)]));
        assert_eq!(
            render(&assignment),
            vec!["a=t:0,t:1", "b=t:3,t:4", "c=t:2,t:5"]
        );
    }

    #[test]
    fn cooperative_sticky_ignores_stale_and_double_claims() {
        let members = vec![
            owning("a", &["t"], 3, &[("t", 0), ("t", 1)]),
            // An older generation's claim does not count.
            owning("b", &["t"], 2, &[("t", 0), ("t", 2), ("t", 3)]),
        ];
        let assignment = cooperative_sticky(&members, &counts(&[("t", 4)]));
        assert_eq!(render(&assignment), vec!["a=t:0,t:1", "b=t:2,t:3"]);
        let twice = vec![
            owning("a", &["t"], 3, &[("t", 0)]),
            owning("b", &["t"], 3, &[("t", 0)]),
        ];
        let assignment = cooperative_sticky(&twice, &counts(&[("t", 2)]));
        // Nobody keeps t:0 as its own, so it is free and goes to the first member.
        assert_eq!(render(&assignment), vec!["a=t:0", "b=t:1"]);
    }

    #[test]
    fn every_assignor_gives_each_partition_to_exactly_one_subscribed_member() {
        for assignor in [
            Assignor::Range,
            Assignor::RoundRobin,
            Assignor::CooperativeSticky,
        ] {
            for member_count in 1..6 {
                for partitions in 0..10 {
                    let members: Vec<MemberSubscription> = (0..member_count)
                        .map(|i| member(&format!("m{i}"), &["x", "y"]))
                        .collect();
                    let topic_counts = counts(&[("x", partitions), ("y", 3)]);
                    let assignment = assignor.assign(&members, &topic_counts);
                    let mut seen: Vec<TopicPartition> =
                        assignment.values().flatten().cloned().collect();
                    seen.sort();
                    let mut expected = subscribed_partitions(&members, &topic_counts);
                    expected.sort();
                    assert_eq!(seen, expected, "{assignor:?} {member_count} {partitions}");
                    let sizes: Vec<usize> = assignment.values().map(Vec::len).collect();
                    if assignor != Assignor::Range {
                        let spread = sizes.iter().max().unwrap() - sizes.iter().min().unwrap();
                        assert!(spread <= 1, "{assignor:?} unbalanced: {sizes:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn protocol_names_round_trip() {
        for assignor in [
            Assignor::Range,
            Assignor::RoundRobin,
            Assignor::CooperativeSticky,
        ] {
            assert_eq!(
                Assignor::from_protocol_name(assignor.protocol_name()),
                Some(assignor)
            );
        }
        assert!("sticky".parse::<Assignor>().is_err());
    }
}
