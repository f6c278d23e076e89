//! Faults a real broker produces only by chance, played by a scripted fake broker: a
//! connection dropped mid-consume, a fetch cut inside a batch, NOT_LEADER,
//! OFFSET_OUT_OF_RANGE, and garbage record bytes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{ApiKey, FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use krec_batch::encode::BatchBuilder;
use krec_batch::EntryHeader;
use krec_consumer::Error;
use krec_consumer::{Consumer, ConsumerConfig, Fetched, OffsetReset, StartOffset, TopicPartition};
use krec_testkit::broker::{self, answers, Request};

use super::{api_versions, fast_config, TOPIC};

/// Highest Fetch version the fake announces: responses name topics (before topic ids).
const FAKE_FETCH_MAX: i16 = 12;

/// What the fake does with the n-th fetch (counting from 0).
#[derive(Clone, Copy, Debug)]
enum Reply {
    /// Serve the log from the requested offset, at most this many bytes (cutting a batch).
    Serve(usize),
    /// Close the connection without answering.
    Drop,
    /// Answer with this partition error code.
    Error(i16),
    /// Answer with bytes that are no record batch.
    Garbage,
    /// Serve, under a response header with another correlation id.
    WrongCorrelation,
    /// A body whose topic array claims 2^31 - 1 entries and holds none.
    LyingCount,
    /// A body (Fetch v11) whose topic name has length -5.
    NegativeLength,
    /// Serve, plus partition 7 (never asked for) holding garbage.
    ExtraPartition,
    /// Serve, with a high watermark one below the fetch offset.
    WatermarkBelowFetchOffset,
    /// Serve about one batch, with this throttle time.
    Throttle(i32),
}

struct Script {
    /// The log: batches in order, each with its base offset.
    batches: Vec<(i64, Vec<u8>)>,
    /// Log start offset (ListOffsets earliest).
    log_start: i64,
    /// Replies in order; the last one repeats.
    replies: Vec<Reply>,
    fetches: usize,
    metadata_requests: usize,
    fetch_offsets: Vec<i64>,
    /// Highest Fetch version announced.
    fetch_max: i16,
}

impl Script {
    /// A log of `batches` from offset 0 answering fetches with `replies`; nothing seen yet.
    fn new(batches: Vec<(i64, Vec<u8>)>, replies: Vec<Reply>) -> Script {
        Script {
            batches,
            log_start: 0,
            replies,
            fetches: 0,
            metadata_requests: 0,
            fetch_offsets: Vec::new(),
            fetch_max: FAKE_FETCH_MAX,
        }
    }

    fn end_offset(&self) -> i64 {
        self.batches.last().map_or(0, |(base, bytes)| {
            let delta = EntryHeader::peek_last_offset_delta(bytes).unwrap();
            base + i64::from(delta) + 1
        })
    }

    /// Whole batches from the one holding `offset` on, cut to `limit` bytes.
    fn records_from(&self, offset: i64, limit: usize) -> Bytes {
        let mut out = Vec::new();
        for (base, bytes) in &self.batches {
            let delta = EntryHeader::peek_last_offset_delta(bytes).unwrap();
            if base + i64::from(delta) >= offset {
                out.extend_from_slice(bytes);
            }
        }
        out.truncate(limit);
        Bytes::from(out)
    }

    /// The fake's answer to one request.
    fn reply(&mut self, request: &Request) -> broker::Reply {
        match request.api_key {
            ApiKey::ApiVersions => api_versions(request, 4, self.fetch_max),
            ApiKey::Metadata => {
                self.metadata_requests += 1;
                request.answer(&answers::metadata(request.port, &[(TOPIC, 1)]))
            }
            ApiKey::ListOffsets => {
                let offsets =
                    answers::list_offsets(&request.decode(), |_, timestamp| match timestamp {
                        -2 => self.log_start,
                        _ => self.end_offset(),
                    });
                request.answer(&offsets)
            }
            ApiKey::Fetch => self.fetch(request),
            other => panic!("the fake broker does not speak {other:?}"),
        }
    }

    /// The next scripted reply to a fetch.
    fn fetch(&mut self, request: &Request) -> broker::Reply {
        let fetch: FetchRequest = request.decode();
        let offset = fetch.topics[0].partitions[0].fetch_offset;
        let reply = self.replies[self.fetches.min(self.replies.len() - 1)];
        self.fetches += 1;
        self.fetch_offsets.push(offset);
        let records = match reply {
            Reply::Serve(limit) => self.records_from(offset, limit),
            Reply::WrongCorrelation | Reply::ExtraPartition | Reply::WatermarkBelowFetchOffset => {
                self.records_from(offset, usize::MAX)
            }
            Reply::Throttle(_) => {
                let one_batch = self.batches.iter().map(|(_, b)| b.len()).max();
                self.records_from(offset, one_batch.unwrap_or(0))
            }
            Reply::Garbage => Bytes::from_static(&[0xAB; 200]),
            _ => Bytes::new(),
        };
        let error_code = match reply {
            Reply::Drop => return broker::Reply::close(),
            Reply::Error(code) => code,
            _ => 0,
        };
        // Like a broker waiting max_wait_ms for data that does not come.
        let wait = if records.is_empty() && error_code == 0 {
            Duration::from_millis(50)
        } else {
            Duration::ZERO
        };
        let answer = match reply {
            Reply::LyingCount => {
                // Fetch v12: throttle, error, session, then a compact count of 2^31 - 1.
                let mut body = BytesMut::new();
                body.put_slice(&[0; 10]);
                body.put_slice(&[0x80, 0x80, 0x80, 0x80, 0x08]);
                request.answer_raw(body)
            }
            Reply::NegativeLength => {
                // Fetch v11: throttle, error, session, one topic, name length -5.
                let mut body = BytesMut::new();
                body.put_slice(&[0; 10]);
                body.put_i32(1);
                body.put_i16(-5);
                request.answer_raw(body)
            }
            Reply::WrongCorrelation => request
                .answer(&self.response(reply, offset, error_code, records))
                .with_correlation_id(request.correlation_id.wrapping_add(1)),
            _ => request.answer(&self.response(reply, offset, error_code, records)),
        };
        answer.after(wait)
    }

    /// A fetch response for partition 0 holding `records`, shaped by `reply`.
    fn response(
        &self,
        reply: Reply,
        offset: i64,
        error_code: i16,
        records: Bytes,
    ) -> FetchResponse {
        let high_watermark = match reply {
            Reply::WatermarkBelowFetchOffset => offset - 1,
            _ => self.end_offset(),
        };
        let partition = |index: i32, records: Bytes| {
            PartitionData::default()
                .with_partition_index(index)
                .with_error_code(error_code)
                .with_high_watermark(high_watermark)
                .with_last_stable_offset(high_watermark)
                .with_log_start_offset(self.log_start)
                .with_records(Some(records))
        };
        let mut partitions = vec![partition(0, records)];
        if let Reply::ExtraPartition = reply {
            partitions.push(partition(7, Bytes::from_static(&[0xAB; 200])));
        }
        let throttle_time_ms = match reply {
            Reply::Throttle(ms) => ms,
            _ => 0,
        };
        FetchResponse::default()
            .with_throttle_time_ms(throttle_time_ms)
            .with_responses(vec![FetchableTopicResponse::default()
                .with_topic(TopicName(StrBytes::from_static_str(TOPIC)))
                .with_partitions(partitions)])
    }
}

fn batch(base: i64, count: usize) -> (i64, Vec<u8>) {
    let mut builder = BatchBuilder::new(base);
    for i in 0..count {
        let offset = base + i as i64;
        builder = builder.record(
            Some(format!("k{offset}").as_bytes()),
            Some(format!("v{offset}").as_bytes()),
            &[(b"h", Some(b"x"))],
        );
    }
    (base, builder.build())
}

async fn start(script: Script) -> (String, Arc<Mutex<Script>>) {
    let script = Arc::new(Mutex::new(script));
    let shared = script.clone();
    let address = broker::start(move |request| shared.lock().unwrap().reply(request)).await;
    (address, script)
}

/// A broker holding offsets 0..100 in ten batches of ten, serving about one batch per fetch;
/// also returns the largest batch's size.
async fn start_one_batch_per_fetch() -> (String, Arc<Mutex<Script>>, usize) {
    let batches: Vec<(i64, Vec<u8>)> = (0..10).map(|i| batch(i * 10, 10)).collect();
    let one_batch = batches.iter().map(|(_, b)| b.len()).max().unwrap();
    let (address, script) = start(Script::new(batches, vec![Reply::Serve(one_batch)])).await;
    (address, script, one_batch)
}

/// Reads until the end of partition 0; returns the offsets and values delivered.
async fn read_to_end(consumer: &mut Consumer) -> Result<Vec<(i64, String)>, Error> {
    let mut seen = Vec::new();
    loop {
        let fetched = tokio::time::timeout(Duration::from_secs(20), consumer.poll())
            .await
            .expect("the consumer made progress");
        match fetched? {
            Fetched::Chunk(chunk) => {
                for batch in chunk.batches() {
                    for record in batch?.records() {
                        let record = record?;
                        let value = String::from_utf8(record.value().unwrap().to_vec()).unwrap();
                        seen.push((record.offset(), value));
                    }
                }
            }
            Fetched::EndOfPartition { .. } => return Ok(seen),
            _ => {}
        }
    }
}

fn expected(range: std::ops::Range<i64>) -> Vec<(i64, String)> {
    range.map(|o| (o, format!("v{o}"))).collect()
}

#[tokio::test]
async fn dropped_connection_and_cut_batch_resume_at_the_next_offset() {
    let batches = vec![batch(0, 10), batch(10, 10), batch(20, 10)];
    let cut = batches[0].1.len() + batches[1].1.len() / 2;
    let (address, script) = start(Script::new(
        batches,
        vec![
            Reply::Serve(cut),
            Reply::Drop,
            Reply::Drop,
            Reply::Serve(usize::MAX),
        ],
    ))
    .await;
    let config = fast_config(&address);
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(&[TopicPartition::new(TOPIC, 0)], StartOffset::Beginning)
        .await
        .unwrap();
    let seen = read_to_end(&mut consumer).await.unwrap();
    assert_eq!(seen, expected(0..30));
    let offsets = script.lock().unwrap().fetch_offsets.clone();
    // The cut second batch is fetched again from its base offset, after each reconnect.
    assert_eq!(&offsets[..4], &[0, 10, 10, 10]);
}

#[tokio::test]
async fn not_leader_looks_up_the_leader_again_and_loses_nothing() {
    let (address, script) = start(Script::new(
        vec![batch(0, 5), batch(5, 5)],
        vec![Reply::Error(6), Reply::Error(74), Reply::Serve(usize::MAX)],
    ))
    .await;
    let config = fast_config(&address);
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(&[TopicPartition::new(TOPIC, 0)], StartOffset::Beginning)
        .await
        .unwrap();
    let before = script.lock().unwrap().metadata_requests;
    let seen = read_to_end(&mut consumer).await.unwrap();
    assert_eq!(seen, expected(0..10));
    let script = script.lock().unwrap();
    assert!(
        script.metadata_requests >= before + 2,
        "each leader error asks for metadata ({} -> {})",
        before,
        script.metadata_requests
    );
    assert_eq!(&script.fetch_offsets[..3], &[0, 0, 0]);
}

#[tokio::test]
async fn offset_out_of_range_follows_the_reset_policy() {
    let script = || Script {
        log_start: 100,
        ..Script::new(
            vec![batch(100, 5)],
            vec![Reply::Error(1), Reply::Serve(usize::MAX)],
        )
    };
    let (address, _) = start(script()).await;
    let config = fast_config(&address);
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(&[TopicPartition::new(TOPIC, 0)], StartOffset::Offset(3))
        .await
        .unwrap();
    let seen = read_to_end(&mut consumer).await.unwrap();
    assert_eq!(
        seen,
        expected(100..105),
        "earliest: restart at the log start"
    );

    let (address, _) = start(script()).await;
    let mut config = fast_config(&address);
    config.offset_reset = OffsetReset::Fail;
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(&[TopicPartition::new(TOPIC, 0)], StartOffset::Offset(3))
        .await
        .unwrap();
    let error = read_to_end(&mut consumer).await.unwrap_err();
    assert!(
        matches!(error, Error::OffsetOutOfRange { offset: 3, .. }),
        "{error}"
    );
    assert!(matches!(consumer.poll().await, Err(Error::Stopped)));
}

#[tokio::test]
async fn garbage_records_are_an_error_not_a_panic() {
    let (address, _) = start(Script::new(vec![batch(0, 5)], vec![Reply::Garbage])).await;
    let config = fast_config(&address);
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(&[TopicPartition::new(TOPIC, 0)], StartOffset::Beginning)
        .await
        .unwrap();
    let error = read_to_end(&mut consumer).await.unwrap_err();
    assert!(
        matches!(error, Error::MalformedBatch { ref topic, partition: 0, .. } | Error::Decode { ref topic, partition: 0, .. } if topic == TOPIC),
        "{error}"
    );
}

#[tokio::test]
async fn fetching_pauses_while_the_buffer_is_full() {
    let (address, script, one_batch) = start_one_batch_per_fetch().await;
    let mut config = fast_config(&address);
    config.buffer_bytes = one_batch + one_batch / 2;
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(&[TopicPartition::new(TOPIC, 0)], StartOffset::Beginning)
        .await
        .unwrap();
    let fetches = || script.lock().unwrap().fetches;
    for _ in 0..500 {
        if fetches() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The first chunk holds the budget; the second response waits for room, so no third
    // fetch is sent while nobody polls.
    assert_eq!(fetches(), 2);
    let seen = read_to_end(&mut consumer).await.unwrap();
    assert_eq!(seen, expected(0..100));
    assert!(fetches() >= 10);
}

#[tokio::test]
async fn a_held_response_pauses_fetching_until_its_chunks_are_dropped() {
    let (address, script, _) = start_one_batch_per_fetch().await;
    let mut config = fast_config(&address);
    // The byte budget would let every response in; only the response limit holds fetching.
    config.max_held_responses = Some(1);
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(&[TopicPartition::new(TOPIC, 0)], StartOffset::Beginning)
        .await
        .unwrap();
    let fetches = || script.lock().unwrap().fetches;
    let first = loop {
        let fetched = tokio::time::timeout(Duration::from_secs(20), consumer.poll())
            .await
            .expect("a first chunk")
            .unwrap();
        if let Fetched::Chunk(chunk) = fetched {
            break chunk;
        }
    };
    assert_eq!(first.fetch_offset(), 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        fetches(),
        1,
        "no second fetch while the first response's chunk is held"
    );
    drop(first);
    for _ in 0..500 {
        if fetches() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(fetches() >= 2, "dropping the chunk let fetching go on");
    // Nothing lost or repeated around the pause: the rest starts where the first chunk ended.
    let seen = read_to_end(&mut consumer).await.unwrap();
    assert_eq!(seen, expected(10..100));
}

/// A broker holding offsets 0..100 in ten batches of ten that answers `replies` in turn.
async fn start_hostile(replies: Vec<Reply>, fetch_max: i16) -> (String, Arc<Mutex<Script>>) {
    let batches = (0..10).map(|i| batch(i * 10, 10)).collect();
    start(Script {
        fetch_max,
        ..Script::new(batches, replies)
    })
    .await
}

/// Reads partition 0 from the beginning to its end.
async fn consume_all(config: &ConsumerConfig) -> Result<Vec<(i64, String)>, Error> {
    let mut consumer = Consumer::connect(config.clone()).await?;
    consumer
        .assign(&[TopicPartition::new(TOPIC, 0)], StartOffset::Beginning)
        .await?;
    read_to_end(&mut consumer).await
}

/// The error a consumer ends with when every fetch answer is `reply`: retried on a new
/// connection until `give_up_after`, then given up with the broker's fault as the last error.
async fn last_error_of_a_broker_always_answering(reply: Reply, fetch_max: i16) -> String {
    let (address, script) = start_hostile(vec![reply], fetch_max).await;
    let mut config = fast_config(&address);
    config.give_up_after = Duration::from_millis(300);
    let error = consume_all(&config).await.unwrap_err();
    assert!(
        script.lock().unwrap().fetches >= 2,
        "retried on a new connection"
    );
    let Error::RetriesExhausted { last, .. } = error else {
        panic!("{error}");
    };
    let Error::Client(krec_client::Error::Protocol {
        broker,
        api,
        detail,
    }) = *last
    else {
        panic!("{last}");
    };
    assert_eq!((broker.as_str(), api), (address.as_str(), "Fetch"));
    detail
}

#[tokio::test]
async fn a_count_that_lies_is_a_protocol_error_naming_the_broker_and_api() {
    let detail = last_error_of_a_broker_always_answering(Reply::LyingCount, FAKE_FETCH_MAX).await;
    assert_eq!(
        detail,
        "version 12: array of 2147483647 elements at byte 10 with 0 bytes left"
    );
}

#[tokio::test]
async fn a_negative_length_is_a_protocol_error() {
    let detail = last_error_of_a_broker_always_answering(Reply::NegativeLength, 11).await;
    assert_eq!(detail, "version 11: negative length -5 at byte 14");
}

#[tokio::test]
async fn a_wrong_correlation_id_is_an_error_every_time() {
    let detail = last_error_of_a_broker_always_answering(Reply::WrongCorrelation, 12).await;
    assert!(
        detail.starts_with("correlation id ") && detail.contains("does not match request"),
        "{detail}"
    );
}

#[tokio::test]
async fn one_hostile_answer_costs_a_reconnect_and_loses_nothing() {
    for hostile in [Reply::LyingCount, Reply::WrongCorrelation] {
        let (address, script) = start_hostile(vec![hostile, Reply::Serve(usize::MAX)], 12).await;
        let seen = consume_all(&fast_config(&address)).await.unwrap();
        assert_eq!(seen, expected(0..100), "{hostile:?}");
        let offsets = script.lock().unwrap().fetch_offsets.clone();
        assert_eq!(
            offsets[..2],
            [0, 0],
            "{hostile:?}: the bad answer's fetch is repeated"
        );
    }
}

#[tokio::test]
async fn a_partition_not_asked_for_is_ignored() {
    let (address, script) = start_hostile(vec![Reply::ExtraPartition], 12).await;
    let config = fast_config(&address);
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(&[TopicPartition::new(TOPIC, 0)], StartOffset::Beginning)
        .await
        .unwrap();
    // Partition 7's garbage would be an error if it reached a decode; only 0's records come.
    let seen = read_to_end(&mut consumer).await.unwrap();
    assert_eq!(seen, expected(0..100));
    assert!(script.lock().unwrap().fetches >= 1);
}

#[tokio::test]
async fn a_high_watermark_below_the_fetch_offset_still_delivers_what_was_sent() {
    let (address, _) = start_hostile(vec![Reply::WatermarkBelowFetchOffset], 12).await;
    let seen = consume_all(&fast_config(&address)).await.unwrap();
    assert_eq!(seen, expected(0..100));
}

#[tokio::test]
async fn a_throttle_of_hours_is_capped_at_the_longest_backoff() {
    let three_hours = 3 * 3600 * 1000;
    let (address, script) = start_hostile(
        vec![
            Reply::Throttle(three_hours),
            Reply::Throttle(three_hours),
            Reply::Serve(usize::MAX),
        ],
        12,
    )
    .await;
    let mut config = fast_config(&address);
    config.max_backoff = Duration::from_millis(200);
    let started = std::time::Instant::now();
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(&[TopicPartition::new(TOPIC, 0)], StartOffset::Beginning)
        .await
        .unwrap();
    let seen = read_to_end(&mut consumer).await.unwrap();
    assert_eq!(seen, expected(0..100));
    let waited = started.elapsed();
    // Each throttled answer's records are delivered, and the next fetch waits for the cap.
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(5),
        "waited {waited:?}"
    );
    assert_eq!(script.lock().unwrap().fetch_offsets[..3], [0, 10, 20]);
}
