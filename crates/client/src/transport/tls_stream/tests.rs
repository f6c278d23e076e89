//! A write dropped while the socket takes its records goes on where it stopped: no byte of
//! the session is lost or sent twice (a broker would see a bad record and close).

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::TcpStream;

use super::TlsStream;
use crate::receive_wait::ReceiveWait;
use crate::security::tls::client_config;
use crate::security::TlsConfig;

/// Far more than the sockets' buffers hold while the peer reads nothing.
const MESSAGE: usize = 16 << 20;

fn server_config() -> Arc<rustls::ServerConfig> {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let certificates = CertificateDer::pem_file_iter(data.join("tls-server.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(data.join("tls-server.key")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certificates, key)
        .unwrap();
    Arc::new(config)
}

/// Completes the handshake, reads nothing for a while, then reads `expected` bytes of
/// plaintext and answers `ok` if they are the bytes expected.
fn server(listener: std::net::TcpListener, expected: Vec<u8>) {
    let (mut tcp, _) = listener.accept().unwrap();
    let mut session = rustls::ServerConnection::new(server_config()).unwrap();
    while session.is_handshaking() {
        session.complete_io(&mut tcp).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    let mut tls = rustls::Stream::new(&mut session, &mut tcp);
    let mut received = vec![0u8; expected.len()];
    tls.read_exact(&mut received).unwrap();
    let answer: &[u8] = if received == expected { b"ok" } else { b"no" };
    tls.write_all(answer).unwrap();
    tls.flush().unwrap();
}

#[tokio::test]
async fn a_write_dropped_midway_is_finished_by_the_next_without_a_byte_twice() {
    let message: Vec<u8> = (0..MESSAGE).map(|i| (i % 251) as u8).collect();
    let mut expected = message.clone();
    expected.extend_from_slice(b"tail");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || server(listener, expected));

    let tls = TlsConfig {
        verify_certificate: false,
        ..TlsConfig::default()
    };
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let session =
        rustls::client::UnbufferedClientConnection::new(client_config(&tls).unwrap(), name)
            .unwrap();
    let tcp = TcpStream::connect(address).await.unwrap();
    let mut stream = TlsStream::connect(tcp, session).await.unwrap();
    let dropped = tokio::time::timeout(Duration::from_millis(50), stream.write_all(&message)).await;
    assert!(
        dropped.is_err(),
        "the peer reads nothing yet: the write cannot finish"
    );
    assert!(
        stream.outgoing.is_half_sent(),
        "dropped after the socket took a part"
    );
    stream.write_all(b"tail").await.unwrap();
    let mut answer = bytes::BytesMut::with_capacity(2);
    let mut wait = ReceiveWait::default();
    let mut limited = bytes::BufMut::limit(&mut answer, 2);
    stream.read(&mut limited, &mut wait).await.unwrap();
    assert_eq!(&answer[..], b"ok", "the peer got every byte once, in order");
    server.join().unwrap();
}
