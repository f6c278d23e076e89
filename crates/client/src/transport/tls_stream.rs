//! TLS over a TCP socket through rustls's unbuffered API: ciphertext is read in large reads
//! into a buffer of ours, with the socket's low-water mark as on the plain path, and
//! decrypted there; each payload is copied into the caller's buffer. rustls 0.23 still copies
//! a payload into a `Vec` of its own first; the buffered API added a copy into its deframer
//! and tokio-rustls's copy out (see BENCHMARKS.md, TLS).
//!
//! One state machine drives the handshake, reads and writes: [`TlsStream::step`] handles one
//! `process_tls_records` state, the three loops above it decide when the socket is read.
//!
//! Reads are cancel-safe, as a pipelining connection needs: every byte read, decrypted or to
//! be sent lives in the stream, never in a future; the ciphertext rustls used is discarded
//! before any await; records rustls wants sent during a read (a KeyUpdate's answer) are
//! written from a cursor, so a write dropped midway goes on where it stopped and no byte is
//! sent twice. A write may come between two reads: records it decrypts are kept for them.

use std::io;

use bytes::BufMut;
use rustls::client::{ClientConnectionData, UnbufferedClientConnection};
use rustls::unbuffered::{ConnectionState, EncodeError, EncryptError, ReadTraffic};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::receive_wait::ReceiveWait;

/// Ciphertext read from the socket at once, at most.
const READ_BUFFER: usize = 256 << 10;

/// An established TLS session on one socket.
pub(crate) struct TlsStream {
    tcp: TcpStream,
    session: UnbufferedClientConnection,
    /// Ciphertext read and not yet processed: `incoming[start..end]`, less than one record
    /// whenever the socket is read.
    incoming: Vec<u8>,
    start: usize,
    end: usize,
    /// Plaintext decrypted beyond what a read wanted: `plaintext[taken..]`, handed out first.
    plaintext: Vec<u8>,
    taken: usize,
    /// TLS records to write, encrypted or encoded and not yet sent.
    outgoing: Outgoing,
    /// The broker sent close_notify or closed the socket: reads return 0 from here on.
    closed: bool,
}

/// Where one `process_tls_records` state left the session.
enum Step {
    /// Records were handled or sent: process again.
    Again,
    /// Nothing more happens without bytes from the broker.
    NeedsBytes,
    /// The handshake is done and the session has nothing to read or write.
    Idle,
    /// The broker ended the session with close_notify.
    PeerClosed,
}

/// TLS records to send, and how much of them the socket has taken.
#[derive(Default)]
struct Outgoing {
    bytes: Vec<u8>,
    sent: usize,
}

impl Outgoing {
    /// Writes what is not sent yet. Cancel-safe: a dropped flush leaves `sent` where the
    /// socket stopped taking bytes, and the next one goes on from there.
    async fn flush(&mut self, tcp: &mut TcpStream) -> io::Result<()> {
        while self.sent < self.bytes.len() {
            let written = tcp.write(&self.bytes[self.sent..]).await?;
            if written == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.sent += written;
        }
        self.bytes.clear();
        self.sent = 0;
        Ok(())
    }

    /// Whether a flush was dropped after the socket took part of the records.
    fn is_half_sent(&self) -> bool {
        self.sent > 0
    }
}

impl std::fmt::Debug for TlsStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsStream")
            .field("tcp", &self.tcp)
            .field("version", &self.session.protocol_version())
            .finish_non_exhaustive()
    }
}

impl TlsStream {
    /// Runs the handshake of `session` on `tcp`. A rustls error comes back inside the I/O
    /// error (as the buffered API does), EOF as `UnexpectedEof`.
    pub(crate) async fn connect(
        tcp: TcpStream,
        session: UnbufferedClientConnection,
    ) -> io::Result<Self> {
        let mut stream = Self {
            tcp,
            session,
            incoming: vec![0; READ_BUFFER],
            start: 0,
            end: 0,
            plaintext: Vec::new(),
            taken: 0,
            outgoing: Outgoing::default(),
            closed: false,
        };
        let mut nowhere: &mut [u8] = &mut [];
        loop {
            match stream.step(&mut nowhere, &mut None).await? {
                Step::Again => {}
                Step::Idle => return Ok(stream),
                Step::NeedsBytes => {
                    if stream.read_tls(None).await? == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                }
                Step::PeerClosed => return Err(io::ErrorKind::UnexpectedEof.into()),
            }
        }
    }

    /// The negotiated session (version, cipher suite).
    pub(crate) fn session(&self) -> &UnbufferedClientConnection {
        &self.session
    }

    /// Reads plaintext into `buffer` until it is full or the session ends; returns the bytes
    /// read, 0 at the end. `wait` sets how many bytes the socket waits for.
    pub(crate) async fn read<B: BufMut>(
        &mut self,
        buffer: &mut B,
        wait: &mut ReceiveWait,
    ) -> io::Result<usize> {
        let wanted = buffer.remaining_mut();
        self.take_plaintext(buffer);
        while buffer.has_remaining_mut() && !self.closed {
            match self.step(buffer, &mut None).await? {
                Step::Again | Step::PeerClosed => {}
                Step::NeedsBytes | Step::Idle => {
                    if self.read_tls(Some((wait, buffer.remaining_mut()))).await? == 0 {
                        self.closed = true;
                    }
                }
            }
        }
        Ok(wanted - buffer.remaining_mut())
    }

    /// Encrypts `bytes` and writes them to the socket.
    pub(crate) async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut message = Some(bytes);
        let mut nowhere: &mut [u8] = &mut [];
        while message.is_some() {
            match self.step(&mut nowhere, &mut message).await? {
                Step::Again | Step::Idle => {}
                // A closed session never takes the message: stepping again would spin.
                Step::PeerClosed => return Err(io::ErrorKind::BrokenPipe.into()),
                Step::NeedsBytes => return Err(io::ErrorKind::NotConnected.into()),
            }
        }
        Ok(())
    }

    /// Processes the ciphertext buffered and handles the state rustls reaches: payloads go to
    /// `sink` (the rest is kept), `message` is encrypted and sent once writing is allowed,
    /// records rustls wants sent (handshake, KeyUpdate) are sent. Dropped at an await, it
    /// has consumed its ciphertext and kept what it must still send (see the module docs).
    async fn step<B: BufMut>(
        &mut self,
        sink: &mut B,
        message: &mut Option<&[u8]>,
    ) -> io::Result<Step> {
        if self.outgoing.is_half_sent() {
            self.outgoing.flush(&mut self.tcp).await?;
        }
        let status = self
            .session
            .process_tls_records(&mut self.incoming[self.start..self.end]);
        // Before any await: a step dropped there must not process these records again.
        self.start += status.discard;
        let step = match status.state.map_err(tls_error)? {
            ConnectionState::ReadTraffic(records) => {
                self.start += deliver(records, sink, &mut self.plaintext)?;
                Step::Again
            }
            ConnectionState::EncodeTlsData(mut record) => {
                append(
                    &mut self.outgoing.bytes,
                    |out| record.encode(out),
                    |e| match e {
                        EncodeError::InsufficientSize(size) => Some(size.required_size),
                        _ => None,
                    },
                )?;
                Step::Again
            }
            ConnectionState::TransmitTlsData(transmit) => {
                // Dropped before `done`, rustls asks again; the flush then goes on.
                self.outgoing.flush(&mut self.tcp).await?;
                transmit.done();
                Step::Again
            }
            ConnectionState::WriteTraffic(mut writer) => match message.take() {
                Some(bytes) => {
                    append(
                        &mut self.outgoing.bytes,
                        |out| writer.encrypt(bytes, out),
                        |e| match e {
                            EncryptError::InsufficientSize(size) => Some(size.required_size),
                            _ => None,
                        },
                    )?;
                    self.outgoing.flush(&mut self.tcp).await?;
                    Step::Again
                }
                None => Step::Idle,
            },
            ConnectionState::BlockedHandshake => Step::NeedsBytes,
            ConnectionState::PeerClosed | ConnectionState::Closed => {
                self.closed = true;
                Step::PeerClosed
            }
            state => return Err(io::Error::other(format!("unexpected TLS state {state:?}"))),
        };
        Ok(step)
    }

    /// Reads ciphertext after what is buffered; returns the bytes read, 0 at EOF. With `wait`,
    /// the socket sleeps until the plaintext still wanted (less what is buffered, which may
    /// hold part of it) has come: ciphertext is never shorter than its plaintext.
    async fn read_tls(&mut self, mut wait: Option<(&mut ReceiveWait, usize)>) -> io::Result<usize> {
        self.make_room();
        loop {
            match self.tcp.try_read(&mut self.incoming[self.end..]) {
                Ok(read) => {
                    self.end += read;
                    return Ok(read);
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    if let Some((wait, wanted)) = wait.as_mut() {
                        wait.prepare(&self.tcp, wanted.saturating_sub(self.end - self.start));
                    }
                    self.tcp.readable().await?;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Moves the unprocessed ciphertext (a part of one record) to the front, so the next read
    /// can be large; grows the buffer if a handshake message fills it.
    fn make_room(&mut self) {
        self.incoming.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if self.end == self.incoming.len() {
            self.incoming.resize(2 * self.incoming.len(), 0);
        }
    }

    /// Hands out plaintext kept from an earlier record.
    fn take_plaintext<B: BufMut>(&mut self, buffer: &mut B) {
        let kept = &self.plaintext[self.taken..];
        let n = kept.len().min(buffer.remaining_mut());
        buffer.put_slice(&kept[..n]);
        self.taken += n;
        if self.taken == self.plaintext.len() {
            self.plaintext.clear();
            self.taken = 0;
        }
    }
}

/// Copies the records' payloads into `sink` while it has room and keeps the rest in `kept`
/// (the rest of a frame's last record, or, pipelined, what follows it, or records a write
/// came across). Returns the bytes of `incoming` the records used.
fn deliver<B: BufMut>(
    mut records: ReadTraffic<'_, '_, ClientConnectionData>,
    sink: &mut B,
    kept: &mut Vec<u8>,
) -> io::Result<usize> {
    let mut discard = 0;
    while let Some(record) = records.next_record() {
        let record = record.map_err(tls_error)?;
        discard += record.discard;
        let n = if kept.is_empty() {
            record.payload.len().min(sink.remaining_mut())
        } else {
            0
        };
        sink.put_slice(&record.payload[..n]);
        kept.extend_from_slice(&record.payload[n..]);
    }
    Ok(discard)
}

/// Appends to `out` what `write` puts into a slice, growing it to the size rustls asks for
/// (`required` reads it from the error) and trying once more.
fn append<E>(
    out: &mut Vec<u8>,
    mut write: impl FnMut(&mut [u8]) -> Result<usize, E>,
    required: impl Fn(&E) -> Option<usize>,
) -> io::Result<()>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let used = out.len();
    out.resize(used + 4096, 0);
    let result = match write(&mut out[used..]) {
        Err(error) => match required(&error) {
            Some(size) => {
                out.resize(used + size, 0);
                write(&mut out[used..])
            }
            None => Err(error),
        },
        written => written,
    };
    match result {
        Ok(written) => {
            out.truncate(used + written);
            Ok(())
        }
        Err(error) => {
            out.truncate(used);
            Err(io::Error::other(error))
        }
    }
}

/// A rustls error inside an I/O error, where `transport::rustls_detail` finds it.
fn tls_error(error: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, error)
}

#[cfg(test)]
mod tests;
