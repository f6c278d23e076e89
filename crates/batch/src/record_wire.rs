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

/// A record's headers as the writer takes them: how many, the bytes they take after their
/// count, and those bytes. A trait rather than an enum, so each way in is compiled on its own
/// and the producer's pairs cost what they did before the copy's way was added.
pub(crate) trait HeadersOut {
    /// How many headers.
    fn count(&self) -> usize;
    /// Bytes of the headers after their count.
    fn size(&self) -> usize;
    /// Writes the headers after their count.
    fn write(&self, cursor: &mut Cursor<'_>);
}

/// Key and value pairs, a `None` value null.
impl<H: AsRef<[u8]>, V: AsRef<[u8]>> HeadersOut for &[(H, Option<V>)] {
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }

    #[inline]
    fn size(&self) -> usize {
        let mut size = 0;
        for (key, value) in *self {
            size += field_size(Some(key.as_ref())) + field_size(value.as_ref().map(AsRef::as_ref));
        }
        size
    }

    #[inline]
    fn write(&self, cursor: &mut Cursor<'_>) {
        for (key, value) in *self {
            cursor.field(Some(key.as_ref()));
            cursor.field(value.as_ref().map(AsRef::as_ref));
        }
    }
}

/// A checked headers section in wire form (after the header count) holding `count` headers:
/// a decoded record's, copied as it is.
pub(crate) struct WireHeaders<'a> {
    pub(crate) count: usize,
    pub(crate) section: &'a [u8],
}

impl HeadersOut for WireHeaders<'_> {
    fn count(&self) -> usize {
        self.count
    }

    fn size(&self) -> usize {
        self.section.len()
    }

    fn write(&self, cursor: &mut Cursor<'_>) {
        cursor.bytes(self.section);
    }
}

/// The fields of one record, borrowed.
pub(crate) struct RecordFields<'a, Hs> {
    pub(crate) timestamp_delta: i64,
    pub(crate) offset_delta: i32,
    pub(crate) key: Option<&'a [u8]>,
    pub(crate) value: Option<&'a [u8]>,
    pub(crate) headers: Hs,
}

impl<Hs: HeadersOut> RecordFields<'_, Hs> {
    /// The body's size (everything after the record length varint) and the whole record's,
    /// as `u64` so that no input can overflow the sum.
    pub(crate) fn sizes(&self) -> (u64, u64) {
        let body = 1 // attributes
            + varlong_size(self.timestamp_delta)
            + varlong_size(i64::from(self.offset_delta))
            + field_size(self.key)
            + field_size(self.value)
            + varlong_size(self.headers.count() as i64)
            + self.headers.size();
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
        cursor.varlong(self.headers.count() as i64);
        self.headers.write(&mut cursor);
        debug_assert_eq!(
            cursor.at,
            cursor.out.len(),
            "record size and bytes disagree"
        );
    }
}

/// Writes into a region sized for what is written (by [`RecordFields::sizes`]).
pub(crate) struct Cursor<'o> {
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
