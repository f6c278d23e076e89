//! What the tests share: the broker, configurations, records as the consumer saw them, and
//! reading a consumer to its end with a time limit (a consumer that never ends fails the
//! test instead of hanging it).

use std::future::Future;
use std::time::Duration;

use krec_consumer::{Consumer, ConsumerConfig, PartitionChunk};
pub use krec_testkit::live::{self, Acked, LiveBroker, Record};

/// The longest any single wait of these tests may take.
pub const LIMIT: Duration = Duration::from_secs(30);

/// A consumer configuration for `broker`, with short fetch waits so ends come quickly.
pub fn config(broker: &LiveBroker) -> ConsumerConfig {
    let mut config = ConsumerConfig::new(
        ConsumerConfig::parse_bootstrap(&broker.bootstrap).expect("bootstrap string"),
    );
    config.max_wait = Duration::from_millis(100);
    config
}

/// A record as the consumer handed it out, or as a producer wrote it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seen {
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// Key as text.
    pub key: Option<String>,
    /// Value as text.
    pub value: Option<String>,
    /// Headers as text.
    pub headers: Vec<(String, String)>,
}

fn text(bytes: Option<&[u8]>) -> Option<String> {
    bytes.map(|b| String::from_utf8(b.to_vec()).expect("UTF-8 test data"))
}

/// Every record of `chunk`, decoded with `chunk.records()`; checks the chunk's topic.
pub fn records_of(chunk: &PartitionChunk, topic: &str) -> Vec<Seen> {
    assert_eq!(chunk.topic(), topic, "a chunk of another topic");
    chunk
        .records()
        .map(|record| {
            let record = record.expect("a record that decodes");
            Seen {
                partition: chunk.partition(),
                offset: record.offset(),
                key: text(record.key()),
                value: text(record.value()),
                headers: record
                    .headers()
                    .iter()
                    .map(|h| {
                        (
                            h.key_str().expect("UTF-8 key").to_owned(),
                            text(h.value).unwrap_or_default(),
                        )
                    })
                    .collect(),
            }
        })
        .collect()
}

/// What the producer acknowledged, as the consumer should see it, sorted.
pub fn expected(acked: &[Acked]) -> Vec<Seen> {
    let mut seen: Vec<Seen> = acked
        .iter()
        .map(|a| Seen {
            partition: a.record.partition,
            offset: a.offset,
            key: a.record.key.clone(),
            value: a.record.value.clone(),
            headers: a.record.headers.clone(),
        })
        .collect();
    seen.sort();
    seen
}

/// `count` records `key-I`/`value-I` (with a header `n: I`), round-robin over `partitions`.
pub fn numbered(count: usize, partitions: i32) -> Vec<Record> {
    (0..count)
        .map(|i| {
            Record::new(
                i as i32 % partitions,
                &format!("key-{i}"),
                &format!("value-{i}"),
            )
            .header("n", &i.to_string())
        })
        .collect()
}

/// `future`, or a panic naming `what` after [`LIMIT`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: not done after {LIMIT:?}"))
}

/// Every record `next_chunk` hands out until it gives `None`, sorted by partition and
/// offset, with a check that each partition's records came in offset order.
pub async fn read_to_end(consumer: &mut Consumer, topic: &str) -> Vec<Seen> {
    let mut seen: Vec<Seen> = Vec::new();
    while let Some(chunk) = within("next_chunk to end", consumer.next_chunk())
        .await
        .expect("next_chunk")
    {
        for record in records_of(&chunk, topic) {
            if let Some(last) = seen.iter().rev().find(|s| s.partition == record.partition) {
                assert!(
                    last.offset < record.offset,
                    "out of order: {last:?} then {record:?}"
                );
            }
            seen.push(record);
        }
    }
    seen.sort();
    seen
}
