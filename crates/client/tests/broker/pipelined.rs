//! Produce requests pipelined on one connection: five in flight at once, and a long run with
//! each answer's read raced against a yield or a millisecond timer (dropped at any await) while
//! more requests are written, the answers cut in slices of a few bytes by a Toxiproxy proxy
//! of the test's own (the suite's, `KREC_TEST_PROXY_ENV`), so that reads are dropped
//! mid-frame. Every answer matches its request (offsets increasing, each batch where it was
//! sent), and kcat reads every record back where it was written.

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
    let identity = init_producer_id_retrying(&mut connection, None).await;
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

/// A Toxiproxy proxy to the broker whose answers arrive in slices of a few bytes, deleted
/// when dropped.
struct SlicedProxy {
    api: String,
    name: String,
    address: String,
}

impl SlicedProxy {
    fn new(broker: &LiveBroker) -> Self {
        let env = std::fs::read_to_string(live::required("KREC_TEST_PROXY_ENV")).unwrap();
        let api = env
            .lines()
            .find_map(|line| line.strip_prefix("TOXIPROXY_API="))
            .expect("TOXIPROXY_API in proxy.env")
            .to_owned();
        let name = live::unique_name("pipe-sliced");
        let proxy = serde_json::json!({
            "name": name, "listen": "127.0.0.1:0", "upstream": broker.bootstrap, "enabled": true,
        });
        let created = toxiproxy(&api, "/proxies", proxy);
        let address = created["listen"].as_str().unwrap().to_owned();
        let slicer = serde_json::json!({
            "type": "slicer", "stream": "downstream",
            "attributes": {"average_size": 6, "size_variation": 3, "delay": 200},
        });
        toxiproxy(&api, &format!("/proxies/{name}/toxics"), slicer);
        Self { api, name, address }
    }
}

impl Drop for SlicedProxy {
    fn drop(&mut self) {
        let url = format!("http://{}/proxies/{}", self.api, self.name);
        let _ = ureq::delete(&url).call();
    }
}

fn toxiproxy(api: &str, path: &str, body: serde_json::Value) -> serde_json::Value {
    let url = format!("http://{api}{path}");
    let mut answer = ureq::post(&url)
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .unwrap_or_else(|e| panic!("toxiproxy POST {path}: {e}"));
    serde_json::from_str(&answer.body_mut().read_to_string().unwrap()).unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn answers_in_slices_raced_against_timers_are_all_read_and_matched() {
    const REQUESTS: usize = 150;
    const SIZE: usize = 2;
    let broker = live::broker();
    let topic = live::unique_name("pipe-storm");
    broker.create_topic(&topic, 1);
    let id = topic_id(&broker, &topic).await;
    let proxy = SlicedProxy::new(&broker);
    let mut connection = Connection::connect(&proxy.address, &ConnectionSettings::default())
        .await
        .unwrap();
    let identity = init_producer_id_retrying(&mut connection, None).await;
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
