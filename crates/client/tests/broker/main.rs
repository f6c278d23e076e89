//! Produce and InitProducerId against the suite's Kafka: batches from krec-batch's
//! `BatchWriter` with a real producer id, epoch and sequences, sent to every partition of a
//! topic, their offsets, the broker's answers to a resent batch, a sequence gap, an
//! oversized batch, a record refused with its index, acks=0 and an epoch bump, and the topic
//! read back by kcat (a reader other than krec) record by record; Produce requests
//! pipelined on one connection (`pipelined`); transactions by hand (`transactions`); and the
//! calls a copy makes on its target: topics created, described and grown, and positions read
//! back stable (`admin`).
//!
//! `cargo test` leaves this binary out (`test = false`): it needs the suite's broker and
//! Kafka installation (`krec_testkit::live`). test.sh runs it with the other broker tests; by
//! hand: KREC_TEST_BOOTSTRAP, KREC_KAFKA_SH and KREC_KAFKA_NAME set as for those, then
//! `cargo test -p krec-client --test broker`.

use std::process::Command;
use std::sync::Arc;

use bytes::Bytes;
use krec_batch::{BatchWriter, Codec, Compression, ProducerFields, WriteConfig};
use krec_client::metadata::MetadataClient;
use krec_client::produce::{
    produce, Acks, PartitionProduced, ProduceAnswer, ProduceErrorKind, ProduceParams,
    ProducePartition, ProduceTopic,
};
use krec_client::producer_id::{self, init_producer_id, ProducerIdentity};
use krec_client::{Connection, ConnectionSettings, Error};
use krec_testkit::live::{self, LiveBroker};
use uuid::Uuid;

mod admin;
mod pipelined;
mod transactions;

const ALL: ProduceParams = ProduceParams {
    acks: Acks::All,
    timeout_ms: 30_000,
};

/// One record as written, and as kcat must print it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Sent {
    partition: i32,
    offset: i64,
    key: Option<String>,
    value: Option<String>,
    headers: Vec<(String, String)>,
}

/// The records of one batch: keys and values present, absent and empty, some headers.
fn records(partition: i32, first: usize, count: usize) -> Vec<Sent> {
    (first..first + count)
        .map(|i| Sent {
            partition,
            offset: i as i64,
            key: (i % 4 != 1).then(|| format!("key-{partition}-{i}")),
            value: match i % 5 {
                2 => None,
                3 => Some(String::new()),
                _ => Some(format!("value {partition} {i} {}", "abc ".repeat(i % 9))),
            },
            headers: (0..i % 3)
                .map(|h| (format!("h{h}"), format!("{partition}.{i}.{h}")))
                .collect(),
        })
        .collect()
}

/// One finished batch of `records` with the producer's fields, as owned bytes.
fn batch(records: &[Sent], identity: ProducerIdentity, sequence: i32, codec: Compression) -> Bytes {
    let mut writer = BatchWriter::new(WriteConfig {
        batch_size: 1 << 20,
        ..WriteConfig::default()
    });
    for (i, record) in records.iter().enumerate() {
        let headers: Vec<(&str, Option<&[u8]>)> = record
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), Some(v.as_bytes())))
            .collect();
        let appended = writer
            .try_append(
                1_764_000_000_000 + i as i64,
                record.key.as_deref().map(str::as_bytes),
                record.value.as_deref().map(str::as_bytes),
                &headers,
            )
            .unwrap();
        assert!(matches!(appended, krec_batch::Append::Appended { .. }));
    }
    let producer =
        ProducerFields::idempotent(identity.producer_id, identity.producer_epoch, sequence);
    Bytes::from_owner(writer.finish_owned(producer, Codec::new(codec)).unwrap())
}

async fn connect(broker: &LiveBroker) -> Connection {
    Connection::connect(&broker.bootstrap, &ConnectionSettings::default())
        .await
        .unwrap()
}

async fn topic_id(broker: &LiveBroker, topic: &str) -> Uuid {
    let mut client = MetadataClient::new(
        vec![broker.bootstrap.clone()],
        ConnectionSettings::default(),
    );
    let cluster = client.fetch(&[topic.to_owned()]).await.unwrap();
    cluster.topic(topic).unwrap().topic_id
}

fn one_topic(name: &str, id: Uuid, batches: Vec<(i32, Bytes)>) -> Vec<ProduceTopic> {
    vec![ProduceTopic {
        name: Arc::from(name),
        topic_id: id,
        partitions: batches
            .into_iter()
            .map(|(partition, batch)| ProducePartition { partition, batch })
            .collect(),
    }]
}

/// Every record of `topic`, read by kcat to the end of each partition.
fn read_with_kcat(broker: &LiveBroker, topic: &str) -> Vec<Sent> {
    let output = Command::new("kcat")
        .args(["-C", "-e", "-J", "-q", "-b", &broker.bootstrap, "-t", topic])
        .output()
        .expect("run kcat");
    assert!(output.status.success(), "kcat: {output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    let mut read: Vec<Sent> = text
        .lines()
        .map(|line| {
            let json: serde_json::Value = serde_json::from_str(line).unwrap();
            let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
            let headers = json["headers"].as_array().cloned().unwrap_or_default();
            Sent {
                partition: json["partition"].as_i64().unwrap() as i32,
                offset: json["offset"].as_i64().unwrap(),
                key: text(&json["key"]),
                value: text(&json["payload"]),
                headers: headers
                    .chunks(2)
                    .map(|pair| (text(&pair[0]).unwrap(), text(&pair[1]).unwrap()))
                    .collect(),
            }
        })
        .collect();
    read.sort();
    read
}

/// Produces `topics` (one topic), sending again the batches of the partitions that answered a
/// retriable error (a new topic's partitions take a moment to get their leader ready); the
/// answers of the others are kept, so no batch is sent twice once appended.
async fn produce_retrying(
    connection: &mut Connection,
    params: ProduceParams,
    topics: &[ProduceTopic],
) -> ProduceAnswer {
    let mut pending = topics.to_vec();
    let mut done: Vec<PartitionProduced> = Vec::new();
    for _ in 0..50 {
        let answer = produce(connection, params, &pending).await.unwrap();
        let (retry, settled): (Vec<_>, Vec<_>) = answer
            .partitions
            .into_iter()
            .partition(|p| p.result.as_ref().is_err_and(|e| e.is_retriable()));
        done.extend(settled);
        if retry.is_empty() {
            return ProduceAnswer {
                partitions: done,
                ..answer
            };
        }
        pending[0]
            .partitions
            .retain(|p| retry.iter().any(|r| r.partition.partition == p.partition));
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("still retriable errors after 50 tries");
}

/// InitProducerId for an idempotent producer, asked again while the answer is passing, as
/// the producer does: a fresh broker answers COORDINATOR_LOAD_IN_PROGRESS until its
/// controller has handed it a block of producer ids.
async fn init_producer_id_retrying(
    connection: &mut Connection,
    current: Option<ProducerIdentity>,
) -> ProducerIdentity {
    for _ in 0..150 {
        match init_producer_id(connection, current).await {
            Ok(identity) => return identity,
            Err(error) => assert!(producer_id::is_retriable(&error), "{error}"),
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    panic!("InitProducerId kept answering a passing error");
}

fn appended_base(answer: &PartitionProduced) -> i64 {
    match &answer.result {
        Ok(appended) => appended.base_offset,
        Err(error) => panic!("{error}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn idempotent_batches_land_once_in_every_partition() {
    let broker = live::broker();
    let topic = live::unique_name("produce-idempotent");
    broker.create_topic(&topic, 3);
    let id = topic_id(&broker, &topic).await;
    let mut connection = connect(&broker).await;
    let identity = init_producer_id_retrying(&mut connection, None).await;
    assert!(identity.producer_id >= 0 && identity.producer_epoch >= 0);

    // Round one: by topic id where the broker speaks v13; lz4 and none.
    let mut sent = Vec::new();
    let mut first = Vec::new();
    for partition in 0..3 {
        let records = records(partition, 0, 6 + partition as usize);
        let codec = [Compression::Lz4, Compression::None][partition as usize % 2];
        first.push((partition, batch(&records, identity, 0, codec)));
        sent.extend(records);
    }
    let answer =
        produce_retrying(&mut connection, ALL, &one_topic(&topic, id, first.clone())).await;
    let ours_max = connection.versions().range(0).unwrap().1.min(13);
    assert_eq!(answer.version, ours_max, "the highest common version");
    let mut partitions: Vec<i32> = answer
        .partitions
        .iter()
        .map(|p| p.partition.partition)
        .collect();
    partitions.sort_unstable();
    assert_eq!(partitions, [0, 1, 2]);
    assert!(answer.partitions.iter().all(|p| appended_base(p) == 0));

    // Round two, topics by name (v12 or lower), each partition's next sequence.
    let mut second = Vec::new();
    for partition in 0..3 {
        let from = 6 + partition as usize;
        let records = records(partition, from, 4);
        second.push((
            partition,
            batch(&records, identity, from as i32, Compression::Lz4),
        ));
        sent.extend(records);
    }
    let answer = produce(
        &mut connection,
        ALL,
        &one_topic(&topic, Uuid::nil(), second),
    )
    .await
    .unwrap();
    assert!(answer.version <= 12);
    for produced in &answer.partitions {
        assert_eq!(
            appended_base(produced),
            6 + i64::from(produced.partition.partition)
        );
    }

    // Partition 0's first batch again, same sequence: a duplicate, never a second copy.
    let answer = produce(
        &mut connection,
        ALL,
        &one_topic(&topic, id, vec![first[0].clone()]),
    )
    .await
    .unwrap();
    match &answer.partitions[0].result {
        Ok(appended) => assert_eq!(appended.base_offset, 0, "the original offset"),
        Err(error) => assert!(error.is_duplicate(), "{error}"),
    }

    // A gap in partition 1's sequences.
    let gap = batch(&records(1, 100, 2), identity, 100, Compression::None);
    let answer = produce(&mut connection, ALL, &one_topic(&topic, id, vec![(1, gap)]))
        .await
        .unwrap();
    let error = answer.partitions[0].result.clone().unwrap_err();
    assert_eq!(
        error.kind,
        ProduceErrorKind::OutOfOrderSequenceNumber,
        "{error}"
    );
    assert!(error.needs_epoch_bump() && !error.is_fatal());

    sent.sort();
    assert_eq!(read_with_kcat(&broker, &topic), sent);
}

#[tokio::test(flavor = "current_thread")]
async fn a_new_identity_or_epoch_restarts_the_sequences() {
    let broker = live::broker();
    let topic = live::unique_name("produce-bump");
    broker.create_topic(&topic, 1);
    let mut connection = connect(&broker).await;
    let identity = init_producer_id_retrying(&mut connection, None).await;
    let first = batch(&records(0, 0, 3), identity, 0, Compression::None);
    let first = one_topic(&topic, Uuid::nil(), vec![(0, first)]);
    let answer = produce_retrying(&mut connection, ALL, &first).await;
    assert_eq!(appended_base(&answer.partitions[0]), 0);

    // Asked with the current identity, the broker answers a fresh one for an idempotent
    // producer (it fences transactional ids only); its sequences start at 0.
    let renewed = init_producer_id_retrying(&mut connection, Some(identity)).await;
    assert_ne!(renewed, identity);
    let next = batch(&records(0, 3, 2), renewed, 0, Compression::Lz4);
    let next = one_topic(&topic, Uuid::nil(), vec![(0, next)]);
    let answer = produce(&mut connection, ALL, &next).await.unwrap();
    assert_eq!(appended_base(&answer.partitions[0]), 3);

    // KIP-360's bump an idempotent producer makes itself: the next epoch, sequence 0; after
    // it the old epoch is fenced.
    let bumped = ProducerIdentity {
        producer_epoch: renewed.producer_epoch + 1,
        ..renewed
    };
    let after_bump = batch(&records(0, 5, 1), bumped, 0, Compression::None);
    let after_bump = one_topic(&topic, Uuid::nil(), vec![(0, after_bump)]);
    let answer = produce(&mut connection, ALL, &after_bump).await.unwrap();
    assert_eq!(appended_base(&answer.partitions[0]), 5);
    let stale = batch(&records(0, 6, 1), renewed, 2, Compression::None);
    let stale = one_topic(&topic, Uuid::nil(), vec![(0, stale)]);
    let answer = produce(&mut connection, ALL, &stale).await.unwrap();
    let error = answer.partitions[0].result.clone().unwrap_err();
    assert_eq!(error.kind, ProduceErrorKind::ProducerFenced, "{error}");
    assert!(error.is_fatal());
}

#[tokio::test(flavor = "current_thread")]
async fn acks_zero_reads_no_answer_and_the_connection_goes_on() {
    let broker = live::broker();
    let topic = live::unique_name("produce-acks0");
    broker.create_topic(&topic, 1);
    let mut connection = connect(&broker).await;
    let none = ProducerIdentity {
        producer_id: -1,
        producer_epoch: -1,
    };
    let leader_acked = ProduceParams {
        acks: Acks::Leader,
        timeout_ms: 30_000,
    };
    // The partition's leader ready first: acks=0 hears of no error.
    let ready = batch(&records(0, 0, 1), none, -1, Compression::None);
    let ready = one_topic(&topic, Uuid::nil(), vec![(0, ready)]);
    produce_retrying(&mut connection, leader_acked, &ready).await;

    let unanswered = ProduceParams {
        acks: Acks::None,
        timeout_ms: 30_000,
    };
    let unacknowledged = batch(&records(0, 1, 2), none, -1, Compression::None);
    let unacknowledged = one_topic(&topic, Uuid::nil(), vec![(0, unacknowledged)]);
    let answer = produce(&mut connection, unanswered, &unacknowledged)
        .await
        .unwrap();
    assert!(answer.partitions.is_empty());

    let next = batch(&records(0, 3, 1), none, -1, Compression::None);
    let next = one_topic(&topic, Uuid::nil(), vec![(0, next)]);
    let answer = produce(&mut connection, leader_acked, &next).await.unwrap();
    assert_eq!(
        appended_base(&answer.partitions[0]),
        3,
        "after the unanswered batch, on the same connection"
    );
}

/// A new topic of one partition with `config` (`key=value`) set by Kafka's ConfigCommand.
fn topic_with_config(broker: &LiveBroker, prefix: &str, config: &str) -> String {
    let topic = live::unique_name(prefix);
    broker.create_topic(&topic, 1);
    broker.tool(
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--bootstrap-server",
            &broker.bootstrap,
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            &topic,
            "--add-config",
            config,
        ],
    );
    topic
}

#[tokio::test(flavor = "current_thread")]
async fn a_batch_over_max_message_bytes_is_message_too_large() {
    let broker = live::broker();
    let topic = topic_with_config(&broker, "produce-large", "max.message.bytes=1024");
    let mut connection = connect(&broker).await;
    let identity = init_producer_id_retrying(&mut connection, None).await;
    let mut large = records(0, 0, 1);
    large[0].value = Some("x".repeat(4_096));
    let oversized = batch(&large, identity, 0, Compression::None);
    let oversized = one_topic(&topic, Uuid::nil(), vec![(0, oversized)]);
    let answer = produce_retrying(&mut connection, ALL, &oversized).await;
    let error = answer.partitions[0].result.clone().unwrap_err();
    assert_eq!(error.kind, ProduceErrorKind::MessageTooLarge, "{error}");
    assert!(error.is_fatal());
    assert_eq!(&*error.partition.topic, topic.as_str());
}

#[tokio::test(flavor = "current_thread")]
async fn a_keyless_record_in_a_compacted_topic_is_invalid_record_with_its_index() {
    let broker = live::broker();
    let topic = topic_with_config(&broker, "produce-invalid", "cleanup.policy=compact");
    let mut connection = connect(&broker).await;
    let identity = init_producer_id_retrying(&mut connection, None).await;
    // records(0, 0, 3): the record at index 1 has no key.
    let keyless = batch(&records(0, 0, 3), identity, 0, Compression::Lz4);
    let keyless = one_topic(&topic, Uuid::nil(), vec![(0, keyless)]);
    let answer = produce_retrying(&mut connection, ALL, &keyless).await;
    let error = answer.partitions[0].result.clone().unwrap_err();
    assert_eq!(error.kind, ProduceErrorKind::InvalidRecord, "{error}");
    assert!(error.is_fatal());
    let indexes: Vec<i32> = error.record_errors.iter().map(|e| e.batch_index).collect();
    assert_eq!(indexes, [1], "{error}");
    let text = error.to_string();
    assert!(
        text.contains("record 1: ") && text.contains("key"),
        "{text}"
    );
}
