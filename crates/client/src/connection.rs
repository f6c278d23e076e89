//! One connection to one broker: size-prefixed frames, correlation ids, request headers, and
//! the security the settings ask for (TLS, SASL, re-authentication before a session expires).
//!
//! Two ways to use it. [`Connection::request`] and its variants send a request and read its
//! response, which is all a fetch loop needs (one fetch in flight per broker). A producer
//! pipelines: [`Connection::send_request`] writes a request and returns a [`PendingResponse`]
//! at once, [`Connection::read_response`] reads the answers in the order the requests were
//! sent (Kafka answers a connection's requests in that order). A request the broker never
//! answers (Produce with acks=0) is sent and nothing is read for it.
//!
//! `read_response` is cancel-safe: the frame read so far stays in the connection (see
//! `frame_reader`), so it can be raced in `select!` against anything, while more requests
//! are written. A timeout, a correlation id that does not match, a failed read or a write
//! dropped midway leave the stream at an unknown place: the connection is then broken, and
//! every later call fails with [`Error::Connection`] (connect again).
//!
//! Re-authentication (KIP-368) happens only with nothing in flight, between two requests,
//! where nothing above sees it: [`Connection::send_request`] renews a due session when it is
//! the only request; a pipelining caller that sees [`Connection::renewal_due`] stops sending,
//! reads what is in flight, and its next send renews.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::net::TcpStream;

use self::frame_reader::{FrameReader, ReadFailure};
use self::pipeline::Pipeline;
use super::authenticate::{self, SessionLifetime};
use super::frame_buffers::FrameBuffers;
use super::receive_wait::ReceiveWait;
use super::response_check;
use super::security::SecurityConfig;
use super::transport::{self, Transport};
use super::versions::ApiVersions;
use super::wire::ApiRequest;
use crate::Error;

mod frame_reader;
mod pipeline;
mod requests;

pub use self::pipeline::PendingResponse;

/// Response buffers a connection keeps for reuse. A reader that holds fewer responses than
/// this at once leaves one for the response being read, so no frame is freshly allocated.
pub const POOLED_FRAME_BUFFERS: usize = FrameBuffers::MAX_BUFFERS;

/// How a connection behaves: identity, time limits and the frame-size bound.
#[derive(Clone, Debug)]
pub struct ConnectionSettings {
    /// `client.id` sent in every request header.
    pub client_id: String,
    /// Time allowed to open the TCP connection.
    pub connect_timeout: Duration,
    /// Time allowed for a response, on top of the fetch `max_wait_ms`.
    pub request_timeout: Duration,
    /// Largest response frame accepted; a bigger size on the wire is an error, never an allocation.
    pub max_frame_bytes: usize,
    /// Response buffers a connection keeps for reuse, in bytes of capacity (buffers still
    /// referenced by fetched data included). Memory on top of what fetched data holds is at
    /// most this; 0 allocates every response afresh.
    pub frame_buffer_bytes: usize,
    /// TLS and SASL.
    pub security: SecurityConfig,
}

impl ConnectionSettings {
    /// The largest response frame of which `frames` at once are read into reused buffers
    /// ([`ConnectionSettings::frame_buffer_bytes`]); 0 when that many never are.
    pub fn largest_reused_frame(&self, frames: usize) -> usize {
        FrameBuffers::largest_pooled_frame(self.frame_buffer_bytes, frames)
    }
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        Self {
            client_id: "krec".to_owned(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_frame_bytes: 256 << 20,
            frame_buffer_bytes: 64 << 20,
            security: SecurityConfig::default(),
        }
    }
}

/// A connected broker, with the API versions it speaks already negotiated.
#[derive(Debug)]
pub struct Connection {
    address: String,
    transport: Transport,
    frames: FrameBuffers,
    receive_wait: ReceiveWait,
    write_buffer: BytesMut,
    next_correlation_id: i32,
    client_id: StrBytes,
    settings: ConnectionSettings,
    versions: ApiVersions,
    /// When the SASL session must be renewed, if the broker limits it.
    session: Option<SessionLifetime>,
    /// The response frame being read, kept across cancelled reads.
    reader: FrameReader,
    /// Requests in flight, and whether the connection is still usable.
    pipeline: Pipeline,
}

impl Connection {
    /// Opens a connection to `address` (`host:port`), negotiates API versions and
    /// authenticates as the settings' security asks.
    pub async fn connect(address: &str, settings: &ConnectionSettings) -> Result<Self, Error> {
        if let Some(sasl) = settings.security.sasl.as_ref() {
            // A token or ticket is fetched before the socket opens, not while it waits.
            authenticate::prepare(address, sasl).await?;
        }
        let connecting = TcpStream::connect(address);
        let stream = match tokio::time::timeout(settings.connect_timeout, connecting).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(source)) => {
                return Err(Error::Connection {
                    broker: address.to_owned(),
                    action: "connecting",
                    source,
                })
            }
            Err(_) => {
                return Err(Error::Timeout {
                    broker: address.to_owned(),
                    api: "connect",
                    timeout_ms: settings.connect_timeout.as_millis() as u64,
                })
            }
        };
        // Fetch requests are small and latency matters more than packet count.
        let _ = stream.set_nodelay(true);
        let transport = tokio::time::timeout(
            settings.connect_timeout,
            Transport::start(stream, address, &settings.security),
        )
        .await
        .map_err(|_| Error::Timeout {
            broker: address.to_owned(),
            api: "TLS handshake",
            timeout_ms: settings.connect_timeout.as_millis() as u64,
        })??;
        let mut connection = Self {
            address: address.to_owned(),
            transport,
            frames: FrameBuffers::new(settings.frame_buffer_bytes),
            receive_wait: ReceiveWait::default(),
            write_buffer: BytesMut::with_capacity(4 << 10),
            next_correlation_id: 1,
            client_id: StrBytes::from_string(settings.client_id.clone()),
            settings: settings.clone(),
            versions: ApiVersions::default(),
            session: None,
            reader: FrameReader::new(),
            pipeline: Pipeline::new(),
        };
        connection.versions = connection.negotiate_versions().await?;
        connection.authenticate().await?;
        tracing::debug!(
            broker = address,
            fetch = ?connection.versions.range(ApiKey::Fetch as i16),
            metadata = ?connection.versions.range(ApiKey::Metadata as i16),
            list_offsets = ?connection.versions.range(ApiKey::ListOffsets as i16),
            "connected"
        );
        Ok(connection)
    }

    /// `host:port` of the broker.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The API versions the broker announced.
    pub fn versions(&self) -> &ApiVersions {
        &self.versions
    }

    /// Sends `request` at the negotiated version and waits for its response.
    pub async fn request<R: ApiRequest>(
        &mut self,
        request: &R,
    ) -> Result<(i16, R::Response), Error> {
        let version = self.versions.negotiate::<R>(&self.address)?;
        let response = self
            .request_at(request, version, self.settings.request_timeout)
            .await?;
        Ok((version, response))
    }

    /// Like [`Connection::request`] at no more than `max_version` (for request layouts this
    /// client only reads up to some version), waiting at most `timeout`.
    pub async fn request_capped<R: ApiRequest>(
        &mut self,
        request: &R,
        max_version: i16,
        timeout: Duration,
    ) -> Result<(i16, R::Response), Error> {
        let version = self
            .versions
            .negotiate::<R>(&self.address)?
            .min(max_version);
        let response = self.request_at(request, version, timeout).await?;
        Ok((version, response))
    }

    /// Like [`Connection::request`] with extra time on top of the request timeout (a fetch's
    /// `max_wait_ms` is spent by the broker on purpose).
    pub async fn request_with_wait<R: ApiRequest>(
        &mut self,
        request: &R,
        extra_wait: Duration,
    ) -> Result<(i16, R::Response), Error> {
        let version = self.versions.negotiate::<R>(&self.address)?;
        let timeout = self.settings.request_timeout + extra_wait;
        let response = self.request_at(request, version, timeout).await?;
        Ok((version, response))
    }

    /// Sends `request` at `version` and reads the matching response within `timeout`. Only
    /// with nothing in flight: with pipelined requests unanswered it is refused
    /// ([`Error::InvalidArgument`]), since their responses come first. After such a call
    /// dropped before its response came, the connection is broken ([`Error::Connection`]):
    /// the response nobody reads is still on its way.
    pub async fn request_at<R: ApiRequest>(
        &mut self,
        request: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response, Error> {
        let pending = self.send_sequential(request, version, timeout).await?;
        self.read_response::<R>(&pending).await
    }

    /// The sending half of [`Connection::request_at`], for a call that reads the response
    /// itself right after (Produce): refused with requests in flight, renews a due session,
    /// and a caller dropped before reading breaks the connection.
    pub(crate) async fn send_sequential<R: ApiRequest>(
        &mut self,
        request: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<PendingResponse, Error> {
        self.usable()?;
        if self.pipeline.abandoned() {
            return Err(self.break_for(requests::ABANDONED));
        }
        if self.in_flight() > 0 {
            return Err(Error::InvalidArgument {
                what: "request",
                detail: format!(
                    "{} requests are in flight on the connection to {}: read their responses \
                     first",
                    self.in_flight(),
                    self.address
                ),
            });
        }
        self.keep_session().await?;
        self.write_request(request, version, timeout, true).await
    }

    /// The time allowed for a response ([`ConnectionSettings::request_timeout`]).
    pub(crate) fn request_timeout(&self) -> Duration {
        self.settings.request_timeout
    }

    /// One request of the SASL exchange: no session check, the request timeout.
    pub(crate) async fn exchange<R: ApiRequest>(
        &mut self,
        request: &R,
        version: i16,
    ) -> Result<R::Response, Error> {
        let timeout = self.settings.request_timeout;
        self.timed_round_trip(request, version, timeout).await
    }

    async fn authenticate(&mut self) -> Result<(), Error> {
        let Some(sasl) = self.settings.security.sasl.clone() else {
            if self.settings.security.protocol.uses_sasl() {
                return Err(Error::Config {
                    property: "sasl.mechanism".to_owned(),
                    detail: format!(
                        "security.protocol={} needs a SASL mechanism",
                        self.settings.security.protocol.name()
                    ),
                });
            }
            return Ok(());
        };
        self.session = authenticate::authenticate(self, &sasl).await?;
        Ok(())
    }

    /// Renews the SASL session when it is due; if it lapsed while the connection was idle
    /// (the broker would close it at the next request), connects afresh instead.
    async fn keep_session(&mut self) -> Result<(), Error> {
        let Some(session) = self.session else {
            return Ok(());
        };
        let now = Instant::now();
        if now < session.renew_at {
            return Ok(());
        }
        if now >= session.expires_at {
            tracing::debug!(broker = %self.address, "SASL session lapsed while idle; reconnecting");
            *self = Self::connect(&self.address, &self.settings).await?;
            return Ok(());
        }
        self.authenticate().await?;
        tracing::debug!(broker = %self.address, "re-authenticated");
        Ok(())
    }

    /// One request and its response, with no session check (connecting, authenticating, or
    /// after `keep_session`).
    async fn timed_round_trip<R: ApiRequest>(
        &mut self,
        request: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response, Error> {
        let pending = self.write_request(request, version, timeout, true).await?;
        self.read_response::<R>(&pending).await
    }

    /// Reads the next response frame, whatever request it answers (for tests of framing).
    #[cfg(test)]
    async fn read_frame(&mut self) -> Result<Bytes, Error> {
        let read = self.reader.read(
            &mut self.transport,
            &mut self.receive_wait,
            &mut self.frames,
            self.settings.max_frame_bytes,
        );
        read.await.map_err(|failure| self.read_error(failure))
    }

    async fn negotiate_versions(&mut self) -> Result<ApiVersions, Error> {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("krec"))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let timeout = self.settings.request_timeout;
        let mut response: ApiVersionsResponse = self
            .timed_round_trip(&request, crate::versions::API_VERSIONS_VERSION, timeout)
            .await?;
        // UNSUPPORTED_VERSION: an old broker answers in v0 layout; v0 is understood by all.
        if response.error_code == super::codes::UNSUPPORTED_VERSION {
            response = self.timed_round_trip(&request, 0, timeout).await?;
        }
        if response.error_code != 0 {
            return Err(Error::Broker {
                broker: self.address.clone(),
                api: "ApiVersions",
                topic: None,
                partition: None,
                code: response.error_code,
                name: super::error_name(response.error_code),
            });
        }
        Ok(ApiVersions::from_response(&response))
    }

    /// A frame that could not be read, as the error the caller sees.
    fn read_error(&self, failure: ReadFailure) -> Error {
        match failure {
            ReadFailure::Io(source) => self.io_error("reading a response", source),
            ReadFailure::Closed { read, wanted } => self.closed_early(read, wanted),
            ReadFailure::BadSize(size) => Error::FrameTooLarge {
                broker: self.address.clone(),
                size: size.into(),
                max: self.settings.max_frame_bytes,
            },
            ReadFailure::AnsweredInTls => Error::WrongSecurityProtocol {
                broker: self.address.clone(),
                detail: "the broker answered in TLS: this listener needs security.protocol=SSL \
                         or SASL_SSL"
                    .to_owned(),
            },
        }
    }

    fn closed_early(&self, read: usize, wanted: usize) -> Error {
        // A SASL listener answers ApiVersions, then closes on any request but SaslHandshake.
        let hint =
            if self.reader.frames_started() == 1 && !self.settings.security.protocol.uses_sasl() {
                " (right after ApiVersions: if this listener requires SASL, set \
             security.protocol=SASL_PLAINTEXT or SASL_SSL and a sasl.mechanism)"
            } else {
                ""
            };
        let source = std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("connection closed with {read} of {wanted} bytes read{hint}"),
        );
        self.io_error("reading a response", source)
    }

    /// An I/O error; one carrying a TLS error (a refused client certificate arrives as an
    /// alert on the first read) is a TLS error, which reconnecting does not cure.
    fn io_error(&self, action: &'static str, source: std::io::Error) -> Error {
        if let Some(detail) = transport::rustls_detail(&source) {
            return Error::Tls {
                broker: self.address.clone(),
                detail,
            };
        }
        Error::Connection {
            broker: self.address.clone(),
            action,
            source,
        }
    }

    fn protocol_error(&self, api: &'static str, detail: String) -> Error {
        Error::Protocol {
            broker: self.address.clone(),
            api,
            detail,
        }
    }
}

/// Decodes a response body (the frame after its header) of `api_key` at `version`, once its
/// lengths and counts are known to fit in it (see `response_check`).
pub(crate) fn decode_body<T: Decodable>(
    api_key: i16,
    version: i16,
    mut body: Bytes,
) -> Result<T, String> {
    response_check::check(api_key, version, &body)?;
    // Decoding from `Bytes` makes every `bytes` field (fetch records) a slice of the frame.
    T::decode(&mut body, version).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
