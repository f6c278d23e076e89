//! What the formats read from a record, and where it came from.

/// Where a record came from: printed as `topic` and `partition` by every format.
///
/// `krec consume` always knows both. `krec decode` knows them only when the file
/// sits in a broker data directory named `TOPIC-PARTITION/` (as the broker lays
/// segments out); otherwise both are `None` (JSON `null`, template `%t` empty and
/// `%p` `-1`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordContext<'a> {
    /// Topic name, when known.
    pub topic: Option<&'a str>,
    /// Partition number, when known.
    pub partition: Option<i32>,
    /// How many times a share group delivered the record (KIP-932), for share-group records
    /// only: JSON `delivery_count`, template `%d`.
    pub delivery_count: Option<i16>,
}

impl<'a> RecordContext<'a> {
    /// A context with a known topic and partition.
    pub fn new(topic: &'a str, partition: i32) -> Self {
        RecordContext {
            topic: Some(topic),
            partition: Some(partition),
            delivery_count: None,
        }
    }

    /// The same context for a share group's record delivered `count` times.
    pub fn with_delivery_count(mut self, count: i16) -> Self {
        self.delivery_count = Some(count);
        self
    }

    /// A context where neither topic nor partition is known.
    pub fn unknown() -> Self {
        RecordContext::default()
    }
}

/// The fields of one data record that the output formats print.
///
/// Implemented for `krec_batch::Record`; embedding programs may implement it for
/// their own record types to reuse the formats. Byte slices are borrowed, and
/// header iteration must follow wire order, keeping duplicates and null values.
pub trait RecordFields {
    /// The record's offset.
    fn offset(&self) -> i64;
    /// The record's timestamp in milliseconds since the epoch (`-1` when none).
    fn timestamp(&self) -> i64;
    /// How the timestamp was set: `"create_time"`, `"log_append_time"` or `"none"`.
    fn timestamp_type_name(&self) -> &'static str;
    /// The key bytes, `None` for a null key.
    fn key(&self) -> Option<&[u8]>;
    /// The value bytes, `None` for a null value (a tombstone).
    fn value(&self) -> Option<&[u8]>;
    /// Every header as `(key, value)`, in wire order.
    fn header_pairs(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> + '_;
    /// The first header named `key`: `None` when absent, `Some(None)` when its value is null.
    fn header_value(&self, key: &[u8]) -> Option<Option<&[u8]>>;
}

/// A control record (transaction marker) as the formats print it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlMarker {
    /// The marker's offset.
    pub offset: i64,
    /// The marker's timestamp in milliseconds since the epoch.
    pub timestamp: i64,
    /// The control type as a word: `"abort"`, `"commit"`, a KRaft marker name, or `"unknown"`.
    pub kind: &'static str,
    /// The control type number from the record key (0 = abort, 1 = commit).
    pub control_type: i16,
    /// The control record key version.
    pub version: i16,
    /// The transaction coordinator epoch, when the value carries one.
    pub coordinator_epoch: Option<i32>,
}

/// Lets a control marker go through the data-record paths of the templates:
/// no key, no value, no headers.
pub(crate) struct ControlAsRecord<'a>(pub(crate) &'a ControlMarker);

impl RecordFields for ControlAsRecord<'_> {
    fn offset(&self) -> i64 {
        self.0.offset
    }
    fn timestamp(&self) -> i64 {
        self.0.timestamp
    }
    fn timestamp_type_name(&self) -> &'static str {
        "none"
    }
    fn key(&self) -> Option<&[u8]> {
        None
    }
    fn value(&self) -> Option<&[u8]> {
        None
    }
    fn header_pairs(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> + '_ {
        std::iter::empty()
    }
    fn header_value(&self, _key: &[u8]) -> Option<Option<&[u8]>> {
        None
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::RecordFields;

    /// An owned record for the formats' unit tests.
    #[derive(Clone, Debug, Default)]
    pub(crate) struct TestRecord {
        pub(crate) offset: i64,
        pub(crate) timestamp: i64,
        pub(crate) timestamp_type: &'static str,
        pub(crate) key: Option<Vec<u8>>,
        pub(crate) value: Option<Vec<u8>>,
        pub(crate) headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    }

    impl RecordFields for TestRecord {
        fn offset(&self) -> i64 {
            self.offset
        }
        fn timestamp(&self) -> i64 {
            self.timestamp
        }
        fn timestamp_type_name(&self) -> &'static str {
            self.timestamp_type
        }
        fn key(&self) -> Option<&[u8]> {
            self.key.as_deref()
        }
        fn value(&self) -> Option<&[u8]> {
            self.value.as_deref()
        }
        fn header_pairs(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> + '_ {
            self.headers
                .iter()
                .map(|(key, value)| (key.as_slice(), value.as_deref()))
        }
        fn header_value(&self, key: &[u8]) -> Option<Option<&[u8]>> {
            self.header_pairs()
                .find(|(k, _)| *k == key)
                .map(|(_, value)| value)
        }
    }
}
