//! Transactions through the producer's API against the suite's broker: commit makes the
//! records visible to read_committed, abort hides them; a second producer with the same
//! `transactional.id` fences the first; offsets sent with a krec `GroupConsumer`'s group
//! metadata are stable (OffsetFetch) only once the transaction commits; the root package's
//! `examples/transactions.rs` copies a topic exactly once.

use std::collections::BTreeMap;
use std::time::Duration;

use krec_client::group::group_codes::UNSTABLE_OFFSET_COMMIT;
use krec_client::group::{find_coordinator_of, offset_fetch, CoordinatorType};
use krec_client::{Connection, ConnectionSettings, TopicPartition};
use krec_consumer::{Consumer, ConsumerConfig, GroupConsumer, GroupEvent, StartOffset};
use krec_producer::{Error, Producer, ProducerRecord};

use crate::support::{live, producer_config, within};

/// A transactional producer for `bootstrap`, its transactions initialized.
pub(crate) async fn transactional(bootstrap: &str, transactional_id: &str) -> Producer {
    let config = producer_config(
        bootstrap,
        &[("transactional.id", transactional_id), ("linger.ms", "1")],
    );
    let producer = Producer::connect(config).await.expect("connect");
    within("init_transactions", producer.init_transactions())
        .await
        .expect("init_transactions");
    producer
}

/// Asserts that a read_committed consumer sees `expected` in `topic` (sorted), reading again
/// for a while: the coordinator writes the markers that end a transaction after EndTxn's
/// answer, so the last stable offset may lag it.
pub(crate) async fn assert_committed(bootstrap: &str, topic: &str, expected: &[&str]) {
    let mut expected: Vec<String> = expected.iter().map(|v| (*v).to_owned()).collect();
    expected.sort();
    let mut values = Vec::new();
    for _ in 0..50 {
        values = committed_values(bootstrap, topic).await;
        values.sort();
        if values == expected {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(values, expected);
}

/// Every value of `topic` a read_committed consumer sees, in offset order per partition.
async fn committed_values(bootstrap: &str, topic: &str) -> Vec<String> {
    let mut config =
        ConsumerConfig::new(ConsumerConfig::parse_bootstrap(bootstrap).expect("bootstrap"));
    config.max_wait = Duration::from_millis(100);
    config.read_committed = true;
    let mut consumer = Consumer::connect(config).await.expect("consumer connect");
    consumer
        .assign_topic(topic, StartOffset::Beginning)
        .await
        .expect("assign_topic");
    consumer.stop_at_end(true);
    let mut values = Vec::new();
    while let Some(chunk) = within("reading back", consumer.next_chunk())
        .await
        .expect("next_chunk")
    {
        for record in chunk.records() {
            let record = record.expect("a record that decodes");
            let value = record.value().map(<[u8]>::to_vec).unwrap_or_default();
            values.push(String::from_utf8(value).expect("UTF-8"));
        }
    }
    consumer.close().await;
    values
}

/// Sends `values` to partition 0 of `topic` and waits until each is acknowledged.
pub(crate) async fn send_values(producer: &Producer, topic: &str, values: &[&str]) {
    let mut deliveries = Vec::new();
    for value in values {
        let record = ProducerRecord::new(topic)
            .partition(0)
            .value(value.as_bytes());
        deliveries.push(producer.send(record).await.expect("send"));
    }
    for delivery in deliveries {
        within("delivery", delivery).await.expect("delivered");
    }
}

/// Committed records are read, aborted ones are not; a send outside a transaction is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_shows_the_records_and_abort_hides_them() {
    let broker = live::broker();
    let topic = live::unique_name("txnprod-commit");
    broker.create_topic(&topic, 1);
    let producer = transactional(&broker.bootstrap, &live::unique_name("txnprod-id")).await;
    let outside = ProducerRecord::new(&topic).value(b"outside");
    let refused = producer.send(outside).await.unwrap_err();
    assert!(
        matches!(refused, Error::TransactionState { call: "send", .. }),
        "{refused}"
    );

    producer.begin().expect("begin");
    send_values(&producer, &topic, &["c1", "c2"]).await;
    within("commit", producer.commit()).await.expect("commit");
    producer.begin().expect("begin");
    send_values(&producer, &topic, &["a1", "a2"]).await;
    within("abort", producer.abort()).await.expect("abort");
    producer.begin().expect("begin");
    send_values(&producer, &topic, &["c3"]).await;
    within("commit", producer.commit()).await.expect("commit");
    let after = ProducerRecord::new(&topic).value(b"after");
    assert!(producer.send(after).await.is_err(), "committed: no send");
    producer.close().await.expect("close");

    assert_committed(&broker.bootstrap, &topic, &["c1", "c2", "c3"]).await;
}

/// A second producer with the same id fences the first: its commit fails with a fencing
/// error, its sends after too, and nothing it wrote becomes visible.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_producer_with_the_same_id_fences_the_first() {
    let broker = live::broker();
    let topic = live::unique_name("txnprod-fence");
    broker.create_topic(&topic, 1);
    let id = live::unique_name("txnprod-id");
    let first = transactional(&broker.bootstrap, &id).await;
    first.begin().expect("begin");
    send_values(&first, &topic, &["zombie"]).await;

    let second = transactional(&broker.bootstrap, &id).await;
    let fenced = within("commit", first.commit()).await.unwrap_err();
    assert!(matches!(fenced, Error::Fenced { .. }), "{fenced}");
    let record = ProducerRecord::new(&topic).value(b"zombie again");
    let refused = first.send(record).await.unwrap_err();
    assert!(matches!(refused, Error::Fenced { .. }), "{refused}");
    assert!(first.begin().is_err(), "a fenced producer begins nothing");

    second.begin().expect("begin");
    send_values(&second, &topic, &["new"]).await;
    within("commit", second.commit()).await.expect("commit");
    second.close().await.expect("close");
    assert_committed(&broker.bootstrap, &topic, &["new"]).await;
}

/// OffsetFetch's answer for the group's `partition`, stable offsets only: the offset (-1:
/// none) and the partition's error (UNSTABLE_OFFSET_COMMIT while a transaction holds one).
async fn stable_offset(bootstrap: &str, group: &str, partition: &TopicPartition) -> (i64, i16) {
    let settings = ConnectionSettings::default();
    let mut connection = Connection::connect(bootstrap, &settings).await.unwrap();
    for _ in 0..150 {
        if let Ok((_, address)) =
            find_coordinator_of(&mut connection, CoordinatorType::Group, group)
                .await
                .unwrap()
        {
            let mut coordinator = Connection::connect(&address, &settings).await.unwrap();
            let asked = BTreeMap::from([(partition.topic.to_string(), vec![partition.partition])]);
            let (code, answers) = offset_fetch(&mut coordinator, group, &asked).await.unwrap();
            assert_eq!(code, 0, "OffsetFetch: {}", krec_client::error_name(code));
            return answers
                .get(partition)
                .map_or((-1, 0), |answer| (answer.offset, answer.error_code));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("no coordinator for group {group}");
}

/// The group's committed offset of `partition` once no transaction holds it (the markers
/// of a commit are written after EndTxn's answer).
async fn settled_offset(bootstrap: &str, group: &str, partition: &TopicPartition) -> i64 {
    for _ in 0..50 {
        let (offset, code) = stable_offset(bootstrap, group, partition).await;
        if code != UNSTABLE_OFFSET_COMMIT {
            assert_eq!(code, 0, "OffsetFetch: {}", krec_client::error_name(code));
            return offset;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the offset of {partition:?} in group {group} stays unstable");
}

/// Offsets sent with a GroupConsumer's metadata are visible only after the commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_sent_to_the_transaction_are_committed_with_it() {
    let broker = live::broker();
    let input = live::unique_name("txnprod-in");
    let output = live::unique_name("txnprod-out");
    broker.create_topic(&input, 1);
    broker.create_topic(&output, 1);
    let plain = Producer::connect(producer_config(&broker.bootstrap, &[]))
        .await
        .expect("connect");
    send_values(&plain, &input, &["x", "y", "z"]).await;
    plain.close().await.expect("close");

    let group = live::unique_name("txnprod-group");
    let mut config = ConsumerConfig::from_properties([("group.id", group.as_str())])
        .expect("properties")
        .with("bootstrap.servers", &broker.bootstrap)
        .expect("bootstrap");
    config.read_committed = true;
    let mut consumer = GroupConsumer::subscribe(config, &[&input])
        .await
        .expect("subscribe");
    let producer = transactional(&broker.bootstrap, &live::unique_name("txnprod-id")).await;
    let partition = TopicPartition::new(input.as_str(), 0);
    let mut next = 0;
    while next < 3 {
        let event = within("next_event", consumer.next_event())
            .await
            .expect("event");
        if let Some(GroupEvent::Chunk(chunk)) = event {
            next = chunk.next_offset();
        }
    }
    producer.begin().expect("begin");
    send_values(&producer, &output, &["done"]).await;
    let offsets = BTreeMap::from([(partition.clone(), next)]);
    let metadata = consumer.group_metadata();
    assert!(metadata.generation >= 0, "{metadata:?}");
    within(
        "send_offsets",
        producer.send_offsets_to_transaction(&offsets, &metadata.committer()),
    )
    .await
    .expect("send_offsets_to_transaction");
    let pending = stable_offset(&broker.bootstrap, &group, &partition).await;
    assert_eq!(
        pending,
        (-1, UNSTABLE_OFFSET_COMMIT),
        "not before the commit"
    );
    within("commit", producer.commit()).await.expect("commit");
    assert_eq!(
        settled_offset(&broker.bootstrap, &group, &partition).await,
        3
    );
    producer.close().await.expect("close");
    consumer.close().await.expect("close");
}

/// The root package's `examples/transactions.rs` (built by test.sh's `cargo build
/// --examples`): every input record copied once, upper-cased, and the group's offsets
/// committed at the input's end; run again, it copies nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transactions_example_copies_every_record_once() {
    let broker = live::broker();
    let input = live::unique_name("txnprod-example-in");
    let output = live::unique_name("txnprod-example-out");
    broker.create_topic(&input, 2);
    broker.create_topic(&output, 1);
    let plain = Producer::connect(producer_config(&broker.bootstrap, &[]))
        .await
        .expect("connect");
    let values: Vec<String> = (0..40).map(|i| format!("v{i}")).collect();
    for (i, value) in values.iter().enumerate() {
        let record = ProducerRecord::new(&input)
            .partition(i as i32 % 2)
            .value(value.as_bytes());
        let _pending = plain.send(record).await.expect("send");
    }
    plain.close().await.expect("close");
    let group = live::unique_name("txnprod-example-group");
    let id = live::unique_name("txnprod-example-id");
    let args = [&broker.bootstrap, &input, &output, &group, &id];
    assert!(run_example(&args).contains("40 records copied"));
    assert!(
        run_example(&args).contains("0 records copied"),
        "resumed at the end"
    );

    let expected: Vec<String> = values.iter().map(|v| v.to_uppercase()).collect();
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    assert_committed(&broker.bootstrap, &output, &expected).await;
    for partition in 0..2 {
        let partition = TopicPartition::new(input.as_str(), partition);
        assert_eq!(
            settled_offset(&broker.bootstrap, &group, &partition).await,
            20
        );
    }
}

/// Runs `target/debug/examples/transactions` with `args`; its standard output, once it
/// succeeded.
fn run_example(args: &[&String]) -> String {
    let exe = std::env::current_exe().expect("the test's path");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/debug/deps")
        .join("examples")
        .join("transactions");
    assert!(
        path.is_file(),
        "{} is missing: `cargo build --examples`",
        path.display()
    );
    let output = std::process::Command::new(path)
        .args(args)
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout} {stderr}");
    stdout
}

/// The group refuses offsets sent with a generation it does not have (a member a rebalance
/// left behind): the transaction is doomed (commit and send refused, nothing of it visible),
/// `abort` is allowed, and the producer goes on with the next transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_refusing_the_offsets_dooms_only_the_transaction() {
    let broker = live::broker();
    let input = live::unique_name("txnprod-stale-in");
    let output = live::unique_name("txnprod-stale-out");
    broker.create_topic(&input, 1);
    broker.create_topic(&output, 1);
    let group = live::unique_name("txnprod-stale-group");
    let config = ConsumerConfig::from_properties([("group.id", group.as_str())])
        .expect("properties")
        .with("bootstrap.servers", &broker.bootstrap)
        .expect("bootstrap");
    let mut consumer = GroupConsumer::subscribe(config, &[&input])
        .await
        .expect("subscribe");
    while consumer.assignment().is_empty() {
        within("assignment", consumer.next_event())
            .await
            .expect("event");
    }
    let producer = transactional(&broker.bootstrap, &live::unique_name("txnprod-id")).await;
    producer.begin().expect("begin");
    send_values(&producer, &output, &["doomed"]).await;
    let mut stale = consumer.group_metadata();
    stale.generation += 1;
    let offsets = BTreeMap::from([(TopicPartition::new(input.as_str(), 0), 1)]);
    let refused = within(
        "send_offsets",
        producer.send_offsets_to_transaction(&offsets, &stale.committer()),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(refused, Error::TransactionAbortable { .. }),
        "{refused}"
    );
    let commit = within("commit", producer.commit()).await.unwrap_err();
    assert!(
        matches!(commit, Error::TransactionAbortable { .. }),
        "{commit}"
    );
    let record = ProducerRecord::new(&output).value(b"refused");
    assert!(
        producer.send(record).await.is_err(),
        "only abort is allowed"
    );
    within("abort", producer.abort()).await.expect("abort");

    producer.begin().expect("the producer goes on");
    send_values(&producer, &output, &["after"]).await;
    within("commit", producer.commit()).await.expect("commit");
    producer.close().await.expect("close");
    consumer.close().await.expect("close");
    assert_committed(&broker.bootstrap, &output, &["after"]).await;
}

/// A fenced producer that sends on: its batch is refused with INVALID_PRODUCER_EPOCH, which
/// dooms the transaction only (a coordinator's timeout answers the same), so its commit says
/// abort; the abort's EndTxn names the fence and stops it for good. Nothing of it is visible.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_producer_that_sends_on_stops_naming_the_fence() {
    let broker = live::broker();
    let topic = live::unique_name("txnprod-zombie");
    broker.create_topic(&topic, 1);
    let id = live::unique_name("txnprod-id");
    let first = transactional(&broker.bootstrap, &id).await;
    first.begin().expect("begin");
    send_values(&first, &topic, &["before"]).await;
    let second = transactional(&broker.bootstrap, &id).await;

    let record = ProducerRecord::new(&topic).partition(0).value(b"zombie");
    let delivery = first.send(record).await.expect("appended");
    let refused = within("delivery", delivery).await.unwrap_err();
    let text = refused.to_string();
    assert!(
        text.contains("FENCED") || text.contains("INVALID_PRODUCER_EPOCH"),
        "{text}"
    );
    let doomed = within("commit", first.commit()).await.unwrap_err();
    assert!(
        matches!(doomed, Error::TransactionAbortable { .. }),
        "{doomed:?}"
    );
    let fenced = within("abort", first.abort()).await.unwrap_err();
    assert!(matches!(fenced, Error::Fenced { .. }), "{fenced:?}");
    assert!(first.begin().is_err(), "stopped for good");
    assert!(first.abort().await.is_err(), "stopped for good");
    second.begin().expect("the new producer begins");
    send_values(&second, &topic, &["new"]).await;
    within("commit", second.commit()).await.expect("commit");
    second.close().await.expect("close");
    assert_committed(&broker.bootstrap, &topic, &["new"]).await;
}
