//! Raw values: each record's value bytes followed by a delimiter (`\n` by default).
//!
//! With a key delimiter, the key comes first: `KEY<key delimiter>VALUE<delimiter>`,
//! like kcat's `-K`. Bytes are written unchanged (a value containing the
//! delimiter is not escaped: pick a delimiter that cannot occur, e.g. `-D '\x00'`).
//! A null key or value prints as the null text (empty, or `NULL` with `-Z`).
//! Control records have no place in raw output, so `--print-control` is refused.

use super::record::RecordFields;

/// Options of the raw format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawFormat {
    /// Written after each record.
    pub delimiter: Vec<u8>,
    /// When set, the key and this delimiter are written before the value.
    pub key_delimiter: Option<Vec<u8>>,
}

impl Default for RawFormat {
    fn default() -> Self {
        RawFormat {
            delimiter: b"\n".to_vec(),
            key_delimiter: None,
        }
    }
}

impl RawFormat {
    /// Appends one record.
    pub(crate) fn write_record<R: RecordFields + ?Sized>(
        &self,
        out: &mut Vec<u8>,
        record: &R,
        null_text: &[u8],
    ) {
        if let Some(key_delimiter) = &self.key_delimiter {
            out.extend_from_slice(record.key().unwrap_or(null_text));
            out.extend_from_slice(key_delimiter);
        }
        out.extend_from_slice(record.value().unwrap_or(null_text));
        out.extend_from_slice(&self.delimiter);
    }
}

#[cfg(test)]
mod tests {
    use super::RawFormat;
    use crate::format::record::tests::TestRecord;

    #[test]
    fn value_key_and_delimiters() {
        let record = TestRecord {
            key: Some(b"k".to_vec()),
            value: Some(b"v\xff".to_vec()),
            ..TestRecord::default()
        };
        let null_record = TestRecord::default();
        let keyed = RawFormat {
            delimiter: b"\0".to_vec(),
            key_delimiter: Some(b"\t".to_vec()),
        };
        let cases: [(&RawFormat, &TestRecord, &[u8], &[u8]); 5] = [
            (&RawFormat::default(), &record, b"", b"v\xff\n"),
            (&RawFormat::default(), &null_record, b"", b"\n"),
            (&RawFormat::default(), &null_record, b"NULL", b"NULL\n"),
            (&keyed, &record, b"", b"k\tv\xff\0"),
            (&keyed, &null_record, b"NULL", b"NULL\tNULL\0"),
        ];
        for (format, record, null, expected) in cases {
            let mut out = Vec::new();
            format.write_record(&mut out, record, null);
            assert_eq!(out, expected, "{format:?} {record:?}");
        }
    }
}
