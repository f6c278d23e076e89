//! Zigzag varints, read exactly as the Java client's `ByteUtils.readVarint`/`readVarlong` do.

/// Why a varint could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VarintError {
    /// The data ends before the last byte of the varint.
    Truncated,
    /// More continuation bytes than the type allows (5 for varint, 10 for varlong).
    TooLong,
}

/// A varint length field of one byte holding 0..=63 (most keys, header keys and header
/// values) has exactly these bits clear: the continuation bit (a longer varint) and the zigzag
/// sign bit (a negative length; -1 is null). So `byte & SHORT_LENGTH_MASK == 0` is the one test
/// for "one byte, not negative", and the length is then `byte >> 1`.
pub(crate) const SHORT_LENGTH_MASK: u8 = 0x81;

/// Reads a zigzag varint (i32) at `*pos`, advancing it.
///
/// Like Java, a fifth byte's bits above bit 31 are dropped rather than rejected: real
/// producers never set them, and rejecting would make us stricter than the broker.
#[inline(always)]
pub(crate) fn read_varint(buf: &[u8], pos: &mut usize) -> Result<i32, VarintError> {
    read_varint_encoded(buf, pos).map(zigzag32)
}

/// Reads a varint at `*pos` as it is encoded, before zigzag decoding: even for a value of 0 or
/// more (half the encoding), odd for a negative one. A length field needs only that bit to
/// tell a length from -1 (null) or a lie.
#[inline(always)]
pub(crate) fn read_varint_encoded(buf: &[u8], pos: &mut usize) -> Result<u32, VarintError> {
    let first = *buf.get(*pos).ok_or(VarintError::Truncated)?;
    if first < 0x80 {
        *pos += 1;
        return Ok(first as u32);
    }
    // Two bytes cover lengths up to 8 KiB, the common case for values.
    if let Some(&second) = buf.get(*pos + 1) {
        if second < 0x80 {
            *pos += 2;
            return Ok((first & 0x7f) as u32 | (second as u32) << 7);
        }
    }
    let (value, end) = read_varint_slow(buf, *pos)?;
    *pos = end;
    Ok(value)
}

/// The varint at `at` and the position after it. Takes and returns the position by value:
/// a `&mut` to the caller's position, passed to a call that is not inlined, would keep that
/// position in memory for the whole of the (inlined) record reader, and every field read
/// would then wait for a store and a load of it.
#[inline(never)]
fn read_varint_slow(buf: &[u8], mut at: usize) -> Result<(u32, usize), VarintError> {
    let mut value: u32 = 0;
    let mut shift = 0u32;
    loop {
        let byte = *buf.get(at).ok_or(VarintError::Truncated)?;
        at += 1;
        if byte & 0x80 == 0 {
            value |= (byte as u32).wrapping_shl(shift);
            return Ok((value, at));
        }
        value |= ((byte & 0x7f) as u32).wrapping_shl(shift);
        shift += 7;
        if shift > 28 {
            return Err(VarintError::TooLong);
        }
    }
}

/// Reads a zigzag varlong (i64) at `*pos`, advancing it.
#[inline(always)]
pub(crate) fn read_varlong(buf: &[u8], pos: &mut usize) -> Result<i64, VarintError> {
    let first = *buf.get(*pos).ok_or(VarintError::Truncated)?;
    if first < 0x80 {
        *pos += 1;
        return Ok(zigzag64(first as u64));
    }
    // Timestamp deltas within a batch of a few seconds take two bytes.
    if let Some(&second) = buf.get(*pos + 1) {
        if second < 0x80 {
            *pos += 2;
            return Ok(zigzag64((first & 0x7f) as u64 | (second as u64) << 7));
        }
    }
    let (value, end) = read_varlong_slow(buf, *pos)?;
    *pos = end;
    Ok(value)
}

/// The varlong at `at` and the position after it (by value, as [`read_varint_slow`]).
#[inline(never)]
fn read_varlong_slow(buf: &[u8], mut at: usize) -> Result<(i64, usize), VarintError> {
    let mut value: u64 = 0;
    let mut shift = 0u32;
    loop {
        let byte = *buf.get(at).ok_or(VarintError::Truncated)?;
        at += 1;
        if byte & 0x80 == 0 {
            value |= (byte as u64).wrapping_shl(shift);
            return Ok((zigzag64(value), at));
        }
        value |= ((byte & 0x7f) as u64).wrapping_shl(shift);
        shift += 7;
        if shift > 63 {
            return Err(VarintError::TooLong);
        }
    }
}

/// The signed value of a zigzag-encoded 32-bit varint.
#[inline(always)]
pub(crate) fn zigzag32(v: u32) -> i32 {
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

#[inline(always)]
fn zigzag64(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(v: i64) -> Vec<u8> {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        let mut out = Vec::new();
        while z >= 0x80 {
            out.push((z as u8) | 0x80);
            z >>= 7;
        }
        out.push(z as u8);
        out
    }

    #[test]
    fn round_trips_edge_values() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            300,
            i32::MAX as i64,
            i32::MIN as i64,
        ] {
            let bytes = encode(v);
            let mut pos = 0;
            assert_eq!(read_varint(&bytes, &mut pos), Ok(v as i32), "{v}");
            assert_eq!(pos, bytes.len());
        }
        for v in [
            0,
            -64,
            64,
            300,
            -8192,
            8191,
            8192,
            i64::MAX,
            i64::MIN,
            1 << 40,
            -(1 << 40),
        ] {
            let bytes = encode(v);
            let mut pos = 0;
            assert_eq!(read_varlong(&bytes, &mut pos), Ok(v), "{v}");
            assert_eq!(pos, bytes.len());
        }
    }

    #[test]
    fn the_short_length_mask_tells_exactly_the_one_byte_lengths_0_to_63() {
        for byte in 0..=u8::MAX {
            let mut pos = 0;
            let read = read_varint(&[byte], &mut pos);
            let short = matches!(read, Ok(len) if (0..64).contains(&len)) && pos == 1;
            assert_eq!(byte & SHORT_LENGTH_MASK == 0, short, "{byte:#04x}");
            if short {
                assert_eq!(read, Ok(i32::from(byte >> 1)), "{byte:#04x}");
            }
        }
    }

    #[test]
    fn rejects_endless_and_truncated() {
        let endless = [0xffu8; 11];
        let mut pos = 0;
        assert_eq!(read_varint(&endless, &mut pos), Err(VarintError::TooLong));
        assert_eq!(read_varlong(&endless, &mut pos), Err(VarintError::TooLong));
        assert_eq!(pos, 0, "failed reads must not move the cursor");
        assert_eq!(
            read_varint(&[0x80, 0x80], &mut pos),
            Err(VarintError::Truncated)
        );
        assert_eq!(read_varlong(&[], &mut pos), Err(VarintError::Truncated));
    }
}
