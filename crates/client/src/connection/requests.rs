//! Writing requests and reading their responses in order: the pipelined half of
//! [`Connection`] (see the module docs of `connection`), on which the sequential calls rest.

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};

use super::{decode_body, Connection, PendingResponse};
use crate::versions::api_name;
use crate::wire::ApiRequest;
use crate::Error;

/// Why a connection whose oldest request's caller went away is broken.
pub(super) const ABANDONED: &str = "a request was dropped before its response was read";

impl Connection {
    /// Writes `request` at `version` and returns at once with the token of its response,
    /// which must come within `timeout` of now; read it with [`Connection::read_response`],
    /// after the responses of the requests sent before it.
    ///
    /// With nothing in flight, a SASL session that is due is renewed first. With requests in
    /// flight it is not (they would be answered inside the exchange): the request goes out
    /// while the session has not expired, and is refused ([`Error::InvalidArgument`], the
    /// connection stays usable) once it has: read what is in flight when
    /// [`Connection::renewal_due`] says so, then send.
    ///
    /// Not cancel-safe: dropped while writing, it leaves part of a frame on the wire and the
    /// connection broken. It waits until the socket has taken the whole request, so a caller
    /// must not leave responses larger than the socket's buffers unread meanwhile.
    pub async fn send_request<R: ApiRequest>(
        &mut self,
        request: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<PendingResponse, Error> {
        self.prepare_send(R::KEY).await?;
        self.write_request(request, version, timeout, false).await
    }

    /// Reads the response `pending` is the token of: the oldest request in flight (another
    /// token is refused with [`Error::InvalidArgument`], and the connection stays usable).
    ///
    /// Cancel-safe: dropped at any await, it loses nothing; called again with the same token,
    /// it goes on with the same frame. Requests may be written between two calls. A response
    /// that has not come by the token's deadline is [`Error::Timeout`]; a correlation id that
    /// does not match is [`Error::Protocol`]; after either, or after a failed read, the
    /// connection is broken and every later call fails with [`Error::Connection`].
    pub async fn read_response<R: ApiRequest>(
        &mut self,
        pending: &PendingResponse,
    ) -> Result<R::Response, Error> {
        let api = api_name(R::KEY);
        self.usable()?;
        let refused = if pending.api_key() != R::KEY {
            Some(format!(
                "the token is for a {} request, not {api}",
                api_name(pending.api_key())
            ))
        } else {
            self.pipeline.refuse(pending)
        };
        if refused.is_some() && self.pipeline.abandoned() {
            return Err(self.break_for(ABANDONED));
        }
        if let Some(detail) = refused {
            return Err(Error::InvalidArgument {
                what: "pending response",
                detail,
            });
        }
        let read = self.reader.read(
            &mut self.transport,
            &mut self.receive_wait,
            &mut self.frames,
            self.settings.max_frame_bytes,
        );
        // A response that has already come is read even past the deadline: the read is
        // polled before the timer.
        let deadline = tokio::time::Instant::from_std(pending.deadline());
        let frame = match tokio::time::timeout_at(deadline, read).await {
            Ok(Ok(frame)) => frame,
            Ok(Err(failure)) => return Err(self.broken_by(self.read_error(failure))),
            Err(_) => {
                let timeout = Error::Timeout {
                    broker: self.address.clone(),
                    api,
                    timeout_ms: pending.timeout().as_millis() as u64,
                };
                return Err(self.broken_by(timeout));
            }
        };
        self.pipeline.pop();
        self.decode_response::<R>(pending, frame)
    }

    /// Requests written whose responses have not been read.
    pub fn in_flight(&self) -> usize {
        self.pipeline.len()
    }

    /// Whether the SASL session should be renewed: a pipelining caller then stops sending,
    /// reads the responses in flight, and its next [`Connection::send_request`] renews.
    /// Always false without SASL or when the broker set no session lifetime.
    pub fn renewal_due(&self) -> bool {
        self.session
            .is_some_and(|session| Instant::now() >= session.renew_at)
    }

    /// Whether the connection can still be used (no timeout, mismatch or failed read or
    /// write broke it).
    pub fn is_usable(&self) -> bool {
        self.pipeline.broken().is_none()
    }

    /// Sends `request` at `version` and reads nothing back: for the one request the broker
    /// never answers (Produce with acks=0). It takes no place in the responses' order.
    pub(crate) async fn send_unanswered<R: ApiRequest>(
        &mut self,
        request: &R,
        version: i16,
    ) -> Result<(), Error> {
        self.prepare_send(R::KEY).await?;
        let timeout = self.settings.request_timeout;
        self.write(request, version, timeout).await.map(drop)
    }

    /// Before a request is written: the connection usable, the SASL session renewed when
    /// nothing is in flight, not expired when something is.
    async fn prepare_send(&mut self, api_key: i16) -> Result<(), Error> {
        self.usable()?;
        if self.pipeline.abandoned() {
            return Err(self.break_for(ABANDONED));
        }
        if self.in_flight() == 0 {
            return self.keep_session().await;
        }
        match self.session {
            Some(session) if Instant::now() >= session.expires_at => Err(Error::InvalidArgument {
                what: "send_request",
                detail: format!(
                    "the SASL session with {} expired with {} requests in flight: read \
                         their responses, then send {} (it re-authenticates first)",
                    self.address,
                    self.in_flight(),
                    api_name(api_key)
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Writes `request` and records it in flight (`sequential`: for a call that reads its
    /// response itself): no session check.
    pub(super) async fn write_request<R: ApiRequest>(
        &mut self,
        request: &R,
        version: i16,
        timeout: Duration,
        sequential: bool,
    ) -> Result<PendingResponse, Error> {
        self.usable()?;
        let sent_at = Instant::now();
        let correlation_id = self.write(request, version, timeout).await?;
        Ok(self.pipeline.push(
            correlation_id,
            R::KEY,
            version,
            sent_at,
            timeout,
            sequential,
        ))
    }

    /// Encodes and writes one request frame within `timeout`; its correlation id.
    async fn write<R: ApiRequest>(
        &mut self,
        request: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<i32, Error> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        self.encode_frame(request, version, correlation_id)?;
        self.pipeline.start_write();
        let sent = tokio::time::timeout(timeout, self.transport.send(&self.write_buffer)).await;
        self.pipeline.end_write();
        match sent {
            Ok(Ok(())) => Ok(correlation_id),
            Ok(Err(source)) => Err(self.broken_by(self.io_error("sending a request", source))),
            Err(_) => {
                let timeout = Error::Timeout {
                    broker: self.address.clone(),
                    api: api_name(R::KEY),
                    timeout_ms: timeout.as_millis() as u64,
                };
                Err(self.broken_by(timeout))
            }
        }
    }

    fn encode_frame<R: ApiRequest>(
        &mut self,
        request: &R,
        version: i16,
        correlation_id: i32,
    ) -> Result<(), Error> {
        let api = api_name(R::KEY);
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(self.client_id.clone()));
        self.write_buffer.clear();
        self.write_buffer.put_i32(0);
        let header_version = R::header_version(version);
        header
            .encode(&mut self.write_buffer, header_version)
            .and_then(|()| request.encode(&mut self.write_buffer, version))
            .map_err(|e| Error::Protocol {
                broker: self.address.clone(),
                api,
                detail: format!("cannot encode request version {version}: {e}"),
            })?;
        let size = (self.write_buffer.len() - 4) as i32;
        self.write_buffer[..4].copy_from_slice(&size.to_be_bytes());
        Ok(())
    }

    /// The response in `frame` (the oldest request's), checked against `pending`.
    fn decode_response<R: ApiRequest>(
        &mut self,
        pending: &PendingResponse,
        mut frame: Bytes,
    ) -> Result<R::Response, Error> {
        let api = api_name(R::KEY);
        let version = pending.version();
        let header_version = R::Response::header_version(version);
        let header = ResponseHeader::decode(&mut frame, header_version)
            .map_err(|e| self.protocol_error(api, format!("response header: {e}")))?;
        if header.correlation_id != pending.correlation_id() {
            let mismatch = self.protocol_error(
                api,
                format!(
                    "correlation id {} does not match request {}",
                    header.correlation_id,
                    pending.correlation_id()
                ),
            );
            return Err(self.broken_by(mismatch));
        }
        decode_body::<R::Response>(R::KEY, version, frame)
            .map_err(|detail| self.protocol_error(api, format!("version {version}: {detail}")))
    }

    /// An error that leaves the stream at an unknown place: the connection is broken by it.
    fn broken_by(&mut self, error: Error) -> Error {
        self.pipeline.break_with(error.to_string());
        error
    }

    /// Fails once the connection is broken, saying by what.
    pub(super) fn usable(&self) -> Result<(), Error> {
        match self.pipeline.broken() {
            None => Ok(()),
            Some(reason) => Err(self.unusable(reason)),
        }
    }

    /// Breaks the connection for `reason` and says so.
    pub(super) fn break_for(&mut self, reason: &str) -> Error {
        self.pipeline.break_with(reason);
        self.unusable(reason)
    }

    fn unusable(&self, reason: &str) -> Error {
        Error::Connection {
            broker: self.address.clone(),
            action: "using the connection",
            source: std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                format!("unusable after an earlier failure ({reason}): connect again"),
            ),
        }
    }
}
