//! `read_committed` against records a real transactional producer wrote: an aborted
//! transaction between two committed ones.

use krec_consumer::{Consumer, StartOffset};

use crate::support::{config, expected, live, read_to_end, Record, Seen};

fn values(seen: &[Seen]) -> Vec<String> {
    let mut values: Vec<String> = seen.iter().filter_map(|s| s.value.clone()).collect();
    values.sort();
    values
}

/// Under `read_committed` the aborted transaction's records are hidden and the committed
/// ones shown with their offsets; read uncommitted, the same topic shows all of them (so the
/// aborted records are really there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_hides_an_aborted_transaction() {
    let broker = live::broker();
    let topic = live::unique_name("kc-txn");
    broker.create_topic(&topic, 2);
    let step = |name: &str, count: usize| -> Vec<Record> {
        (0..count)
            .map(|i| Record::new(i as i32 % 2, &format!("k{i}"), &format!("{name}-{i}")))
            .collect()
    };
    let acked = broker.produce_transactions(
        &topic,
        Some(&live::unique_name("kc-txn-id")),
        &[
            (true, step("committed-a", 4)),
            (false, step("aborted", 4)),
            (true, step("committed-b", 4)),
        ],
    );
    let committed: Vec<_> = acked
        .iter()
        .filter(|a| {
            !a.record
                .value
                .as_deref()
                .unwrap_or("")
                .starts_with("aborted")
        })
        .cloned()
        .collect();
    assert_eq!(committed.len(), 8);

    let mut settings = config(&broker);
    settings.read_committed = true;
    let mut consumer = Consumer::connect(settings).await.expect("connect");
    consumer
        .assign_topic(&topic, StartOffset::Beginning)
        .await
        .expect("assign_topic");
    consumer.stop_at_end(true);
    assert_eq!(
        read_to_end(&mut consumer, &topic).await,
        expected(&committed)
    );

    let mut uncommitted = Consumer::connect(config(&broker)).await.expect("connect");
    uncommitted
        .assign_topic(&topic, StartOffset::Beginning)
        .await
        .expect("assign_topic");
    uncommitted.stop_at_end(true);
    let all = read_to_end(&mut uncommitted, &topic).await;
    assert_eq!(values(&all), values(&expected(&acked)));
    assert_eq!(all.len(), 12);
}
