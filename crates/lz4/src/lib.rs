//! krec-lz4: Kafka's LZ4 frames decoded straight into buffers from the per-thread buffer pool.
//!
//! Kafka compresses a record batch body (and, in the legacy formats, a wrapper message's value)
//! as one LZ4 *frame*. [`decode_frame`] parses the frame itself and decodes each block with
//! `lz4_flex::block` directly into a [`PooledBuf`]: no `io::Read` stream, no intermediate block
//! buffer, stored blocks copied once. Independent blocks (what the Java client and librdkafka
//! write, see `tests/data/`) and linked blocks (the lz4 library's frame default) both work;
//! checksums are verified when present, and a caller-given limit bounds the decoded size before
//! anything is allocated. The frame Kafka producers write (independent blocks, nothing optional)
//! takes a short path that makes only the checks it needs and leaves every other frame, and
//! every fault, to the general decoder.
//!
//! Encoding writes the frame the Java client writes (independent 64 KiB blocks, no checksums),
//! each block compressed by liblz4 (the `lz4` crate) at acceleration 1, the compressor lz4-java
//! uses at Kafka's default `compression.lz4.level`, straight into the output buffer.
//!
//! ```
//! use krec_lz4::{decode_frame, encode_frame, DecodeOptions, EncodeOptions};
//!
//! let frame = encode_frame(b"hello, kafka", &EncodeOptions::default());
//! let decoded = decode_frame(&frame, &DecodeOptions::default()).unwrap();
//! assert_eq!(&decoded[..], b"hello, kafka");
//! ```
//!
//! Modules: [`frame`] (the format), [`pool`] (the per-thread buffer pool, shared with
//! krec-batch's other codecs), and the [`Error`] type.
//!
//! # Public surface
//!
//! - Decoding: [`decode_frame`], [`decode_frame_into`], [`DecodeOptions`], [`stored_content`].
//! - Encoding: [`encode_frame`], [`encode_frame_into`], [`encode_frame_with_mode`],
//!   [`encode_frame_into_pooled`] (krec-batch's batch writer: into a pooled buffer, no
//!   allocation once warm), [`max_frame_size`], [`EncodeOptions`], [`BlockMode`],
//!   [`BlockSize`], [`HeaderChecksum`].
//! - The buffer pool: [`PooledBuf`], [`PoolConfig`], [`PoolStats`],
//!   [`set_thread_pool_config`], [`thread_pool_config`], [`thread_pool_stats`].
//! - [`Error`]. Internal: the block decoder, checksums and header parsing inside [`frame`].
//!
//! How this crate fits into krec (the crates, the hot path, the invariants):
//! `docs/ARCHITECTURE.md` in the repository.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod error;
pub mod frame;
pub mod pool;

pub use error::Error;
pub use frame::{
    decode_frame, decode_frame_into, encode_frame, encode_frame_into, encode_frame_into_pooled,
    encode_frame_with_mode, max_frame_size, stored_content, BlockMode, BlockSize, DecodeOptions,
    EncodeOptions, HeaderChecksum,
};
pub use pool::{
    set_thread_pool_config, thread_pool_config, thread_pool_stats, PoolConfig, PoolStats, PooledBuf,
};
