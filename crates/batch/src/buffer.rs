//! The decompression buffer: krec-lz4's per-thread pooled buffer, used for every codec so
//! one pool serves a worker thread whatever the codec.

pub(crate) use krec_lz4::pool::PooledBuf;
