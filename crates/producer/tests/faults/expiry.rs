//! Answers that never come for longer than `delivery.timeout.ms`: the batches fail with a
//! timeout (whose records the broker may have written: their outcome is unknown), the epoch
//! is bumped, and the records after them start again at sequence 0 of the new epoch.

use std::time::Duration;

use super::check::{
    assert_contiguous_sequences, dump_batches, finish_sending, start_sending, Pace,
};
use crate::support::{live, Lane};

const RECORDS: usize = 150_000;
const PARTITIONS: i32 = 2;

/// 150,000 keyed records while, for longer than `delivery.timeout.ms`, the broker's answers
/// are swallowed (the requests reach it): some deliveries fail with a timeout, none is read
/// back twice, every record acknowledged is where its delivery said, each partition in send
/// order; DumpLogSegments shows a later epoch starting at sequence 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_batches_bump_the_epoch_and_duplicate_nothing() {
    let broker = live::broker();
    let lane = Lane::take(1);
    let topic = live::unique_name("pfaults-expiry");
    broker.create_topic(&topic, PARTITIONS as u32);
    let pace = Pace {
        count: RECORDS,
        pause_every: 1_000,
        pause: Duration::from_millis(20),
    };
    let more = [
        ("linger.ms", "5"),
        ("request.timeout.ms", "500"),
        ("delivery.timeout.ms", "1500"),
    ];
    let (producer, sending) = start_sending(&lane.bootstrap, &more, &topic, pace).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    lane.add_toxic("swallow", "timeout", "downstream", r#"{"timeout":0}"#);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    lane.remove_toxic("swallow");
    let (failed, _) = finish_sending(&broker.bootstrap, &topic, &producer, sending).await;
    assert!(failed > 0, "no batch expired: {:?}", producer.stats());
    let mut bumped = false;
    for partition in 0..PARTITIONS {
        let batches = dump_batches(&broker, &topic, partition);
        assert_contiguous_sequences(partition, &batches);
        bumped |= batches[0].producer_epoch < batches[batches.len() - 1].producer_epoch;
    }
    assert!(bumped, "no partition shows a new epoch");
}
