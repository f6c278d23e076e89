//! Produce requests pipelined on one connection: five in flight at once, and a long run with
//! each answer's read raced against a yield or a millisecond timer (dropped at any await) while
//! more requests are written. Every answer matches its request (offsets increasing, each
//! batch where it was sent), and kcat reads every record back where it was written.

use std::collections::VecDeque;
use std::time::Duration;

use krec_client::produce::{send_produce, ProduceInFlight};

use super::*;

/// `count` batches of `size` records for `partition`, the first one at `first`, with the
/// producer's sequences, as one request each.
fn requests(
    topic: &str,
    id: Uuid,
    identity: ProducerIdentity,
    partitions: &[i32],
    first: usize,
    size: usize,
) -> (Vec<ProduceTopic>, Vec<Sent>) {
    let mut sent = Vec::new();
    let mut batches = Vec::new();
    for &partition in partitions {
        let records = records(partition, first, size);
        let codec = [Compression::Lz4, Compression::None][first % 2];
        batches.push((partition, batch(&records, identity, first as i32, codec)));
        sent.extend(records);
    }
    (one_topic(topic, id, batches), sent)
}

#[tokio::test(flavor = "current_thread")]
async fn five_produce_requests_in_flight_are_answered_in_the_order_sent() {
    let broker = live::broker();
    let topic = live::unique_name("pipe-inflight");
    broker.create_topic(&topic, 2);
    let id = topic_id(&broker, &topic).await;
    let mut connection = connect(&broker).await;
    let identity = init_producer_id(&mut connection, None).await.unwrap();
    // The partitions' leaders ready first (a new topic's answer retriable errors a moment).
    let (ready, mut sent) = requests(&topic, id, identity, &[0, 1], 0, 3);
    produce_retrying(&mut connection, ALL, &ready).await;

    let mut in_flight: Vec<(usize, ProduceInFlight)> = Vec::new();
    for k in 0..5 {
        let first = 3 + 4 * k;
        let (request, records) = requests(&topic, id, identity, &[0, 1], first, 4);
        let pending = send_produce(&mut connection, ALL, &request).await.unwrap();
        in_flight.push((first, pending));
        sent.extend(records);
    }
    assert_eq!(connection.in_flight(), 5);
    // The newest cannot be read before the oldest.
    let early = in_flight[4].1.answer(&mut connection).await.unwrap_err();
    assert!(matches!(early, Error::InvalidArgument { .. }), "{early}");
    for (first, pending) in &in_flight {
        let answer = pending.answer(&mut connection).await.unwrap();
        assert_eq!(answer.partitions.len(), 2);
        for produced in &answer.partitions {
            assert_eq!(appended_base(produced), *first as i64, "{produced:?}");
        }
    }
    assert_eq!(connection.in_flight(), 0);
    sent.sort();
    assert_eq!(read_with_kcat(&broker, &topic), sent);
}

#[tokio::test(flavor = "current_thread")]
async fn answers_raced_against_timers_are_all_read_and_matched() {
    const REQUESTS: usize = 150;
    const SIZE: usize = 2;
    let broker = live::broker();
    let topic = live::unique_name("pipe-storm");
    broker.create_topic(&topic, 1);
    let id = topic_id(&broker, &topic).await;
    let mut connection = connect(&broker).await;
    let identity = init_producer_id(&mut connection, None).await.unwrap();
    let (ready, mut sent) = requests(&topic, id, identity, &[0], 0, SIZE);
    produce_retrying(&mut connection, ALL, &ready).await;

    let mut in_flight: VecDeque<(usize, ProduceInFlight)> = VecDeque::new();
    let (mut next, mut answered, mut dropped) = (1, 0, 0);
    while answered < REQUESTS {
        while next <= REQUESTS && connection.in_flight() < 5 {
            let (request, records) = requests(&topic, id, identity, &[0], next * SIZE, SIZE);
            let pending = send_produce(&mut connection, ALL, &request).await.unwrap();
            in_flight.push_back((next * SIZE, pending));
            sent.extend(records);
            next += 1;
        }
        let (first, oldest) = in_flight.front().unwrap();
        let odd = dropped % 4 == 3;
        let pause = async move {
            if odd {
                tokio::time::sleep(Duration::from_millis(1)).await;
            } else {
                tokio::task::yield_now().await;
            }
        };
        tokio::select! {
            answer = oldest.answer(&mut connection) => {
                let answer = answer.unwrap();
                assert_eq!(appended_base(&answer.partitions[0]), *first as i64);
                in_flight.pop_front();
                answered += 1;
            }
            () = pause => dropped += 1,
        }
    }
    assert!(dropped > 0, "answers dropped while read: {dropped}");
    sent.sort();
    assert_eq!(read_with_kcat(&broker, &topic), sent);
}
