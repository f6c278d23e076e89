//! Reading response frames so that a read may be cancelled at any await point: the size
//! prefix and the body read so far live here, in the connection, never in a future's locals,
//! and the next read continues the same frame.
//!
//! Responses follow each other on the wire when requests are pipelined, so reads stop at each
//! frame's end: the prefix is read on its own, then exactly the bytes it announces, into a
//! buffer of the frame's own (pooled, see [`FrameBuffers`]).

use bytes::{BufMut, Bytes, BytesMut};

use crate::frame_buffers::{FrameBuffer, FrameBuffers};
use crate::receive_wait::ReceiveWait;
use crate::transport::Transport;

/// Bytes of the size prefix in front of every frame.
const SIZE_PREFIX: usize = 4;

/// Why a frame could not be read. Every one leaves the stream at an unknown place.
#[derive(Debug)]
pub(super) enum ReadFailure {
    /// The socket or TLS failed.
    Io(std::io::Error),
    /// The broker closed the connection with `read` of `wanted` bytes of the prefix or the
    /// body read.
    Closed { read: usize, wanted: usize },
    /// The prefix announced a size below a header's or above the bound.
    BadSize(i32),
    /// The first bytes of a plaintext connection's first response were a TLS record.
    AnsweredInTls,
}

/// The frame being read: its prefix, then its body.
#[derive(Debug)]
pub(super) struct FrameReader {
    /// The size prefix read so far (at most [`SIZE_PREFIX`] bytes).
    prefix: BytesMut,
    /// The body read so far, once the prefix is complete and its size accepted.
    body: Option<(FrameBuffer, usize)>,
    /// Frames whose prefix has been read: a first one in TLS, or a close right after
    /// ApiVersions, says the listener wants another security protocol.
    started: u64,
}

impl FrameReader {
    pub(super) fn new() -> Self {
        Self {
            prefix: BytesMut::with_capacity(SIZE_PREFIX),
            body: None,
            started: 0,
        }
    }

    /// Frames whose size prefix has been read so far.
    pub(super) fn frames_started(&self) -> u64 {
        self.started
    }

    /// Whether part of a frame has been read and the rest not yet.
    #[cfg(test)]
    pub(super) fn is_mid_frame(&self) -> bool {
        !self.prefix.is_empty() || self.body.is_some()
    }

    /// Reads the rest of the current frame (all of the next one if none is begun) and returns
    /// its body. Cancel-safe: dropped at any await, it loses no byte; the next call goes on.
    pub(super) async fn read(
        &mut self,
        transport: &mut Transport,
        wait: &mut ReceiveWait,
        frames: &mut FrameBuffers,
        max_frame_bytes: usize,
    ) -> Result<Bytes, ReadFailure> {
        if self.body.is_none() {
            let size = self.read_prefix(transport, wait, max_frame_bytes).await?;
            self.body = Some((frames.take(size), size));
        }
        if let Some((body, size)) = self.body.as_mut() {
            let missing = *size - body.buffer.len();
            fill(transport, wait, (&mut body.buffer).limit(missing))
                .await
                .map_err(|closed| closed.with(body.buffer.len(), *size))?;
        }
        self.prefix.clear();
        let frame = self
            .body
            .take()
            .map(|(body, _)| frames.finish(body).freeze());
        Ok(frame.unwrap_or_default())
    }

    /// Reads the rest of the size prefix and returns the size, once accepted.
    async fn read_prefix(
        &mut self,
        transport: &mut Transport,
        wait: &mut ReceiveWait,
        max_frame_bytes: usize,
    ) -> Result<usize, ReadFailure> {
        let missing = SIZE_PREFIX - self.prefix.len();
        fill(transport, wait, (&mut self.prefix).limit(missing))
            .await
            .map_err(|closed| closed.with(self.prefix.len(), SIZE_PREFIX))?;
        let head = [
            self.prefix[0],
            self.prefix[1],
            self.prefix[2],
            self.prefix[3],
        ];
        if self.started == 0 && matches!(transport, Transport::Plain(_)) && is_tls_record(head) {
            return Err(ReadFailure::AnsweredInTls);
        }
        self.started += 1;
        let size = i32::from_be_bytes(head);
        if size < 4 || size as usize > max_frame_bytes {
            return Err(ReadFailure::BadSize(size));
        }
        Ok(size as usize)
    }
}

/// How [`fill`] failed: closed (the caller counts the bytes), or an I/O error.
enum Unfilled {
    Closed,
    Io(std::io::Error),
}

impl Unfilled {
    fn with(self, read: usize, wanted: usize) -> ReadFailure {
        match self {
            Unfilled::Closed => ReadFailure::Closed { read, wanted },
            Unfilled::Io(error) => ReadFailure::Io(error),
        }
    }
}

/// Reads until `buffer` is full (a `BytesMut` of the connection's, limited to the bytes still
/// expected), never past it. Each byte read is in the buffer before the next await.
async fn fill<B: BufMut>(
    transport: &mut Transport,
    wait: &mut ReceiveWait,
    mut buffer: B,
) -> Result<(), Unfilled> {
    while buffer.has_remaining_mut() {
        let stream = match transport {
            Transport::Plain(stream) => stream,
            Transport::Tls(stream) => match stream.read(&mut buffer, wait).await {
                Ok(0) => return Err(Unfilled::Closed),
                Ok(_) => continue,
                Err(source) => return Err(Unfilled::Io(source)),
            },
        };
        match stream.try_read_buf(&mut buffer) {
            Ok(0) => return Err(Unfilled::Closed),
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                // Sleep until the rest of the frame (up to a cap) is queued, not per packet.
                wait.prepare(stream, buffer.remaining_mut());
                stream.readable().await.map_err(Unfilled::Io)?;
            }
            Err(source) => return Err(Unfilled::Io(source)),
        }
    }
    Ok(())
}

/// Whether a frame's first four bytes are a TLS record header (an alert or a handshake),
/// which as a Kafka frame size would be hundreds of megabytes.
fn is_tls_record(head: [u8; 4]) -> bool {
    matches!(head[0], 0x15 | 0x16) && head[1] == 0x03 && head[2] <= 0x04
}
