//! CRC32C of a v2 batch.
//!
//! The `crc32c` crate runs three hardware CRC streams in parallel, which wins on large
//! batches but costs a fixed setup (about 190 instructions measured on a 195-byte batch)
//! that dominates small ones. Below [`SERIAL_BELOW`] bytes one serial stream of the SSE4.2
//! `crc32` instruction is cheaper; everything else, and every machine without SSE4.2, goes
//! to the crate.

/// Batches shorter than this are checksummed by the serial loop: one stream runs at 8 bytes
/// per `crc32` latency (3 cycles), the crate's three at about three times that after its
/// setup, so the serial loop only wins while the setup dominates (one-record batches).
const SERIAL_BELOW: usize = 320;

/// CRC32C (Castagnoli) of `data`, the same value as `crc32c::crc32c(data)`.
#[inline]
pub(crate) fn crc32c(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if data.len() < SERIAL_BELOW && std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: `serial_sse42` needs only the SSE4.2 instructions, and the check just
        // above found them on the CPU this runs on. The function reads `data` through safe
        // slice methods only, so there is no other precondition.
        return unsafe { serial_sse42(data) };
    }
    crc32c::crc32c(data)
}

/// One serial stream of `crc32` instructions, 8 bytes at a time, then the tail byte by byte.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn serial_sse42(data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut crc = u64::from(u32::MAX);
    let mut words = data.chunks_exact(8);
    for word in words.by_ref() {
        let mut le = [0u8; 8];
        le.copy_from_slice(word);
        crc = _mm_crc32_u64(crc, u64::from_le_bytes(le));
    }
    let mut crc = crc as u32;
    for &byte in words.remainder() {
        crc = _mm_crc32_u8(crc, byte);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64: deterministic bytes without a dev-dependency on a RNG.
    fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
        let mut s = seed | 1;
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as u8
            })
            .collect()
    }

    #[test]
    fn matches_the_crate_on_every_length_below_1024_and_every_alignment() {
        let data = random_bytes(1024 + 8, 0x9e37_79b9_7f4a_7c15);
        for len in 0..1024 {
            for skew in 0..8 {
                let input = &data[skew..skew + len];
                assert_eq!(
                    crc32c(input),
                    crc32c::crc32c(input),
                    "length {len}, skew {skew}"
                );
            }
        }
    }

    #[test]
    fn matches_the_known_check_value() {
        // The CRC-32C check value from the Castagnoli catalogue (RFC 3720 appendix B.4).
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(&[]), 0);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_serial_loop_itself_matches_when_the_cpu_has_sse42() {
        if !std::arch::is_x86_feature_detected!("sse4.2") {
            return;
        }
        for len in [0, 1, 7, 8, 9, 63, 64, 195, 511, 512, 4096] {
            let input = random_bytes(len, len as u64 + 3);
            // SAFETY: SSE4.2 was detected just above.
            let serial = unsafe { serial_sse42(&input) };
            assert_eq!(serial, crc32c::crc32c(&input), "length {len}");
        }
    }
}
