//! Transactions by hand against the suite's Kafka: the transaction coordinator found,
//! InitProducerId with a transactional id, transactional batches (krec-batch's `BatchWriter`)
//! in Produce requests carrying the id, EndTxn commit and abort under Transactions v2 (implicit
//! partitions, a new epoch per transaction) and v1 (AddPartitionsToTxn first), read back
//! read_committed by kcat; a second InitProducerId fencing the first; and a group's offsets
//! committed in a transaction (TxnOffsetCommit), stable only after the commit.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use krec_batch::{BatchWriter, Codec, Compression, ProducerFields, WriteConfig};
use krec_client::group::{
    find_coordinator_of, group_codes, offset_fetch, Committer, CoordinatorType,
};
use krec_client::producer_id::{init_transactional_producer_id, ProducerIdentity};
use krec_client::transaction::{
    add_offsets_to_txn, add_partitions_to_txn, classify, classify_error, end_txn, protocol,
    txn_codes, txn_offset_commit, TransactionProtocol, TransactionalProducer, TxnApi,
    TxnErrorClass, TxnOffset,
};
use krec_client::{Connection, ConnectionSettings, Error, TopicPartition};
use krec_testkit::live::{self, LiveBroker};

const TIMEOUT_MS: i32 = 60_000;

/// A connection to the coordinator of `key`, asking again while it is not ready (the first
/// transaction of a cluster creates `__transaction_state`).
pub(super) async fn coordinator(
    broker: &LiveBroker,
    kind: CoordinatorType,
    key: &str,
) -> Connection {
    let settings = ConnectionSettings::default();
    let mut bootstrap = Connection::connect(&broker.bootstrap, &settings)
        .await
        .unwrap();
    for _ in 0..150 {
        match find_coordinator_of(&mut bootstrap, kind, key)
            .await
            .unwrap()
        {
            Ok((_, address)) => return Connection::connect(&address, &settings).await.unwrap(),
            Err(code) => assert!(
                group_codes::needs_rediscovery(code),
                "FindCoordinator: {}",
                krec_client::error_name(code)
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("no coordinator for {key}");
}

/// InitProducerId for `transactional_id`, again while the answer is passing (an earlier
/// producer's transaction still aborting).
pub(super) async fn init(
    connection: &mut Connection,
    transactional_id: &str,
    current: Option<ProducerIdentity>,
) -> ProducerIdentity {
    for _ in 0..150 {
        match init_transactional_producer_id(connection, transactional_id, TIMEOUT_MS, current)
            .await
        {
            Ok(identity) => return identity,
            Err(error) => assert_eq!(
                classify_error(TxnApi::InitProducerId, &error),
                TxnErrorClass::Retry,
                "{error}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("InitProducerId kept answering a passing error");
}

/// One transactional batch of `values`.
fn batch(values: &[String], identity: ProducerIdentity, sequence: i32) -> Bytes {
    let mut writer = BatchWriter::new(WriteConfig::default());
    for (i, value) in values.iter().enumerate() {
        let appended = writer
            .try_append(
                1_764_000_000_000 + i as i64,
                None,
                Some(value.as_bytes()),
                &[] as &[(&str, Option<&[u8]>)],
            )
            .unwrap();
        assert!(matches!(appended, krec_batch::Append::Appended { .. }));
    }
    let producer = ProducerFields {
        transactional: true,
        ..ProducerFields::idempotent(identity.producer_id, identity.producer_epoch, sequence)
    };
    let finished = writer.finish_owned(producer, Codec::new(Compression::Lz4));
    Bytes::from_owner(finished.unwrap())
}

/// Produces `batches` (partition -> batch) of `topic` in `producer`'s transaction, at most at
/// the protocol's Produce version, sending again while a partition answers a passing error
/// (a new topic's leaders settling). Returns each partition's final code.
async fn produce(
    connection: &mut Connection,
    producer: &TransactionalProducer<'_>,
    topic: &str,
    batches: &[(i32, Bytes)],
) -> BTreeMap<i32, i16> {
    let mut codes = BTreeMap::new();
    let mut pending: Vec<(i32, Bytes)> = batches.to_vec();
    for _ in 0..50 {
        let request = ProduceRequest::default()
            .with_transactional_id(Some(TransactionalId(StrBytes::from_string(
                producer.transactional_id.to_owned(),
            ))))
            .with_acks(-1)
            .with_timeout_ms(30_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                .with_partition_data(
                    pending
                        .iter()
                        .map(|(partition, batch)| {
                            PartitionProduceData::default()
                                .with_index(*partition)
                                .with_records(Some(batch.clone()))
                        })
                        .collect(),
                )]);
        // v13 names topics by id; these requests name them.
        let cap = producer.protocol.max_produce_version().min(12);
        let (_, response) = connection
            .request_capped(&request, cap, Duration::from_secs(30))
            .await
            .unwrap();
        for answer in response
            .responses
            .iter()
            .flat_map(|t| &t.partition_responses)
        {
            codes.insert(answer.index, answer.error_code);
        }
        pending.retain(|(partition, _)| {
            classify(TxnApi::Produce, codes[partition]) == Some(TxnErrorClass::Retry)
        });
        if pending.is_empty() {
            return codes;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("Produce kept answering passing errors: {codes:?}");
}

/// EndTxn, again while the previous step is still completing.
pub(super) async fn end(
    connection: &mut Connection,
    producer: &TransactionalProducer<'_>,
    commit: bool,
) -> Result<Option<ProducerIdentity>, Error> {
    loop {
        match end_txn(connection, producer, commit).await {
            Err(error) if classify_error(TxnApi::EndTxn, &error) == TxnErrorClass::Retry => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}

/// The values of `topic` as kcat reads them at `isolation` (`read_committed` or
/// `read_uncommitted`), by partition in offset order.
fn read_values(broker: &LiveBroker, topic: &str, isolation: &str) -> BTreeMap<i32, Vec<String>> {
    let output = Command::new("kcat")
        .args(["-C", "-e", "-q", "-b", &broker.bootstrap, "-t", topic])
        .args(["-X", &format!("isolation.level={isolation}")])
        .args(["-f", "%p %s\\n"])
        .output()
        .expect("run kcat");
    assert!(output.status.success(), "kcat: {output:?}");
    let mut values: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for line in String::from_utf8(output.stdout).unwrap().lines() {
        let (partition, value) = line.split_once(' ').unwrap();
        values
            .entry(partition.parse().unwrap())
            .or_default()
            .push(value.to_owned());
    }
    values
}

fn values(label: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{label}-{i}")).collect()
}

fn topic(broker: &LiveBroker, partitions: u32) -> String {
    let topic = live::unique_name("txnwire");
    broker.create_topic(&topic, partitions);
    topic
}

#[tokio::test(flavor = "current_thread")]
async fn v2_commits_and_aborts_with_a_new_epoch_per_transaction() {
    let broker = live::broker();
    let topic = topic(&broker, 2);
    let id = live::unique_name("txnwire-v2");
    let mut coordinator = coordinator(&broker, CoordinatorType::Transaction, &id).await;
    assert_eq!(
        protocol(coordinator.versions()),
        TransactionProtocol::V2,
        "Kafka 4.4 finalizes transaction.version 2"
    );
    let mut leader = super::connect(&broker).await;
    let mut producer = TransactionalProducer {
        transactional_id: &id,
        identity: init(&mut coordinator, &id, None).await,
        protocol: TransactionProtocol::V2,
    };
    let plan = [("committed", true), ("aborted", false), ("again", true)];
    for (label, commit) in plan {
        let batches: Vec<(i32, Bytes)> = (0..2)
            .map(|p| {
                (
                    p,
                    batch(&values(&format!("{label}{p}"), 3), producer.identity, 0),
                )
            })
            .collect();
        let codes = produce(&mut leader, &producer, &topic, &batches).await;
        assert!(codes.values().all(|&code| code == 0), "{label}: {codes:?}");
        let next = end(&mut coordinator, &producer, commit).await.unwrap();
        let next = next.expect("v2's EndTxn answers the next identity");
        assert_eq!(next.producer_id, producer.identity.producer_id);
        assert_eq!(next.producer_epoch, producer.identity.producer_epoch + 1);
        producer.identity = next;
    }
    let committed = read_values(&broker, &topic, "read_committed");
    for p in 0..2 {
        let expected = [
            values(&format!("committed{p}"), 3),
            values(&format!("again{p}"), 3),
        ];
        assert_eq!(committed[&p], expected.concat(), "partition {p}");
    }
    let everything = read_values(&broker, &topic, "read_uncommitted");
    assert!(
        everything[&0].contains(&"aborted0-0".to_owned()),
        "the abort was written"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn v1_adds_partitions_first_and_keeps_its_epoch() {
    let broker = live::broker();
    let topic = topic(&broker, 1);
    let id = live::unique_name("txnwire-v1");
    let mut coordinator = coordinator(&broker, CoordinatorType::Transaction, &id).await;
    let mut leader = super::connect(&broker).await;
    let producer = TransactionalProducer {
        transactional_id: &id,
        identity: init(&mut coordinator, &id, None).await,
        protocol: TransactionProtocol::V1,
    };
    let partitions = BTreeMap::from([(topic.clone(), vec![0])]);
    // Under v1 the sequences go on across the epoch's transactions.
    for (sequence, (label, commit)) in [("kept", true), ("dropped", false)].into_iter().enumerate()
    {
        let added = loop {
            let codes = add_partitions_to_txn(&mut coordinator, &producer, &partitions)
                .await
                .unwrap();
            match codes.verdict() {
                Some((TxnErrorClass::Retry, _)) => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                _ => break codes,
            }
        };
        assert_eq!(added.partitions, vec![(TopicPartition::new(&*topic, 0), 0)]);
        let batch = batch(&values(label, 2), producer.identity, sequence as i32 * 2);
        let codes = produce(&mut leader, &producer, &topic, &[(0, batch)]).await;
        assert_eq!(codes[&0], 0, "{label}");
        let next = end(&mut coordinator, &producer, commit).await.unwrap();
        assert_eq!(next, None, "v1's EndTxn sent at v4 at most");
    }
    let committed = read_values(&broker, &topic, "read_committed");
    assert_eq!(committed[&0], values("kept", 2));
}

#[tokio::test(flavor = "current_thread")]
async fn a_second_init_fences_the_first_producer() {
    let broker = live::broker();
    let topic = topic(&broker, 1);
    let id = live::unique_name("txnwire-fence");
    let mut coordinator = coordinator(&broker, CoordinatorType::Transaction, &id).await;
    let mut leader = super::connect(&broker).await;
    // The broker's own protocol: this case runs as it is against a Kafka 3.9 (v1) too.
    let old = TransactionalProducer {
        transactional_id: &id,
        identity: init(&mut coordinator, &id, None).await,
        protocol: protocol(coordinator.versions()),
    };
    if old.protocol == TransactionProtocol::V1 {
        let partitions = BTreeMap::from([(topic.clone(), vec![0])]);
        let added = add_partitions_to_txn(&mut coordinator, &old, &partitions).await;
        assert!(added.unwrap().verdict().is_none());
    }
    let codes = produce(
        &mut leader,
        &old,
        &topic,
        &[(0, batch(&values("zombie", 1), old.identity, 0))],
    )
    .await;
    assert_eq!(codes[&0], 0);
    // The new incarnation: its InitProducerId aborts the open transaction and fences `old`.
    let new = init(&mut coordinator, &id, None).await;
    assert!(
        new.producer_epoch > old.identity.producer_epoch
            || new.producer_id != old.identity.producer_id
    );
    let error = end(&mut coordinator, &old, true).await.unwrap_err();
    assert_eq!(
        classify_error(TxnApi::EndTxn, &error),
        TxnErrorClass::Fenced,
        "{error}"
    );
    assert!(
        matches!(error, Error::Broker { api: "EndTxn", code, .. }
            if code == txn_codes::PRODUCER_FENCED || code == txn_codes::INVALID_PRODUCER_EPOCH),
        "{error}"
    );
    let late = batch(&values("late", 1), old.identity, 1);
    let codes = produce(&mut leader, &old, &topic, &[(0, late)]).await;
    // A Produce answer's old epoch is abortable (the coordinator may have bumped it after a
    // timeout); the abort's EndTxn then says PRODUCER_FENCED, as above.
    assert_eq!(codes[&0], txn_codes::INVALID_PRODUCER_EPOCH);
    assert_eq!(
        classify(TxnApi::Produce, codes[&0]),
        Some(TxnErrorClass::Abort)
    );
    assert_eq!(read_values(&broker, &topic, "read_committed").get(&0), None);
}

/// Commits `offsets` of `group` in one transaction under `protocol`, checking OffsetFetch
/// (stable offsets only) refuses them before the commit and returns them after.
async fn commit_offsets(broker: &LiveBroker, topic: &str, protocol: TransactionProtocol) {
    let id = live::unique_name("txnwire-offsets");
    let group = live::unique_name("txnwire-group");
    let mut coordinator = coordinator(broker, CoordinatorType::Transaction, &id).await;
    let mut group_coordinator = self::coordinator(broker, CoordinatorType::Group, &group).await;
    let producer = TransactionalProducer {
        transactional_id: &id,
        identity: init(&mut coordinator, &id, None).await,
        protocol,
    };
    if protocol == TransactionProtocol::V1 {
        add_offsets_to_txn(&mut coordinator, &producer, &group)
            .await
            .unwrap();
    }
    // A simple group: no members, so no generation and no member id.
    let simple = Committer {
        group: &group,
        generation: -1,
        member_id: "",
        instance_id: None,
    };
    let offsets = BTreeMap::from([(
        TopicPartition::new(topic, 0),
        TxnOffset {
            offset: 42,
            leader_epoch: -1,
            metadata: Some("source 7".to_owned()),
        },
    )]);
    let codes = txn_offset_commit(&mut group_coordinator, &producer, &simple, &offsets)
        .await
        .unwrap();
    assert!(codes.verdict().is_none(), "{codes:?}");
    let asked = BTreeMap::from([(topic.to_owned(), vec![0])]);
    let (_, pending) = offset_fetch(&mut group_coordinator, &group, &asked)
        .await
        .unwrap();
    let partition = TopicPartition::new(topic, 0);
    assert_eq!(
        pending[&partition].error_code,
        group_codes::UNSTABLE_OFFSET_COMMIT
    );
    end(&mut coordinator, &producer, true).await.unwrap();
    // EndTxn answers once the commit is decided; the offsets are stable once its marker is
    // written, a moment later (UNSTABLE_OFFSET_COMMIT is passing).
    for _ in 0..100 {
        let (code, fetched) = offset_fetch(&mut group_coordinator, &group, &asked)
            .await
            .unwrap();
        let committed = fetched[&partition];
        if committed.error_code != group_codes::UNSTABLE_OFFSET_COMMIT {
            assert_eq!((code, committed.error_code, committed.offset), (0, 0, 42));
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the offsets of {group} stayed unstable after the commit");
}

#[tokio::test(flavor = "current_thread")]
async fn offsets_committed_in_a_transaction_are_stable_after_it() {
    let broker = live::broker();
    let topic = topic(&broker, 1);
    // The broker's own protocol, and v1 too where it offers v2 (so also against a Kafka 3.9).
    let offered = protocol(super::connect(&broker).await.versions());
    commit_offsets(&broker, &topic, offered).await;
    if offered == TransactionProtocol::V2 {
        commit_offsets(&broker, &topic, TransactionProtocol::V1).await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_group_refusing_the_offsets_aborts_the_transaction() {
    let broker = live::broker();
    let topic = topic(&broker, 1);
    let id = live::unique_name("txnwire-refused");
    let group = live::unique_name("txnwire-group");
    let mut coordinator = coordinator(&broker, CoordinatorType::Transaction, &id).await;
    let mut group_coordinator = self::coordinator(&broker, CoordinatorType::Group, &group).await;
    let producer = TransactionalProducer {
        transactional_id: &id,
        identity: init(&mut coordinator, &id, None).await,
        protocol: TransactionProtocol::V2,
    };
    // A member the group never had, of a generation it never reached (KIP-447's check).
    let stranger = Committer {
        group: &group,
        generation: 5,
        member_id: "stranger",
        instance_id: None,
    };
    let offsets = BTreeMap::from([(
        TopicPartition::new(&*topic, 0),
        TxnOffset {
            offset: 1,
            leader_epoch: -1,
            metadata: None,
        },
    )]);
    let codes = txn_offset_commit(&mut group_coordinator, &producer, &stranger, &offsets)
        .await
        .unwrap();
    let (class, error) = codes.verdict().expect("the group refuses a stranger");
    assert_eq!(class, TxnErrorClass::Abort, "{error}");
    assert!(
        matches!(error, Error::Broker { api: "TxnOffsetCommit", code, .. }
            if group_codes::is_membership_change(code)),
        "{error}"
    );
    // Aborting is allowed and the producer goes on: the next identity comes back.
    assert!(end(&mut coordinator, &producer, false)
        .await
        .unwrap()
        .is_some());
}
