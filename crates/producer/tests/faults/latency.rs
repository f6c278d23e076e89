//! Added latency while five requests are in flight per connection: answers come late and
//! jittered, nothing is resent out of order.

use std::time::Duration;

use super::check::{finish_all_delivered, start_sending, Pace};
use crate::support::{live, Lane};

const RECORDS: usize = 200_000;

/// 200,000 keyed records while every byte from the broker takes 200 ms (jitter 50 ms) for
/// two seconds, with `max.in.flight.requests.per.connection` 5: every delivery resolves,
/// each record once, in send order, at the offset its delivery gave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_with_five_requests_in_flight_keeps_send_order() {
    let broker = live::broker();
    let lane = Lane::take(1);
    let topic = live::unique_name("pfaults-latency");
    broker.create_topic(&topic, 3);
    let pace = Pace {
        count: RECORDS,
        pause_every: 10_000,
        pause: Duration::from_millis(50),
    };
    let more = [("linger.ms", "2"), ("batch.size", "8192")];
    let (producer, sending) = start_sending(&lane.bootstrap, &more, &topic, pace).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    lane.add_toxic(
        "slow",
        "latency",
        "downstream",
        r#"{"latency":200,"jitter":50}"#,
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    lane.remove_toxic("slow");
    finish_all_delivered(&broker.bootstrap, &topic, &producer, sending).await;
}
