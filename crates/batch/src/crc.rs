//! CRC32C of a v2 batch.
//!
//! The CRC covers every byte of every batch, so on large uncompressed batches it is the
//! largest cost after the kernel's receive copy. Four paths, by length (the measurements
//! that chose them are in BENCHMARKS.md, krec-batch):
//! - below [`SPLIT_FROM`] bytes (a one-record batch without headers): one serial stream of
//!   the SSE4.2 `crc32` instruction: latency-bound, but the fewest instructions, and the
//!   decode hides most of its latency behind the work that follows;
//! - from there to [`THREE_FROM`] (a one-record batch with a few headers): two streams, in
//!   64-byte steps, then the rest serially: as fast as three streams inside a decode, with
//!   fewer instructions;
//! - from there to [`SMALL_BELOW`]: three streams, with no setup beyond splitting the input
//!   in three, joined with two carry-less multiplications;
//! - from [`SMALL_BELOW`], and every input on CPUs without SSE4.2 and PCLMULQDQ: the
//!   `crc-fast` crate, which folds 64-byte lanes with carry-less multiplications (VPCLMULQDQ
//!   on AVX-512 machines) and overtakes the three streams there.
//!
//! How the streams join: the `crc32` instruction keeps a 32-bit remainder `r`; feeding it
//! `n` more bytes `B` gives `r * x^(8n) + crc0(B) mod P`, where `crc0(B)` is `B`'s remainder
//! from zero. So the three streams' remainders `a`, `b`, `c` (over thirds of `n` bytes each)
//! combine as `a * x^(16n) + b * x^(8n) + c` (two streams' as `a * x^(8n) + b` over halves).
//! A product `r * x^e mod P` is one carry-less multiplication of `r` by the constant
//! `x^(e-33) mod P`, reduced by one `crc32` of the 64-bit product (the reduction multiplies by
//! `x^32`, and the bit-reflected product carries one more factor of `x`). The constants are
//! computed at compile time for every third and every half.

/// Inputs shorter than this take the `crc32` paths (when the CPU has the instructions);
/// longer ones `crc-fast`, which is faster from here on.
const SMALL_BELOW: usize = 1024;
/// Below this the serial loop: see the module comment.
const SPLIT_FROM: usize = 200;
/// From here three streams rather than two: see the module comment.
const THREE_FROM: usize = 320;
/// The largest third, in 8-byte words, that [`SMALL_BELOW`] allows.
const MAX_THIRD_WORDS: usize = SMALL_BELOW / 24;

/// CRC32C (Castagnoli) of `data`, the same value as `crc32c::crc32c(data)`.
#[inline]
pub(crate) fn crc32c(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if data.len() < INSTRUCTIONS_BELOW.load(std::sync::atomic::Ordering::Relaxed) {
        // SAFETY: the bound is above zero only once `detect_crc_instructions` found SSE4.2 and
        // PCLMULQDQ on this CPU, which is all `with_crc_instructions` needs.
        return unsafe { with_crc_instructions(data) };
    }
    without_crc_instructions(data)
}

/// [`crc32c`] of an input shorter than [`SMALL_BELOW`], by the `crc32` instruction.
///
/// # Safety
/// The CPU must have SSE4.2 and PCLMULQDQ. The functions called read `data` through safe
/// slice methods only, so there is no other precondition.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn with_crc_instructions(data: &[u8]) -> u32 {
    if data.len() < SPLIT_FROM {
        serial_crc32c(data)
    } else {
        split_streams(data)
    }
}

/// [`crc32c`] of an input the `crc32` paths do not take: long ones, all on CPUs without the
/// instructions, and any input before the CPU was asked (which this does, once).
#[inline(never)]
fn without_crc_instructions(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if !CRC_INSTRUCTIONS_KNOWN.load(std::sync::atomic::Ordering::Relaxed)
        && detect_crc_instructions()
        && data.len() < SMALL_BELOW
    {
        // SAFETY: `detect_crc_instructions` just found SSE4.2 and PCLMULQDQ.
        return unsafe { with_crc_instructions(data) };
    }
    large(data)
}

/// CRC32C by the `crc-fast` crate (see the module comment).
#[inline]
fn large(data: &[u8]) -> u32 {
    // CRC-32/ISCSI is CRC32C: the same polynomial, reflection, initial value and final xor.
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, data) as u32
}

/// Inputs shorter than this take the paths that use SSE4.2 and PCLMULQDQ: [`SMALL_BELOW`]
/// once the CPU is known to have both, 0 before that and on CPUs without them. Kept in one
/// word, so that one comparison per batch tests both the length and the CPU (the standard
/// library's feature lookups, or a separate flag, cost more per batch).
#[cfg(target_arch = "x86_64")]
static INSTRUCTIONS_BELOW: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Whether the CPU was asked yet.
#[cfg(target_arch = "x86_64")]
static CRC_INSTRUCTIONS_KNOWN: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

// Racing threads store the same answers, so relaxed stores are enough: a thread that sees
// the bound above zero sees a bound some thread set after finding the instructions on this
// CPU.
#[cfg(target_arch = "x86_64")]
#[cold]
#[inline(never)]
fn detect_crc_instructions() -> bool {
    use std::sync::atomic::Ordering;
    let found = std::arch::is_x86_feature_detected!("sse4.2")
        && std::arch::is_x86_feature_detected!("pclmulqdq");
    if found {
        INSTRUCTIONS_BELOW.store(SMALL_BELOW, Ordering::Relaxed);
    }
    CRC_INSTRUCTIONS_KNOWN.store(true, Ordering::Relaxed);
    found
}

/// CRC32C of `data` in one serial stream of `crc32` instructions: 128 bytes a step, then at
/// most one step each of 64, 32, 16, 8, 4, 2 and 1 bytes (the binary digits of what is left),
/// so a short input pays one length test per step and no loop bookkeeping beyond it
/// (iterator-based chunking spent more on bookkeeping than on the `crc32`s themselves).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn serial_crc32c(mut data: &[u8]) -> u32 {
    let mut crc = u64::from(u32::MAX);
    while let Some((block, rest)) = data.split_first_chunk::<128>() {
        crc = crc_words(crc, block);
        data = rest;
    }
    if let Some((block, rest)) = data.split_first_chunk::<64>() {
        crc = crc_words(crc, block);
        data = rest;
    }
    !tail_under_64(crc, data)
}

/// The serial steps after the 64-byte ones: `data` is shorter than 64 bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
#[inline]
fn tail_under_64(mut crc: u64, mut data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8};
    if let Some((block, rest)) = data.split_first_chunk::<32>() {
        crc = crc_words(crc, block);
        data = rest;
    }
    if let Some((block, rest)) = data.split_first_chunk::<16>() {
        crc = crc_words(crc, block);
        data = rest;
    }
    if let Some((block, rest)) = data.split_first_chunk::<8>() {
        crc = _mm_crc32_u64(crc, u64::from_le_bytes(*block));
        data = rest;
    }
    let mut crc = crc as u32;
    if let Some((four, rest)) = data.split_first_chunk::<4>() {
        crc = _mm_crc32_u32(crc, u32::from_le_bytes(*four));
        data = rest;
    }
    if let Some((two, rest)) = data.split_first_chunk::<2>() {
        crc = _mm_crc32_u16(crc, u16::from_le_bytes(*two));
        data = rest;
    }
    if let Some(&byte) = data.first() {
        crc = _mm_crc32_u8(crc, byte);
    }
    crc
}

/// `crc32` over every 8-byte word of a block whose length is a multiple of 8 known at compile
/// time (the loop unrolls fully).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
#[inline]
fn crc_words<const N: usize>(mut crc: u64, block: &[u8; N]) -> u64 {
    use std::arch::x86_64::_mm_crc32_u64;
    for word in block.chunks_exact(8) {
        crc = _mm_crc32_u64(crc, u64::from_le_bytes(word.try_into().unwrap_or_default()));
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

/// For [`two_streams`]: the constant that shifts a remainder past a half of `w` words
/// (`x^(64w - 33)`), indexed by `w`. Sized to a power of two so the index is masked rather
/// than checked; every half below [`THREE_FROM`] is in range.
static HALF_JOIN_CONSTANTS: [u32; 64] = {
    let mut table = [0; 64];
    let mut w = 1;
    while w < 64 {
        table[w] = x_pow_mod_p(64 * w - 33);
        w += 1;
    }
    table
};
const _: () = assert!(THREE_FROM / 16 < HALF_JOIN_CONSTANTS.len());

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

/// CRC32C of `data` (from [`SPLIT_FROM`] to below [`SMALL_BELOW`] bytes) in two or three
/// streams by its length. One call for both keeps the choice out of the batch reader, where
/// the serial path's callers paid for it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2,pclmulqdq")]
#[inline(never)]
fn split_streams(data: &[u8]) -> u32 {
    if data.len() < THREE_FROM {
        two_streams(data)
    } else {
        three_streams(data)
    }
}

/// Two interleaved streams over the first `64s` bytes (`s` steps of 32 bytes each), joined,
/// then the rest serially. `data` is at least 64 bytes (one step) and shorter than 1 KiB
/// (the constants' table); [`crc32c`] sends it from [`SPLIT_FROM`] to below [`THREE_FROM`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2,pclmulqdq")]
#[inline]
fn two_streams(data: &[u8]) -> u32 {
    // Whole 64-byte steps only (32 bytes of each stream): odd words would need a loop of
    // their own, while the serial tail reads up to 63 bytes in at most six steps.
    let steps = data.len() / 64;
    let (first, rest) = data.split_at(32 * steps);
    let (second, rest) = rest.split_at(32 * steps);
    let (mut a, mut b) = (u64::from(u32::MAX), 0u64);
    for (p, q) in first.chunks_exact(32).zip(second.chunks_exact(32)) {
        let (p, q) = (
            p.try_into().unwrap_or(&[0; 32]),
            q.try_into().unwrap_or(&[0; 32]),
        );
        a = crc_words::<32>(a, p);
        b = crc_words::<32>(b, q);
    }
    let constant = HALF_JOIN_CONSTANTS[(4 * steps) % HALF_JOIN_CONSTANTS.len()];
    let joined = shift(a as u32, constant) ^ b as u32;
    !tail_under_64(u64::from(joined), rest)
}

/// Three interleaved streams over the first `24w` bytes (`w` words each), joined, then the
/// rest serially. `data.len()` is from [`SPLIT_FROM`] to below [`SMALL_BELOW`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2,pclmulqdq")]
#[inline]
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
    !tail_under_64(u64::from(joined), rest)
}

/// `a * b mod P`, both bit-reflected as the `crc32` instruction keeps remainders (zlib's
/// `multmodp`, for CRC32C's `P`).
const fn multiply_mod_p(a: u32, mut b: u32) -> u32 {
    const P_REFLECTED: u32 = 0x82f6_3b78;
    let mut product = 0;
    let mut bit = 1u32 << 31; // x^0
    while bit != 0 {
        if a & bit != 0 {
            product ^= b;
        }
        bit >>= 1;
        b = if b & 1 != 0 {
            (b >> 1) ^ P_REFLECTED
        } else {
            b >> 1
        };
    }
    product
}

/// `x^(2^k) mod P` for every `k` a shift by up to `u64::MAX` bits needs.
static X_POW_POW2: [u32; 64] = {
    let mut table = [0; 64];
    table[0] = x_pow_mod_p(1);
    let mut k = 1;
    while k < 64 {
        table[k] = multiply_mod_p(table[k - 1], table[k - 1]);
        k += 1;
    }
    table
};

/// How the CRC32C of a message changes when bytes at its start change and its `tail_len`
/// last bytes do not: `crc32c(new) == crc32c(old) ^ crc32c_change(before, after, tail_len)`,
/// where `before` and `after` are the changed leading bytes (of equal length). The CRC is
/// linear: the change is the CRC (from zero) of `before ^ after` followed by `tail_len`
/// zero bytes, which is that of `before ^ after` times `x^(8 * tail_len)`, so the tail is
/// never read.
pub(crate) fn crc32c_change<const N: usize>(
    before: &[u8; N],
    after: &[u8; N],
    tail_len: usize,
) -> u32 {
    let mut delta = [0u8; N];
    for ((d, b), a) in delta.iter_mut().zip(before).zip(after) {
        *d = b ^ a;
    }
    // From zero: two inputs of one length share the effect of the initial value and the
    // final xor, so it cancels out.
    let from_zero = crc32c(&delta) ^ crc32c(&[0u8; N]);
    let mut shifted = from_zero;
    let bits = (tail_len as u64).wrapping_mul(8);
    let significant = (u64::BITS - bits.leading_zeros()) as usize;
    for (k, &power) in X_POW_POW2.iter().enumerate().take(significant) {
        if bits >> k & 1 != 0 {
            shifted = multiply_mod_p(power, shifted);
        }
    }
    shifted
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
    fn cpu_has_crc_instructions() -> bool {
        std::arch::is_x86_feature_detected!("sse4.2")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_kept_bound_is_the_cpus_after_the_first_crc() {
        use std::sync::atomic::Ordering;
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert!(CRC_INSTRUCTIONS_KNOWN.load(Ordering::Relaxed));
        let bound = if cpu_has_crc_instructions() {
            SMALL_BELOW
        } else {
            0
        };
        assert_eq!(INSTRUCTIONS_BELOW.load(Ordering::Relaxed), bound);
        assert_eq!(detect_crc_instructions(), cpu_has_crc_instructions());
        assert_eq!(INSTRUCTIONS_BELOW.load(Ordering::Relaxed), bound);
    }

    /// `split` against the `crc32c` crate on every length from `from` to below 1 KiB.
    /// Callers check first that the CPU has SSE4.2 and PCLMULQDQ.
    #[cfg(target_arch = "x86_64")]
    fn assert_split_matches(split: unsafe fn(&[u8]) -> u32, from: usize, seed: u64) {
        let data = random_bytes(SMALL_BELOW, seed);
        for len in from..SMALL_BELOW {
            // SAFETY: the caller found SSE4.2 and PCLMULQDQ on this CPU.
            let crc = unsafe { split(&data[..len]) };
            assert_eq!(crc, crc32c::crc32c(&data[..len]), "length {len}");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_two_streams_themselves_match_when_the_cpu_has_the_instructions() {
        if cpu_has_crc_instructions() {
            // From the shortest input that gives each stream one step to 15 steps (60 words
            // a stream, within the constants' table), each with every tail length: not only
            // the lengths `crc32c` sends here.
            assert_split_matches(two_streams, 64, 13);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_three_streams_themselves_match_when_the_cpu_has_the_instructions() {
        if cpu_has_crc_instructions() {
            // From the shortest input that fills each stream with one word, so every join
            // constant is used, not only those of the lengths `crc32c` sends here.
            assert_split_matches(three_streams, 24, 11);
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
    fn the_change_of_a_leading_part_matches_a_full_recompute() {
        let data = random_bytes(5000, 17);
        for tail_len in [0, 1, 7, 63, 64, 200, 1023, 1024, 4000] {
            let mut before = [0u8; 40];
            before.copy_from_slice(&data[..40]);
            let mut after = before;
            after[3] ^= 0x5a;
            after[39] = after[39].wrapping_add(1);
            let tail = &data[40..40 + tail_len];
            let old = crc32c::crc32c(&[&before[..], tail].concat());
            let new = crc32c::crc32c(&[&after[..], tail].concat());
            assert_eq!(
                old ^ crc32c_change(&before, &after, tail_len),
                new,
                "tail of {tail_len}"
            );
            assert_eq!(crc32c_change(&before, &before, tail_len), 0);
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
            let serial = unsafe { serial_crc32c(&input) };
            assert_eq!(serial, crc32c::crc32c(&input), "length {len}");
        }
    }
}
