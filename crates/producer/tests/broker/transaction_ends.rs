//! How transactions end when the producer does not end them itself: the coordinator aborts
//! one past `transaction.timeout.ms` (the producer aborts too and goes on), and `close` with
//! a transaction open aborts it at once.

use std::time::{Duration, Instant};

use krec_client::offsets::{list_offsets, OffsetQuery};
use krec_client::{Connection, ConnectionSettings};
use krec_producer::{Error, Producer, ProducerRecord};

use crate::support::{live, producer_config, within, LIMIT};
use crate::transactions::{assert_committed, send_values, transactional};

/// Waits until partition 0 of `topic`'s last stable offset reaches `offset` (the markers
/// that end a transaction move it), for at most `limit`.
async fn await_stable_offset(bootstrap: &str, topic: &str, offset: i64, limit: Duration) {
    let settings = ConnectionSettings::default();
    let mut connection = Connection::connect(bootstrap, &settings)
        .await
        .expect("connect");
    let started = Instant::now();
    let mut stable = -1;
    while started.elapsed() < limit {
        let query = [(0, -1, OffsetQuery::Latest)];
        let listed = list_offsets(&mut connection, topic, &query, true)
            .await
            .expect("ListOffsets");
        stable = listed.first().map_or(-1, |l| l.offset);
        if stable >= offset {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("{topic}'s last stable offset stayed at {stable}, short of {offset}");
}

/// The coordinator aborts a transaction past `transaction.timeout.ms` and bumps the epoch
/// (Transactions v2): the next batch is refused with INVALID_PRODUCER_EPOCH, which dooms the
/// transaction only: a record sent in it after that fails at once, never waiting for the
/// abort; abort succeeds and the next transaction commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_the_coordinator_timed_out_is_aborted_and_the_producer_goes_on() {
    let broker = live::broker();
    let topic = live::unique_name("txnprod-timeout");
    broker.create_topic(&topic, 1);
    let properties = [
        ("transactional.id", live::unique_name("txnprod-id")),
        ("transaction.timeout.ms", "1000".to_owned()),
        ("linger.ms", "1".to_owned()),
    ];
    let properties: Vec<(&str, &str)> = properties.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let producer = Producer::connect(producer_config(&broker.bootstrap, &properties))
        .await
        .expect("connect");
    within("init_transactions", producer.init_transactions())
        .await
        .expect("init_transactions");
    producer.begin().expect("begin");
    send_values(&producer, &topic, &["timed out"]).await;
    // The abort marker after the record: the coordinator's cleanup ran.
    await_stable_offset(&broker.bootstrap, &topic, 2, LIMIT).await;

    let record = ProducerRecord::new(&topic).partition(0).value(b"late");
    let delivery = producer.send(record).await.expect("appended");
    let refused = within("delivery", delivery).await.unwrap_err();
    assert!(
        refused.to_string().contains("INVALID_PRODUCER_EPOCH"),
        "{refused}"
    );
    let record = ProducerRecord::new(&topic).partition(0).value(b"doomed");
    let delivery = producer.send(record).await.expect("appended");
    let doomed = within("delivery in the doomed transaction", delivery)
        .await
        .unwrap_err();
    assert!(
        matches!(doomed, Error::TransactionAbortable { .. }),
        "{doomed}"
    );
    let doomed = within("commit", producer.commit()).await.unwrap_err();
    assert!(
        matches!(doomed, Error::TransactionAbortable { .. }),
        "{doomed}"
    );
    within("abort", producer.abort()).await.expect("abort");

    producer.begin().expect("begin after the abort");
    send_values(&producer, &topic, &["next"]).await;
    within("commit", producer.commit()).await.expect("commit");
    producer.close().await.expect("close");
    assert_committed(&broker.bootstrap, &topic, &["next"]).await;
}

/// `close` with a transaction open aborts it: the abort marker comes at once (far within
/// `transaction.timeout.ms`), its records never reach read_committed, and a new producer
/// with the same id commits at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_aborts_the_open_transaction() {
    let broker = live::broker();
    let topic = live::unique_name("txnprod-close");
    broker.create_topic(&topic, 1);
    let id = live::unique_name("txnprod-id");
    let first = transactional(&broker.bootstrap, &id).await;
    first.begin().expect("begin");
    send_values(&first, &topic, &["left open"]).await;
    within("close", first.close()).await.expect("close");
    // The default transaction.timeout.ms (60 s) is far off: only close's abort moves it.
    await_stable_offset(&broker.bootstrap, &topic, 2, Duration::from_secs(10)).await;

    let second = transactional(&broker.bootstrap, &id).await;
    second.begin().expect("begin");
    send_values(&second, &topic, &["next"]).await;
    within("commit", second.commit()).await.expect("commit");
    second.close().await.expect("close");
    assert_committed(&broker.bootstrap, &topic, &["next"]).await;
}
