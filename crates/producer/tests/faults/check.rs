//! What every fault test does: send keyed records from one task (the value is the record's
//! number in send order), await every delivery, read the topic back and check it.

use std::sync::Arc;
use std::time::Duration;

use krec_producer::{Delivered, Delivery, Error, Producer, ProducerRecord};
use tokio::task::JoinHandle;

use crate::support::{producer_config, read_back, within};

/// Records per key before the next key: the records of a key land in one partition.
pub const KEYS: usize = 64;

/// Properties of every fault test: idempotent, acks=all, five requests in flight.
pub const IDEMPOTENT: [(&str, &str); 4] = [
    ("enable.idempotence", "true"),
    ("acks", "all"),
    ("max.in.flight.requests.per.connection", "5"),
    ("retry.backoff.ms", "50"),
];

/// `IDEMPOTENT` and `more` together.
pub fn properties<'a>(more: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    IDEMPOTENT.iter().chain(more).copied().collect()
}

/// How a test sends: `count` records, a pause of `pause` after every `pause_every`.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    pub count: usize,
    pub pause_every: usize,
    pub pause: Duration,
}

/// The start of every fault test: an idempotent producer (`IDEMPOTENT` and `more`) on
/// `bootstrap`, and a task sending keyed records to `topic` at `pace` ([`send_keyed`]).
pub async fn start_sending(
    bootstrap: &str,
    more: &[(&str, &str)],
    topic: &str,
    pace: Pace,
) -> (Arc<Producer>, JoinHandle<Vec<Delivery>>) {
    let config = producer_config(bootstrap, &properties(more));
    let producer = Arc::new(
        within("connect", Producer::connect(config))
            .await
            .expect("connect"),
    );
    let sending = send_keyed(
        producer.clone(),
        topic.to_owned(),
        pace.count,
        pace.pause_every,
        pace.pause,
    );
    (producer, sending)
}

/// The end of every fault test: every delivery's outcome, the producer closed, and the topic
/// (read from `bootstrap`) checked by [`assert_exactly_once`]; how many records failed, and
/// the first failure.
pub async fn finish_sending(
    bootstrap: &str,
    topic: &str,
    producer: &Producer,
    sending: JoinHandle<Vec<Delivery>>,
) -> (usize, Option<Error>) {
    let outcomes = outcomes(sending).await;
    within("close", producer.close()).await.expect("close");
    let failed = assert_exactly_once(bootstrap, topic, &outcomes).await;
    let first = outcomes.into_iter().find_map(Result::err);
    (failed, first)
}

/// [`finish_sending`], where every record must have been delivered.
pub async fn finish_all_delivered(
    bootstrap: &str,
    topic: &str,
    producer: &Producer,
    sending: JoinHandle<Vec<Delivery>>,
) {
    let (failed, first) = finish_sending(bootstrap, topic, producer, sending).await;
    assert_eq!(failed, 0, "records failed; the first: {first:?}");
}

/// Sends records `0..count` to `topic` from one task, key `key-{i % KEYS}`, value `i`;
/// after every `pause_every` records it sleeps `pause`, so faults land mid-stream.
pub fn send_keyed(
    producer: Arc<Producer>,
    topic: String,
    count: usize,
    pause_every: usize,
    pause: Duration,
) -> JoinHandle<Vec<Delivery>> {
    tokio::spawn(async move {
        let mut deliveries = Vec::with_capacity(count);
        for i in 0..count {
            let key = format!("key-{}", i % KEYS);
            let record = ProducerRecord::new(topic.as_str())
                .key(&key)
                .value(i.to_string());
            deliveries.push(producer.send(record).await.expect("send"));
            if (i + 1) % pause_every == 0 {
                tokio::time::sleep(pause).await;
            }
        }
        deliveries
    })
}

/// Every delivery's outcome, in send order; each must resolve within the tests' limit.
pub async fn outcomes(sending: JoinHandle<Vec<Delivery>>) -> Vec<Result<Delivered, Error>> {
    let deliveries = within("sending", sending).await.expect("sending task");
    let mut outcomes = Vec::with_capacity(deliveries.len());
    for delivery in deliveries {
        outcomes.push(within("a delivery", delivery).await);
    }
    outcomes
}

/// Reads `topic` back and checks it against `outcomes`: each record acknowledged is there
/// exactly once, in its partition at its offset; a failed record is there at most once, and
/// only when its error leaves the outcome open (a timeout after a resend); nothing else is
/// there; every partition's records are in send order. Returns how many records failed.
pub async fn assert_exactly_once(
    bootstrap: &str,
    topic: &str,
    outcomes: &[Result<Delivered, Error>],
) -> usize {
    let read = read_back(bootstrap, topic).await;
    let mut places: Vec<Vec<(i32, i64)>> = vec![Vec::new(); outcomes.len()];
    for (partition, records) in &read {
        let mut previous: Option<usize> = None;
        for record in records {
            let value = record.value.as_deref().expect("a value");
            let number: usize = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("a value not sent: {value:?}"));
            let key = format!("key-{}", number % KEYS);
            assert_eq!(
                record.key.as_deref(),
                Some(key.as_bytes()),
                "record {number}"
            );
            assert!(number < outcomes.len(), "record {number} was never sent");
            places[number].push((*partition, record.offset));
            if let Some(previous) = previous {
                assert!(
                    previous < number,
                    "partition {partition}: record {number} at offset {} after record \
                     {previous}: out of send order, or a duplicate",
                    record.offset
                );
            }
            previous = Some(number);
        }
    }
    let mut failed = 0;
    for (number, (outcome, places)) in outcomes.iter().zip(&places).enumerate() {
        match outcome {
            Ok(delivered) if delivered.has_offset() => assert_eq!(
                places,
                &[(delivered.partition(), delivered.offset())],
                "record {number}: where it is read, and where its delivery said"
            ),
            Ok(delivered) => assert!(
                places.len() == 1 && places[0].0 == delivered.partition(),
                "record {number}, acknowledged without an offset: read at {places:?}"
            ),
            Err(error) => {
                failed += 1;
                let open = matches!(error, Error::DeliveryTimeout { retries, .. } if *retries > 0);
                assert!(
                    places.is_empty() || (open && places.len() == 1),
                    "record {number} failed ({error}) but is read at {places:?}"
                );
            }
        }
    }
    failed
}

/// The batch headers of `topic`'s partition as Kafka's DumpLogSegments prints them from the
/// segment files in `data_dir`: producer id and epoch, sequences and offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DumpedBatch {
    pub base_offset: i64,
    pub last_offset: i64,
    pub count: i64,
    pub base_sequence: i64,
    pub last_sequence: i64,
    pub producer_id: i64,
    pub producer_epoch: i64,
}

/// Every batch of partition `partition` of `topic`, read by DumpLogSegments (no
/// `--deep-iteration`: one line per batch).
pub fn dump_batches(
    broker: &crate::support::live::LiveBroker,
    topic: &str,
    partition: i32,
) -> Vec<DumpedBatch> {
    let data_dir = broker.kafka_sh("datadir", &[]);
    let dir = std::path::Path::new(data_dir.trim()).join(format!("{topic}-{partition}"));
    let mut segments: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "log"))
        .map(|path| path.to_string_lossy().into_owned())
        .collect();
    segments.sort();
    let files = segments.join(",");
    let output = broker.tool(
        "org.apache.kafka.tools.DumpLogSegments",
        &["--files", &files],
    );
    output
        .lines()
        .filter(|line| line.starts_with("baseOffset: "))
        .map(|line| {
            assert!(line.contains(" isvalid: true"), "an invalid batch: {line}");
            let padded = format!(" {line}");
            let field = |name: &str| -> i64 {
                let start = padded
                    .find(&format!(" {name}: "))
                    .unwrap_or_else(|| panic!("no {name} in {line}"))
                    + name.len()
                    + 3;
                padded[start..]
                    .split(' ')
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("{name} of {line}"))
            };
            DumpedBatch {
                base_offset: field("baseOffset"),
                last_offset: field("lastOffset"),
                count: field("count"),
                base_sequence: field("baseSequence"),
                last_sequence: field("lastSequence"),
                producer_id: field("producerId"),
                producer_epoch: field("producerEpoch"),
            }
        })
        .collect()
}

/// One producer id throughout; offsets contiguous; within an epoch the sequences follow on
/// from the batch before, and a new epoch starts at sequence 0.
pub fn assert_contiguous_sequences(partition: i32, batches: &[DumpedBatch]) {
    assert!(!batches.is_empty(), "partition {partition}: no batch");
    let first = batches[0];
    assert!(first.producer_id >= 0, "partition {partition}: {first:?}");
    assert_eq!(
        (first.base_offset, first.base_sequence),
        (0, 0),
        "{first:?}"
    );
    for batch in batches {
        assert_eq!(
            batch.last_sequence - batch.base_sequence + 1,
            batch.count,
            "partition {partition}: {batch:?}"
        );
        assert_eq!(batch.producer_id, first.producer_id, "{batch:?}");
    }
    for pair in batches.windows(2) {
        let (before, after) = (pair[0], pair[1]);
        assert_eq!(
            before.last_offset + 1,
            after.base_offset,
            "{before:?} {after:?}"
        );
        let expected = if after.producer_epoch == before.producer_epoch {
            before.last_sequence + 1
        } else {
            assert!(before.producer_epoch < after.producer_epoch, "{after:?}");
            0
        };
        assert_eq!(
            after.base_sequence, expected,
            "partition {partition}: sequences of {before:?} then {after:?}"
        );
    }
}
