//! The accumulator's state machine without a network: what a sender drains after each kind of
//! answer (acknowledged, retriable, epoch bump, refused, expired, stopped), read from the
//! batches' own header fields.

mod transactional;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use krec_batch::{BatchWalk, DecodeConfig, WriteConfig};
use krec_client::metadata::{ClusterMetadata, PartitionMetadata, TopicMetadata};
use krec_client::partitioner::{SeededRandom, StickyPartitioner};
use krec_client::produce::{Appended as BrokerAppended, ProduceError, ProduceErrorKind};
use krec_client::producer_id::ProducerIdentity;
use krec_client::TopicPartition;
use tokio::sync::Semaphore;

use super::{Accumulator, Limits, Request};
use crate::delivery::Delivery;
use crate::identity::Identity;
use crate::stats::Counters;
use crate::{Error, ProducerConfig, ProducerRecord};

const NODE: i32 = 1;
pub(super) const MEMORY: usize = 1 << 20;

pub(super) struct Bench {
    pub(super) accumulator: Accumulator,
    memory: Arc<Semaphore>,
    pub(super) now: Instant,
}

/// An idempotent accumulator (producer 7, epoch 3) over one topic `t` of one partition led
/// by broker 1, one record per batch, no linger.
pub(super) fn bench() -> Bench {
    bench_of(ProducerIdentity {
        producer_id: 7,
        producer_epoch: 3,
    })
}

/// [`bench`] with another producer id and epoch.
fn bench_of(identity: ProducerIdentity) -> Bench {
    bench_with(Identity::idempotent(identity))
}

/// [`bench`] with another identity owner.
fn bench_with(identity: Identity) -> Bench {
    let mut config = ProducerConfig::new(vec!["b:9092".to_owned()]);
    config.linger = Duration::ZERO;
    config.write = WriteConfig {
        batch_size: 1,
        ..WriteConfig::default()
    };
    config.retries = 2;
    let memory = Arc::new(Semaphore::new(MEMORY));
    let mut accumulator = Accumulator::new(
        Limits::new(&config),
        identity,
        memory.clone(),
        Arc::new(Counters::default()),
    );
    let metadata = ClusterMetadata {
        brokers: HashMap::from([(NODE, "b:9092".to_owned()), (2, "c:9092".to_owned())]),
        topics: HashMap::from([(
            "t".to_owned(),
            TopicMetadata {
                name: "t".to_owned(),
                topic_id: uuid::Uuid::nil(),
                error_code: 0,
                is_internal: false,
                partitions: vec![PartitionMetadata {
                    partition: 0,
                    leader: NODE,
                    leader_epoch: 0,
                    error_code: 0,
                }],
            },
        )]),
    };
    let until = Instant::now() + Duration::from_secs(60);
    assert!(matches!(
        accumulator.route("t", until),
        super::Route::Unknown
    ));
    accumulator.apply_metadata(&metadata);
    Bench {
        accumulator,
        memory,
        now: Instant::now(),
    }
}

impl Bench {
    /// Sends a record with value `value`, taking its memory as `send` does.
    pub(super) fn send(&mut self, value: &str) -> Delivery {
        let record = ProducerRecord::new("t").value(value.to_owned());
        let held = record.held_bytes();
        self.memory
            .try_acquire_many(held as u32)
            .expect("memory")
            .forget();
        self.accumulator
            .append(&record, 0, held, Some(self.now))
            .expect("append")
            .expect("a known topic")
            .delivery
    }

    pub(super) fn drain(&mut self) -> Option<Request> {
        self.accumulator.drain(NODE, 1 << 20, self.now).0
    }

    /// The drained batch's (epoch, base sequence, value), of producer 7.
    pub(super) fn only_batch(request: &Request) -> (i16, i32, String) {
        let (producer_id, fields) = Self::only_batch_of(request);
        assert_eq!(producer_id, 7);
        fields
    }

    /// The drained batch's producer id and (epoch, base sequence, value).
    fn only_batch_of(request: &Request) -> (i64, (i16, i32, String)) {
        let bytes = &request.topics[0].partitions[0].batch;
        let config = DecodeConfig::default();
        let batch = BatchWalk::new(bytes, &config)
            .next()
            .expect("a batch")
            .expect("a batch whose CRC holds");
        let record = batch.records().next().expect("a record").expect("record");
        let value = String::from_utf8(record.value().unwrap().to_vec()).unwrap();
        let fields = (batch.producer_epoch(), batch.base_sequence(), value);
        (batch.producer_id(), fields)
    }

    pub(super) fn answer(&mut self, request: Request, result: Result<i64, ProduceErrorKind>) {
        let partition = TopicPartition::new("t", 0);
        let result = result
            .map(|base_offset| BrokerAppended {
                base_offset,
                log_append_time_ms: None,
                log_start_offset: 0,
            })
            .map_err(|kind| ProduceError {
                partition: partition.clone(),
                kind,
                code: 0,
                message: None,
                record_errors: Vec::new(),
                current_leader: None,
            });
        let answers = vec![(partition, result)];
        self.accumulator
            .on_answer(request.sent, answers, "b:9092", self.now);
    }

    pub(super) fn free_memory(&self) -> usize {
        self.memory.available_permits()
    }
}

pub(super) async fn outcome(delivery: Delivery) -> Result<i64, Error> {
    let delivered = tokio::time::timeout(Duration::from_secs(5), delivery)
        .await
        .expect("the delivery resolves");
    delivered.map(|d| d.offset())
}

#[tokio::test]
async fn a_retried_batch_goes_again_unchanged_and_the_later_ones_after_it() {
    let mut bench = bench();
    let sequences_known = bench.send("known");
    let request = bench.drain().expect("a ready batch");
    bench.answer(request, Ok(9));
    assert_eq!(outcome(sequences_known).await.unwrap(), 9);
    let deliveries = [bench.send("a"), bench.send("b"), bench.send("c")];
    let first = bench.drain().expect("a ready batch");
    assert_eq!(Bench::only_batch(&first), (3, 1, "a".to_owned()));
    let second = bench.drain().expect("a second batch in flight");
    assert_eq!(Bench::only_batch(&second), (3, 2, "b".to_owned()));
    bench.answer(first, Err(ProduceErrorKind::Transient));
    assert!(
        bench.drain().is_none(),
        "nothing new while a resend waits for b"
    );
    // b's gap is a's: sent again after it, no new epoch.
    bench.answer(second, Err(ProduceErrorKind::OutOfOrderSequenceNumber));
    assert!(bench.drain().is_none(), "no retry before retry.backoff.ms");
    bench.now += Duration::from_secs(1);
    for (sequence, value) in ["a", "b", "c"].into_iter().enumerate() {
        let request = bench.drain().expect("the batches again, in order");
        assert_eq!(
            Bench::only_batch(&request),
            (3, sequence as i32 + 1, value.to_owned())
        );
        bench.answer(request, Ok(10 + sequence as i64));
    }
    for (delivery, offset) in deliveries.into_iter().zip(10..) {
        assert_eq!(outcome(delivery).await.unwrap(), offset);
    }
    assert_eq!(bench.free_memory(), MEMORY, "every byte given back");
}

#[tokio::test]
async fn at_most_max_in_flight_batches_of_a_partition_are_out() {
    let mut bench = bench();
    let _deliveries: Vec<Delivery> = (0..7).map(|i| bench.send(&i.to_string())).collect();
    // Before the broker has the producer's sequences of the partition: one at a time.
    let first = bench.drain().expect("a ready batch");
    assert!(
        bench.drain().is_none(),
        "a second before the first is acknowledged"
    );
    bench.answer(first, Ok(0));
    let mut requests = Vec::new();
    while let Some(request) = bench.drain() {
        requests.push(request);
    }
    assert_eq!(requests.len(), 5, "max.in.flight.requests.per.connection");
    bench.answer(requests.remove(0), Ok(1));
    let request = bench.drain().expect("room for one more");
    assert_eq!(Bench::only_batch(&request), (3, 6, "6".to_owned()));
}

#[tokio::test]
async fn unknown_producer_id_bumps_the_epoch_and_restamps_what_waits() {
    let mut bench = bench();
    let first = bench.send("a");
    let second = bench.send("b");
    let request = bench.drain().expect("a ready batch");
    bench.answer(request, Err(ProduceErrorKind::UnknownProducerId));
    let request = bench.drain().expect("the batch again, after the bump");
    assert_eq!(Bench::only_batch(&request), (4, 0, "a".to_owned()));
    bench.answer(request, Ok(20));
    let request = bench.drain().expect("the next batch");
    assert_eq!(Bench::only_batch(&request), (4, 1, "b".to_owned()));
    bench.answer(request, Ok(21));
    assert_eq!(outcome(first).await.unwrap(), 20);
    assert_eq!(outcome(second).await.unwrap(), 21);
}

#[tokio::test]
async fn an_exhausted_epoch_waits_for_a_new_producer_id_and_restamps_what_waits() {
    let mut bench = bench_of(ProducerIdentity {
        producer_id: 7,
        producer_epoch: i16::MAX,
    });
    let first = bench.send("a");
    let second = bench.send("b");
    let request = bench.drain().expect("a ready batch");
    bench.answer(request, Err(ProduceErrorKind::UnknownProducerId));
    assert!(bench.drain().is_none(), "nothing goes out without a new id");
    assert!(bench.accumulator.ask_new_producer_id(), "a sender asks");
    assert!(
        !bench.accumulator.ask_new_producer_id(),
        "one asks at a time"
    );
    bench.accumulator.reset_producer_id(ProducerIdentity {
        producer_id: 8,
        producer_epoch: 0,
    });
    let request = bench.drain().expect("the batch again, with the new id");
    assert_eq!(Bench::only_batch_of(&request), (8, (0, 0, "a".to_owned())));
    assert!(
        bench.drain().is_none(),
        "one at a time until the new id is known"
    );
    bench.answer(request, Ok(30));
    let request = bench.drain().expect("the next batch");
    assert_eq!(Bench::only_batch_of(&request), (8, (0, 1, "b".to_owned())));
    bench.answer(request, Ok(31));
    assert_eq!(outcome(first).await.unwrap(), 30);
    assert_eq!(outcome(second).await.unwrap(), 31);
}

#[tokio::test]
async fn a_refused_batch_fails_its_records_and_the_next_gets_a_new_epoch() {
    let mut bench = bench();
    let first = bench.send("a");
    let second = bench.send("b");
    let request = bench.drain().expect("a ready batch");
    bench.answer(request, Err(ProduceErrorKind::MessageTooLarge));
    let error = outcome(first).await.unwrap_err();
    assert!(
        matches!(&error, Error::MessageTooLarge { topic, partition: 0, records: 1, size, .. }
            if topic == "t" && *size > 0),
        "{error:?}"
    );
    let request = bench.drain().expect("the next batch");
    assert_eq!(Bench::only_batch(&request), (4, 0, "b".to_owned()));
    bench.answer(request, Err(ProduceErrorKind::DuplicateSequenceNumber));
    assert_eq!(outcome(second).await.unwrap(), -1, "a duplicate: delivered");
    assert_eq!(bench.free_memory(), MEMORY);
}

#[tokio::test]
async fn retries_run_out_and_say_how_many() {
    let mut bench = bench();
    let delivery = bench.send("a");
    for _ in 0..3 {
        let request = bench.drain().expect("a ready batch");
        bench.answer(request, Err(ProduceErrorKind::Transient));
        bench.now += Duration::from_secs(1);
    }
    let error = outcome(delivery).await.unwrap_err();
    assert!(error.to_string().contains("after 2 retries"), "{error}");
    assert_eq!(bench.free_memory(), MEMORY);
}

#[tokio::test]
async fn a_batch_past_delivery_timeout_fails_and_a_stop_fails_the_rest() {
    let mut bench = bench();
    let expired = bench.send("a");
    bench.now += ProducerConfig::DEFAULT_DELIVERY_TIMEOUT;
    bench.accumulator.expire(bench.now);
    let error = outcome(expired).await.unwrap_err();
    assert!(error.to_string().contains("delivery.timeout.ms"), "{error}");
    let held = bench.send("b");
    bench.accumulator.stop("closed for the test");
    let error = outcome(held).await.unwrap_err();
    assert!(matches!(error, Error::Stopped { .. }), "{error:?}");
    assert_eq!(bench.free_memory(), MEMORY);
    let record = ProducerRecord::new("t").value(b"c");
    assert!(bench
        .accumulator
        .append(&record, 0, 0, Some(bench.now))
        .is_err());
}

#[tokio::test]
async fn a_lost_connection_sends_the_batch_again_to_the_new_leader() {
    let mut bench = bench();
    let delivery = bench.send("a");
    let request = bench.drain().expect("a ready batch");
    bench
        .accumulator
        .on_lost(request.sent, "connection reset", bench.now);
    bench.accumulator.set_leader("t", 0, 2);
    bench.now += Duration::from_secs(1);
    assert!(bench.drain().is_none(), "broker 1 leads no more");
    let request = bench
        .accumulator
        .drain(2, 1 << 20, bench.now)
        .0
        .expect("at 2");
    assert_eq!(Bench::only_batch(&request), (3, 0, "a".to_owned()));
    bench.answer(request, Ok(5));
    assert_eq!(outcome(delivery).await.unwrap(), 5);
}

#[tokio::test]
async fn records_without_a_key_go_to_partitions_that_have_a_leader() {
    let mut bench = bench();
    let partition = |partition, leader| PartitionMetadata {
        partition,
        leader,
        leader_epoch: 0,
        error_code: 0,
    };
    let metadata = ClusterMetadata {
        brokers: HashMap::from([(NODE, "b:9092".to_owned())]),
        topics: HashMap::from([(
            "t".to_owned(),
            TopicMetadata {
                name: "t".to_owned(),
                topic_id: uuid::Uuid::nil(),
                error_code: 0,
                is_internal: false,
                partitions: vec![partition(0, -1), partition(1, NODE), partition(2, -1)],
            },
        )]),
    };
    bench.accumulator.apply_metadata(&metadata);
    let _deliveries: Vec<Delivery> = (0..50).map(|i| bench.send(&i.to_string())).collect();
    let queues = &bench.accumulator.topics["t"].partitions;
    let held: Vec<usize> = queues
        .iter()
        .map(|q| q.closed.len() + usize::from(q.open.is_some()))
        .collect();
    assert_eq!(held, [0, 50, 0], "records per partition");
}

#[tokio::test]
async fn records_without_a_key_favour_partitions_with_short_queues() {
    let mut bench = bench();
    let partition = |partition| PartitionMetadata {
        partition,
        leader: NODE,
        leader_epoch: 0,
        error_code: 0,
    };
    let metadata = ClusterMetadata {
        brokers: HashMap::from([(NODE, "b:9092".to_owned())]),
        topics: HashMap::from([(
            "t".to_owned(),
            TopicMetadata {
                name: "t".to_owned(),
                topic_id: uuid::Uuid::nil(),
                error_code: 0,
                is_internal: false,
                partitions: vec![partition(0), partition(1), partition(2)],
            },
        )]),
    };
    bench.accumulator.apply_metadata(&metadata);
    let state = bench.accumulator.topics.get_mut("t").unwrap();
    state.sticky = StickyPartitioner::with_random(1, SeededRandom::new(7));
    // Ten batches wait for partition 0 (one record a batch), none for the others.
    let mut deliveries = Vec::new();
    for i in 0..10 {
        let record = ProducerRecord::new("t").partition(0).value(i.to_string());
        let held = record.held_bytes();
        bench.memory.try_acquire_many(held as u32).unwrap().forget();
        let appended = bench.accumulator.append(&record, 0, held, Some(bench.now));
        deliveries.push(appended.unwrap().unwrap().delivery);
    }
    deliveries.extend((0..20).map(|i| bench.send(&i.to_string())));
    let queues = &bench.accumulator.topics["t"].partitions;
    let held: Vec<usize> = (queues.iter())
        .map(|q| q.closed.len() + usize::from(q.open.is_some()))
        .collect();
    assert!(held[0] <= 11, "the long queue took {} more", held[0] - 10);
    assert_eq!(held.iter().sum::<usize>(), 30);
}

#[tokio::test]
async fn missing_topics_are_asked_for_while_a_send_waits_and_refusals_answered_once() {
    let mut bench = bench();
    let now = Instant::now();
    let past = now.checked_sub(Duration::from_millis(1)).unwrap_or(now);
    assert!(matches!(
        bench.accumulator.route("gone", past),
        super::Route::Unknown
    ));
    assert!(matches!(
        bench
            .accumulator
            .route("denied", now + Duration::from_secs(60)),
        super::Route::Unknown
    ));
    assert!(bench.accumulator.has_unknown_topics());
    let denied = TopicMetadata {
        name: "denied".to_owned(),
        topic_id: uuid::Uuid::nil(),
        error_code: 29,
        is_internal: false,
        partitions: Vec::new(),
    };
    let metadata = ClusterMetadata {
        brokers: HashMap::from([(NODE, "b:9092".to_owned())]),
        topics: HashMap::from([("denied".to_owned(), denied)]),
    };
    bench.accumulator.apply_metadata(&metadata);
    let mut wanted = bench.accumulator.wanted_topics();
    wanted.sort();
    assert_eq!(
        wanted,
        ["t"],
        "no send waits for `gone` any more; `denied` answered"
    );
    assert!(!bench.accumulator.has_unknown_topics());
    let until = Instant::now() + Duration::from_secs(60);
    let refused = bench.accumulator.route("denied", until);
    assert!(
        matches!(&refused, super::Route::Refused(answer) if answer.contains("AUTHORIZATION")),
        "{refused:?}"
    );
    assert!(matches!(
        bench.accumulator.route("denied", until),
        super::Route::Unknown
    ));
}

/// Records in each partition's open batch of topic `t`.
fn open_records(accumulator: &Accumulator) -> Vec<usize> {
    accumulator.topics["t"]
        .partitions
        .iter()
        .map(|q| q.writer.as_ref().map_or(0, |w| w.record_count()))
        .collect()
}

#[test]
fn keyed_records_do_not_move_the_sticky_partition() {
    let mut config = ProducerConfig::new(vec!["b:9092".to_owned()]);
    config.write = WriteConfig {
        batch_size: 10_000,
        ..WriteConfig::default()
    };
    let mut accumulator = Accumulator::new(
        Limits::new(&config),
        Identity::none(),
        Arc::new(Semaphore::new(MEMORY)),
        Arc::new(Counters::default()),
    );
    let partitions = (0..8)
        .map(|partition| PartitionMetadata {
            partition,
            leader: NODE,
            leader_epoch: 0,
            error_code: 0,
        })
        .collect();
    let topic = TopicMetadata {
        name: "t".to_owned(),
        topic_id: uuid::Uuid::nil(),
        error_code: 0,
        is_internal: false,
        partitions,
    };
    let metadata = ClusterMetadata {
        brokers: HashMap::from([(NODE, "b:9092".to_owned())]),
        topics: HashMap::from([("t".to_owned(), topic)]),
    };
    let until = Instant::now() + Duration::from_secs(60);
    let _ = accumulator.route("t", until);
    accumulator.apply_metadata(&metadata);
    let value = "v".repeat(100);
    let append = |accumulator: &mut Accumulator, record: ProducerRecord<'_>| {
        let held = record.held_bytes();
        let appended = accumulator.append(&record, 0, held, None);
        drop(appended.expect("append").expect("a known topic"));
    };
    let mut sticky = None;
    // Keyed records of more than twice batch.size between unkeyed ones: were they counted,
    // the sticky partitioner would draw a new partition (the same one by chance, 1 in 8).
    for round in 0..6 {
        append(
            &mut accumulator,
            ProducerRecord::new("t").value(value.as_str()),
        );
        for key in 0..200 {
            let key = format!("key-{round}-{key}");
            append(
                &mut accumulator,
                ProducerRecord::new("t").key(key).value(value.as_str()),
            );
        }
        // The one open batch that changed (grew, or was full and started again) took it.
        let before = open_records(&accumulator);
        append(
            &mut accumulator,
            ProducerRecord::new("t").value(value.as_str()),
        );
        let after = open_records(&accumulator);
        let chosen = (0..8)
            .find(|&p| after[p] != before[p])
            .expect("a partition");
        assert_eq!(*sticky.get_or_insert(chosen), chosen, "round {round}");
    }
}
