//! Pipelined requests over TLS, with reads cancelled mid-record: a broker of its own (rustls's
//! server on a thread, the certificate in tests/data, made for these tests) answers in pieces
//! of a few bytes, one TLS record each, and asks for a key update now and then, so that the
//! client must send its own KeyUpdate in the middle of a read that may be dropped.
//!
//! The suite's secured broker needs its KDC and OAuth server started first; this needs
//! nothing, and a real broker never updates keys on request anyway.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, MetadataRequest, MetadataResponse, ResponseHeader};
use kafka_protocol::protocol::{decode_request_header_from_buffer, Encodable};
use krec_client::security::{SecurityConfig, SecurityProtocol, TlsConfig};
use krec_client::{Connection, ConnectionSettings};
use krec_testkit::broker::answers;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

const ANSWERS: usize = 60;
const PIECE: usize = 7;

fn server_config() -> Arc<rustls::ServerConfig> {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let certificates = CertificateDer::pem_file_iter(data.join("tls-server.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(data.join("tls-server.key")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certificates, key)
        .unwrap();
    Arc::new(config)
}

/// A response frame: size, header, body.
fn frame(correlation_id: i32, header_version: i16, body: &impl Encodable, version: i16) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut out, header_version)
        .unwrap();
    body.encode(&mut out, version).unwrap();
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    out.freeze()
}

fn named_answer(correlation_id: i32) -> MetadataResponse {
    answers::metadata(9092, &[(format!("t{correlation_id}").as_str(), 1)])
}

/// Serves one connection: ApiVersions whole, then the Metadata answers two at a time, in
/// pieces of [`PIECE`] bytes (one record each; a record may hold the end of one answer and
/// the start of the next), with a pause after every few, and a key update request before
/// every other pair.
fn serve(listener: TcpListener) {
    let (mut tcp, _) = listener.accept().unwrap();
    tcp.set_nodelay(true).unwrap();
    let mut session = rustls::ServerConnection::new(server_config()).unwrap();
    let mut answered = 0;
    let mut pair = Vec::new();
    while answered < ANSWERS {
        let mut tls = rustls::Stream::new(&mut session, &mut tcp);
        let mut size = [0u8; 4];
        if tls.read_exact(&mut size).is_err() {
            return;
        }
        let mut request = vec![0u8; i32::from_be_bytes(size) as usize];
        tls.read_exact(&mut request).unwrap();
        let header = decode_request_header_from_buffer(&mut Bytes::from(request)).unwrap();
        let key = ApiKey::try_from(header.request_api_key).unwrap();
        let version = header.request_api_version;
        let header_version = key.response_header_version(version);
        if key == ApiKey::ApiVersions {
            let versions = answers::api_versions(&[(ApiKey::Metadata, 0, 12)]);
            let answer = frame(header.correlation_id, header_version, &versions, version);
            tls.write_all(&answer).unwrap();
            continue;
        }
        let answer = named_answer(header.correlation_id);
        pair.extend_from_slice(&frame(
            header.correlation_id,
            header_version,
            &answer,
            version,
        ));
        answered += 1;
        if answered % 2 == 1 {
            continue;
        }
        if answered % 4 == 0 {
            session.refresh_traffic_keys().unwrap();
        }
        let mut tls = rustls::Stream::new(&mut session, &mut tcp);
        for (i, piece) in pair.chunks(PIECE).enumerate() {
            tls.write_all(piece).unwrap();
            tls.flush().unwrap();
            if i % 3 == 2 {
                std::thread::sleep(Duration::from_micros(300));
            }
        }
        pair.clear();
    }
    // Reads what the client still sends (its last KeyUpdate answer) until it hangs up.
    let mut rest = [0u8; 64];
    let mut tls = rustls::Stream::new(&mut session, &mut tcp);
    while tls.read(&mut rest).is_ok_and(|n| n > 0) {}
}

#[tokio::test]
async fn tls_reads_cancelled_mid_record_with_key_updates_lose_no_byte() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let server = std::thread::spawn(move || serve(listener));
    let settings = ConnectionSettings {
        security: SecurityConfig {
            protocol: SecurityProtocol::Ssl,
            tls: TlsConfig {
                verify_certificate: false,
                ..TlsConfig::default()
            },
            sasl: None,
        },
        ..ConnectionSettings::default()
    };
    let mut connection = Connection::connect(&address, &settings).await.unwrap();
    let wait = Duration::from_secs(20);
    let mut pending = std::collections::VecDeque::new();
    let (mut answered, mut sent, mut cancelled) = (0, 0, 0);
    while answered < ANSWERS {
        while sent < ANSWERS && connection.in_flight() < 5 {
            let token = connection
                .send_request(&MetadataRequest::default(), 12, wait)
                .await
                .unwrap();
            pending.push_back(token);
            sent += 1;
        }
        let oldest = pending.front().unwrap();
        // Dropped at its first wait for bytes, or after a millisecond of them.
        let odd = cancelled % 2 == 1;
        let pause = async move {
            if odd {
                tokio::time::sleep(Duration::from_millis(1)).await;
            } else {
                tokio::task::yield_now().await;
            }
        };
        tokio::select! {
            answer = connection.read_response::<MetadataRequest>(oldest) => {
                let answer = answer.unwrap();
                let topic = answer.topics[0].name.as_ref().unwrap().0.to_string();
                assert_eq!(topic, format!("t{}", oldest.correlation_id()));
                pending.pop_front();
                answered += 1;
            }
            () = pause => cancelled += 1,
        }
    }
    assert!(cancelled > ANSWERS / 2, "reads dropped: {cancelled}");
    drop(connection);
    server.join().unwrap();
}
