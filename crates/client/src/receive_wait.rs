//! How much data a connection waits for before it is woken to read.
//!
//! A large response arrives as many TCP segments. Woken at the first byte, the reader copies
//! what has come, finds the socket empty, sleeps, and is woken again: dozens of wake-ups and
//! small copies per fetch response. Linux's receive low-water mark (`SO_RCVLOWAT`) makes the
//! socket report readable only once that many bytes are queued, so the reader sleeps until a
//! large part of the frame is there and copies it in one read.
//!
//! The mark is never above the bytes still expected: the reader must be woken for the last
//! part of a frame, however small. The kernel also wakes the reader early when its receive
//! buffer or window runs low, so a mark can delay a read but never stall it.

use tokio::net::TcpStream;

/// The highest mark set: a wake-up per MiB instead of per packet, while reading still overlaps
/// with the rest of a large response arriving (see BENCHMARKS.md, end to end).
const MAX_LOW_WATER: usize = 1 << 20;

/// The low-water mark currently set on one socket.
#[derive(Debug)]
pub(crate) struct ReceiveWait {
    current: usize,
    /// Cleared after the socket refused the option once: the default (wake at the first
    /// byte) is correct, only slower.
    enabled: bool,
}

impl Default for ReceiveWait {
    fn default() -> Self {
        Self {
            current: 1,
            enabled: cfg!(target_os = "linux"),
        }
    }
}

impl ReceiveWait {
    /// Before waiting for readability with `remaining` bytes of the frame still to come.
    pub(crate) fn prepare(&mut self, stream: &TcpStream, remaining: usize) {
        let wanted = remaining.clamp(1, MAX_LOW_WATER);
        if !self.enabled || wanted == self.current {
            return;
        }
        match set_low_water(stream, wanted) {
            Ok(()) => self.current = wanted,
            Err(error) => {
                tracing::debug!(%error, "SO_RCVLOWAT refused; waking at every packet");
                self.enabled = false;
            }
        }
    }

    /// The mark last set (1 when none was).
    #[cfg(test)]
    pub(crate) fn current(&self) -> usize {
        self.current
    }
}

#[cfg(target_os = "linux")]
fn set_low_water(stream: &TcpStream, bytes: usize) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: the descriptor belongs to `stream`, which is borrowed for the whole call, so it
    // is open; the option value points to a live `c_int` and the length passed is its size.
    let result = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn set_low_water(_stream: &TcpStream, _bytes: usize) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use tokio::net::TcpListener;

    /// The mark as the kernel holds it.
    fn low_water(stream: &TcpStream) -> usize {
        let mut value: libc::c_int = 0;
        let mut length = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `stream` is open while borrowed; value and length point to live locals of
        // the sizes the call expects.
        let result = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                (&mut value as *mut libc::c_int).cast(),
                &mut length,
            )
        };
        assert_eq!(result, 0, "{}", std::io::Error::last_os_error());
        value as usize
    }

    #[tokio::test]
    async fn the_mark_follows_the_bytes_still_expected_up_to_the_cap() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stream, _accepted) = tokio::join!(TcpStream::connect(address), listener.accept());
        let stream = stream.unwrap();
        let mut wait = ReceiveWait::default();
        assert_eq!(low_water(&stream), 1);
        wait.prepare(&stream, 10 << 20);
        assert_eq!(wait.current(), MAX_LOW_WATER);
        assert_eq!(low_water(&stream), MAX_LOW_WATER);
        wait.prepare(&stream, 1000);
        assert_eq!(low_water(&stream), 1000);
        wait.prepare(&stream, 4);
        assert_eq!(low_water(&stream), 4);
        wait.prepare(&stream, 0);
        assert_eq!(
            low_water(&stream),
            1,
            "never 0, never above what is expected"
        );
    }
}
