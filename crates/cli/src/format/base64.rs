//! Standard base64 (RFC 4648 section 4, with `=` padding), encode only.
//!
//! Hand-written because it is twenty lines and sits on the JSON hot path for
//! binary keys and values; the tests check it against the `base64` crate.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Appends the base64 encoding of `input` to `out`.
pub(crate) fn encode_into(out: &mut Vec<u8>, input: &[u8]) {
    out.reserve(input.len().div_ceil(3) * 4);
    let mut chunks = input.chunks_exact(3);
    for chunk in &mut chunks {
        let n = (u32::from(chunk[0]) << 16) | (u32::from(chunk[1]) << 8) | u32::from(chunk[2]);
        out.extend_from_slice(&[
            ALPHABET[(n >> 18) as usize & 63],
            ALPHABET[(n >> 12) as usize & 63],
            ALPHABET[(n >> 6) as usize & 63],
            ALPHABET[n as usize & 63],
        ]);
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            out.extend_from_slice(&[
                ALPHABET[(n >> 18) as usize & 63],
                ALPHABET[(n >> 12) as usize & 63],
                b'=',
                b'=',
            ]);
        }
        [a, b] => {
            let n = (u32::from(a) << 16) | (u32::from(b) << 8);
            out.extend_from_slice(&[
                ALPHABET[(n >> 18) as usize & 63],
                ALPHABET[(n >> 12) as usize & 63],
                ALPHABET[(n >> 6) as usize & 63],
                b'=',
            ]);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::encode_into;
    use base64::Engine as _;

    fn encode(input: &[u8]) -> String {
        let mut out = Vec::new();
        encode_into(&mut out, input);
        String::from_utf8(out).expect("base64 output is ASCII")
    }

    #[test]
    fn rfc4648_test_vectors() {
        let cases: [(&[u8], &str); 7] = [
            (b"", ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"fooba", "Zm9vYmE="),
            (b"foobar", "Zm9vYmFy"),
        ];
        for (input, expected) in cases {
            assert_eq!(encode(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn matches_the_base64_crate_on_every_byte_and_length() {
        let data: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
        for len in 0..data.len() {
            let slice = &data[..len];
            assert_eq!(
                encode(slice),
                base64::engine::general_purpose::STANDARD.encode(slice),
                "length {len}"
            );
        }
    }

    #[test]
    fn appends_without_clobbering_existing_bytes() {
        let mut out = b"prefix:".to_vec();
        encode_into(&mut out, b"\xff\x00");
        assert_eq!(out, b"prefix:/wA=");
    }
}
