//! The Confluent wire format: magic byte `0`, the schema id as a 4-byte big-endian integer,
//! then (Protobuf only) the message-index list, then the encoded value.

use crate::Error;

/// The first byte of every framed value.
pub const MAGIC: u8 = 0;
/// Magic byte plus schema id.
pub const HEADER_LEN: usize = 5;
/// Deepest message nesting accepted in a Protobuf message-index list.
const MAX_MESSAGE_INDEXES: usize = 64;

/// Splits a framed value into its schema id and the bytes after the header.
pub fn split_header(value: &[u8]) -> Result<(u32, &[u8]), Error> {
    match value {
        [MAGIC, a, b, c, d, rest @ ..] => Ok((u32::from_be_bytes([*a, *b, *c, *d]), rest)),
        [MAGIC, ..] => Err(Error::Framing {
            reason: format!(
                "{} bytes, shorter than the {HEADER_LEN}-byte header",
                value.len()
            ),
        }),
        [first, ..] => Err(Error::Framing {
            reason: format!("first byte is 0x{first:02x}, not the magic byte 0x00"),
        }),
        [] => Err(Error::Framing {
            reason: "empty value".into(),
        }),
    }
}

/// Reads the Protobuf message-index list (zigzag varints: a count, then that many indexes
/// into nested message declarations; a lone `0` means the file's first message), pushing the
/// path into `path` and returning the message bytes after it.
pub fn split_message_indexes<'a>(
    payload: &'a [u8],
    path: &mut Vec<usize>,
) -> Result<&'a [u8], Error> {
    path.clear();
    let (count, mut rest) = read_zigzag(payload)?;
    if count == 0 {
        path.push(0);
        return Ok(rest);
    }
    let count = usize::try_from(count)
        .ok()
        .filter(|&count| count <= MAX_MESSAGE_INDEXES)
        .ok_or_else(|| Error::Framing {
            reason: format!("message-index count {count} (at most {MAX_MESSAGE_INDEXES})"),
        })?;
    for _ in 0..count {
        let (index, after) = read_zigzag(rest)?;
        let index = usize::try_from(index).map_err(|_| Error::Framing {
            reason: format!("negative message index {index}"),
        })?;
        path.push(index);
        rest = after;
    }
    Ok(rest)
}

/// One zigzag-encoded varint (at most 10 bytes) and the bytes after it.
fn read_zigzag(bytes: &[u8]) -> Result<(i64, &[u8]), Error> {
    let mut raw: u64 = 0;
    for (i, &byte) in bytes.iter().enumerate().take(10) {
        raw |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            let value = (raw >> 1) as i64 ^ -((raw & 1) as i64);
            return Ok((value, &bytes[i + 1..]));
        }
    }
    Err(Error::Framing {
        reason: "message-index varint truncated or longer than 10 bytes".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::{split_header, split_message_indexes};
    use crate::Error;

    #[test]
    fn header_splits_and_every_bad_prefix_is_a_framing_error() {
        let value = [0, 0, 0, 1, 2, 9, 8];
        assert_eq!(split_header(&value).unwrap(), (258, &[9u8, 8][..]));
        for len in 0..5 {
            assert!(matches!(
                split_header(&value[..len]),
                Err(Error::Framing { .. })
            ));
        }
        assert!(matches!(
            split_header(b"{\"a\":1}"),
            Err(Error::Framing { .. })
        ));
    }

    #[test]
    fn message_indexes_with_the_zero_shortcut_and_nesting() {
        let mut path = Vec::new();
        assert_eq!(split_message_indexes(&[0, 7], &mut path).unwrap(), &[7]);
        assert_eq!(path, [0]);
        // Count 2 (zigzag 4), indexes 1 (2) and 3 (6).
        assert_eq!(
            split_message_indexes(&[4, 2, 6, 7], &mut path).unwrap(),
            &[7]
        );
        assert_eq!(path, [1, 3]);
        for bad in [&[][..], &[4, 2], &[0x80; 11], &[3], &[2, 1]] {
            assert!(
                split_message_indexes(bad, &mut path).is_err(),
                "{bad:?} is refused"
            );
        }
    }
}
