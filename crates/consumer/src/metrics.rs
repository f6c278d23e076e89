//! The consumer's counters and their snapshot.
//!
//! The fetch loops, the coordinator task and the group code count into `Metrics` as they go:
//! relaxed atomics per fetch request, a short lock per fetch response (bytes per topic) and
//! per rare event (a new broker, a new topic), nothing per record. [`MetricsSnapshot`] is the
//! plain copy a program reads them through; turning it into an exposition format (Prometheus
//! text, JSON) is the program's business, so this crate pulls in no HTTP or metrics library.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::{PartitionPosition, TopicPartition};

/// Upper bounds, in seconds, of the fetch latency histogram's buckets (a last one, +Inf,
/// counts the rest). A fetch waits up to `max_wait` at the broker when there is no data, so
/// the buckets reach past the default half second.
pub const FETCH_LATENCY_BUCKETS: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// What went wrong, as counted in [`MetricsSnapshot::errors`]. The names are the values of
/// the `kind` label `krec consume --metrics` exports; the order is [`ErrorKind::ALL`]'s, which
/// is also each kind's counter index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A broker connection failed or a fetch timed out (reconnected and retried).
    Connection,
    /// A fetch response, or a partition in it, carried an error code that is retried after a
    /// leader lookup (NOT_LEADER_OR_FOLLOWER, a whole-request error, ...).
    Fetch,
    /// OFFSET_OUT_OF_RANGE, answered by the reset policy (`earliest` or `latest`).
    OffsetReset,
    /// A metadata or start-offset lookup failed (retried).
    Lookup,
    /// Finding the group coordinator failed (retried).
    Group,
    /// The consumer or the group membership stopped on an error.
    Fatal,
}

impl ErrorKind {
    /// Every kind, in label order.
    pub const ALL: [ErrorKind; 6] = [
        Self::Connection,
        Self::Fetch,
        Self::OffsetReset,
        Self::Lookup,
        Self::Group,
        Self::Fatal,
    ];

    /// The kind's label value.
    pub fn name(self) -> &'static str {
        match self {
            Self::Connection => "connection",
            Self::Fetch => "fetch",
            Self::OffsetReset => "offset_reset",
            Self::Lookup => "lookup",
            Self::Group => "group",
            Self::Fatal => "fatal",
        }
    }
}

/// How an OffsetCommit request went, as counted in [`GroupMetrics::commits`]; the order is
/// [`CommitResult::ALL`]'s, which is also each result's counter index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommitResult {
    /// The coordinator took every offset.
    Ok,
    /// The coordinator refused some offset (a rebalance, an expired membership).
    Refused,
    /// The request got no answer (the coordinator unreachable or gone).
    Failed,
}

impl CommitResult {
    /// Every result, in label order.
    pub const ALL: [CommitResult; 3] = [Self::Ok, Self::Refused, Self::Failed];

    /// The result's label value.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Refused => "refused",
            Self::Failed => "failed",
        }
    }
}

/// Fetch latencies in the fixed buckets of [`FETCH_LATENCY_BUCKETS`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencyHistogram {
    /// Answers per bucket (not cumulative); the last entry counts those above every bound.
    pub counts: [u64; FETCH_LATENCY_BUCKETS.len() + 1],
    /// The latencies added up.
    pub sum: Duration,
}

impl LatencyHistogram {
    /// How many latencies were recorded.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// `(upper bound, answers in that bucket)`, +Inf last; not cumulative (Prometheus shows
    /// the running sums).
    pub fn buckets(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let bounds = FETCH_LATENCY_BUCKETS.iter().copied().chain([f64::INFINITY]);
        bounds.zip(self.counts)
    }
}

/// The fetch traffic to one broker.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BrokerMetrics {
    /// Fetch requests sent (answered or not).
    pub fetch_requests: u64,
    /// Time from sending a fetch to its answer, for the answered ones.
    pub fetch_latency: LatencyHistogram,
}

/// What only a group member counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupMetrics {
    /// Assignments received: a completed JoinGroup/SyncGroup round (classic), a new target
    /// assignment (KIP-848).
    pub rebalances: u64,
    /// OffsetCommit requests by result (every result present).
    pub commits: BTreeMap<CommitResult, u64>,
    /// Partitions assigned now.
    pub assigned_partitions: usize,
}

/// A copy of a consumer's counters and positions at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricsSnapshot {
    /// Fetch traffic by broker node id.
    pub brokers: BTreeMap<i32, BrokerMetrics>,
    /// Record bytes fetched (complete batches handed out) by topic.
    pub bytes_fetched: BTreeMap<Arc<str>, u64>,
    /// Errors by kind (every kind present).
    pub errors: BTreeMap<ErrorKind, u64>,
    /// Where each assigned partition stands.
    pub partitions: Vec<PartitionPosition>,
    /// Group counters; none for a consumer outside a group.
    pub group: Option<GroupMetrics>,
    /// How long the longest fault still going on has lasted: a broker unreachable, lookups
    /// failing, the group coordinator not found. None while everything answers.
    pub failing_for: Option<Duration>,
    /// The consumer (or its group membership) stopped on an error.
    pub stopped_on_error: bool,
    /// The consumer's [`give_up_after`](crate::ConsumerConfig::give_up_after).
    pub give_up_after: Duration,
    /// Corrupt batches skipped (`OnCorrupt::Skip`) by topic and partition.
    pub batches_skipped: BTreeMap<TopicPartition, u64>,
}

impl MetricsSnapshot {
    /// True once the consumer has reached its give-up condition: a fault lasted
    /// `give_up_after`, or it stopped on an error. It is then stopping (or has stopped).
    pub fn gave_up(&self) -> bool {
        self.stopped_on_error
            || self
                .failing_for
                .is_some_and(|failing| failing >= self.give_up_after)
    }

    /// Fetch requests sent, all brokers together.
    pub fn fetch_requests(&self) -> u64 {
        self.brokers.values().map(|b| b.fetch_requests).sum()
    }
}

/// Since when something keeps failing, as nanoseconds after `epoch` plus one (0: nothing is
/// failing), so that a fetch loop clears it with one relaxed store per answer.
#[derive(Debug)]
pub(crate) struct Streak {
    epoch: Instant,
    since: AtomicU64,
}

impl Streak {
    fn new(epoch: Instant) -> Self {
        Self {
            epoch,
            since: AtomicU64::new(0),
        }
    }

    /// A fault has lasted since `since`; None: it is over.
    pub(crate) fn set(&self, since: Option<Instant>) {
        let stored = since.map_or(0, |since| {
            let nanos = since.saturating_duration_since(self.epoch).as_nanos();
            (nanos.min(u64::MAX as u128 - 1) as u64) + 1
        });
        self.since.store(stored, Ordering::Relaxed);
    }

    fn length(&self, now: Instant) -> Option<Duration> {
        let nanos = self.since.load(Ordering::Relaxed).checked_sub(1)?;
        let since = self.epoch + Duration::from_nanos(nanos);
        Some(now.saturating_duration_since(since))
    }
}

/// One broker's fetch counters, held by its fetch loop.
#[derive(Debug)]
pub(crate) struct BrokerCounters {
    requests: AtomicU64,
    buckets: [AtomicU64; FETCH_LATENCY_BUCKETS.len() + 1],
    latency_nanos: AtomicU64,
    /// The fetch loop's connection failures in a row.
    pub(crate) failing: Streak,
}

impl BrokerCounters {
    fn new(epoch: Instant) -> Self {
        Self {
            requests: AtomicU64::new(0),
            buckets: Default::default(),
            latency_nanos: AtomicU64::new(0),
            failing: Streak::new(epoch),
        }
    }

    /// One fetch request sent; `answered` with the time its answer took.
    pub(crate) fn fetched(&self, answered: Option<Duration>) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if let Some(latency) = answered {
            let seconds = latency.as_secs_f64();
            let bucket = FETCH_LATENCY_BUCKETS
                .iter()
                .position(|&bound| seconds <= bound)
                .unwrap_or(FETCH_LATENCY_BUCKETS.len());
            self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
            let nanos = latency.as_nanos().min(u64::MAX as u128) as u64;
            self.latency_nanos.fetch_add(nanos, Ordering::Relaxed);
        }
    }

    fn snapshot(&self) -> BrokerMetrics {
        BrokerMetrics {
            fetch_requests: self.requests.load(Ordering::Relaxed),
            fetch_latency: LatencyHistogram {
                counts: std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed)),
                sum: Duration::from_nanos(self.latency_nanos.load(Ordering::Relaxed)),
            },
        }
    }
}

/// A consumer's counters, shared by its tasks.
#[derive(Debug)]
pub(crate) struct Metrics {
    epoch: Instant,
    give_up_after: Duration,
    brokers: Mutex<BTreeMap<i32, Arc<BrokerCounters>>>,
    bytes_fetched: Mutex<HashMap<Arc<str>, u64>>,
    errors: [AtomicU64; ErrorKind::ALL.len()],
    /// Metadata and start-offset lookups failing in a row.
    pub(crate) lookup_failing: Streak,
    /// The group coordinator not found, attempt after attempt.
    pub(crate) group_failing: Streak,
    stopped_on_error: AtomicBool,
    group_member: AtomicBool,
    rebalances: AtomicU64,
    commits: [AtomicU64; CommitResult::ALL.len()],
    assigned: AtomicU64,
    /// Corrupt batches skipped, by partition: rare, so one lock is enough.
    batches_skipped: Mutex<BTreeMap<TopicPartition, u64>>,
}

/// Counters hold plain numbers: a panic elsewhere leaves nothing half-updated.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Metrics {
    pub(crate) fn new(give_up_after: Duration) -> Self {
        let epoch = Instant::now();
        Self {
            epoch,
            give_up_after,
            brokers: Mutex::default(),
            bytes_fetched: Mutex::default(),
            errors: Default::default(),
            lookup_failing: Streak::new(epoch),
            group_failing: Streak::new(epoch),
            stopped_on_error: AtomicBool::new(false),
            group_member: AtomicBool::new(false),
            rebalances: AtomicU64::new(0),
            commits: Default::default(),
            assigned: AtomicU64::new(0),
            batches_skipped: Mutex::default(),
        }
    }

    /// The counters of broker `node`, created on first use (a restarted fetch loop gets the
    /// same ones).
    pub(crate) fn broker(&self, node: i32) -> Arc<BrokerCounters> {
        lock(&self.brokers)
            .entry(node)
            .or_insert_with(|| Arc::new(BrokerCounters::new(self.epoch)))
            .clone()
    }

    /// Adds the record bytes of fetched chunks to their topics' totals.
    pub(crate) fn fetched_bytes<'a>(&self, chunks: impl Iterator<Item = (&'a Arc<str>, usize)>) {
        let mut totals = lock(&self.bytes_fetched);
        for (topic, bytes) in chunks {
            match totals.get_mut(&**topic) {
                Some(total) => *total += bytes as u64,
                None => {
                    totals.insert(topic.clone(), bytes as u64);
                }
            }
        }
    }

    pub(crate) fn error(&self, kind: ErrorKind) {
        self.errors[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// What a partition's fetch answer asked for: a leader lookup, an offset reset.
    pub(crate) fn partition_errors(&self, refresh_metadata: bool, reset_offset: bool) {
        if refresh_metadata {
            self.error(ErrorKind::Fetch);
        }
        if reset_offset {
            self.error(ErrorKind::OffsetReset);
        }
    }

    /// The consumer or its membership stopped on an error.
    pub(crate) fn stopped_on_error(&self) {
        self.error(ErrorKind::Fatal);
        self.stopped_on_error.store(true, Ordering::Relaxed);
    }

    pub(crate) fn joined_group(&self) {
        self.group_member.store(true, Ordering::Relaxed);
    }

    pub(crate) fn rebalanced(&self) {
        self.rebalances.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn committed(&self, result: CommitResult) {
        self.commits[result as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// A decode thread skipped a corrupt batch of the partition.
    pub(crate) fn batch_skipped(&self, topic: &Arc<str>, partition: i32) {
        *lock(&self.batches_skipped)
            .entry(TopicPartition::new(topic.clone(), partition))
            .or_default() += 1;
    }

    pub(crate) fn assigned(&self, partitions: usize) {
        self.assigned.store(partitions as u64, Ordering::Relaxed);
    }

    /// The counters now, with the partitions' positions.
    pub(crate) fn snapshot(&self, partitions: Vec<PartitionPosition>) -> MetricsSnapshot {
        self.snapshot_at(partitions, Instant::now())
    }

    /// The counters with fault lengths as of `now`.
    fn snapshot_at(&self, partitions: Vec<PartitionPosition>, now: Instant) -> MetricsSnapshot {
        let brokers: BTreeMap<i32, Arc<BrokerCounters>> = lock(&self.brokers).clone();
        let failing_for = brokers
            .values()
            .map(|b| &b.failing)
            .chain([&self.lookup_failing, &self.group_failing])
            .filter_map(|streak| streak.length(now))
            .max();
        let group = self
            .group_member
            .load(Ordering::Relaxed)
            .then(|| GroupMetrics {
                rebalances: self.rebalances.load(Ordering::Relaxed),
                commits: CommitResult::ALL
                    .iter()
                    .zip(&self.commits)
                    .map(|(&result, count)| (result, count.load(Ordering::Relaxed)))
                    .collect(),
                assigned_partitions: self.assigned.load(Ordering::Relaxed) as usize,
            });
        MetricsSnapshot {
            brokers: brokers
                .iter()
                .map(|(&node, b)| (node, b.snapshot()))
                .collect(),
            bytes_fetched: lock(&self.bytes_fetched)
                .iter()
                .map(|(topic, &bytes)| (topic.clone(), bytes))
                .collect(),
            errors: ErrorKind::ALL
                .iter()
                .zip(&self.errors)
                .map(|(&kind, count)| (kind, count.load(Ordering::Relaxed)))
                .collect(),
            partitions,
            group,
            failing_for,
            stopped_on_error: self.stopped_on_error.load(Ordering::Relaxed),
            give_up_after: self.give_up_after,
            batches_skipped: lock(&self.batches_skipped).clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    #[test]
    fn latencies_land_in_the_bucket_whose_bound_they_do_not_pass() {
        let metrics = Metrics::new(ms(1000));
        let broker = metrics.broker(3);
        for latency in [ms(1), Duration::from_micros(1500), ms(400), ms(20_000)] {
            broker.fetched(Some(latency));
        }
        // Sent and never answered: a request, no latency.
        broker.fetched(None);
        let snapshot = metrics.snapshot(Vec::new());
        let histogram = &snapshot.brokers[&3].fetch_latency;
        let mut expected = [0u64; FETCH_LATENCY_BUCKETS.len() + 1];
        expected[0] = 1; // 1 ms: at the first bound
        expected[1] = 1; // 1.5 ms: up to 2.5 ms
        expected[8] = 1; // 400 ms: up to 500 ms
        expected[FETCH_LATENCY_BUCKETS.len()] = 1; // 20 s: past every bound
        assert_eq!(histogram.counts, expected);
        assert_eq!(histogram.count(), 4);
        assert_eq!(histogram.sum, Duration::from_micros(20_402_500));
        assert_eq!(snapshot.brokers[&3].fetch_requests, 5);
        assert_eq!(snapshot.fetch_requests(), 5);
        let buckets: Vec<(f64, u64)> = histogram.buckets().collect();
        assert_eq!(buckets[1], (0.0025, 1));
        assert_eq!(buckets.last(), Some(&(f64::INFINITY, 1)));
        // The same node asked for again (a restarted fetch loop) keeps counting.
        metrics.broker(3).fetched(None);
        assert_eq!(metrics.snapshot(Vec::new()).brokers[&3].fetch_requests, 6);
    }

    #[test]
    fn the_give_up_condition_is_a_fault_as_long_as_give_up_after_or_a_stop() {
        let metrics = Metrics::new(ms(1000));
        let broker = metrics.broker(1);
        let fresh = metrics.snapshot(Vec::new());
        assert_eq!(fresh.failing_for, None);
        assert!(!fresh.gave_up());

        let start = Instant::now();
        broker.failing.set(Some(start));
        let short = metrics.snapshot_at(Vec::new(), start + ms(999));
        assert_eq!(short.failing_for, Some(ms(999)));
        assert!(!short.gave_up(), "a fault shorter than give_up_after");
        let long = metrics.snapshot_at(Vec::new(), start + ms(1000));
        assert!(long.gave_up(), "a fault as long as give_up_after");

        // The longest fault counts, whichever source it comes from.
        metrics.group_failing.set(Some(start + ms(200)));
        metrics.lookup_failing.set(Some(start + ms(100)));
        broker.failing.set(Some(start + ms(300)));
        let later = metrics.snapshot_at(Vec::new(), start + ms(1050));
        assert_eq!(later.failing_for, Some(ms(950)));

        metrics.group_failing.set(None);
        metrics.lookup_failing.set(None);
        broker.failing.set(None);
        let over = metrics.snapshot_at(Vec::new(), start + ms(5000));
        assert_eq!(over.failing_for, None, "the faults are over");
        assert!(!over.gave_up());

        metrics.stopped_on_error();
        let stopped = metrics.snapshot(Vec::new());
        assert!(stopped.gave_up());
        assert_eq!(stopped.errors[&ErrorKind::Fatal], 1);
    }

    #[test]
    fn snapshots_count_bytes_by_topic_errors_by_kind_and_group_events() {
        let metrics = Metrics::new(ms(1000));
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("b"));
        metrics.fetched_bytes([(&a, 100), (&b, 7), (&a, 50)].into_iter());
        metrics.fetched_bytes([(&a, 1)].into_iter());
        metrics.error(ErrorKind::Connection);
        metrics.error(ErrorKind::Connection);
        metrics.partition_errors(true, false);
        metrics.partition_errors(false, true);
        let plain = metrics.snapshot(Vec::new());
        assert_eq!(plain.bytes_fetched, [(a.clone(), 151), (b, 7)].into());
        let errors: Vec<(&str, u64)> = plain.errors.iter().map(|(k, &n)| (k.name(), n)).collect();
        assert_eq!(
            errors,
            [
                ("connection", 2),
                ("fetch", 1),
                ("offset_reset", 1),
                ("lookup", 0),
                ("group", 0),
                ("fatal", 0)
            ]
        );
        assert_eq!(plain.group, None, "no group counters outside a group");

        metrics.joined_group();
        metrics.rebalanced();
        metrics.committed(CommitResult::Ok);
        metrics.committed(CommitResult::Ok);
        metrics.committed(CommitResult::Failed);
        metrics.assigned(4);
        let group = metrics.snapshot(Vec::new()).group.unwrap();
        assert_eq!(group.rebalances, 1);
        assert_eq!(
            group.commits,
            [
                (CommitResult::Ok, 2),
                (CommitResult::Refused, 0),
                (CommitResult::Failed, 1)
            ]
            .into()
        );
        assert_eq!(group.assigned_partitions, 4);
    }
}
