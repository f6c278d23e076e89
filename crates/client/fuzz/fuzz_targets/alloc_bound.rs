//! The allocation bound of the response targets, checked with krec-testkit's counting
//! allocator (bytes requested on this thread; on top of `-malloc_limit_mb`, which only sees
//! single allocations).

/// What decoding `input_len` bytes may request: each element a body announces is there on
/// the wire, so memory grows with the input by at most a structure's size per wire byte.
pub fn bound(input_len: usize) -> u64 {
    64 * input_len as u64 + (16 << 10)
}
