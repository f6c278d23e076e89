//! The fake broker: a listener on 127.0.0.1 that reads Kafka request frames and hands each
//! to the test's script, which says what to do: answer, answer late, answer wrong, send raw
//! bytes, or close the connection.

pub mod answers;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ResponseHeader};
use kafka_protocol::protocol::{decode_request_header_from_buffer, Decodable, Encodable};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the fake broker read it.
#[derive(Clone, Debug)]
pub struct Request {
    /// The API asked for.
    pub api_key: ApiKey,
    /// The API version the client chose.
    pub version: i16,
    /// The correlation id the answer must carry.
    pub correlation_id: i32,
    /// The request body after its header.
    pub body: Bytes,
    /// The port the fake broker listens on, for answers naming it (Metadata, FindCoordinator).
    pub port: u16,
}

impl Request {
    /// The body as a `T` at the request's version. Panics if it is no `T`: the client is
    /// under test, and a request it got wrong should fail the test loudly.
    pub fn decode<T: Decodable>(&self) -> T {
        let mut body = self.body.clone();
        T::decode(&mut body, self.version)
            .unwrap_or_else(|e| panic!("{:?} v{}: {e}", self.api_key, self.version))
    }

    /// Answers with `message`, encoded at the request's version.
    pub fn answer<T: Encodable>(&self, message: &T) -> Reply {
        let mut body = BytesMut::new();
        message
            .encode(&mut body, self.version)
            .unwrap_or_else(|e| panic!("{:?} v{}: {e}", self.api_key, self.version));
        self.answer_raw(body.freeze())
    }

    /// Answers with `body` as it is, behind a correct response header: for bodies no
    /// well-behaved broker would send.
    pub fn answer_raw(&self, body: impl Into<Bytes>) -> Reply {
        Reply::now(Action::Answer {
            correlation_id: self.correlation_id,
            header_version: self.api_key.response_header_version(self.version),
            body: body.into(),
        })
    }
}

/// What the fake broker does with one request.
#[derive(Clone, Debug)]
pub struct Reply {
    delay: Duration,
    action: Action,
    /// What follows at once, unasked (see [`Reply::then`]).
    next: Option<Box<Reply>>,
}

#[derive(Clone, Debug)]
enum Action {
    /// A response frame: size, header, body.
    Answer {
        correlation_id: i32,
        header_version: i16,
        body: Bytes,
    },
    /// Bytes written as they are.
    Raw(Bytes),
    /// Close the connection.
    Close,
}

impl Reply {
    fn now(action: Action) -> Reply {
        Reply {
            delay: Duration::ZERO,
            action,
            next: None,
        }
    }

    /// Closes the connection without answering.
    pub fn close() -> Reply {
        Reply::now(Action::Close)
    }

    /// Writes `bytes` as they are: no size, no header.
    pub fn raw(bytes: impl Into<Bytes>) -> Reply {
        Reply::now(Action::Raw(bytes.into()))
    }

    /// The same, `delay` later (as a broker waiting `max_wait_ms` for data that does not come).
    /// The connection reads nothing meanwhile; other connections go on.
    pub fn after(self, delay: Duration) -> Reply {
        Reply { delay, ..self }
    }

    /// This reply, then `next` without waiting for another request (after `next`'s own
    /// delay): a frame written in pieces, bytes no request asked for, a close after them.
    pub fn then(mut self, next: Reply) -> Reply {
        let mut last = &mut self;
        while let Some(ref mut following) = last.next {
            last = following;
        }
        last.next = Some(Box::new(next));
        self
    }

    /// The same answer under another correlation id. Panics if this is no answer.
    pub fn with_correlation_id(self, id: i32) -> Reply {
        let Action::Answer {
            header_version,
            body,
            ..
        } = self.action
        else {
            panic!("only an answer has a correlation id: {self:?}");
        };
        let action = Action::Answer {
            correlation_id: id,
            header_version,
            body,
        };
        Reply { action, ..self }
    }
}

/// Starts a fake broker on 127.0.0.1 and returns its address (`127.0.0.1:PORT`).
///
/// Every connection reads request frames and calls `script` with each; the script, shared by
/// all connections and called one request at a time, returns the [`Reply`]. A script that
/// keeps state captures it (an `Arc<Mutex<_>>` the test also holds, to look at afterwards).
/// The broker lives as long as the tokio runtime that started it.
pub async fn start<S>(script: S) -> String
where
    S: FnMut(&Request) -> Reply + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let port = listener.local_addr().expect("a bound address").port();
    let script = Arc::new(Mutex::new(script));
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(serve(socket, port, script.clone()));
        }
    });
    format!("127.0.0.1:{port}")
}

/// The frame loop of one connection, until the client goes away or the script closes it.
async fn serve<S>(mut socket: TcpStream, port: u16, script: Arc<Mutex<S>>)
where
    S: FnMut(&Request) -> Reply,
{
    while let Some(request) = read_request(&mut socket, port).await {
        // The lock is released before sleeping: a delay holds up this connection only.
        let reply = (script.lock().expect("the script panicked earlier"))(&request);
        if !write_reply(&mut socket, reply).await {
            return;
        }
    }
}

/// Carries out `reply` and what it is followed by; false once the connection is done.
async fn write_reply(socket: &mut TcpStream, reply: Reply) -> bool {
    let mut next = Some(Box::new(reply));
    while let Some(reply) = next {
        if !reply.delay.is_zero() {
            tokio::time::sleep(reply.delay).await;
        }
        let bytes = match reply.action {
            Action::Close => return false,
            Action::Raw(bytes) => bytes,
            Action::Answer {
                correlation_id,
                header_version,
                body,
            } => frame(correlation_id, header_version, &body),
        };
        if socket.write_all(&bytes).await.is_err() {
            return false;
        }
        next = reply.next;
    }
    true
}

/// The next request, or `None` once the client closed the connection (or cut a frame).
async fn read_request(socket: &mut TcpStream, port: u16) -> Option<Request> {
    let mut size = [0u8; 4];
    socket.read_exact(&mut size).await.ok()?;
    let size = usize::try_from(i32::from_be_bytes(size)).expect("a frame size from the client");
    let mut frame = vec![0u8; size];
    socket.read_exact(&mut frame).await.ok()?;
    let mut frame = Bytes::from(frame);
    let header = decode_request_header_from_buffer(&mut frame).expect("a request header");
    Some(Request {
        api_key: ApiKey::try_from(header.request_api_key).expect("a known API key"),
        version: header.request_api_version,
        correlation_id: header.correlation_id,
        body: frame,
        port,
    })
}

/// A response frame: its size, the response header, the body.
fn frame(correlation_id: i32, header_version: i16, body: &[u8]) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut out, header_version)
        .expect("a response header encodes");
    out.put_slice(body);
    let size = i32::try_from(out.len() - 4).expect("a frame under 2 GiB");
    out[..4].copy_from_slice(&size.to_be_bytes());
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse, RequestHeader};
    use kafka_protocol::protocol::encode_request_header_into_buffer;

    /// Sends an ApiVersions v3 request with `correlation_id`; the answer's frame, if any.
    async fn ask(socket: &mut TcpStream, correlation_id: i32) -> Option<Bytes> {
        let mut out = BytesMut::new();
        out.put_i32(0);
        let header = RequestHeader::default()
            .with_request_api_key(ApiKey::ApiVersions as i16)
            .with_request_api_version(3)
            .with_correlation_id(correlation_id);
        encode_request_header_into_buffer(&mut out, &header).unwrap();
        ApiVersionsRequest::default().encode(&mut out, 3).unwrap();
        let size = (out.len() - 4) as i32;
        out[..4].copy_from_slice(&size.to_be_bytes());
        socket.write_all(&out).await.unwrap();
        let mut size = [0u8; 4];
        socket.read_exact(&mut size).await.ok()?;
        let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
        socket.read_exact(&mut frame).await.unwrap();
        Some(Bytes::from(frame))
    }

    #[tokio::test]
    async fn answers_as_scripted_then_closes() {
        let mut seen = 0;
        let address = start(move |request| {
            seen += 1;
            let answer = request.answer(&answers::api_versions(&[(ApiKey::Fetch, 4, 12)]));
            match seen {
                1 => answer,
                2 => answer
                    .with_correlation_id(99)
                    .after(Duration::from_millis(5)),
                _ => Reply::close(),
            }
        })
        .await;
        let mut socket = TcpStream::connect(&address).await.unwrap();
        let mut frame = ask(&mut socket, 7).await.unwrap();
        let header = ResponseHeader::decode(&mut frame, 0).unwrap();
        let body = ApiVersionsResponse::decode(&mut frame, 3).unwrap();
        assert_eq!(header.correlation_id, 7);
        assert_eq!(body.api_keys[0].max_version, 12);
        let mut frame = ask(&mut socket, 8).await.unwrap();
        assert_eq!(
            ResponseHeader::decode(&mut frame, 0)
                .unwrap()
                .correlation_id,
            99
        );
        assert_eq!(ask(&mut socket, 9).await, None, "closed");
    }

    #[tokio::test]
    async fn a_reply_goes_on_unasked_with_what_follows_it() {
        let address = start(|request| {
            let answer = request.answer(&answers::api_versions(&[(ApiKey::Fetch, 4, 12)]));
            answer
                .then(Reply::raw(&b"ab"[..]).after(Duration::from_millis(5)))
                .then(Reply::raw(&b"c"[..]))
                .then(Reply::close())
        })
        .await;
        let mut socket = TcpStream::connect(&address).await.unwrap();
        let mut frame = ask(&mut socket, 7).await.unwrap();
        assert_eq!(
            ResponseHeader::decode(&mut frame, 0)
                .unwrap()
                .correlation_id,
            7
        );
        let mut rest = Vec::new();
        socket.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"abc", "the pieces in order, then the close");
    }
}
