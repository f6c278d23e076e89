//! KIP-227 incremental fetch sessions: what a broker holds for one fetch loop, and the
//! requests that change it.
//!
//! A session starts with a full fetch at epoch 0. The broker answers with a session id and
//! from then on remembers each partition's fetch offset, leader epoch and size limit, and
//! reads all of them for every request of the session. Later requests, at epochs 1, 2, ...
//! (after `i32::MAX` comes 1 again), name only the partitions that are new or whose offset,
//! leader epoch or limit changed, and list the removed ones in `forgotten_topics_data`. The
//! answer leaves out every partition with nothing new (no records, the same high watermark
//! and log start, no error). The broker never moves a fetch offset by itself: a partition
//! that received data is named again with its next offset.
//!
//! Whenever the two sides may disagree (a session error, a lost answer, a new connection, an
//! answer that does not match the session), the next request is full again, carrying the old
//! session id at epoch 0, which makes the broker drop that session and start a new one.
//! Closing sends the session id at epoch -1: the broker drops the session and fetches nothing.
//!
//! With sessions off (or a broker older than Fetch v7) every request is full and sessionless
//! (id 0, epoch -1); the same type then only remembers what the request in flight asked for.

use std::collections::HashMap;
use std::sync::Arc;

use kafka_protocol::messages::fetch_request::{FetchPartition, ForgottenTopic};
use kafka_protocol::messages::{FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::codes;
use crate::fetch::{
    fetch_partition, request_with, FetchParams, FetchTarget, PartitionResponse, TopicsBuilder,
    FIRST_VERSION_WITH_TOPIC_IDS,
};

/// Fetch versions from this one on carry a session id and epoch.
pub const FIRST_VERSION_WITH_SESSIONS: i16 = 7;

/// The session id of "no session".
const NO_SESSION: i32 = 0;
/// The epoch of a full request that (re)creates a session.
const INITIAL_EPOCH: i32 = 0;
/// The epoch of a full request without a session, or of one closing the session it names.
const FINAL_EPOCH: i32 = -1;

/// The epoch after `epoch`: 1, 2, ... `i32::MAX`, then 1 again (0 and -1 belong to full
/// requests, and -1 stays -1).
pub fn next_epoch(epoch: i32) -> i32 {
    match epoch {
        e if e < 0 => FINAL_EPOCH,
        i32::MAX => 1,
        e => e + 1,
    }
}

/// One partition of the session: what was last sent for it and what the broker last said.
#[derive(Clone, Debug)]
pub struct SessionPartition {
    /// Topic name.
    pub topic: Arc<str>,
    /// Topic id (the key from Fetch v13 on).
    pub topic_id: Uuid,
    /// Partition id.
    pub partition: i32,
    /// The offset the broker fetches from.
    pub fetch_offset: i64,
    /// The leader epoch sent with it.
    pub leader_epoch: i32,
    /// The size limit sent with it.
    pub max_bytes: i32,
    /// The caller's generation when the partition was last planned.
    pub generation: u64,
    /// The high watermark the broker last sent in this session (-1 before any).
    pub high_watermark: i64,
    /// The last stable offset the broker last sent in this session (-1 before any).
    pub last_stable_offset: i64,
    flags: Flags,
}

/// Bookkeeping of one partition across a request and its answer.
#[derive(Clone, Copy, Debug, Default)]
struct Flags {
    /// Wanted by the request being built.
    kept: bool,
    /// Named in the request being built.
    named: bool,
    /// Named since the broker last answered for it: an answer that leaves it out says
    /// "nothing new" for it.
    awaiting: bool,
    /// In the answer being read.
    answered: bool,
}

impl SessionPartition {
    fn new(target: &FetchTarget<'_>, max_bytes: i32) -> Self {
        Self {
            topic: target.topic.clone(),
            topic_id: target.topic_id,
            partition: target.partition,
            fetch_offset: target.offset,
            leader_epoch: target.leader_epoch,
            max_bytes,
            generation: target.generation,
            high_watermark: -1,
            last_stable_offset: -1,
            flags: Flags {
                kept: true,
                named: true,
                ..Flags::default()
            },
        }
    }

    /// Takes the target's position; true if the broker must be told.
    fn update(&mut self, target: &FetchTarget<'_>, max_bytes: i32) -> bool {
        let changed = self.fetch_offset != target.offset
            || self.leader_epoch != target.leader_epoch
            || self.max_bytes != max_bytes
            || self.generation != target.generation
            || self.topic_id != target.topic_id;
        self.fetch_offset = target.offset;
        self.leader_epoch = target.leader_epoch;
        self.max_bytes = max_bytes;
        self.generation = target.generation;
        self.topic_id = target.topic_id;
        changed
    }

    fn key(&self) -> (&str, i32) {
        (&self.topic, self.partition)
    }

    fn wire(&self) -> FetchPartition {
        fetch_partition(
            self.partition,
            self.fetch_offset,
            self.leader_epoch,
            self.max_bytes,
        )
    }
}

/// A partition the broker is to drop from the session.
#[derive(Debug)]
struct Forgotten {
    topic: Arc<str>,
    topic_id: Uuid,
    partition: i32,
}

/// What kind of request is in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sent {
    /// Full, without a session (sessions off, or Fetch before v7).
    Sessionless,
    /// Full, asking for a new session.
    Full,
    /// Incremental, in the session.
    Incremental,
}

/// A response read against the session.
#[derive(Debug, Default)]
pub struct SessionAnswer {
    /// The partitions answered, in the broker's order, each with the index of its entry in
    /// [`FetchSession::partitions`].
    pub partitions: Vec<(usize, PartitionResponse)>,
    /// Entries named by incremental requests that the broker left out of a real answer:
    /// nothing new at their fetch offset, high watermark as it last said.
    pub unchanged: Vec<usize>,
    /// The request-wide error code (0 when fine); the session has been reset for it.
    pub error_code: i16,
    /// How long the broker asks the client to wait.
    pub throttle_time_ms: i32,
    /// The answer did not fit the session (a partition missing from a full answer, or one
    /// outside the session): the next request is full.
    pub mismatched: bool,
}

/// The fetch session of one broker connection (see the module docs).
#[derive(Debug)]
pub struct FetchSession {
    /// Off: every request is full and sessionless.
    enabled: bool,
    /// The broker's session id, or [`NO_SESSION`].
    id: i32,
    /// The epoch of the next request: 0 full (creating a session), -1 full without one,
    /// otherwise incremental.
    epoch: i32,
    /// The session names topics by id (Fetch v13+); a change of naming starts a new one.
    by_id: bool,
    /// What the broker holds, in (topic, partition) order.
    partitions: Vec<SessionPartition>,
    /// Topic names by id, to read answers from Fetch v13 on.
    names: HashMap<Uuid, Arc<str>>,
    /// Where the next full request starts in `partitions`: each partition takes its turn at
    /// the head, the one place where a batch larger than the size limits is returned (KIP-74).
    rotation: usize,
    /// The request in flight, and the version it was sent at.
    in_flight: Option<(Sent, i16)>,
}

impl FetchSession {
    /// A session that has not sent anything yet; `enabled: false` never opens one.
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            id: NO_SESSION,
            epoch: if enabled { INITIAL_EPOCH } else { FINAL_EPOCH },
            by_id: false,
            partitions: Vec::new(),
            names: HashMap::new(),
            rotation: 0,
            in_flight: None,
        }
    }

    /// The broker's session id (0 while there is none).
    pub fn id(&self) -> i32 {
        self.id
    }

    /// The epoch the next request carries (0 or -1: a full request).
    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    /// What the broker holds (or, without a session, what the last request asked for), in
    /// (topic, partition) order.
    pub fn partitions(&self) -> &[SessionPartition] {
        &self.partitions
    }

    /// Builds the next request for `wanted`, best given in (topic, partition) order, each
    /// partition once (any order is correct, that one is fastest). `None` when nothing is
    /// wanted: then nothing changes and nothing should be sent.
    pub fn request<'a>(
        &mut self,
        wanted: impl IntoIterator<Item = FetchTarget<'a>>,
        params: &FetchParams,
        version: i16,
    ) -> Option<FetchRequest> {
        let mut wanted = wanted.into_iter().peekable();
        wanted.peek()?;
        self.choose_epoch(version);
        let mut forgotten = Vec::new();
        self.update(wanted, params.partition_max_bytes, &mut forgotten);
        let sent = match self.epoch {
            FINAL_EPOCH => Sent::Sessionless,
            INITIAL_EPOCH => Sent::Full,
            _ => Sent::Incremental,
        };
        let request = match sent {
            Sent::Incremental => self.incremental_request(params, version, &forgotten),
            Sent::Full | Sent::Sessionless => self.full_request(params, version),
        };
        self.in_flight = Some((sent, version));
        Some(request)
    }

    /// Decides whether the next request can be incremental.
    fn choose_epoch(&mut self, version: i16) {
        let by_id = version >= FIRST_VERSION_WITH_TOPIC_IDS;
        if !self.enabled || version < FIRST_VERSION_WITH_SESSIONS {
            self.id = NO_SESSION;
            self.epoch = FINAL_EPOCH;
        } else if self.in_flight.is_some() || self.by_id != by_id || self.epoch == FINAL_EPOCH {
            // An answer never read, or a change of naming: the broker's view is unknown.
            self.epoch = INITIAL_EPOCH;
        }
        self.in_flight = None;
        self.by_id = by_id;
    }

    /// Makes `partitions` the wanted set: entries updated, added and removed (the removed
    /// ones, and the old ids of re-created topics, go to `forgotten`).
    fn update<'a>(
        &mut self,
        wanted: impl Iterator<Item = FetchTarget<'a>>,
        max_bytes: i32,
        forgotten: &mut Vec<Forgotten>,
    ) {
        for entry in &mut self.partitions {
            entry.flags.kept = false;
            entry.flags.named = false;
            entry.flags.answered = false;
        }
        let by_id = self.by_id;
        let mut added = Vec::new();
        let mut renamed = false;
        let mut hint = 0;
        for target in wanted {
            let Some(at) = self.find(hint, target.topic, target.partition) else {
                added.push(SessionPartition::new(&target, max_bytes));
                continue;
            };
            hint = at + 1;
            let entry = &mut self.partitions[at];
            if by_id && entry.topic_id != target.topic_id && !entry.topic_id.is_nil() {
                // The topic was deleted and created again: the broker keys it by the old id.
                forgotten.push(Forgotten {
                    topic: entry.topic.clone(),
                    topic_id: entry.topic_id,
                    partition: entry.partition,
                });
                entry.high_watermark = -1;
                entry.last_stable_offset = -1;
                renamed = true;
            }
            let changed = entry.update(&target, max_bytes);
            entry.flags.kept = true;
            entry.flags.named |= changed;
        }
        let before = self.partitions.len();
        self.partitions.retain(|entry| {
            if !entry.flags.kept {
                forgotten.push(Forgotten {
                    topic: entry.topic.clone(),
                    topic_id: entry.topic_id,
                    partition: entry.partition,
                });
            }
            entry.flags.kept
        });
        let membership_changed = renamed || self.partitions.len() != before || !added.is_empty();
        if !added.is_empty() {
            self.partitions.append(&mut added);
            self.partitions.sort_by(|a, b| a.key().cmp(&b.key()));
            self.partitions
                .dedup_by(|later, earlier| later.key() == earlier.key());
        }
        if membership_changed {
            self.names.clear();
            for entry in &self.partitions {
                if !entry.topic_id.is_nil() {
                    self.names
                        .entry(entry.topic_id)
                        .or_insert_with(|| entry.topic.clone());
                }
            }
        }
    }

    /// The index of `(topic, partition)`, looked for at `hint` first (the wanted partitions
    /// usually come in the session's own order).
    fn find(&self, hint: usize, topic: &str, partition: i32) -> Option<usize> {
        if let Some(entry) = self.partitions.get(hint) {
            if entry.key() == (topic, partition) {
                return Some(hint);
            }
        }
        self.partitions
            .binary_search_by(|entry| entry.key().cmp(&(topic, partition)))
            .ok()
    }

    /// Every partition, from the rotation point on.
    fn full_request(&mut self, params: &FetchParams, version: i16) -> FetchRequest {
        for entry in &mut self.partitions {
            entry.flags.awaiting = true;
        }
        let start = self.rotation % self.partitions.len();
        self.rotation = self.rotation.wrapping_add(1);
        let (tail, head) = self.partitions.split_at(start);
        let mut topics = TopicsBuilder::new(version);
        for entry in head.iter().chain(tail) {
            topics.push(&entry.topic, entry.topic_id, entry.wire());
        }
        request_with(params)
            .with_session_id(self.id)
            .with_session_epoch(self.epoch)
            .with_topics(topics.finish())
    }

    /// Only the partitions that changed, and the forgotten ones.
    fn incremental_request(
        &mut self,
        params: &FetchParams,
        version: i16,
        forgotten: &[Forgotten],
    ) -> FetchRequest {
        for entry in &mut self.partitions {
            entry.flags.awaiting |= entry.flags.named;
        }
        let mut topics = TopicsBuilder::new(version);
        for entry in self.partitions.iter().filter(|entry| entry.flags.named) {
            topics.push(&entry.topic, entry.topic_id, entry.wire());
        }
        request_with(params)
            .with_session_id(self.id)
            .with_session_epoch(self.epoch)
            .with_topics(topics.finish())
            .with_forgotten_topics_data(forgotten_topics(forgotten, version))
    }

    /// Reads the answer to the request in flight: which entry each partition belongs to,
    /// which named partitions it left out as unchanged, and the next epoch.
    pub fn read_response(&mut self, response: FetchResponse) -> SessionAnswer {
        let mut answer = SessionAnswer {
            error_code: response.error_code,
            throttle_time_ms: response.throttle_time_ms,
            ..SessionAnswer::default()
        };
        let Some((sent, version)) = self.in_flight.take() else {
            return answer;
        };
        if response.error_code != 0 {
            if sent != Sent::Sessionless {
                tracing::info!(session = self.id, epoch = self.epoch,
                    error = %crate::error_name(response.error_code), "fetch session reset");
                if response.error_code == codes::FETCH_SESSION_ID_NOT_FOUND {
                    self.id = NO_SESSION;
                }
                self.epoch = INITIAL_EPOCH;
            }
            return answer;
        }
        let (answered, extra) = self.match_partitions(response.responses, version, &mut answer);
        match sent {
            Sent::Sessionless => {}
            Sent::Full => {
                if answered < self.partitions.len() || extra > 0 {
                    // Also the empty answer of a throttled full request (KIP-219).
                    tracing::debug!(
                        answered,
                        extra,
                        wanted = self.partitions.len(),
                        "full fetch answer does not match the request; no session"
                    );
                    answer.mismatched = true;
                    self.id = NO_SESSION;
                    self.epoch = INITIAL_EPOCH;
                } else if response.session_id == NO_SESSION {
                    self.id = NO_SESSION;
                    self.epoch = INITIAL_EPOCH;
                } else {
                    if self.id != response.session_id {
                        tracing::debug!(session = response.session_id, "fetch session created");
                    }
                    self.id = response.session_id;
                    self.epoch = next_epoch(INITIAL_EPOCH);
                }
            }
            Sent::Incremental => {
                if extra > 0
                    || (response.session_id != NO_SESSION && response.session_id != self.id)
                {
                    tracing::info!(
                        session = self.id,
                        answered_session = response.session_id,
                        extra,
                        "incremental fetch answer does not match the session; starting over"
                    );
                    answer.mismatched = true;
                    self.epoch = INITIAL_EPOCH;
                } else if response.session_id == NO_SESSION {
                    tracing::debug!(session = self.id, "the broker ended the fetch session");
                    self.id = NO_SESSION;
                    self.epoch = INITIAL_EPOCH;
                } else {
                    self.epoch = next_epoch(self.epoch);
                    // A throttled answer is empty because nothing was read, not because
                    // nothing is new.
                    if response.throttle_time_ms <= 0 {
                        self.settle_unchanged(&mut answer.unchanged);
                    }
                }
            }
        }
        answer
    }

    /// Matches each answered partition to its entry; returns how many matched and how many
    /// did not (outside the session, or answered twice).
    fn match_partitions(
        &mut self,
        topics: Vec<kafka_protocol::messages::fetch_response::FetchableTopicResponse>,
        version: i16,
        answer: &mut SessionAnswer,
    ) -> (usize, usize) {
        let (mut answered, mut extra) = (0, 0);
        for topic in topics {
            let range = if version >= FIRST_VERSION_WITH_TOPIC_IDS {
                self.names
                    .get(&topic.topic_id)
                    .map(|name| self.topic_range(name))
            } else {
                Some(self.topic_range(topic.topic.0.as_str()))
            };
            for partition in topic.partitions {
                let found = range.clone().and_then(|range| {
                    let start = range.start;
                    self.partitions[range]
                        .binary_search_by_key(&partition.partition_index, |e| e.partition)
                        .ok()
                        .map(|at| start + at)
                });
                let Some(at) = found.filter(|&at| !self.partitions[at].flags.answered) else {
                    tracing::warn!(topic = %topic.topic.0, topic_id = %topic.topic_id,
                        partition = partition.partition_index,
                        "fetch answer for a partition not asked for (or answered twice); ignored");
                    extra += 1;
                    continue;
                };
                let entry = &mut self.partitions[at];
                entry.flags.answered = true;
                entry.flags.awaiting = false;
                entry.high_watermark = partition.high_watermark;
                entry.last_stable_offset = partition.last_stable_offset;
                answered += 1;
                let topic = entry.topic.clone();
                answer
                    .partitions
                    .push((at, PartitionResponse::from_wire(topic, partition)));
            }
        }
        (answered, extra)
    }

    /// The entries of `topic`.
    fn topic_range(&self, topic: &str) -> std::ops::Range<usize> {
        let start = self.partitions.partition_point(|e| &*e.topic < topic);
        let len = self.partitions[start..].partition_point(|e| &*e.topic == topic);
        start..start + len
    }

    /// Entries still awaiting an answer that this answer left out: nothing new for them.
    fn settle_unchanged(&mut self, unchanged: &mut Vec<usize>) {
        for (at, entry) in self.partitions.iter_mut().enumerate() {
            if entry.flags.awaiting && !entry.flags.answered {
                entry.flags.awaiting = false;
                unchanged.push(at);
            }
        }
    }

    /// The request in flight got no answer (the connection failed or was dropped): the
    /// broker may or may not have applied it, so the next request is full.
    pub fn connection_lost(&mut self) {
        self.in_flight = None;
        if self.id != NO_SESSION {
            self.epoch = INITIAL_EPOCH;
        }
    }

    /// The request that closes the session (its id at epoch -1, nothing to fetch), or `None`
    /// when there is no session. Afterwards the session is empty, as on the broker.
    pub fn close_request(&mut self, params: &FetchParams, version: i16) -> Option<FetchRequest> {
        let id = std::mem::replace(&mut self.id, NO_SESSION);
        self.epoch = if self.enabled {
            INITIAL_EPOCH
        } else {
            FINAL_EPOCH
        };
        self.in_flight = None;
        self.partitions.clear();
        self.names.clear();
        if id == NO_SESSION || version < FIRST_VERSION_WITH_SESSIONS {
            return None;
        }
        Some(
            request_with(params)
                .with_max_wait_ms(0)
                .with_session_id(id)
                .with_session_epoch(FINAL_EPOCH),
        )
    }
}

/// The forgotten partitions, grouped by topic (by id from v13 on, by name before).
fn forgotten_topics(forgotten: &[Forgotten], version: i16) -> Vec<ForgottenTopic> {
    let mut topics: Vec<ForgottenTopic> = Vec::new();
    let mut index: HashMap<(&str, Uuid), usize> = HashMap::new();
    for gone in forgotten {
        let at = *index
            .entry((&gone.topic, gone.topic_id))
            .or_insert_with(|| {
                let mut topic = ForgottenTopic::default();
                if version >= FIRST_VERSION_WITH_TOPIC_IDS {
                    topic.topic_id = gone.topic_id;
                } else {
                    topic.topic = TopicName(StrBytes::from_string(gone.topic.to_string()));
                }
                topics.push(topic);
                topics.len() - 1
            });
        topics[at].partitions.push(gone.partition);
    }
    topics
}

#[cfg(test)]
mod tests;
