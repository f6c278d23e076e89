//! The requests written on a connection and not yet answered, in the order sent (a broker
//! answers a connection's requests in that order), and whether the connection is still usable.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A request written to a connection whose response has not been read: the token
/// [`Connection::read_response`](super::Connection::read_response) takes. Responses are read
/// in the order the requests were sent; the token of any but the oldest is refused.
#[derive(Debug)]
#[must_use = "its response must be read before any later request's"]
pub struct PendingResponse {
    connection: u64,
    correlation_id: i32,
    api_key: i16,
    version: i16,
    deadline: Instant,
    timeout: Duration,
}

impl PendingResponse {
    /// The version the request was sent at (its response is decoded at it).
    pub fn version(&self) -> i16 {
        self.version
    }

    /// The correlation id the response must carry.
    pub fn correlation_id(&self) -> i32 {
        self.correlation_id
    }

    /// When the response is late: reading it after this fails, unless it has already come.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    pub(super) fn api_key(&self) -> i16 {
        self.api_key
    }

    pub(super) fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// One request in flight, as the connection remembers it.
#[derive(Debug, PartialEq, Eq)]
struct Sent {
    correlation_id: i32,
    api_key: i16,
    /// Sent by a call that reads its own response ([`Connection::request`] and its
    /// variants): still in flight afterwards only when that call was dropped.
    ///
    /// [`Connection::request`]: super::Connection::request
    sequential: bool,
}

/// The requests in flight on one connection, and why it is broken once it is.
#[derive(Debug)]
pub(super) struct Pipeline {
    /// Tells this connection's tokens from another's (including the one a reconnect replaced).
    connection: u64,
    in_flight: VecDeque<Sent>,
    broken: Option<String>,
    /// A request is being written: still set afterwards, its write was cancelled midway.
    writing: bool,
}

impl Pipeline {
    pub(super) fn new() -> Self {
        static CONNECTIONS: AtomicU64 = AtomicU64::new(0);
        Self {
            connection: CONNECTIONS.fetch_add(1, Ordering::Relaxed),
            in_flight: VecDeque::new(),
            broken: None,
            writing: false,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.in_flight.len()
    }

    /// Why the connection can no longer be used, once it cannot.
    pub(super) fn broken(&self) -> Option<&str> {
        if self.writing {
            return Some("a request was cancelled while being written");
        }
        self.broken.as_deref()
    }

    /// Marks the connection unusable (the stream is at an unknown place), keeping the
    /// first reason.
    pub(super) fn break_with(&mut self, reason: impl Into<String>) {
        if self.broken.is_none() {
            self.broken = Some(reason.into());
        }
    }

    /// Brackets the writing of a request: a write dropped in between leaves the connection
    /// broken (the broker has part of a frame).
    pub(super) fn start_write(&mut self) {
        self.writing = true;
    }

    pub(super) fn end_write(&mut self) {
        self.writing = false;
    }

    /// Records a request written and returns its token.
    pub(super) fn push(
        &mut self,
        correlation_id: i32,
        api_key: i16,
        version: i16,
        sent_at: Instant,
        timeout: Duration,
        sequential: bool,
    ) -> PendingResponse {
        self.in_flight.push_back(Sent {
            correlation_id,
            api_key,
            sequential,
        });
        PendingResponse {
            connection: self.connection,
            correlation_id,
            api_key,
            version,
            deadline: sent_at + timeout,
            timeout,
        }
    }

    /// Why `pending` cannot be read now: another connection's, already read, or not the
    /// oldest in flight. `None` when it is the next response on the wire.
    pub(super) fn refuse(&self, pending: &PendingResponse) -> Option<String> {
        if pending.connection != self.connection {
            return Some("the token belongs to another connection".to_owned());
        }
        let Some(oldest) = self.in_flight.front() else {
            return Some("no request is in flight (its response was already read)".to_owned());
        };
        if oldest.correlation_id == pending.correlation_id && oldest.api_key == pending.api_key {
            return None;
        }
        if self
            .in_flight
            .iter()
            .any(|sent| sent.correlation_id == pending.correlation_id)
        {
            Some(format!(
                "the response to request {} must be read first: responses come in the order \
                 requests were sent",
                oldest.correlation_id
            ))
        } else {
            Some(format!(
                "request {} is not in flight (its response was already read)",
                pending.correlation_id
            ))
        }
    }

    /// Whether the oldest request in flight was sent by a sequential call, seen from another
    /// call: that call was dropped, and no one will read the response. (A sequential call
    /// sends only with nothing in flight, and holds the connection until it has read.)
    pub(super) fn abandoned(&self) -> bool {
        self.in_flight.front().is_some_and(|sent| sent.sequential)
    }

    /// The oldest request is answered (its frame read).
    pub(super) fn pop(&mut self) {
        self.in_flight.pop_front();
    }
}
