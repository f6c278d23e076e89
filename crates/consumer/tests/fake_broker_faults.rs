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
        match key {
            ApiKey::ApiVersions => {
                let ranges = [(1, 4, FAKE_FETCH_MAX), (2, 1, 7), (3, 1, 12), (18, 0, 3)];
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
                FetchResponse::default()
                    .with_responses(vec![FetchableTopicResponse::default()
                        .with_topic(TopicName(StrBytes::from_static_str(TOPIC)))
                        .with_partitions(vec![PartitionData::default()
                            .with_partition_index(0)
                            .with_error_code(error_code)
                            .with_high_watermark(end)
                            .with_last_stable_offset(end)
                            .with_log_start_offset(log_start)
                            .with_records(Some(records))])])
                    .encode(&mut body, version)
                    .unwrap();
            }
            other => panic!("the fake broker does not speak {other:?}"),
        }
        let mut response = BytesMut::new();
        response.put_i32(0);
        let header_version = response_header_version(key, version);
        ResponseHeader::default()
            .with_correlation_id(header.correlation_id)
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
