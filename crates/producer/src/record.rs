//! What `send` takes: a record that borrows its bytes or shares them (`Bytes`), never copied
//! before they are appended to the partition's batch.

use std::borrow::Cow;

use bytes::Bytes;
use smallvec::SmallVec;

/// A record's key, value or header: borrowed bytes, or shared ones ([`Bytes`], and owned
/// `Vec<u8>`/`String` turned into `Bytes` without a copy). Built by `From` from anything a
/// record is usually made of: `&[u8]`, `&[u8; N]`, `&str`, `&Vec<u8>`, `&String`, `Bytes`,
/// `Vec<u8>`, `String`.
#[derive(Clone, Debug)]
pub struct Payload<'a>(Held<'a>);

#[derive(Clone, Debug)]
enum Held<'a> {
    Borrowed(&'a [u8]),
    Shared(Bytes),
}

impl AsRef<[u8]> for Payload<'_> {
    fn as_ref(&self) -> &[u8] {
        match &self.0 {
            Held::Borrowed(bytes) => bytes,
            Held::Shared(bytes) => bytes,
        }
    }
}

impl<'a> From<&'a [u8]> for Payload<'a> {
    fn from(bytes: &'a [u8]) -> Self {
        Payload(Held::Borrowed(bytes))
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for Payload<'a> {
    fn from(bytes: &'a [u8; N]) -> Self {
        Payload(Held::Borrowed(bytes))
    }
}

impl<'a> From<&'a str> for Payload<'a> {
    fn from(text: &'a str) -> Self {
        Payload(Held::Borrowed(text.as_bytes()))
    }
}

impl<'a> From<&'a Vec<u8>> for Payload<'a> {
    fn from(bytes: &'a Vec<u8>) -> Self {
        Payload(Held::Borrowed(bytes))
    }
}

impl<'a> From<&'a String> for Payload<'a> {
    fn from(text: &'a String) -> Self {
        Payload(Held::Borrowed(text.as_bytes()))
    }
}

impl<'a> From<&'a Bytes> for Payload<'a> {
    fn from(bytes: &'a Bytes) -> Self {
        Payload(Held::Borrowed(bytes))
    }
}

impl From<Bytes> for Payload<'_> {
    fn from(bytes: Bytes) -> Self {
        Payload(Held::Shared(bytes))
    }
}

impl From<Vec<u8>> for Payload<'_> {
    fn from(bytes: Vec<u8>) -> Self {
        Payload(Held::Shared(Bytes::from(bytes)))
    }
}

impl From<String> for Payload<'_> {
    fn from(text: String) -> Self {
        Payload(Held::Shared(Bytes::from(text)))
    }
}

/// A record for [`Producer::send`](crate::Producer::send): a topic, and optionally a
/// partition, a timestamp, a key, a value and headers. A key or value left unset is null
/// (a record without a value is a tombstone).
///
/// ```
/// use krec_producer::ProducerRecord;
///
/// let trace = String::from("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// let record = ProducerRecord::new("orders")
///     .key(b"k1")
///     .value(bytes::Bytes::from_static(b"v1"))
///     .header("traceparent", &trace)
///     .timestamp(1_700_000_000_000);
/// assert_eq!(record.topic(), "orders");
/// ```
#[derive(Clone, Debug)]
pub struct ProducerRecord<'a> {
    topic: Cow<'a, str>,
    pub(crate) partition: Option<i32>,
    pub(crate) timestamp: Option<i64>,
    pub(crate) key: Option<Payload<'a>>,
    pub(crate) value: Option<Payload<'a>>,
    /// Kept inline up to two headers: building a record allocates nothing then.
    pub(crate) headers: SmallVec<[(Payload<'a>, Option<Payload<'a>>); 2]>,
}

/// Bytes a record may take in a batch beyond its key, value and header bytes: its length,
/// attributes, deltas and the lengths of its fields, as varints of at most five bytes each.
const RECORD_OVERHEAD: u64 = 6 * 5 + 1;
/// The same for each header: two lengths.
const HEADER_OVERHEAD: u64 = 2 * 5;

impl<'a> ProducerRecord<'a> {
    /// A record for `topic` with a null key and value.
    pub fn new(topic: impl Into<Cow<'a, str>>) -> Self {
        ProducerRecord {
            topic: topic.into(),
            partition: None,
            timestamp: None,
            key: None,
            value: None,
            headers: SmallVec::new(),
        }
    }

    /// A record from all its parts at once, each `None` left unset: what [`new`](Self::new)
    /// and the setters build, for a caller that holds the parts as options (a record read from
    /// a file). Built in place, where each setter moves the whole record.
    pub fn from_parts(
        topic: impl Into<Cow<'a, str>>,
        partition: Option<i32>,
        timestamp: Option<i64>,
        key: Option<Payload<'a>>,
        value: Option<Payload<'a>>,
        headers: impl IntoIterator<Item = (Payload<'a>, Option<Payload<'a>>)>,
    ) -> Self {
        ProducerRecord {
            topic: topic.into(),
            partition,
            timestamp,
            key,
            value,
            headers: headers.into_iter().collect(),
        }
    }

    /// The key (partitioning hashes it unless the record names its partition).
    pub fn key(mut self, key: impl Into<Payload<'a>>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The value.
    pub fn value(mut self, value: impl Into<Payload<'a>>) -> Self {
        self.value = Some(value.into());
        self
    }

    /// One more header (names may repeat, in order).
    #[inline]
    pub fn header(mut self, name: impl Into<Payload<'a>>, value: impl Into<Payload<'a>>) -> Self {
        self.headers.push((name.into(), Some(value.into())));
        self
    }

    /// One more header with a null value (not an empty one: Kafka keeps the difference).
    pub fn null_header(mut self, name: impl Into<Payload<'a>>) -> Self {
        self.headers.push((name.into(), None));
        self
    }

    /// The partition to write to, whatever the partitioner would choose.
    pub fn partition(mut self, partition: i32) -> Self {
        self.partition = Some(partition);
        self
    }

    /// The record's timestamp in milliseconds since the epoch (CreateTime); by default the
    /// time of `send`.
    pub fn timestamp(mut self, timestamp_ms: i64) -> Self {
        self.timestamp = Some(timestamp_ms);
        self
    }

    /// The topic.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The most bytes the record can take in a batch: what `buffer.memory` counts for it
    /// from `send` until its batch is acknowledged or failed.
    pub(crate) fn held_bytes(&self) -> u64 {
        let len = |p: &Option<Payload<'_>>| p.as_ref().map_or(0, |p| p.as_ref().len() as u64);
        let headers: u64 = self
            .headers
            .iter()
            .map(|(name, value)| name.as_ref().len() as u64 + len(value) + HEADER_OVERHEAD)
            .sum();
        RECORD_OVERHEAD + len(&self.key) + len(&self.value) + headers
    }

    pub(crate) fn key_bytes(&self) -> Option<&[u8]> {
        self.key.as_ref().map(AsRef::as_ref)
    }

    pub(crate) fn value_bytes(&self) -> Option<&[u8]> {
        self.value.as_ref().map(AsRef::as_ref)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `from_parts` builds what `new` and the setters build, headers in order, nulls kept.
    #[test]
    fn from_parts_is_the_record_the_setters_build() {
        let built = ProducerRecord::new("orders")
            .partition(3)
            .timestamp(1_700_000_000_000)
            .key(b"k")
            .value("v")
            .header("a", b"1")
            .null_header("b")
            .header("a", b"2");
        let headers = [("a", Some("1")), ("b", None), ("a", Some("2"))];
        let parts = ProducerRecord::from_parts(
            "orders",
            Some(3),
            Some(1_700_000_000_000),
            Some(Payload::from(b"k")),
            Some(Payload::from("v")),
            headers.map(|(name, value)| (Payload::from(name), value.map(Payload::from))),
        );
        let view = |r: &ProducerRecord<'_>| {
            let headers: Vec<(Vec<u8>, Option<Vec<u8>>)> = (r.headers.iter())
                .map(|(n, v)| (n.as_ref().to_vec(), v.as_ref().map(|v| v.as_ref().to_vec())))
                .collect();
            let (key, value) = (
                r.key_bytes().map(<[u8]>::to_vec),
                r.value_bytes().map(<[u8]>::to_vec),
            );
            (
                r.topic().to_owned(),
                r.partition,
                r.timestamp,
                key,
                value,
                headers,
            )
        };
        assert_eq!(view(&parts), view(&built));
        let unset = ProducerRecord::from_parts("t", None, None, None, None, []);
        assert_eq!(view(&unset), view(&ProducerRecord::new("t")));
    }
}
