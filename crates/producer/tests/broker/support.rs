//! What the tests share: the broker, producer configurations, and reading a topic back with
//! krec-consumer within a time limit.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use krec_consumer::{Consumer, ConsumerConfig, StartOffset};
use krec_producer::ProducerConfig;
pub use krec_testkit::live;

/// The longest any single wait of these tests may take.
pub const LIMIT: Duration = Duration::from_secs(30);

/// A producer configuration for `bootstrap` with the given properties on top.
pub fn producer_config(bootstrap: &str, properties: &[(&str, &str)]) -> ProducerConfig {
    ProducerConfig::from_properties(properties.iter().copied())
        .expect("properties")
        .with("bootstrap.servers", bootstrap)
        .expect("bootstrap.servers")
}

/// A record as read back: offset, key, value, headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

/// Every record of `topic`, by partition in offset order, read with krec-consumer.
pub async fn read_back(bootstrap: &str, topic: &str) -> BTreeMap<i32, Vec<Read>> {
    let mut config =
        ConsumerConfig::new(ConsumerConfig::parse_bootstrap(bootstrap).expect("bootstrap"));
    config.max_wait = Duration::from_millis(100);
    let mut consumer = Consumer::connect(config).await.expect("consumer connect");
    consumer
        .assign_topic(topic, StartOffset::Beginning)
        .await
        .expect("assign_topic");
    consumer.stop_at_end(true);
    let mut read: BTreeMap<i32, Vec<Read>> = BTreeMap::new();
    while let Some(chunk) = within("reading back", consumer.next_chunk())
        .await
        .expect("next_chunk")
    {
        let partition = read.entry(chunk.partition()).or_default();
        for record in chunk.records() {
            let record = record.expect("a record that decodes");
            partition.push(Read {
                offset: record.offset(),
                key: record.key().map(<[u8]>::to_vec),
                value: record.value().map(<[u8]>::to_vec),
                headers: record
                    .headers()
                    .iter()
                    .map(|h| {
                        let name = h.key_str().expect("UTF-8 header name").to_owned();
                        (name, h.value.map(<[u8]>::to_vec))
                    })
                    .collect(),
            });
        }
    }
    consumer.close().await;
    read
}

/// `future`, or a panic naming `what` after [`LIMIT`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: not done after {LIMIT:?}"))
}
