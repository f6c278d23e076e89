//! How a connection's bytes travel: plain TCP, or TLS over it (rustls). Chosen once at
//! connect; everything above reads and writes through [`Transport`] without knowing which.

mod tls_stream;

use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

pub(crate) use self::tls_stream::TlsStream;
use crate::security::config::{SecurityConfig, TlsConfig};
use crate::security::tls;
use crate::Error;

/// An open connection's byte stream.
#[derive(Debug)]
pub(crate) enum Transport {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(Box<TlsStream>),
}

impl Transport {
    /// Wraps `tcp` in TLS when the protocol asks for it, naming `address`'s host to the
    /// broker (SNI) and checking the certificate is for it.
    pub(crate) async fn start(
        tcp: TcpStream,
        address: &str,
        security: &SecurityConfig,
    ) -> Result<Self, Error> {
        if !security.protocol.uses_tls() {
            return Ok(Self::Plain(tcp));
        }
        // The first connection of a setting reads its PEM files: off the async threads.
        let tls = security.tls.clone();
        let config = tokio::task::spawn_blocking(move || cached_client_config(&tls))
            .await
            .map_err(|error| Error::Tls {
                broker: address.to_owned(),
                detail: format!("reading the TLS settings failed: {error}"),
            })??;
        let host = host_of(address);
        let server_name =
            rustls::pki_types::ServerName::try_from(host.to_owned()).map_err(|_| Error::Tls {
                broker: address.to_owned(),
                detail: format!("{host:?} is not a valid host name for TLS"),
            })?;
        let session = rustls::client::UnbufferedClientConnection::new(config, server_name)
            .map_err(|error| Error::Tls {
                broker: address.to_owned(),
                detail: tls::describe(&error),
            })?;
        match TlsStream::connect(tcp, session).await {
            Ok(stream) => {
                spoke_tls(address);
                let session = stream.session();
                tracing::debug!(
                    broker = address,
                    version = ?session.protocol_version(),
                    cipher = ?session.negotiated_cipher_suite().map(|s| s.suite()),
                    "TLS established"
                );
                Ok(Self::Tls(Box::new(stream)))
            }
            Err(error) => Err(handshake_error(address, error)),
        }
    }

    /// Writes all of `bytes` and pushes them onto the wire.
    pub(crate) async fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Self::Plain(stream) => stream.write_all(bytes).await,
            Self::Tls(stream) => stream.write_all(bytes).await,
        }
    }
}

/// The host part of `host:port` (an IPv6 literal may come in brackets).
fn host_of(address: &str) -> &str {
    let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
    host.trim_start_matches('[').trim_end_matches(']')
}

/// A failed handshake: a certificate problem in words, or a closed connection, which is what
/// a plaintext listener does with a TLS hello; but a listener that completed a handshake
/// before speaks TLS, so its closing now is a network fault, worth a reconnect.
fn handshake_error(address: &str, error: std::io::Error) -> Error {
    if let Some(detail) = rustls_detail(&error) {
        return Error::Tls {
            broker: address.to_owned(),
            detail,
        };
    }
    match error.kind() {
        std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
            if !has_spoken_tls(address) =>
        {
            Error::WrongSecurityProtocol {
                broker: address.to_owned(),
                detail: "the broker closed the connection during the TLS handshake: this \
                         listener does not speak TLS (use security.protocol=PLAINTEXT or \
                         SASL_PLAINTEXT, or the broker's TLS port)"
                    .to_owned(),
            }
        }
        _ => Error::Connection {
            broker: address.to_owned(),
            action: "TLS handshake",
            source: error,
        },
    }
}

/// Addresses that completed a TLS handshake in this process (one entry per broker address).
static SPOKE_TLS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn spoke_tls(address: &str) {
    let mut spoke = SPOKE_TLS.lock().unwrap_or_else(|p| p.into_inner());
    if !spoke.iter().any(|a| a == address) {
        spoke.push(address.to_owned());
    }
}

fn has_spoken_tls(address: &str) -> bool {
    let spoke = SPOKE_TLS.lock().unwrap_or_else(|p| p.into_inner());
    spoke.iter().any(|a| a == address)
}

/// The rustls error inside an I/O error from a TLS stream, told for a person.
pub(crate) fn rustls_detail(error: &std::io::Error) -> Option<String> {
    let inner = error.get_ref()?;
    inner.downcast_ref::<rustls::Error>().map(tls::describe)
}

/// rustls configurations built so far, one per distinct TLS setting: files are read and
/// checked once per process, not at every reconnect.
fn cached_client_config(tls: &TlsConfig) -> Result<Arc<rustls::ClientConfig>, Error> {
    static BUILT: Mutex<Vec<(TlsConfig, Arc<rustls::ClientConfig>)>> = Mutex::new(Vec::new());
    let mut built = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, config)) = built.iter().find(|(key, _)| key == tls) {
        return Ok(config.clone());
    }
    let config = tls::client_config(tls)?;
    built.push((tls.clone(), config.clone()));
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::{handshake_error, host_of, spoke_tls};
    use crate::Error;

    #[test]
    fn a_close_in_the_handshake_is_fatal_only_from_a_listener_that_never_spoke_tls() {
        let closed = || std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        let address = "192.0.2.7:9093";
        assert!(matches!(
            handshake_error(address, closed()),
            Error::WrongSecurityProtocol { .. }
        ));
        spoke_tls(address);
        let error = handshake_error(address, closed());
        assert!(error.is_connection_failure(), "{error}");
        assert!(!error.is_security_failure(), "{error}");
    }

    #[test]
    fn host_of_strips_the_port_and_brackets() {
        assert_eq!(host_of("broker-1.example:9093"), "broker-1.example");
        assert_eq!(host_of("127.0.0.1:9093"), "127.0.0.1");
        assert_eq!(host_of("[::1]:9093"), "::1");
    }
}
