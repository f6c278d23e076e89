//! The calls a copy makes on its target, against the suite's Kafka: a topic created with its
//! configs and read back as dynamic topic configs, created again (already exists), refused
//! for an invalid config in the broker's words, grown by CreatePartitions (seen in metadata);
//! and a group's positions committed in a transaction (TxnOffsetCommit), read back with
//! RequireStable: UNSTABLE_OFFSET_COMMIT while it is open, then offset, leader epoch and
//! metadata once committed, and the committed ones again after an aborted one.

use std::collections::BTreeMap;
use std::time::Duration;

use krec_client::admin::{
    create_partitions, create_topics, describe_topic_configs, ConfigSource, CreationOutcome,
    NewTopic, TopicConfigs,
};
use krec_client::group::{fetch_committed, CommittedPosition, Committer, CoordinatorType};
use krec_client::metadata::MetadataClient;
use krec_client::transaction::{
    add_offsets_to_txn, protocol, txn_offset_commit, TransactionProtocol, TransactionalProducer,
    TxnErrorClass, TxnOffset,
};
use krec_client::{Connection, ConnectionSettings, Error, TopicPartition};
use krec_testkit::live::{self, LiveBroker};

use super::transactions::{coordinator, end, init};

const TIMEOUT: Duration = Duration::from_secs(30);

/// The configs a mirror copies, as the target topic gets them.
fn copied_configs() -> Vec<(String, String)> {
    [
        ("cleanup.policy", "compact"),
        ("retention.ms", "3600000"),
        ("max.message.bytes", "2000000"),
    ]
    .map(|(name, value)| (name.to_owned(), value.to_owned()))
    .to_vec()
}

fn new_topic(name: &str, partitions: i32, configs: Vec<(String, String)>) -> NewTopic {
    NewTopic {
        name: name.to_owned(),
        partitions,
        replication_factor: None,
        configs,
    }
}

/// The partition count metadata reports for `topic`, once it reports `expected` (a new
/// partition count reaches the broker's metadata cache a moment after CreatePartitions).
async fn partition_count(broker: &LiveBroker, topic: &str, expected: usize) -> usize {
    let settings = ConnectionSettings::default();
    let mut client = MetadataClient::new(vec![broker.bootstrap.clone()], settings);
    let mut seen = 0;
    for _ in 0..100 {
        let cluster = client.fetch(&[topic.to_owned()]).await.unwrap();
        seen = cluster.topic(topic).unwrap().partitions.len();
        if seen == expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    seen
}

#[tokio::test(flavor = "current_thread")]
async fn a_topic_is_created_with_its_configs_once_and_grown() {
    let broker = live::broker();
    let mut connection = super::connect(&broker).await;
    let topic = live::unique_name("admin-created");
    let wanted = [new_topic(&topic, 2, copied_configs())];
    let created = create_topics(&mut connection, &wanted, TIMEOUT)
        .await
        .unwrap();
    assert_eq!(created[0].name, topic);
    assert_eq!(created[0].outcome, CreationOutcome::Created);
    let again = create_topics(&mut connection, &wanted, TIMEOUT)
        .await
        .unwrap();
    assert_eq!(again[0].outcome, CreationOutcome::AlreadyExists);

    let described = describe_topic_configs(&mut connection, &[&topic])
        .await
        .unwrap();
    let TopicConfigs {
        topic: named,
        entries,
    } = &described[0];
    assert_eq!(named, &topic);
    let mut overrides: Vec<(String, String)> = described[0]
        .overrides()
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
    overrides.sort();
    let mut expected = copied_configs();
    expected.sort();
    assert_eq!(
        overrides, expected,
        "exactly the configs given, as topic configs"
    );
    let segment = entries.iter().find(|e| e.name == "segment.bytes").unwrap();
    assert_ne!(segment.source, ConfigSource::DynamicTopic, "{segment:?}");
    assert!(segment.value.is_some(), "{segment:?}");

    assert_eq!(partition_count(&broker, &topic, 2).await, 2);
    create_partitions(&mut connection, &topic, 5, TIMEOUT)
        .await
        .unwrap();
    assert_eq!(partition_count(&broker, &topic, 5).await, 5);
    let error = create_partitions(&mut connection, &topic, 5, TIMEOUT)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::TopicRefused { name, message: Some(_), .. } if name == "INVALID_PARTITIONS"),
        "{error}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn refusals_name_the_topic_and_the_code() {
    let broker = live::broker();
    let mut connection = super::connect(&broker).await;
    let refused = live::unique_name("admin-refused");
    let fine = live::unique_name("admin-fine");
    let sideways = vec![("cleanup.policy".to_owned(), "sideways".to_owned())];
    let wanted = [
        new_topic(&refused, 1, sideways),
        new_topic(&fine, 1, Vec::new()),
    ];
    let outcomes = create_topics(&mut connection, &wanted, TIMEOUT)
        .await
        .unwrap();
    let CreationOutcome::Refused { name, message, .. } = &outcomes[0].outcome else {
        panic!("{outcomes:?}");
    };
    assert_eq!(name, "INVALID_CONFIG");
    assert!(
        message.as_deref().unwrap_or("").contains("sideways"),
        "{message:?}"
    );
    assert_eq!(
        outcomes[1].outcome,
        CreationOutcome::Created,
        "the other topic is created"
    );
    let zero = [new_topic(&live::unique_name("admin-zero"), 0, Vec::new())];
    let outcomes = create_topics(&mut connection, &zero, TIMEOUT)
        .await
        .unwrap();
    assert!(
        matches!(&outcomes[0].outcome, CreationOutcome::Refused { name, .. } if name == "INVALID_PARTITIONS"),
        "{outcomes:?}"
    );
    let error = describe_topic_configs(&mut connection, &[&refused])
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::TopicRefused { topic, name, .. } if topic == &refused && name == "UNKNOWN_TOPIC_OR_PARTITION"),
        "{error}"
    );
}

/// Positions as `fetch_committed` reads them once no transaction is committing any: retried
/// while the broker answers UNSTABLE_OFFSET_COMMIT (the end marker is written a moment after
/// EndTxn answers).
async fn stable_positions(
    connection: &mut Connection,
    group: &str,
    asked: &BTreeMap<String, Vec<i32>>,
) -> BTreeMap<TopicPartition, CommittedPosition> {
    for _ in 0..200 {
        match fetch_committed(connection, group, asked, true).await {
            Err(Error::UnstableOffsetCommit { .. }) => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            other => return other.unwrap(),
        }
    }
    panic!("the offsets of {group} stayed unstable");
}

/// One transaction committing `offsets` for `group` in `producer`'s name, left open.
async fn commit_in_transaction(
    group_coordinator: &mut Connection,
    producer: &TransactionalProducer<'_>,
    group: &str,
    offsets: &BTreeMap<TopicPartition, TxnOffset>,
) {
    // A simple group: no members, so no generation and no member id.
    let simple = Committer {
        group,
        generation: -1,
        member_id: "",
        instance_id: None,
    };
    // A new group's coordinator may still be loading it: asked again while that passes.
    for _ in 0..50 {
        let codes = txn_offset_commit(group_coordinator, producer, &simple, offsets)
            .await
            .unwrap();
        match codes.verdict() {
            None => return,
            Some((TxnErrorClass::Retry, _)) => tokio::time::sleep(Duration::from_millis(100)).await,
            Some((_, error)) => panic!("TxnOffsetCommit: {error}"),
        }
    }
    panic!("TxnOffsetCommit kept answering a passing error");
}

fn offset(offset: i64, leader_epoch: i32, metadata: &str) -> TxnOffset {
    TxnOffset {
        offset,
        leader_epoch,
        metadata: Some(metadata.to_owned()),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn positions_committed_in_a_transaction_are_read_back_stable_with_metadata() {
    let broker = live::broker();
    let topic = live::unique_name("admin-positions");
    broker.create_topic(&topic, 2);
    let id = live::unique_name("admin-txn");
    let group = live::unique_name("admin-group");
    let mut txn_coordinator = coordinator(&broker, CoordinatorType::Transaction, &id).await;
    let mut group_coordinator = coordinator(&broker, CoordinatorType::Group, &group).await;
    let version = protocol(txn_coordinator.versions());
    let mut producer = TransactionalProducer {
        transactional_id: &id,
        identity: init(&mut txn_coordinator, &id, None).await,
        protocol: version,
    };
    if version == TransactionProtocol::V1 {
        add_offsets_to_txn(&mut txn_coordinator, &producer, &group)
            .await
            .unwrap();
    }
    let (p0, p1) = (
        TopicPartition::new(&*topic, 0),
        TopicPartition::new(&*topic, 1),
    );
    let offsets = BTreeMap::from([
        (p0.clone(), offset(42, 3, "source/0=1041")),
        (p1.clone(), offset(7, -1, "source/1=7")),
    ]);
    commit_in_transaction(&mut group_coordinator, &producer, &group, &offsets).await;
    let asked = BTreeMap::from([(topic.clone(), vec![0, 1])]);
    let error = fetch_committed(&mut group_coordinator, &group, &asked, true)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::UnstableOffsetCommit { group: named, partition: Some(_), .. } if named == &group),
        "{error}"
    );
    let unstable = fetch_committed(&mut group_coordinator, &group, &asked, false)
        .await
        .unwrap();
    assert!(unstable.is_empty(), "nothing committed yet: {unstable:?}");
    if let Some(next) = end(&mut txn_coordinator, &producer, true).await.unwrap() {
        producer.identity = next;
    }
    let committed = stable_positions(&mut group_coordinator, &group, &asked).await;
    let position = |offset, leader_epoch, metadata: &str| CommittedPosition {
        offset,
        leader_epoch,
        metadata: Some(metadata.to_owned()),
    };
    assert_eq!(committed[&p0], position(42, Some(3), "source/0=1041"));
    assert_eq!(committed[&p1], position(7, None, "source/1=7"));

    // An aborted transaction's positions never show: the committed ones are read again.
    if version == TransactionProtocol::V1 {
        add_offsets_to_txn(&mut txn_coordinator, &producer, &group)
            .await
            .unwrap();
    }
    let aborted = BTreeMap::from([(p0.clone(), offset(99, 3, "source/0=2000"))]);
    commit_in_transaction(&mut group_coordinator, &producer, &group, &aborted).await;
    end(&mut txn_coordinator, &producer, false).await.unwrap();
    let after_abort = stable_positions(&mut group_coordinator, &group, &asked).await;
    assert_eq!(after_abort, committed);
}
