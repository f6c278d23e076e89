//! The decompression buffer: krec-lz4's per-thread pooled buffer, used for every codec so
//! one pool serves a worker thread whatever the codec; and the caller-held one.

pub(crate) use krec_lz4::pool::PooledBuf;

/// A decompression buffer that the caller keeps from one walk to the next
/// ([`BatchWalk::with_buffer`](crate::BatchWalk::with_buffer)).
///
/// Without one, a walk's first compressed batch takes a buffer from the thread's pool and the
/// walk gives it back when it is dropped. That trip is small against a walk of many batches,
/// but a fetch response often holds one small batch per partition, whose walk it shows in
/// (see BENCHMARKS.md, krec-batch). A walk given this buffer decompresses into it and leaves
/// it filled, ready for the next walk.
///
/// It keeps its allocation, as large as the largest batch content it has held, which
/// [`DecodeConfig::max_decompressed_bytes`](crate::DecodeConfig::max_decompressed_bytes)
/// bounds; [`DecompressionBuffer::release`] hands the memory back.
///
/// ```
/// # use krec_batch::{BatchWalk, DecodeConfig, DecompressionBuffer};
/// # fn count(responses: &[Vec<u8>]) -> Result<u64, krec_batch::Error> {
/// let config = DecodeConfig::default();
/// let mut buffer = DecompressionBuffer::new();
/// let mut records = 0;
/// for input in responses {
///     let mut walk = BatchWalk::new(input, &config).with_buffer(&mut buffer);
///     while let Some(batch) = walk.next_ref() {
///         records += u64::from(batch?.record_count());
///     }
/// }
/// # Ok(records)
/// # }
/// ```
#[derive(Debug)]
pub struct DecompressionBuffer {
    pub(crate) buf: PooledBuf,
}

impl DecompressionBuffer {
    /// An empty buffer; it allocates when the first compressed batch is decompressed into it.
    pub const fn new() -> Self {
        DecompressionBuffer {
            buf: PooledBuf::empty(),
        }
    }

    /// Bytes allocated.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Frees the allocation (into the thread's pool, within its bounds); the buffer stays usable.
    pub fn release(&mut self) {
        self.buf = PooledBuf::empty();
    }
}

// Not derived: `PooledBuf`'s default takes a buffer from the pool, and this one is the
// caller's for good.
impl Default for DecompressionBuffer {
    fn default() -> Self {
        Self::new()
    }
}
