//! The per-thread buffer pool: byte buffers for decompressed output.
//!
//! Decoding a batch needs an output buffer as large as the batch's content. Allocating (and
//! zeroing) a fresh one per batch is what made Kafka's Java LZ4 decoder slow on small batches
//! (KAFKA-5150), so each thread keeps a few buffers and reuses them. The pool knows nothing about
//! codecs: krec-batch also decodes gzip, snappy and zstd into [`PooledBuf`]s.
//!
//! The pool is bounded twice: at most [`PoolConfig::max_buffers`] buffers are kept per thread, and
//! a buffer whose capacity is above [`PoolConfig::max_retained_capacity`] is freed when dropped
//! instead of kept, so one huge batch does not pin its memory for the life of the thread.

use std::cell::RefCell;
use std::fmt;
use std::ops::{Deref, DerefMut};

/// Bounds of the per-thread buffer pool (the calling thread's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    /// How many idle buffers the thread keeps; further returned buffers are freed.
    pub max_buffers: usize,
    /// Buffers whose capacity is larger than this (in bytes) are freed rather than kept.
    pub max_retained_capacity: usize,
}

impl PoolConfig {
    /// 8 buffers of at most 8 MiB each: enough for a decode worker that holds a few batches at a
    /// time, while bounding what an idle thread pins to 64 MiB.
    pub const DEFAULT: PoolConfig = PoolConfig {
        max_buffers: 8,
        max_retained_capacity: 8 * 1024 * 1024,
    };
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A snapshot of the per-thread buffer pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Idle buffers currently kept.
    pub buffers_kept: usize,
    /// Sum of the capacities of the kept buffers, in bytes.
    pub retained_capacity: usize,
    /// [`PooledBuf::take`] calls served by a kept buffer.
    pub reused: u64,
    /// [`PooledBuf::take`] calls that found the pool empty and started with no allocation.
    pub started_empty: u64,
    /// Buffers given back and kept.
    pub returned: u64,
    /// Buffers given back and freed because a bound was reached.
    pub freed: u64,
}

struct ThreadPool {
    config: PoolConfig,
    buffers: Vec<Vec<u8>>,
    stats: PoolStats,
}

impl ThreadPool {
    const EMPTY: ThreadPool = ThreadPool {
        config: PoolConfig::DEFAULT,
        buffers: Vec::new(),
        stats: PoolStats {
            buffers_kept: 0,
            retained_capacity: 0,
            reused: 0,
            started_empty: 0,
            returned: 0,
            freed: 0,
        },
    };

    fn take(&mut self) -> Vec<u8> {
        match self.buffers.pop() {
            Some(buf) => {
                self.stats.reused += 1;
                buf
            }
            None => {
                self.stats.started_empty += 1;
                Vec::new()
            }
        }
    }

    fn give_back(&mut self, buf: Vec<u8>) {
        let fits = buf.capacity() <= self.config.max_retained_capacity
            && self.buffers.len() < self.config.max_buffers;
        if fits {
            self.stats.returned += 1;
            self.buffers.push(buf);
        } else {
            self.stats.freed += 1;
        }
    }

    fn set_config(&mut self, config: PoolConfig) {
        self.config = config;
        // Re-filing kept buffers under a new config is not a "return", so the counters stay put.
        let max_retained_capacity = config.max_retained_capacity;
        self.buffers
            .retain(|buf| buf.capacity() <= max_retained_capacity);
        self.buffers.truncate(config.max_buffers);
    }

    // The kept-buffer figures are computed here rather than tracked, keeping take and give-back
    // (the per-batch path) to one counter increment each.
    fn stats(&self) -> PoolStats {
        PoolStats {
            buffers_kept: self.buffers.len(),
            retained_capacity: self.buffers.iter().map(Vec::capacity).sum(),
            ..self.stats
        }
    }
}

thread_local! {
    // A const initializer spares every access the lazy-initialization check.
    static POOL: RefCell<ThreadPool> = const { RefCell::new(ThreadPool::EMPTY) };
}

/// Sets the bounds of the per-thread buffer pool; kept buffers that no longer fit are freed now.
pub fn set_thread_pool_config(config: PoolConfig) {
    let _ = POOL.try_with(|pool| {
        if let Ok(mut pool) = pool.try_borrow_mut() {
            pool.set_config(config);
        }
    });
}

/// The bounds of the per-thread buffer pool.
pub fn thread_pool_config() -> PoolConfig {
    POOL.try_with(|pool| pool.borrow().config)
        .unwrap_or_default()
}

/// A snapshot of the per-thread buffer pool: what it keeps now and what it has done so far.
pub fn thread_pool_stats() -> PoolStats {
    POOL.try_with(|pool| pool.borrow().stats())
        .unwrap_or_default()
}

/// A growable byte buffer taken from the per-thread buffer pool.
///
/// It dereferences to the bytes written so far (`len()` of them). Dropping it hands the allocation
/// back to the pool of the thread that drops it, within that pool's bounds.
///
/// Beyond `len()` the allocation holds bytes from earlier uses; they are never visible through
/// this type (only [`writable`](Self::writable) hands them out, to be overwritten), which is what
/// lets a reused buffer skip zeroing without leaking stale data.
pub struct PooledBuf {
    /// `storage.len()` is how many bytes are initialized, which can exceed `len`.
    storage: Vec<u8>,
    len: usize,
    /// Size of the region handed out by the last `writable` call, bounding `commit`.
    open_region: usize,
}

impl PooledBuf {
    /// An empty buffer; reuses a kept allocation when the per-thread buffer pool has one.
    #[inline]
    pub fn take() -> PooledBuf {
        let storage = POOL
            .try_with(|pool| match pool.try_borrow_mut() {
                Ok(mut pool) => pool.take(),
                Err(_) => Vec::new(),
            })
            .unwrap_or_default();
        PooledBuf {
            storage,
            len: 0,
            open_region: 0,
        }
    }

    /// Number of bytes written.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no bytes are written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Capacity of the underlying allocation.
    pub fn capacity(&self) -> usize {
        self.storage.capacity()
    }

    /// Forgets all written bytes, keeping the allocation.
    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// Shortens the written bytes to `len`; does nothing if `len >= self.len()`.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
        self.open_region = 0;
    }

    /// Makes room for at least `additional` more bytes without initializing them.
    pub fn reserve(&mut self, additional: usize) {
        let wanted = self.len.saturating_add(additional);
        self.storage
            .reserve(wanted.saturating_sub(self.storage.len()));
    }

    /// Makes room for `additional` more bytes, growing geometrically but never past `ceiling`
    /// total bytes (unless `len() + additional` itself is larger), so that a caller-given size
    /// limit also bounds the allocation, not only the content.
    pub(crate) fn reserve_within(&mut self, additional: usize, ceiling: usize) {
        let needed = self.len.saturating_add(additional);
        let capacity = self.storage.capacity();
        if needed <= capacity {
            return;
        }
        let target = capacity.saturating_mul(2).min(ceiling).max(needed);
        self.storage
            .reserve_exact(target.saturating_sub(self.storage.len()));
    }

    /// Appends `data`.
    pub fn extend_from_slice(&mut self, data: &[u8]) {
        let end = self.len + data.len();
        if end <= self.storage.len() {
            self.storage[self.len..end].copy_from_slice(data);
        } else {
            // Dropping the stale tail first lets Vec copy straight in, instead of zeroing the new
            // room and then overwriting it.
            self.storage.truncate(self.len);
            self.storage.extend_from_slice(data);
        }
        self.len = end;
        self.open_region = 0;
    }

    /// An initialized writable region of exactly `additional` bytes after `len()` (contents
    /// unspecified, never uninitialized memory); grows capacity as needed. Nothing is visible
    /// until [`commit`](Self::commit).
    #[inline]
    pub fn writable(&mut self, additional: usize) -> &mut [u8] {
        let end = self.ensure_initialized(additional);
        self.open_region = additional;
        &mut self.storage[self.len..end]
    }

    /// Lends the `additional` bytes after `len()` (initialized, contents unspecified) to `fill`,
    /// and makes the first `n` of them part of the buffer when `fill` returns `Ok(n)`; grows as
    /// [`reserve_within`](Self::reserve_within) does when the buffer is short. One bounds test
    /// on a warm buffer, where `reserve_within`, `writable` and `commit` make five: the
    /// one-block LZ4 frame of a small batch pays it once per batch.
    ///
    /// # Panics
    /// If `fill` claims more than `additional` bytes: a caller bug, never caused by input data.
    #[inline(always)]
    pub(crate) fn fill_spare<E>(
        &mut self,
        additional: usize,
        ceiling: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<usize, E>,
    ) -> Result<usize, E> {
        let end = self.len.saturating_add(additional);
        if self.storage.len() < end {
            self.reserve_within(additional, ceiling);
            self.initialize_to(end);
        }
        let written = fill(&mut self.storage[self.len..end])?;
        assert!(
            written <= additional,
            "fill_spare: {written} of {additional} bytes"
        );
        self.len += written;
        Ok(written)
    }

    /// Like [`writable`](Self::writable), and also lends `self[dict_start..len()]` unchanged: the
    /// history a linked LZ4 block may copy from while its output goes into the region.
    pub(crate) fn history_and_writable(
        &mut self,
        dict_start: usize,
        additional: usize,
    ) -> (&[u8], &mut [u8]) {
        self.ensure_initialized(additional);
        self.open_region = additional;
        let (written, rest) = self.storage.split_at_mut(self.len);
        (
            &written[dict_start.min(self.len)..],
            &mut rest[..additional],
        )
    }

    /// Makes the first `n` bytes of the last [`writable`](Self::writable) region part of the
    /// buffer.
    ///
    /// # Panics
    /// If `n` exceeds that region: a caller bug, never caused by input data.
    #[inline]
    pub fn commit(&mut self, n: usize) {
        assert!(
            n <= self.open_region,
            "PooledBuf::commit({n}) beyond the writable region of {} bytes",
            self.open_region
        );
        self.len += n;
        self.open_region = 0;
    }

    /// Zero-copy conversion into [`bytes::Bytes`]; the allocation goes back to the pool of the
    /// thread that drops the last clone. Costs one small allocation for the shared owner, none
    /// when the buffer is empty.
    pub fn into_bytes(self) -> bytes::Bytes {
        if self.is_empty() {
            return bytes::Bytes::new();
        }
        bytes::Bytes::from_owner(BytesOwner(self))
    }

    // Inline, with the growth out of line: a warm buffer is already initialized that far,
    // and a call with its register saves showed in one-record LZ4 batches.
    #[inline(always)]
    fn ensure_initialized(&mut self, additional: usize) -> usize {
        let end = self
            .len
            .checked_add(additional)
            .expect("PooledBuf::writable: size overflows usize");
        if self.storage.len() < end {
            self.initialize_to(end);
        }
        end
    }

    #[cold]
    #[inline(never)]
    fn initialize_to(&mut self, end: usize) {
        self.storage.resize(end, 0);
    }
}

impl Default for PooledBuf {
    fn default() -> Self {
        Self::take()
    }
}

impl Drop for PooledBuf {
    // Only the test inline: a buffer that never allocated has nothing to give back, and a
    // small drop lets the drop of every type holding one (krec-batch's batch body, dropped at
    // the end of every walk) be inlined instead of called.
    #[inline]
    fn drop(&mut self) {
        if self.storage.capacity() != 0 {
            self.give_back();
        }
    }
}

impl PooledBuf {
    #[inline(never)]
    fn give_back(&mut self) {
        let storage = std::mem::take(&mut self.storage);
        // During thread teardown the pool may already be gone; the buffer is then simply freed.
        let _ = POOL.try_with(|pool| {
            if let Ok(mut pool) = pool.try_borrow_mut() {
                pool.give_back(storage);
            }
        });
    }
}

impl Deref for PooledBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.storage[..self.len]
    }
}

impl DerefMut for PooledBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.storage[..self.len]
    }
}

impl AsRef<[u8]> for PooledBuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl fmt::Debug for PooledBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PooledBuf")
            .field("len", &self.len)
            .field("capacity", &self.storage.capacity())
            .finish()
    }
}

struct BytesOwner(PooledBuf);

impl AsRef<[u8]> for BytesOwner {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writable_then_commit_makes_bytes_visible() {
        let mut buf = PooledBuf::take();
        buf.extend_from_slice(b"ab");
        let region = buf.writable(3);
        assert_eq!(region.len(), 3);
        region.copy_from_slice(b"cde");
        assert_eq!(&buf[..], b"ab");
        buf.commit(2);
        assert_eq!(&buf[..], b"abcd");
    }

    #[test]
    #[should_panic(expected = "beyond the writable region")]
    fn commit_beyond_region_panics() {
        let mut buf = PooledBuf::take();
        buf.writable(2);
        buf.commit(3);
    }

    #[test]
    fn fill_spare_appends_what_fill_wrote_and_nothing_on_error() {
        let mut buf = PooledBuf::take();
        buf.extend_from_slice(b"ab");
        let n = buf.fill_spare(4, 100, |spare| {
            assert_eq!(spare.len(), 4);
            spare[..3].copy_from_slice(b"cde");
            Ok::<_, ()>(3)
        });
        assert_eq!((n, &buf[..]), (Ok(3), &b"abcde"[..]));
        let failed = buf.fill_spare(4, 100, |spare| {
            spare.copy_from_slice(b"zzzz");
            Err(())
        });
        assert_eq!((failed, &buf[..]), (Err(()), &b"abcde"[..]));
        // A new buffer grows to the region it lends; nothing is kept until `fill` says so.
        let mut small = PooledBuf::take();
        small.fill_spare(9, 9, |_| Ok::<_, ()>(0)).unwrap();
        assert!(small.capacity() >= 9);
        assert!(small.is_empty());
    }

    #[test]
    #[should_panic(expected = "fill_spare: 5 of 4 bytes")]
    fn fill_spare_panics_when_fill_claims_more_than_it_was_lent() {
        let mut buf = PooledBuf::take();
        let _ = buf.fill_spare(4, 100, |_| Ok::<_, ()>(5));
    }

    #[test]
    fn truncate_never_grows() {
        let mut buf = PooledBuf::take();
        buf.extend_from_slice(b"hello");
        buf.truncate(10);
        assert_eq!(&buf[..], b"hello");
        buf.truncate(2);
        assert_eq!(&buf[..], b"he");
        buf.extend_from_slice(b"y");
        assert_eq!(&buf[..], b"hey");
    }
}
