//! Connections cut while records flow: reset by the peer, and answers that never come back
//! (the broker wrote the batches; the producer sends them again and the broker knows them).

use std::time::Duration;

use super::check::{
    assert_contiguous_sequences, dump_batches, finish_all_delivered, start_sending, Pace,
};
use crate::support::{live, Lane};

const RECORDS: usize = 1_000_000;
const PARTITIONS: i32 = 4;

/// A million keyed records while the lane resets every connection twice and once swallows
/// the answers until the connections close: each record once, in send order, at the offset
/// its delivery gave; Kafka's own DumpLogSegments finds one producer id and contiguous
/// sequences in every partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_records_through_cut_connections_arrive_once_in_order() {
    let broker = live::broker();
    let lane = Lane::take(1);
    let topic = live::unique_name("pfaults-cut");
    broker.create_topic(&topic, PARTITIONS as u32);
    let pace = Pace {
        count: RECORDS,
        pause_every: 20_000,
        pause: Duration::from_millis(10),
    };
    let more = [("linger.ms", "5"), ("request.timeout.ms", "3000")];
    let (producer, sending) = start_sending(&lane.bootstrap, &more, &topic, pace).await;
    for cut in 0..3 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        if cut == 1 {
            // Requests reach the broker; their answers stall, then the connection closes.
            lane.add_toxic("cut", "timeout", "downstream", r#"{"timeout":500}"#);
            tokio::time::sleep(Duration::from_millis(700)).await;
        } else {
            lane.add_toxic("cut", "reset_peer", "downstream", r#"{"timeout":0}"#);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        lane.remove_toxic("cut");
    }
    finish_all_delivered(&broker.bootstrap, &topic, &producer, sending).await;
    let stats = producer.stats();
    assert!(stats.retries > 0, "no connection was cut: {stats:?}");
    for partition in 0..PARTITIONS {
        assert_contiguous_sequences(partition, &dump_batches(&broker, &topic, partition));
    }
}
