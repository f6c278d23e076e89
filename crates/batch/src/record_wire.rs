//! A record in wire form, for the writer: its size from its fields, then its bytes into a
//! region of exactly that size (record length varint, attributes, timestamp delta, offset
//! delta, key, value, headers), as the Java client's `DefaultRecord.writeTo` lays it out.

/// Bytes of the zigzag varlong of `value`.
#[inline]
fn varlong_size(value: i64) -> usize {
    let zigzag = ((value << 1) ^ (value >> 63)) as u64;
    // One byte per 7 bits, at least one.
    (70 - (zigzag | 1).leading_zeros() as usize) / 7
}

/// Bytes of a nullable field: its length varint, then its bytes.
#[inline]
fn field_size(field: Option<&[u8]>) -> usize {
    match field {
        None => 1,
        Some(bytes) => varlong_size(bytes.len() as i64) + bytes.len(),
    }
}

/// A record's headers, as the writer is given them.
pub(crate) enum HeadersIn<'a, H, V> {
    /// Key and value pairs, a `None` value null.
    Pairs(&'a [(H, Option<V>)]),
    /// A checked headers section in wire form (after the header count) holding `count`
    /// headers: a decoded record's, copied as it is.
    Wire { count: usize, section: &'a [u8] },
}

/// The fields of one record, borrowed.
pub(crate) struct RecordFields<'a, H, V> {
    pub(crate) timestamp_delta: i64,
    pub(crate) offset_delta: i32,
    pub(crate) key: Option<&'a [u8]>,
    pub(crate) value: Option<&'a [u8]>,
    pub(crate) headers: HeadersIn<'a, H, V>,
}

impl<H: AsRef<[u8]>, V: AsRef<[u8]>> RecordFields<'_, H, V> {
    /// The body's size (everything after the record length varint) and the whole record's,
    /// as `u64` so that no input can overflow the sum.
    pub(crate) fn sizes(&self) -> (u64, u64) {
        let mut body = 1 // attributes
            + varlong_size(self.timestamp_delta)
            + varlong_size(i64::from(self.offset_delta))
            + field_size(self.key)
            + field_size(self.value);
        match self.headers {
            HeadersIn::Pairs(pairs) => {
                body += varlong_size(pairs.len() as i64);
                for (key, value) in pairs {
                    body += field_size(Some(key.as_ref()))
                        + field_size(value.as_ref().map(AsRef::as_ref));
                }
            }
            HeadersIn::Wire { count, section } => {
                body += varlong_size(count as i64) + section.len();
            }
        }
        let body = body as u64;
        (body, body + varlong_size(body as i64) as u64)
    }

    /// Writes the record into `out`, whose length is the whole record's size from
    /// [`sizes`](Self::sizes) with `body` its body size.
    pub(crate) fn write(&self, body: usize, out: &mut [u8]) {
        let mut cursor = Cursor { out, at: 0 };
        cursor.varlong(body as i64);
        cursor.bytes(&[0]); // attributes: none are defined for records
        cursor.varlong(self.timestamp_delta);
        cursor.varlong(i64::from(self.offset_delta));
        cursor.field(self.key);
        cursor.field(self.value);
        match self.headers {
            HeadersIn::Pairs(pairs) => {
                cursor.varlong(pairs.len() as i64);
                for (key, value) in pairs {
                    cursor.field(Some(key.as_ref()));
                    cursor.field(value.as_ref().map(AsRef::as_ref));
                }
            }
            HeadersIn::Wire { count, section } => {
                cursor.varlong(count as i64);
                cursor.bytes(section);
            }
        }
        debug_assert_eq!(
            cursor.at,
            cursor.out.len(),
            "record size and bytes disagree"
        );
    }
}

/// Writes into a region sized for what is written (by [`RecordFields::sizes`]).
struct Cursor<'o> {
    out: &'o mut [u8],
    at: usize,
}

impl Cursor<'_> {
    #[inline]
    fn bytes(&mut self, bytes: &[u8]) {
        self.out[self.at..self.at + bytes.len()].copy_from_slice(bytes);
        self.at += bytes.len();
    }

    /// A zigzag varlong; a varint's bytes are the same for any `i32` value.
    #[inline]
    fn varlong(&mut self, value: i64) {
        let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
        while zigzag >= 0x80 {
            self.out[self.at] = zigzag as u8 | 0x80;
            self.at += 1;
            zigzag >>= 7;
        }
        self.out[self.at] = zigzag as u8;
        self.at += 1;
    }

    #[inline]
    fn field(&mut self, field: Option<&[u8]>) {
        match field {
            None => self.varlong(-1),
            Some(bytes) => {
                self.varlong(bytes.len() as i64);
                self.bytes(bytes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_sizes_match_the_bytes_written() {
        for value in [
            0i64,
            1,
            -1,
            63,
            64,
            -64,
            -65,
            8191,
            8192,
            i32::MAX as i64,
            i32::MIN as i64,
            i64::MAX,
            i64::MIN,
        ] {
            let mut out = [0u8; 10];
            let mut cursor = Cursor {
                out: &mut out,
                at: 0,
            };
            cursor.varlong(value);
            assert_eq!(cursor.at, varlong_size(value), "{value}");
        }
    }
}
