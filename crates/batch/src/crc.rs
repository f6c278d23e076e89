//! CRC32C of a v2 batch.
//!
//! The CRC covers every byte of every batch, so on large uncompressed batches it is the
//! largest cost after the kernel's receive copy. Three paths, by length:
//! - below [`SPLIT_FROM`] bytes (a one-record batch without headers): one serial stream of
//!   the SSE4.2 `crc32` instruction. It is bound by that instruction's latency (3 cycles per
//!   8 bytes) but is the fewest instructions, and there the decode hides most of its latency
//!   behind the work that follows (splitting measured no faster);
//! - from there to [`SMALL_BELOW`]: three streams run here, with no setup beyond splitting
//!   the input in three, joined with two carry-less multiplications. Measured on its own,
//!   with each call waiting for the last: 700 B in 27 ns against 45 ns for `crc-fast` and
//!   65 ns for the `crc32c` crate;
//! - from 1 KiB, and every input on CPUs without SSE4.2 and PCLMULQDQ: the `crc-fast` crate,
//!   which folds 64-byte lanes with carry-less multiplications (VPCLMULQDQ on AVX-512
//!   machines). On this machine's AMD EPYC it is 2.3-2.4x the `crc32c` crate from 1.5 KiB up
//!   (16 KiB: 231 ns against 558 ns, 71 GB/s). Around 1 KiB it overtakes the three streams:
//!   a 10 x 100 B batch (1.3 KB) decodes in 135 ns with it, 145 ns with three streams.
//!
//! How the streams join: the `crc32` instruction keeps a 32-bit remainder `r`; feeding it
//! `n` more bytes `B` gives `r * x^(8n) + crc0(B) mod P`, where `crc0(B)` is `B`'s remainder
//! from zero. So the three streams' remainders `a`, `b`, `c` (over thirds of `n` bytes each)
//! combine as `a * x^(16n) + b * x^(8n) + c`. A product `r * x^e mod P` is one carry-less
//! multiplication of `r` by the constant `x^(e-33) mod P`, reduced by one `crc32` of the
//! 64-bit product (the reduction multiplies by `x^32`, and the bit-reflected product carries
//! one more factor of `x`). The constants are computed at compile time for every third.

/// Inputs shorter than this take the three-stream path (or the serial one when they are too
/// short to split); longer ones `crc-fast`, which is faster from here on.
const SMALL_BELOW: usize = 1024;
/// Below this the serial loop: see the module comment.
const SPLIT_FROM: usize = 200;
/// The largest third, in 8-byte words, that [`SMALL_BELOW`] allows.
const MAX_THIRD_WORDS: usize = SMALL_BELOW / 24;

/// CRC32C (Castagnoli) of `data`, the same value as `crc32c::crc32c(data)`.
#[inline]
pub(crate) fn crc32c(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if data.len() < SMALL_BELOW && has_crc_instructions() {
        // SAFETY: both functions need only SSE4.2 (and `three_streams` PCLMULQDQ), which
        // `has_crc_instructions` found on the CPU this runs on. They read `data` through safe
        // slice methods only, so there is no other precondition.
        return unsafe {
            if data.len() < SPLIT_FROM {
                !serial_sse42(!0, data)
            } else {
                three_streams(data)
            }
        };
    }
    large(data)
}

/// CRC32C by the `crc-fast` crate (see the module comment).
#[inline(never)]
fn large(data: &[u8]) -> u32 {
    // CRC-32/ISCSI is CRC32C: the same polynomial, reflection, initial value and final xor.
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, data) as u32
}

/// Whether the CPU has SSE4.2 and PCLMULQDQ, found once per process and kept in one byte:
/// asked per batch, the standard library's two feature lookups were ~14 instructions of a
/// one-record batch's ~970.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn has_crc_instructions() -> bool {
    use std::sync::atomic::Ordering;
    match CRC_INSTRUCTIONS.load(Ordering::Relaxed) {
        FOUND => true,
        MISSING => false,
        _ => detect_crc_instructions(),
    }
}

#[cfg(target_arch = "x86_64")]
static CRC_INSTRUCTIONS: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(UNKNOWN);
#[cfg(target_arch = "x86_64")]
const UNKNOWN: u8 = 0;
#[cfg(target_arch = "x86_64")]
const FOUND: u8 = 1;
#[cfg(target_arch = "x86_64")]
const MISSING: u8 = 2;

// Racing threads store the same answer, so a relaxed store is enough.
#[cfg(target_arch = "x86_64")]
#[cold]
#[inline(never)]
fn detect_crc_instructions() -> bool {
    let found = std::arch::is_x86_feature_detected!("sse4.2")
        && std::arch::is_x86_feature_detected!("pclmulqdq");
    let state = if found { FOUND } else { MISSING };
    CRC_INSTRUCTIONS.store(state, std::sync::atomic::Ordering::Relaxed);
    found
}

/// One serial stream of `crc32` instructions continuing from remainder `crc` (not inverted):
/// 8 bytes at a time, then the last 4, 2 and 1 (a byte loop would add up to 7 latencies).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn serial_sse42(crc: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8};
    let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().unwrap_or_default());
    let mut crc = u64::from(crc);
    // Four words a step, then up to three: a one-word loop with the compiler's unrolling ran
    // up to seven single-word steps first (a 150-byte batch: 83 instructions in all).
    let mut blocks = data.chunks_exact(32);
    for block in blocks.by_ref() {
        crc = _mm_crc32_u64(crc, word(&block[..8]));
        crc = _mm_crc32_u64(crc, word(&block[8..16]));
        crc = _mm_crc32_u64(crc, word(&block[16..24]));
        crc = _mm_crc32_u64(crc, word(&block[24..]));
    }
    let mut words = blocks.remainder().chunks_exact(8);
    for bytes in words.by_ref() {
        crc = _mm_crc32_u64(crc, word(bytes));
    }
    let mut crc = crc as u32;
    let mut tail = words.remainder();
    if let Some((four, rest)) = tail.split_first_chunk::<4>() {
        crc = _mm_crc32_u32(crc, u32::from_le_bytes(*four));
        tail = rest;
    }
    if let Some((two, rest)) = tail.split_first_chunk::<2>() {
        crc = _mm_crc32_u16(crc, u16::from_le_bytes(*two));
        tail = rest;
    }
    if let Some(&byte) = tail.first() {
        crc = _mm_crc32_u8(crc, byte);
    }
    crc
}

/// `x^e mod P` for CRC32C's `P`, bit-reflected as the `crc32` instruction keeps remainders.
const fn x_pow_mod_p(e: usize) -> u32 {
    const P_REFLECTED: u32 = 0x82f6_3b78;
    let mut r: u32 = 1 << 31; // x^0
    let mut i = 0;
    while i < e {
        // Times x: one step towards the low bit; x^32 folds back in as P.
        r = if r & 1 != 0 {
            (r >> 1) ^ P_REFLECTED
        } else {
            r >> 1
        };
        i += 1;
    }
    r
}

/// For a third of `w` words: the constants that shift a remainder past one third and past
/// two (`x^(64w - 33)` and `x^(128w - 33)`), indexed by `w`.
static JOIN_CONSTANTS: [(u32, u32); MAX_THIRD_WORDS + 1] = {
    let mut table = [(0, 0); MAX_THIRD_WORDS + 1];
    let mut w = 1;
    while w <= MAX_THIRD_WORDS {
        table[w] = (x_pow_mod_p(64 * w - 33), x_pow_mod_p(128 * w - 33));
        w += 1;
    }
    table
};

/// `r * x^e mod P`, with `constant = x^(e-33) mod P`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2,pclmulqdq")]
fn shift(r: u32, constant: u32) -> u32 {
    use std::arch::x86_64::{
        _mm_clmulepi64_si128, _mm_crc32_u64, _mm_cvtsi128_si64, _mm_cvtsi64_si128,
    };
    let product = _mm_clmulepi64_si128(
        _mm_cvtsi64_si128(i64::from(r)),
        _mm_cvtsi64_si128(i64::from(constant)),
        0,
    );
    _mm_crc32_u64(0, _mm_cvtsi128_si64(product) as u64) as u32
}

/// Three interleaved streams over the first `24w` bytes (`w` words each), joined, then the
/// rest serially. `data.len()` is from [`SPLIT_FROM`] to below [`SMALL_BELOW`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2,pclmulqdq")]
fn three_streams(data: &[u8]) -> u32 {
    use std::arch::x86_64::_mm_crc32_u64;
    let w = (data.len() / 24).min(MAX_THIRD_WORDS);
    let (split, rest) = data.split_at(24 * w);
    let (first, others) = split.split_at(8 * w);
    let (second, third) = others.split_at(8 * w);
    let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().unwrap_or_default());
    let (mut a, mut b, mut c) = (u64::from(u32::MAX), 0u64, 0u64);
    for ((x, y), z) in first
        .chunks_exact(8)
        .zip(second.chunks_exact(8))
        .zip(third.chunks_exact(8))
    {
        a = _mm_crc32_u64(a, word(x));
        b = _mm_crc32_u64(b, word(y));
        c = _mm_crc32_u64(c, word(z));
    }
    let (past_one, past_two) = JOIN_CONSTANTS[w];
    let joined = shift(a as u32, past_two) ^ shift(b as u32, past_one) ^ c as u32;
    !serial_sse42(joined, rest)
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
    fn matches_the_crate_on_every_length_through_the_small_paths_and_every_alignment() {
        let data = random_bytes(SMALL_BELOW + 64 + 8, 0x9e37_79b9_7f4a_7c15);
        for len in 0..SMALL_BELOW + 64 {
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

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_kept_answer_is_the_cpus_first_time_and_after() {
        let cpu = std::arch::is_x86_feature_detected!("sse4.2")
            && std::arch::is_x86_feature_detected!("pclmulqdq");
        assert_eq!(has_crc_instructions(), cpu);
        assert_ne!(
            CRC_INSTRUCTIONS.load(std::sync::atomic::Ordering::Relaxed),
            UNKNOWN
        );
        assert_eq!(has_crc_instructions(), cpu);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_three_streams_themselves_match_when_the_cpu_has_the_instructions() {
        if !has_crc_instructions() {
            return;
        }
        let data = random_bytes(SMALL_BELOW, 11);
        // From the shortest input that fills each stream with one word, so every join
        // constant is used, not only those of the lengths `crc32c` sends here.
        for len in 24..SMALL_BELOW {
            // SAFETY: SSE4.2 and PCLMULQDQ were detected just above.
            let split = unsafe { three_streams(&data[..len]) };
            assert_eq!(split, crc32c::crc32c(&data[..len]), "length {len}");
        }
    }

    #[test]
    fn the_large_path_matches_the_crc32c_crate_on_lengths_around_its_lane_sizes() {
        let data = random_bytes(70_000, 5);
        let mut lengths: Vec<usize> = (SMALL_BELOW..SMALL_BELOW + 600).collect();
        for lane in [64usize, 128, 256, 512, 1024, 4096, 16384, 65536] {
            lengths.extend((lane * 3).saturating_sub(3)..lane * 3 + 3);
        }
        lengths.push(data.len());
        for len in lengths.into_iter().filter(|&l| l <= data.len()) {
            for skew in [0, 1, 7] {
                let input = &data[skew.min(len)..len];
                assert_eq!(
                    crc32c(input),
                    crc32c::crc32c(input),
                    "length {len} skew {skew}"
                );
            }
        }
        // And below SMALL_BELOW too, as on CPUs without the instructions.
        for len in 0..300 {
            assert_eq!(
                large(&data[..len]),
                crc32c::crc32c(&data[..len]),
                "length {len}"
            );
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
            let serial = unsafe { !serial_sse42(!0, &input) };
            assert_eq!(serial, crc32c::crc32c(&input), "length {len}");
        }
    }
}
