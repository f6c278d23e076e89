//! KIP-227 fetch sessions against a fake broker that keeps sessions the way Kafka's
//! FetchSession.scala does (a session per id, the expected epoch, each partition's cached
//! offset and high watermark; answers leave out partitions with nothing new; partitions that
//! returned data move to the back). It plays what a real broker produces only by chance:
//! FETCH_SESSION_ID_NOT_FOUND (an evicted session), INVALID_FETCH_SESSION_EPOCH, and a broker
//! that never grants a session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{ApiKey, FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use krec_batch::encode::BatchBuilder;
use krec_consumer::{Consumer, ConsumerConfig, Fetched, StartOffset, TopicPartition};
use krec_testkit::broker::{self, answers, Reply, Request};

use super::{api_versions, fast_config, TOPIC};

/// Fetch versions the fake speaks: sessions (v7+), topics by name (before v13).
const FETCH_VERSIONS: (i16, i16) = (4, 12);
/// Records per partition: three batches, one batch, none.
const RECORDS: [i64; 3] = [30, 10, 0];
const BATCH: i64 = 10;
const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
const INVALID_FETCH_SESSION_EPOCH: i16 = 71;

/// One fetch request as the fake saw it.
#[derive(Clone, Debug)]
struct Seen {
    session_id: i32,
    epoch: i32,
    /// Partitions named, with their fetch offsets.
    named: Vec<(i32, i64)>,
    forgotten: Vec<i32>,
    /// Named partitions whose offset the session already held (a waste of request bytes).
    redundant: usize,
}

/// What the fake holds for one partition of a session.
#[derive(Clone, Debug)]
struct Cached {
    partition: i32,
    fetch_offset: i64,
    high_watermark: i64,
}

#[derive(Debug)]
struct Session {
    /// The epoch the next request must carry.
    epoch: i32,
    partitions: Vec<Cached>,
}

#[derive(Debug, Default)]
struct Broker {
    sessions: HashMap<i32, Session>,
    next_id: i32,
    /// A session per full request at epoch 0 (else every answer says session id 0).
    grants_sessions: bool,
    /// The n-th fetch request, if incremental, fails with this error code.
    fault: Option<(usize, i16)>,
    /// From this offset on, partition 0 answers only the first half of its batch.
    cut_from: Option<i64>,
    seen: Vec<Seen>,
}

fn next_epoch(epoch: i32) -> i32 {
    if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

/// The batch holding `offset` (one per answer), or nothing at the end.
fn records_at(partition: i32, offset: i64) -> Bytes {
    let end = RECORDS[partition as usize];
    if offset >= end {
        return Bytes::new();
    }
    let base = offset - offset % BATCH;
    let mut builder = BatchBuilder::new(base);
    for o in base..(base + BATCH).min(end) {
        builder = builder.record(None, Some(format!("p{partition}-{o}").as_bytes()), &[]);
    }
    Bytes::from(builder.build())
}

fn partition_answer(partition: i32, offset: i64, cut_from: Option<i64>) -> PartitionData {
    let end = RECORDS[partition as usize];
    let mut records = records_at(partition, offset);
    if partition == 0 && cut_from.is_some_and(|from| offset >= from) {
        records.truncate(records.len() / 2);
    }
    PartitionData::default()
        .with_partition_index(partition)
        .with_high_watermark(end)
        .with_last_stable_offset(end)
        .with_log_start_offset(0)
        .with_records(Some(records))
}

impl Broker {
    fn fetch(&mut self, request: &FetchRequest) -> FetchResponse {
        let index = self.seen.len();
        let named: Vec<(i32, i64)> = request
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| (p.partition, p.fetch_offset)))
            .collect();
        let forgotten: Vec<i32> = request
            .forgotten_topics_data
            .iter()
            .flat_map(|t| t.partitions.iter().copied())
            .collect();
        let (id, epoch) = (request.session_id, request.session_epoch);
        let fault = self
            .fault
            .filter(|&(at, _)| at == index)
            .map(|(_, code)| code);
        let mut redundant = 0;
        let response = if epoch <= 0 {
            self.full_fetch(id, epoch, &named)
        } else if let Some(code) = fault {
            if code == FETCH_SESSION_ID_NOT_FOUND {
                self.sessions.remove(&id);
            }
            FetchResponse::default().with_error_code(code)
        } else {
            match self.incremental_fetch(id, epoch, &named, &forgotten) {
                Ok((response, names_held)) => {
                    redundant = names_held;
                    response
                }
                Err(code) => FetchResponse::default().with_error_code(code),
            }
        };
        self.seen.push(Seen {
            session_id: id,
            epoch,
            named,
            forgotten,
            redundant,
        });
        response
    }

    /// A full fetch: drops the session it names; at epoch 0 opens one (if granting).
    fn full_fetch(&mut self, session_id: i32, epoch: i32, named: &[(i32, i64)]) -> FetchResponse {
        self.sessions.remove(&session_id);
        let answers: Vec<PartitionData> = named
            .iter()
            .map(|&(partition, offset)| partition_answer(partition, offset, self.cut_from))
            .collect();
        if epoch != 0 || !self.grants_sessions {
            return answer(0, answers);
        }
        self.next_id += 1;
        let partitions = answers
            .iter()
            .zip(named)
            .map(|(answer, &(partition, offset))| Cached {
                partition,
                fetch_offset: offset,
                high_watermark: answer.high_watermark,
            })
            .collect();
        let session = Session {
            epoch: 1,
            partitions,
        };
        self.sessions.insert(self.next_id, session);
        answer(self.next_id, answers)
    }

    /// The session's answer and how many named partitions it already held at that offset,
    /// or the session error.
    fn incremental_fetch(
        &mut self,
        session_id: i32,
        epoch: i32,
        named: &[(i32, i64)],
        forgotten: &[i32],
    ) -> Result<(FetchResponse, usize), i16> {
        let cut_from = self.cut_from;
        let session = self
            .sessions
            .get_mut(&session_id)
            .ok_or(FETCH_SESSION_ID_NOT_FOUND)?;
        if session.epoch != epoch {
            return Err(INVALID_FETCH_SESSION_EPOCH);
        }
        let mut redundant = 0;
        for &(partition, offset) in named {
            let cached = session
                .partitions
                .iter_mut()
                .find(|c| c.partition == partition);
            match cached {
                Some(cached) if cached.fetch_offset == offset => redundant += 1,
                Some(cached) => cached.fetch_offset = offset,
                None => session.partitions.push(Cached {
                    partition,
                    fetch_offset: offset,
                    high_watermark: -1,
                }),
            }
        }
        session
            .partitions
            .retain(|c| !forgotten.contains(&c.partition));
        session.epoch = next_epoch(session.epoch);
        let mut answers = Vec::new();
        let mut with_data = Vec::new();
        for cached in &mut session.partitions {
            let data = partition_answer(cached.partition, cached.fetch_offset, cut_from);
            let has_records = data.records.as_ref().is_some_and(|r| !r.is_empty());
            if has_records || data.high_watermark != cached.high_watermark {
                cached.high_watermark = data.high_watermark;
                answers.push(data);
            }
            if has_records {
                with_data.push(cached.partition);
            }
        }
        // Partitions that returned data go to the back, as Kafka does for fairness.
        for partition in with_data {
            if let Some(at) = session
                .partitions
                .iter()
                .position(|c| c.partition == partition)
            {
                let cached = session.partitions.remove(at);
                session.partitions.push(cached);
            }
        }
        Ok((answer(session_id, answers), redundant))
    }
}

fn answer(session_id: i32, partitions: Vec<PartitionData>) -> FetchResponse {
    let responses = if partitions.is_empty() {
        Vec::new()
    } else {
        vec![FetchableTopicResponse::default()
            .with_topic(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partitions(partitions)]
    };
    FetchResponse::default()
        .with_session_id(session_id)
        .with_responses(responses)
}

/// The fake's answer to one request.
fn reply(request: &Request, broker: &mut Broker) -> Reply {
    match request.api_key {
        ApiKey::ApiVersions => api_versions(request, FETCH_VERSIONS.0, FETCH_VERSIONS.1),
        ApiKey::Metadata => {
            let topics = [(TOPIC, RECORDS.len() as i32)];
            request.answer(&answers::metadata(request.port, &topics))
        }
        ApiKey::ListOffsets => {
            let offsets =
                answers::list_offsets(&request.decode(), |partition, timestamp| match timestamp {
                    -2 => 0,
                    _ => RECORDS[partition as usize],
                });
            request.answer(&offsets)
        }
        ApiKey::Fetch => {
            let fetch: FetchRequest = request.decode();
            let response = broker.fetch(&fetch);
            let idle = response.responses.is_empty() && response.error_code == 0;
            let answer = request.answer(&response);
            if idle && fetch.max_wait_ms > 0 {
                // Like a broker waiting max_wait_ms for data that does not come.
                answer.after(Duration::from_millis(20))
            } else {
                answer
            }
        }
        other => panic!("the fake broker does not speak {other:?}"),
    }
}

async fn start(broker: Broker) -> (ConsumerConfig, Arc<Mutex<Broker>>) {
    let broker = Arc::new(Mutex::new(broker));
    let script = broker.clone();
    let address = broker::start(move |request| reply(request, &mut script.lock().unwrap())).await;
    (fast_config(&address), broker)
}

fn granting(fault: Option<(usize, i16)>) -> Broker {
    Broker {
        grants_sessions: true,
        fault,
        ..Broker::default()
    }
}

/// Reads until every partition has reported its end; the values delivered per partition.
async fn read_to_end(consumer: &mut Consumer) -> Vec<Vec<String>> {
    let mut values = vec![Vec::new(); RECORDS.len()];
    let mut ended = vec![false; RECORDS.len()];
    while ended.contains(&false) {
        let fetched = tokio::time::timeout(Duration::from_secs(20), consumer.poll())
            .await
            .expect("the consumer made progress")
            .unwrap();
        match fetched {
            Fetched::Chunk(chunk) => {
                for batch in chunk.batches() {
                    for record in batch.unwrap().records() {
                        let value = record.unwrap().value().unwrap().to_vec();
                        values[chunk.partition() as usize].push(String::from_utf8(value).unwrap());
                    }
                }
            }
            Fetched::EndOfPartition {
                topic_partition, ..
            } => ended[topic_partition.partition as usize] = true,
            other => panic!("an assignment without a subscription changed: {other:?}"),
        }
    }
    values
}

/// Every record of every partition once, in order.
fn expected() -> Vec<Vec<String>> {
    RECORDS
        .iter()
        .enumerate()
        .map(|(p, &end)| (0..end).map(|o| format!("p{p}-{o}")).collect())
        .collect()
}

async fn consume_all(broker: Broker, sessions: bool) -> Vec<Seen> {
    let (mut config, broker) = start(broker).await;
    config.fetch_sessions = sessions;
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(
            &[
                TopicPartition::new(TOPIC, 0),
                TopicPartition::new(TOPIC, 1),
                TopicPartition::new(TOPIC, 2),
            ],
            StartOffset::Beginning,
        )
        .await
        .unwrap();
    assert_eq!(read_to_end(&mut consumer).await, expected());
    consumer.close().await;
    let seen = broker.lock().unwrap().seen.clone();
    seen
}

/// `(session id, epoch, partitions named)` of each request.
fn shapes(seen: &[Seen]) -> Vec<(i32, i32, usize)> {
    seen.iter()
        .map(|s| (s.session_id, s.epoch, s.named.len()))
        .collect()
}

#[tokio::test]
async fn incremental_fetches_name_only_the_partitions_that_moved() {
    let seen = consume_all(granting(None), true).await;
    // Full (all three), then each partition named only when its offset moved: partition 0
    // after each of its batches, partition 1 once (to its end), partition 2 (empty) never;
    // the last request closes the session.
    assert_eq!(
        shapes(&seen[..4]),
        vec![(0, 0, 3), (1, 1, 2), (1, 2, 1), (1, 3, 1)],
        "{seen:?}"
    );
    assert_eq!(seen[1].named, vec![(0, 10), (1, 10)]);
    assert!(
        seen.iter()
            .all(|s| s.redundant == 0 && s.forgotten.is_empty()),
        "{seen:?}"
    );
    let last = seen.last().unwrap();
    assert_eq!(
        (last.session_id, last.epoch, last.named.len()),
        (1, -1, 0),
        "closed"
    );
}

#[tokio::test]
async fn session_id_not_found_falls_back_to_a_full_fetch_and_a_new_session() {
    let seen = consume_all(granting(Some((2, FETCH_SESSION_ID_NOT_FOUND))), true).await;
    assert_eq!(shapes(&seen[..2]), vec![(0, 0, 3), (1, 1, 2)], "{seen:?}");
    assert_eq!((seen[2].session_id, seen[2].epoch), (1, 2), "refused");
    // Full again, without the id the broker no longer has, at the offsets reached.
    assert_eq!((seen[3].session_id, seen[3].epoch), (0, 0), "{seen:?}");
    let mut named = seen[3].named.clone();
    named.sort_unstable();
    assert_eq!(named, vec![(0, 20), (1, 10), (2, 0)]);
    assert_eq!((seen[4].session_id, seen[4].epoch), (2, 1), "a new session");
}

#[tokio::test]
async fn invalid_epoch_falls_back_to_a_full_fetch_closing_the_old_session() {
    let seen = consume_all(granting(Some((2, INVALID_FETCH_SESSION_EPOCH))), true).await;
    assert_eq!((seen[2].session_id, seen[2].epoch), (1, 2), "refused");
    // The old id at epoch 0: the broker drops that session and opens another.
    assert_eq!((seen[3].session_id, seen[3].epoch), (1, 0), "{seen:?}");
    assert_eq!(seen[3].named.len(), 3);
    assert_eq!((seen[4].session_id, seen[4].epoch), (2, 1), "a new session");
}

#[tokio::test]
async fn a_broker_that_grants_no_session_gets_full_fetches() {
    let seen = consume_all(Broker::default(), true).await;
    assert!(
        seen.iter()
            .all(|s| (s.session_id, s.epoch, s.named.len()) == (0, 0, 3)),
        "{seen:?}"
    );
}

#[tokio::test]
async fn sessions_off_sends_sessionless_full_fetches() {
    let seen = consume_all(granting(None), false).await;
    assert!(
        seen.iter()
            .all(|s| (s.session_id, s.epoch, s.named.len()) == (0, -1, 3)),
        "{seen:?}"
    );
}

#[tokio::test]
async fn a_seek_in_a_live_session_is_named_and_its_end_still_reported() {
    let (config, broker) = start(granting(None)).await;
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(
            &[
                TopicPartition::new(TOPIC, 0),
                TopicPartition::new(TOPIC, 1),
                TopicPartition::new(TOPIC, 2),
            ],
            StartOffset::Beginning,
        )
        .await
        .unwrap();
    assert_eq!(read_to_end(&mut consumer).await, expected());
    // Partition 1 sought to where it already is (its end): the broker has nothing new for
    // it and leaves it out of its answers, yet the new position's end must be reported.
    consumer
        .seek(&TopicPartition::new(TOPIC, 1), StartOffset::Offset(10))
        .unwrap();
    let fetched = tokio::time::timeout(Duration::from_secs(20), consumer.poll())
        .await
        .expect("the end of the sought partition is reported")
        .unwrap();
    assert!(
        matches!(
            &fetched,
            Fetched::EndOfPartition {
                topic_partition,
                offset: 10,
                ..
            } if topic_partition.partition == 1
        ),
        "{fetched:?}"
    );
    let seen = broker.lock().unwrap().seen.clone();
    let named_again = seen
        .iter()
        .filter(|s| s.epoch > 0 && s.named.contains(&(1, 10)))
        .count();
    assert!(
        named_again >= 2,
        "named after reaching its end and after the seek: {seen:?}"
    );
    assert!(
        seen.iter()
            .all(|s| s.session_id <= 1 && s.epoch != 0 || s.named.len() == 3),
        "no restart: {seen:?}"
    );
}

#[tokio::test]
async fn an_unassigned_partition_is_forgotten_by_the_live_session() {
    let (config, broker) = start(granting(None)).await;
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    let partitions = [0, 1, 2].map(|partition| TopicPartition::new(TOPIC, partition));
    consumer
        .assign(&partitions, StartOffset::Beginning)
        .await
        .unwrap();
    assert_eq!(read_to_end(&mut consumer).await, expected());
    consumer.unassign(&partitions[1..2]);
    // Partition 0 read again from its start, so that requests go on and carry the change.
    consumer
        .seek(&partitions[0], StartOffset::Offset(0))
        .unwrap();
    loop {
        let fetched = tokio::time::timeout(Duration::from_secs(20), consumer.poll())
            .await
            .expect("partition 0 is read again")
            .unwrap();
        if let Fetched::Chunk(chunk) = fetched {
            assert_eq!(chunk.partition(), 0, "only partition 0 is still assigned");
            break;
        }
    }
    let seen = broker.lock().unwrap().seen.clone();
    let forgetting: Vec<&Seen> = seen.iter().filter(|s| !s.forgotten.is_empty()).collect();
    assert_eq!(forgetting.len(), 1, "{seen:?}");
    assert_eq!(forgetting[0].forgotten, vec![1], "{seen:?}");
    assert!(forgetting[0].epoch > 0, "in the live session: {seen:?}");
}

#[tokio::test]
async fn a_partition_answered_first_with_only_a_cut_batch_is_no_progress() {
    // Partition 0 comes back with half a batch at offset 10, every time. Incremental
    // requests do not name it (its offset does not move), yet the broker reads it first
    // among the partitions with records, where KIP-74 promises a whole batch: a broken
    // broker, reported instead of fetched forever.
    let (config, broker) = start(Broker {
        cut_from: Some(10),
        ..granting(None)
    })
    .await;
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(&[TopicPartition::new(TOPIC, 0)], StartOffset::Beginning)
        .await
        .unwrap();
    let error = loop {
        let polled = tokio::time::timeout(Duration::from_secs(20), consumer.poll())
            .await
            .expect("the stall is reported");
        if let Err(error) = polled {
            break error;
        }
    };
    assert!(
        matches!(
            error,
            krec_consumer::Error::NoProgress {
                partition: 0,
                offset: 10,
                ..
            }
        ),
        "{error}"
    );
    let seen = broker.lock().unwrap().seen.clone();
    assert!(seen.iter().skip(2).all(|s| s.named.is_empty()), "{seen:?}");
}
