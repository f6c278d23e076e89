//! MESSAGE_TOO_LARGE: batches larger than the topic's `max.message.bytes` are split and sent
//! again, as the Java producer does, keeping exactly once and each partition's order; a record
//! too large alone fails with the topic, partition and size.

use std::time::Duration;

use krec_producer::{Error, ProducerRecord};

use crate::solo::check::{
    assert_contiguous_sequences, assert_exactly_once, dump_batches, outcomes, start_sending, Pace,
};
use crate::support::{alter_config, live, within};

const RECORDS: usize = 20_000;
const PARTITIONS: i32 = 2;
const MAX_MESSAGE_BYTES: usize = 20_000;

/// 20,000 keyed records in batches of up to 1 MiB to a topic that takes 20,000 bytes a batch:
/// every batch refused is split until it fits, each record is read back once, in send order,
/// at the offset its delivery gave, and DumpLogSegments finds contiguous sequences of one
/// producer id. Then a record of its own over the limit fails, naming its size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_over_max_message_bytes_are_split_and_arrive_once_in_order() {
    let broker = live::broker();
    let topic = live::unique_name("producer-too-large");
    broker.create_topic(&topic, PARTITIONS as u32);
    let limit = format!("max.message.bytes={MAX_MESSAGE_BYTES}");
    alter_config(&broker, "topics", &topic, &limit);
    let pace = Pace {
        count: RECORDS,
        pause_every: RECORDS,
        pause: Duration::ZERO,
    };
    let more = [("batch.size", "1048576"), ("linger.ms", "100")];
    let (producer, sending) = start_sending(&broker.bootstrap, &more, &topic, pace).await;
    let outcomes = outcomes(sending).await;
    let stats = producer.stats();
    assert!(stats.batches_split > 0, "no batch was split: {stats:?}");

    let big = vec![b'x'; MAX_MESSAGE_BYTES + 1];
    let record = ProducerRecord::new(topic.as_str()).key("big").value(&big);
    let delivery = producer.send(record).await.expect("send");
    match within("the big record", delivery).await {
        Err(Error::MessageTooLarge {
            topic: refused,
            size,
            records: 1,
            ..
        }) => {
            assert_eq!(refused, topic);
            assert!(size > MAX_MESSAGE_BYTES as u64, "size {size}");
        }
        other => panic!("expected MessageTooLarge, got {other:?}"),
    }
    within("close", producer.close()).await.expect("close");

    let failed = assert_exactly_once(&broker.bootstrap, &topic, &outcomes).await;
    assert_eq!(failed, 0, "{:?}", outcomes.iter().find(|o| o.is_err()));
    for partition in 0..PARTITIONS {
        let batches = dump_batches(&broker, &topic, partition);
        assert_contiguous_sequences(partition, &batches);
    }
}
