//! Faults a real broker produces only by chance, played by a scripted fake broker on
//! 127.0.0.1: a connection dropped mid-consume, a fetch cut inside a batch, NOT_LEADER,
//! OFFSET_OUT_OF_RANGE, and garbage record bytes. Needs no Kafka.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, BrokerId, FetchRequest, FetchResponse, ListOffsetsResponse,
    MetadataResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{
    decode_request_header_from_buffer, Decodable, Encodable, HeaderVersion, StrBytes,
};
use krec_batch::encode::BatchBuilder;
use krec_batch::EntryHeader;
use krec_consumer::Error;
use krec_consumer::{Consumer, ConsumerConfig, Fetched, OffsetReset, StartOffset};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TOPIC: &str = "t";
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

async fn serve(listener: TcpListener, script: Arc<Mutex<Script>>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            return;
        };
        let address = listener.local_addr().unwrap();
        tokio::spawn(connection(socket, address.port(), script.clone()));
    }
}

async fn connection(mut socket: TcpStream, port: u16, script: Arc<Mutex<Script>>) {
    loop {
        let mut size = [0u8; 4];
        if socket.read_exact(&mut size).await.is_err() {
            return;
        }
        let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
        if socket.read_exact(&mut frame).await.is_err() {
            return;
        }
        let mut frame = Bytes::from(frame);
        let header: RequestHeader = decode_request_header_from_buffer(&mut frame).unwrap();
        let key = ApiKey::try_from(header.request_api_key).unwrap();
        let version = header.request_api_version;
        let mut body = BytesMut::new();
        let mut correlation_shift = 0;
        match key {
            ApiKey::ApiVersions => {
                let fetch_max = script.lock().unwrap().fetch_max;
                let ranges = [(1, 4, fetch_max), (2, 1, 7), (3, 1, 12), (18, 0, 3)];
                ApiVersionsResponse::default()
                    .with_api_keys(
                        ranges
                            .iter()
                            .map(|&(k, min, max)| {
                                ApiVersion::default()
                                    .with_api_key(k)
                                    .with_min_version(min)
                                    .with_max_version(max)
                            })
                            .collect(),
                    )
                    .encode(&mut body, version)
                    .unwrap();
            }
            ApiKey::Metadata => {
                script.lock().unwrap().metadata_requests += 1;
                metadata(port).encode(&mut body, version).unwrap();
            }
            ApiKey::ListOffsets => {
                let request =
                    kafka_protocol::messages::ListOffsetsRequest::decode(&mut frame, version)
                        .unwrap();
                let script = script.lock().unwrap();
                let partitions = request.topics[0]
                    .partitions
                    .iter()
                    .map(|p| {
                        let offset = match p.timestamp {
                            -2 => script.log_start,
                            _ => script.end_offset(),
                        };
                        ListOffsetsPartitionResponse::default()
                            .with_partition_index(p.partition_index)
                            .with_offset(offset)
                    })
                    .collect();
                ListOffsetsResponse::default()
                    .with_topics(vec![ListOffsetsTopicResponse::default()
                        .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
                        .with_partitions(partitions)])
                    .encode(&mut body, version)
                    .unwrap();
            }
            ApiKey::Fetch => {
                let request = FetchRequest::decode(&mut frame, version).unwrap();
                let offset = request.topics[0].partitions[0].fetch_offset;
                let (reply, end, log_start, records) = {
                    let mut script = script.lock().unwrap();
                    let index = script.fetches.min(script.replies.len() - 1);
                    let reply = script.replies[index];
                    script.fetches += 1;
                    script.fetch_offsets.push(offset);
                    let records = match reply {
                        Reply::Serve(limit) => script.records_from(offset, limit),
                        Reply::WrongCorrelation
                        | Reply::ExtraPartition
                        | Reply::WatermarkBelowFetchOffset => {
                            script.records_from(offset, usize::MAX)
                        }
                        Reply::Throttle(_) => {
                            let one_batch = script.batches.iter().map(|(_, b)| b.len()).max();
                            script.records_from(offset, one_batch.unwrap_or(0))
                        }
                        Reply::Garbage => Bytes::from_static(&[0xAB; 200]),
                        _ => Bytes::new(),
                    };
                    (reply, script.end_offset(), script.log_start, records)
                };
                let error_code = match reply {
                    Reply::Drop => return,
                    Reply::Error(code) => code,
                    _ => 0,
                };
                if records.is_empty() && error_code == 0 {
                    // Like a broker waiting max_wait_ms for data that does not come.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                match reply {
                    Reply::WrongCorrelation => correlation_shift = 1,
                    Reply::LyingCount => {
                        // Fetch v12: throttle, error, session, then a compact count of 2^31 - 1.
                        body.put_slice(&[0; 10]);
                        body.put_slice(&[0x80, 0x80, 0x80, 0x80, 0x08]);
                    }
                    Reply::NegativeLength => {
                        // Fetch v11: throttle, error, session, one topic, name length -5.
                        body.put_slice(&[0; 10]);
                        body.put_i32(1);
                        body.put_i16(-5);
                    }
                    _ => {}
                }
                if body.is_empty() {
                    let high_watermark = match reply {
                        Reply::WatermarkBelowFetchOffset => offset - 1,
                        _ => end,
                    };
                    let partition = |index: i32, records: Bytes| {
                        PartitionData::default()
                            .with_partition_index(index)
                            .with_error_code(error_code)
                            .with_high_watermark(high_watermark)
                            .with_last_stable_offset(high_watermark)
                            .with_log_start_offset(log_start)
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
                        .encode(&mut body, version)
                        .unwrap();
                }
            }
            other => panic!("the fake broker does not speak {other:?}"),
        }
        let mut response = BytesMut::new();
        response.put_i32(0);
        let header_version = response_header_version(key, version);
        ResponseHeader::default()
            .with_correlation_id(header.correlation_id.wrapping_add(correlation_shift))
            .encode(&mut response, header_version)
            .unwrap();
        response.put(body);
        let size = (response.len() - 4) as i32;
        response[..4].copy_from_slice(&size.to_be_bytes());
        if socket.write_all(&response).await.is_err() {
            return;
        }
    }
}

fn response_header_version(key: ApiKey, version: i16) -> i16 {
    match key {
        ApiKey::ApiVersions => ApiVersionsResponse::header_version(version),
        ApiKey::Metadata => MetadataResponse::header_version(version),
        ApiKey::ListOffsets => ListOffsetsResponse::header_version(version),
        ApiKey::Fetch => FetchResponse::header_version(version),
        other => panic!("no response header for {other:?}"),
    }
}

fn metadata(port: u16) -> MetadataResponse {
    MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(1))
            .with_host(StrBytes::from_static_str("127.0.0.1"))
            .with_port(i32::from(port))])
        .with_topics(vec![MetadataResponseTopic::default()
            .with_name(Some(TopicName(StrBytes::from_static_str(TOPIC))))
            .with_partitions(vec![MetadataResponsePartition::default()
                .with_partition_index(0)
                .with_leader_id(BrokerId(1))
                .with_leader_epoch(0)])])
}

async fn start(script: Script) -> (String, Arc<Mutex<Script>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let script = Arc::new(Mutex::new(script));
    tokio::spawn(serve(listener, script.clone()));
    (address, script)
}

/// A broker holding offsets 0..100 in ten batches of ten, serving about one batch per fetch;
/// also returns the largest batch's size.
async fn start_one_batch_per_fetch() -> (String, Arc<Mutex<Script>>, usize) {
    let batches: Vec<(i64, Vec<u8>)> = (0..10).map(|i| batch(i * 10, 10)).collect();
    let one_batch = batches.iter().map(|(_, b)| b.len()).max().unwrap();
    let (address, script) = start(Script {
        batches,
        log_start: 0,
        replies: vec![Reply::Serve(one_batch)],
        fetches: 0,
        metadata_requests: 0,
        fetch_offsets: Vec::new(),
        fetch_max: FAKE_FETCH_MAX,
    })
    .await;
    (address, script, one_batch)
}

fn fast_config(address: &str) -> ConsumerConfig {
    let mut config = ConsumerConfig::new(vec![address.to_owned()]);
    config.backoff = Duration::from_millis(10);
    config.max_backoff = Duration::from_millis(50);
    config.max_wait = Duration::from_millis(50);
    config
}

/// Reads until the end of partition 0; returns the offsets and values delivered.
async fn read_to_end(
    consumer: &mut Consumer,
    decode: &krec_batch::DecodeConfig,
) -> Result<Vec<(i64, String)>, Error> {
    let mut seen = Vec::new();
    loop {
        let fetched = tokio::time::timeout(Duration::from_secs(20), consumer.poll())
            .await
            .expect("the consumer made progress");
        match fetched? {
            Fetched::Chunk(chunk) => {
                for batch in chunk.batches(decode) {
                    for record in batch?.records() {
                        let record = record?;
                        let value = String::from_utf8(record.value().unwrap().to_vec()).unwrap();
                        seen.push((record.offset(), value));
                    }
                }
            }
            Fetched::EndOfPartition { .. } => return Ok(seen),
            Fetched::SubscriptionChanged { .. } => {}
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
    let (address, script) = start(Script {
        batches,
        log_start: 0,
        replies: vec![
            Reply::Serve(cut),
            Reply::Drop,
            Reply::Drop,
            Reply::Serve(usize::MAX),
        ],
        fetches: 0,
        metadata_requests: 0,
        fetch_offsets: Vec::new(),
        fetch_max: FAKE_FETCH_MAX,
    })
    .await;
    let config = fast_config(&address);
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(TOPIC, &[0], StartOffset::Beginning)
        .await
        .unwrap();
    let seen = read_to_end(&mut consumer, &config.decode).await.unwrap();
    assert_eq!(seen, expected(0..30));
    let offsets = script.lock().unwrap().fetch_offsets.clone();
    // The cut second batch is fetched again from its base offset, after each reconnect.
    assert_eq!(&offsets[..4], &[0, 10, 10, 10]);
}

#[tokio::test]
async fn not_leader_looks_up_the_leader_again_and_loses_nothing() {
    let (address, script) = start(Script {
        batches: vec![batch(0, 5), batch(5, 5)],
        log_start: 0,
        replies: vec![Reply::Error(6), Reply::Error(74), Reply::Serve(usize::MAX)],
        fetches: 0,
        metadata_requests: 0,
        fetch_offsets: Vec::new(),
        fetch_max: FAKE_FETCH_MAX,
    })
    .await;
    let config = fast_config(&address);
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(TOPIC, &[0], StartOffset::Beginning)
        .await
        .unwrap();
    let before = script.lock().unwrap().metadata_requests;
    let seen = read_to_end(&mut consumer, &config.decode).await.unwrap();
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
        batches: vec![batch(100, 5)],
        log_start: 100,
        replies: vec![Reply::Error(1), Reply::Serve(usize::MAX)],
        fetches: 0,
        metadata_requests: 0,
        fetch_offsets: Vec::new(),
        fetch_max: FAKE_FETCH_MAX,
    };
    let (address, _) = start(script()).await;
    let config = fast_config(&address);
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(TOPIC, &[0], StartOffset::Offset(3))
        .await
        .unwrap();
    let seen = read_to_end(&mut consumer, &config.decode).await.unwrap();
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
        .assign(TOPIC, &[0], StartOffset::Offset(3))
        .await
        .unwrap();
    let error = read_to_end(&mut consumer, &config.decode)
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::OffsetOutOfRange { offset: 3, .. }),
        "{error}"
    );
    assert!(matches!(consumer.poll().await, Err(Error::Stopped)));
}

#[tokio::test]
async fn garbage_records_are_an_error_not_a_panic() {
    let (address, _) = start(Script {
        batches: vec![batch(0, 5)],
        log_start: 0,
        replies: vec![Reply::Garbage],
        fetches: 0,
        metadata_requests: 0,
        fetch_offsets: Vec::new(),
        fetch_max: FAKE_FETCH_MAX,
    })
    .await;
    let config = fast_config(&address);
    let mut consumer = Consumer::connect(config.clone()).await.unwrap();
    consumer
        .assign(TOPIC, &[0], StartOffset::Beginning)
        .await
        .unwrap();
    let error = read_to_end(&mut consumer, &config.decode)
        .await
        .unwrap_err();
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
        .assign(TOPIC, &[0], StartOffset::Beginning)
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
    let seen = read_to_end(&mut consumer, &config.decode).await.unwrap();
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
        .assign(TOPIC, &[0], StartOffset::Beginning)
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
    let seen = read_to_end(&mut consumer, &config.decode).await.unwrap();
    assert_eq!(seen, expected(10..100));
}

/// A broker holding offsets 0..100 in ten batches of ten that answers `replies` in turn.
async fn start_hostile(replies: Vec<Reply>, fetch_max: i16) -> (String, Arc<Mutex<Script>>) {
    start(Script {
        batches: (0..10).map(|i| batch(i * 10, 10)).collect(),
        log_start: 0,
        replies,
        fetches: 0,
        metadata_requests: 0,
        fetch_offsets: Vec::new(),
        fetch_max,
    })
    .await
}

/// Reads partition 0 from the beginning to its end.
async fn consume_all(config: &ConsumerConfig) -> Result<Vec<(i64, String)>, Error> {
    let mut consumer = Consumer::connect(config.clone()).await?;
    consumer.assign(TOPIC, &[0], StartOffset::Beginning).await?;
    read_to_end(&mut consumer, &config.decode).await
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
        .assign(TOPIC, &[0], StartOffset::Beginning)
        .await
        .unwrap();
    // Partition 7's garbage would be an error if it reached a decode; only 0's records come.
    let seen = read_to_end(&mut consumer, &config.decode).await.unwrap();
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
        .assign(TOPIC, &[0], StartOffset::Beginning)
        .await
        .unwrap();
    let seen = read_to_end(&mut consumer, &config.decode).await.unwrap();
    assert_eq!(seen, expected(0..100));
    let waited = started.elapsed();
    // Each throttled answer's records are delivered, and the next fetch waits for the cap.
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(5),
        "waited {waited:?}"
    );
    assert_eq!(script.lock().unwrap().fetch_offsets[..3], [0, 10, 20]);
}
