//! Pipelined requests against the fake broker: answers matched in order, tokens refused out
//! of order, the failures that break a connection, and reads cancelled mid-frame.

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, MetadataRequest, MetadataResponse, ProduceRequest, ResponseHeader,
};
use kafka_protocol::protocol::Encodable;
use krec_testkit::broker::{self, answers, Reply, Request};

use crate::{Connection, ConnectionSettings, Error};

const METADATA_VERSION: i16 = 12;
const WAIT: Duration = Duration::from_secs(10);

/// A fake broker speaking Metadata 0..=12 and Produce 3..=11, answering each Metadata request
/// as `answer` says; every answer names one topic, `t<correlation id>`, so that a test can
/// tell which request an answer was for.
async fn metadata_broker(answer: impl Fn(&Request, Reply) -> Reply + Send + 'static) -> String {
    broker::start(move |request| match request.api_key {
        ApiKey::ApiVersions => request.answer(&answers::api_versions(&[
            (ApiKey::Metadata, 0, 12),
            (ApiKey::Produce, 3, 11),
        ])),
        ApiKey::Metadata => answer(request, request.answer(&named_answer(request))),
        _ => Reply::close(),
    })
    .await
}

fn named_answer(request: &Request) -> MetadataResponse {
    let name = format!("t{}", request.correlation_id);
    answers::metadata(request.port, &[(name.as_str(), 1)])
}

/// The answer's whole frame (size, header, body), to be sent in pieces.
fn answer_frame(request: &Request) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(request.correlation_id)
        .encode(&mut out, 1)
        .unwrap();
    named_answer(request)
        .encode(&mut out, request.version)
        .unwrap();
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    out.freeze()
}

fn topic_of(response: &MetadataResponse) -> String {
    response.topics[0].name.as_ref().unwrap().0.to_string()
}

async fn connect(address: &str) -> Connection {
    Connection::connect(address, &ConnectionSettings::default())
        .await
        .unwrap()
}

async fn send(connection: &mut Connection) -> crate::connection::PendingResponse {
    connection
        .send_request(&MetadataRequest::default(), METADATA_VERSION, WAIT)
        .await
        .unwrap()
}

fn is_unusable(error: &Error) -> bool {
    matches!(error, Error::Connection { source, .. }
        if source.kind() == std::io::ErrorKind::NotConnected)
}

#[tokio::test]
async fn five_requests_in_flight_are_answered_in_the_order_sent() {
    let address = metadata_broker(|_, answer| answer).await;
    let mut connection = connect(&address).await;
    let mut pending = Vec::new();
    for _ in 0..5 {
        pending.push(send(&mut connection).await);
    }
    assert_eq!(connection.in_flight(), 5);
    for (i, token) in pending.iter().enumerate() {
        let response = connection
            .read_response::<MetadataRequest>(token)
            .await
            .unwrap();
        assert_eq!(topic_of(&response), format!("t{}", token.correlation_id()));
        assert_eq!(connection.in_flight(), 4 - i);
    }
    // The sequential calls work on as before once nothing is in flight.
    let (_, response) = connection
        .request(&MetadataRequest::default())
        .await
        .unwrap();
    assert!(topic_of(&response).starts_with('t'));
}

#[tokio::test]
async fn a_token_out_of_order_is_refused_and_the_connection_goes_on() {
    let address = metadata_broker(|_, answer| answer).await;
    let mut connection = connect(&address).await;
    let first = send(&mut connection).await;
    let second = send(&mut connection).await;
    for error in [
        connection.read_response::<MetadataRequest>(&second).await,
        connection
            .read_response::<ProduceRequest>(&first)
            .await
            .map(drop_produce),
        connection
            .request(&MetadataRequest::default())
            .await
            .map(|(_, response)| response),
    ] {
        let error = error.unwrap_err();
        assert!(matches!(error, Error::InvalidArgument { .. }), "{error}");
    }
    assert!(connection.is_usable());
    let answer = connection
        .read_response::<MetadataRequest>(&first)
        .await
        .unwrap();
    assert_eq!(topic_of(&answer), format!("t{}", first.correlation_id()));
    let again = connection.read_response::<MetadataRequest>(&first).await;
    assert!(
        matches!(again, Err(Error::InvalidArgument { .. })),
        "read once only"
    );
    let answer = connection
        .read_response::<MetadataRequest>(&second)
        .await
        .unwrap();
    assert_eq!(topic_of(&answer), format!("t{}", second.correlation_id()));
}

fn drop_produce(_: kafka_protocol::messages::ProduceResponse) -> MetadataResponse {
    MetadataResponse::default()
}

#[tokio::test]
async fn a_correlation_id_that_does_not_match_breaks_the_connection() {
    let address =
        metadata_broker(|request, answer| answer.with_correlation_id(request.correlation_id + 100))
            .await;
    let mut connection = connect(&address).await;
    let first = send(&mut connection).await;
    let second = send(&mut connection).await;
    let error = connection
        .read_response::<MetadataRequest>(&first)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::Protocol { detail, .. } if detail.contains("correlation id")),
        "{error}"
    );
    assert!(!connection.is_usable());
    let later = connection.read_response::<MetadataRequest>(&second).await;
    assert!(is_unusable(later.as_ref().unwrap_err()), "{later:?}");
    let sent = connection
        .send_request(&MetadataRequest::default(), METADATA_VERSION, WAIT)
        .await;
    assert!(is_unusable(&sent.unwrap_err()));
}

#[tokio::test]
async fn an_answer_past_its_deadline_is_a_timeout_that_breaks_the_connection() {
    let address = metadata_broker(|_, answer| answer.after(Duration::from_millis(400))).await;
    let mut connection = connect(&address).await;
    let late = connection
        .send_request(
            &MetadataRequest::default(),
            METADATA_VERSION,
            Duration::from_millis(50),
        )
        .await
        .unwrap();
    let error = connection
        .read_response::<MetadataRequest>(&late)
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::Timeout { timeout_ms: 50, .. }),
        "{error}"
    );
    let again = connection.read_response::<MetadataRequest>(&late).await;
    assert!(is_unusable(&again.unwrap_err()));
}

#[tokio::test]
async fn an_answer_already_come_is_read_after_its_deadline() {
    let address = metadata_broker(|_, answer| answer).await;
    let mut connection = connect(&address).await;
    let token = connection
        .send_request(
            &MetadataRequest::default(),
            METADATA_VERSION,
            Duration::from_millis(20),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(60)).await;
    let answer = connection.read_response::<MetadataRequest>(&token).await;
    assert_eq!(
        topic_of(&answer.unwrap()),
        format!("t{}", token.correlation_id())
    );
}

#[tokio::test]
async fn a_write_dropped_midway_breaks_the_connection() {
    // The broker sits on the first request, reading nothing more: the second, larger than
    // the sockets' buffers, cannot be written whole.
    let address = metadata_broker(|_, answer| answer.after(Duration::from_secs(5))).await;
    let mut connection = connect(&address).await;
    let _first = send(&mut connection).await;
    let topic = kafka_protocol::messages::produce_request::TopicProduceData::default()
        .with_partition_data(vec![
            kafka_protocol::messages::produce_request::PartitionProduceData::default()
                .with_records(Some(Bytes::from(vec![0u8; 64 << 20]))),
        ]);
    let huge = ProduceRequest::default().with_topic_data(vec![topic]);
    let sending = connection.send_request(&huge, 9, WAIT);
    let dropped = tokio::time::timeout(Duration::from_millis(300), sending).await;
    assert!(dropped.is_err(), "the write cannot have finished");
    assert!(!connection.is_usable());
    let error = connection
        .send_request(&MetadataRequest::default(), METADATA_VERSION, WAIT)
        .await
        .unwrap_err();
    assert!(
        is_unusable(&error) && error.to_string().contains("cancelled while being written"),
        "{error}"
    );
}

#[tokio::test]
async fn reads_cancelled_at_any_point_lose_no_byte() {
    // Each answer comes in pieces of a few bytes with pauses between, so that most reads
    // are dropped mid-frame; more requests are written between reads.
    let address = metadata_broker(|request, _| {
        let frame = answer_frame(request);
        let pause = Duration::from_micros(300);
        frame
            .chunks(5)
            .map(|piece| Reply::raw(Bytes::copy_from_slice(piece)).after(pause))
            .reduce(Reply::then)
            .unwrap()
    })
    .await;
    let mut connection = connect(&address).await;
    let mut pending = std::collections::VecDeque::new();
    let (mut answered, mut cancelled_mid_frame, mut sent) = (0, 0, 0);
    let total = 40;
    while answered < total {
        while sent < total && connection.in_flight() < 5 {
            pending.push_back(send(&mut connection).await);
            sent += 1;
        }
        let oldest = pending.front().unwrap();
        let pause = Duration::from_micros(if answered % 2 == 0 { 0 } else { 1000 });
        tokio::select! {
            answer = connection.read_response::<MetadataRequest>(oldest) => {
                assert_eq!(topic_of(&answer.unwrap()), format!("t{}", oldest.correlation_id()));
                pending.pop_front();
                answered += 1;
            }
            () = tokio::time::sleep(pause) => {
                cancelled_mid_frame += usize::from(connection.reader.is_mid_frame());
            }
        }
    }
    assert!(
        cancelled_mid_frame > total,
        "reads dropped mid-frame: {cancelled_mid_frame}"
    );
}

#[tokio::test]
async fn a_request_dropped_before_its_answer_breaks_the_connection() {
    let address = metadata_broker(|_, answer| answer.after(Duration::from_millis(300))).await;
    let mut connection = connect(&address).await;
    let dropped = tokio::time::timeout(
        Duration::from_millis(50),
        connection.request(&MetadataRequest::default()),
    )
    .await;
    assert!(dropped.is_err(), "the answer comes later");
    // A pipelined send would have its answer read after one nobody reads.
    let sent = connection
        .send_request(&MetadataRequest::default(), METADATA_VERSION, WAIT)
        .await;
    assert!(is_unusable(&sent.unwrap_err()));
    let error = connection
        .request(&MetadataRequest::default())
        .await
        .unwrap_err();
    assert!(
        is_unusable(&error) && error.is_connection_failure(),
        "{error}"
    );
}

#[tokio::test]
async fn a_lapsed_session_waits_for_the_requests_in_flight_then_renews() {
    use kafka_protocol::messages::{SaslAuthenticateResponse, SaslHandshakeResponse};
    use kafka_protocol::protocol::StrBytes;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    let authentications = Arc::new(AtomicUsize::new(0));
    let counted = authentications.clone();
    let address = broker::start(move |request| match request.api_key {
        ApiKey::ApiVersions => request.answer(&answers::api_versions(&[
            (ApiKey::Metadata, 0, 12),
            (ApiKey::SaslHandshake, 0, 1),
            (ApiKey::SaslAuthenticate, 0, 2),
        ])),
        ApiKey::SaslHandshake => request.answer(
            &SaslHandshakeResponse::default()
                .with_mechanisms(vec![StrBytes::from_static_str("PLAIN")]),
        ),
        ApiKey::SaslAuthenticate => {
            counted.fetch_add(1, Ordering::SeqCst);
            request.answer(&SaslAuthenticateResponse::default().with_session_lifetime_ms(300))
        }
        ApiKey::Metadata => request.answer(&named_answer(request)),
        _ => Reply::close(),
    })
    .await;
    let settings = ConnectionSettings {
        security: crate::SecurityConfig {
            protocol: crate::SecurityProtocol::SaslPlaintext,
            sasl: Some(crate::SaslConfig::plain("user", "secret".to_owned().into())),
            ..crate::SecurityConfig::default()
        },
        ..ConnectionSettings::default()
    };
    let mut connection = Connection::connect(&address, &settings).await.unwrap();
    assert_eq!(authentications.load(Ordering::SeqCst), 1);
    assert!(!connection.renewal_due());
    let first = send(&mut connection).await;
    tokio::time::sleep(Duration::from_millis(320)).await;
    assert!(connection.renewal_due());
    // Expired with a request in flight: refused, and the connection goes on.
    let refused = connection
        .send_request(&MetadataRequest::default(), METADATA_VERSION, WAIT)
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, Error::InvalidArgument { detail, .. } if detail.contains("SASL session")),
        "{refused}"
    );
    assert_eq!(authentications.load(Ordering::SeqCst), 1, "nothing sent");
    let answer = connection.read_response::<MetadataRequest>(&first).await;
    assert_eq!(
        topic_of(&answer.unwrap()),
        format!("t{}", first.correlation_id())
    );
    // Drained: the next send authenticates afresh first.
    let second = send(&mut connection).await;
    assert_eq!(authentications.load(Ordering::SeqCst), 2);
    assert!(!connection.renewal_due());
    let answer = connection.read_response::<MetadataRequest>(&second).await;
    assert_eq!(
        topic_of(&answer.unwrap()),
        format!("t{}", second.correlation_id())
    );
}

#[tokio::test]
async fn produce_waits_for_nothing_in_flight_and_sends_nothing_meanwhile() {
    use crate::produce::{produce, Acks, ProduceParams, ProducePartition, ProduceTopic};

    let address = metadata_broker(|_, answer| answer).await;
    let mut connection = connect(&address).await;
    let pending = send(&mut connection).await;
    let topics = [ProduceTopic {
        name: "t".into(),
        topic_id: uuid::Uuid::nil(),
        partitions: vec![ProducePartition {
            partition: 0,
            batch: Bytes::from_static(b"not a batch"),
        }],
    }];
    let params = ProduceParams {
        acks: Acks::All,
        timeout_ms: 1000,
    };
    let error = produce(&mut connection, params, &topics).await.unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { .. }), "{error}");
    assert_eq!(connection.in_flight(), 1, "nothing sent");
    let answer = connection.read_response::<MetadataRequest>(&pending).await;
    assert_eq!(
        topic_of(&answer.unwrap()),
        format!("t{}", pending.correlation_id())
    );
}
