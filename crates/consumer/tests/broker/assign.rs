//! `Consumer` with assigned partitions: `assign_topic`, `assign`/`assign_at` of chosen
//! partitions with starts of their own, `seek`, and `stop_at_end`.

use krec_consumer::{Consumer, StartOffset, TopicPartition};

use crate::support::{config, expected, live, numbered, read_to_end, within};

/// Every record of every partition, each partition in offset order, then `None` (and `None`
/// again): not one record missing or repeated when `stop_at_end` ends the reading.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assign_topic_reads_every_record_then_stops_at_end() {
    let broker = live::broker();
    let topic = live::unique_name("kc-assign-topic");
    broker.create_topic(&topic, 3);
    let acked = broker.produce(&topic, &numbered(30, 3));

    let mut consumer = Consumer::connect(config(&broker)).await.expect("connect");
    let assigned = consumer
        .assign_topic(&topic, StartOffset::Beginning)
        .await
        .expect("assign_topic");
    let mut partitions: Vec<i32> = assigned.iter().map(|p| p.partition).collect();
    partitions.sort_unstable();
    assert_eq!(partitions, [0, 1, 2]);
    consumer.stop_at_end(true);

    assert_eq!(read_to_end(&mut consumer, &topic).await, expected(&acked));
    let again = within("next_chunk after the end", consumer.next_chunk()).await;
    assert!(matches!(again, Ok(None)), "after the end: {again:?}");
    consumer.close().await;
}

/// `assign_at` and `assign` read only the partitions named, each from its own start
/// (an offset, the beginning, three before the end).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assign_chosen_partitions_from_their_own_starts() {
    let broker = live::broker();
    let topic = live::unique_name("kc-assign-chosen");
    broker.create_topic(&topic, 4);
    let acked = broker.produce(&topic, &numbered(40, 4));

    let mut consumer = Consumer::connect(config(&broker)).await.expect("connect");
    let p = |partition| TopicPartition::new(topic.as_str(), partition);
    consumer
        .assign_at(&[
            (p(0), StartOffset::Offset(4)),
            (p(2), StartOffset::Beginning),
        ])
        .await
        .expect("assign_at");
    consumer
        .assign(&[p(3)], StartOffset::FromEnd(3))
        .await
        .expect("assign");
    consumer.stop_at_end(true);

    let want: Vec<_> = expected(&acked)
        .into_iter()
        .filter(|r| match r.partition {
            0 => r.offset >= 4,
            2 => true,
            3 => r.offset >= 7,
            _ => false,
        })
        .collect();
    assert_eq!(want.len(), 6 + 10 + 3);
    assert_eq!(read_to_end(&mut consumer, &topic).await, want);
}

/// After reading to the end, `seek` moves one partition back and another to its end: the
/// consumer reads exactly the first one's records from the new offset, then stops again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_rereads_from_the_new_offset_then_stops_again() {
    let broker = live::broker();
    let topic = live::unique_name("kc-seek");
    broker.create_topic(&topic, 2);
    let acked = broker.produce(&topic, &numbered(20, 2));

    let mut consumer = Consumer::connect(config(&broker)).await.expect("connect");
    consumer
        .assign_topic(&topic, StartOffset::Beginning)
        .await
        .expect("assign_topic");
    consumer.stop_at_end(true);
    assert_eq!(read_to_end(&mut consumer, &topic).await, expected(&acked));

    let p = |partition| TopicPartition::new(topic.as_str(), partition);
    consumer
        .seek(&p(1), StartOffset::Offset(6))
        .expect("seek partition 1");
    consumer
        .seek(&p(0), StartOffset::End)
        .expect("seek partition 0");
    let want: Vec<_> = expected(&acked)
        .into_iter()
        .filter(|r| r.partition == 1 && r.offset >= 6)
        .collect();
    assert_eq!(want.len(), 4);
    assert_eq!(read_to_end(&mut consumer, &topic).await, want);
}

/// An empty topic ends at once under `stop_at_end`; without it, `next_chunk` waits for
/// records, and hands out the ones produced while it waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_at_end_ends_an_empty_topic_and_without_it_next_chunk_waits() {
    let broker = live::broker();
    let topic = live::unique_name("kc-empty");
    broker.create_topic(&topic, 2);

    let mut ending = Consumer::connect(config(&broker)).await.expect("connect");
    ending
        .assign_topic(&topic, StartOffset::Beginning)
        .await
        .expect("assign_topic");
    ending.stop_at_end(true);
    assert_eq!(read_to_end(&mut ending, &topic).await, []);

    let mut waiting = Consumer::connect(config(&broker)).await.expect("connect");
    waiting
        .assign_topic(&topic, StartOffset::Beginning)
        .await
        .expect("assign_topic");
    let idle =
        tokio::time::timeout(std::time::Duration::from_millis(700), waiting.next_chunk()).await;
    assert!(idle.is_err(), "next_chunk of an empty topic gave {idle:?}");
    let acked = broker.produce(&topic, &numbered(1, 2));
    let chunk = within("the record produced later", waiting.next_chunk())
        .await
        .expect("next_chunk")
        .expect("a chunk, not the end");
    assert_eq!(crate::support::records_of(&chunk, &topic), expected(&acked));
}

/// `into_stream` yields the same chunks `next_chunk` would, and ends where it gives `None`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn into_stream_yields_every_record_then_ends() {
    use futures_util::StreamExt;
    let broker = live::broker();
    let topic = live::unique_name("kc-stream");
    broker.create_topic(&topic, 2);
    let acked = broker.produce(&topic, &numbered(20, 2));

    let mut consumer = Consumer::connect(config(&broker)).await.expect("connect");
    consumer
        .assign_topic(&topic, StartOffset::Beginning)
        .await
        .expect("assign_topic");
    consumer.stop_at_end(true);
    let mut stream = std::pin::pin!(consumer.into_stream());
    let mut seen = Vec::new();
    while let Some(chunk) = within("the stream's next chunk", stream.next()).await {
        seen.extend(crate::support::records_of(&chunk.expect("a chunk"), &topic));
    }
    seen.sort();
    assert_eq!(seen, expected(&acked));
}
