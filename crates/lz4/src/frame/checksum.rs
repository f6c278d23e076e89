//! xxHash32 (seed 0), the checksum of every LZ4 frame field.

const PRIME_1: u32 = 0x9E37_79B1;
const PRIME_2: u32 = 0x85EB_CA77;
const PRIME_3: u32 = 0xC2B2_AE3D;
const PRIME_4: u32 = 0x27D4_EB2F;
const PRIME_5: u32 = 0x1656_67B1;

/// xxHash32 of `data` with seed 0.
#[inline]
pub(crate) fn xxh32(data: &[u8]) -> u32 {
    if data.len() < 16 {
        return xxh32_short(data);
    }
    twox_hash::XxHash32::oneshot(0, data)
}

/// xxHash32 (seed 0) of fewer than 16 bytes, as the xxHash spec defines it for inputs too
/// short for the four-lane loop. A frame header's descriptor is 2 to 14 bytes, and the
/// general routine's setup cost was most of the header check on small batches. A `const fn`,
/// so the descriptor table below is built by this same code at compile time.
#[inline(always)]
const fn xxh32_short(data: &[u8]) -> u32 {
    let mut hash = PRIME_5.wrapping_add(data.len() as u32);
    let mut at = 0;
    while at + 4 <= data.len() {
        let lane = u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
        hash = hash.wrapping_add(lane.wrapping_mul(PRIME_3));
        hash = hash.rotate_left(17).wrapping_mul(PRIME_4);
        at += 4;
    }
    while at < data.len() {
        hash = hash.wrapping_add((data[at] as u32).wrapping_mul(PRIME_5));
        hash = hash.rotate_left(11).wrapping_mul(PRIME_1);
        at += 1;
    }
    hash ^= hash >> 15;
    hash = hash.wrapping_mul(PRIME_2);
    hash ^= hash >> 13;
    hash = hash.wrapping_mul(PRIME_3);
    hash ^ (hash >> 16)
}

/// The header checksum byte of every two-byte descriptor (FLG, BD with only a block-size code),
/// indexed by `[flg][code]`: the descriptor Kafka producers write (no content size, no
/// dictionary id) is checked with a load instead of a hash, which was a tenth of the work of
/// decoding a one-record LZ4 batch.
pub(crate) static TWO_BYTE_DESCRIPTOR_CHECKSUMS: [[u8; 8]; 256] = {
    let mut table = [[0u8; 8]; 256];
    let mut flg = 0;
    while flg < 256 {
        let mut code = 0;
        while code < 8 {
            table[flg][code] = (xxh32_short(&[flg as u8, (code as u8) << 4]) >> 8) as u8;
            code += 1;
        }
        flg += 1;
    }
    table
};

/// The header checksum byte: the second byte of the hash.
#[inline(always)]
pub(crate) fn header_checksum_byte(hashed: &[u8]) -> u8 {
    (xxh32(hashed) >> 8) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_byte_descriptor_table_matches_the_hash() {
        for flg in 0..=255u8 {
            for code in 0..8u8 {
                let descriptor = [flg, code << 4];
                assert_eq!(
                    TWO_BYTE_DESCRIPTOR_CHECKSUMS[flg as usize][code as usize],
                    (twox_hash::XxHash32::oneshot(0, &descriptor) >> 8) as u8,
                    "{descriptor:02x?}"
                );
            }
        }
    }

    #[test]
    fn short_inputs_hash_like_twox_hash() {
        let data: Vec<u8> = (0..64u32).map(|i| (i * 37 + 11) as u8).collect();
        for len in 0..64 {
            for skew in [0, 1, 3] {
                let input = &data[skew..skew + len.min(64 - skew)];
                assert_eq!(
                    xxh32(input),
                    twox_hash::XxHash32::oneshot(0, input),
                    "length {}",
                    input.len()
                );
            }
        }
    }

    #[test]
    fn empty_input_has_the_reference_hash() {
        // XXH32("", 0) from the xxHash reference sanity checks.
        assert_eq!(xxh32(b""), 0x02CC_5D05);
    }
}
