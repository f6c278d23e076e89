//! RecordBatch v2 builder.

use super::{compress, put_varint, put_varlong, Lz4Style, SnappyStyle, ZstdStyle};
use crate::{Compression, ControlKind};

/// One record to encode, with full control over its deltas.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordSpec {
    /// Offset delta from the batch base offset.
    pub offset_delta: i32,
    /// Timestamp delta from the batch base timestamp.
    pub timestamp_delta: i64,
    /// Key, `None` for null.
    pub key: Option<Vec<u8>>,
    /// Value, `None` for null.
    pub value: Option<Vec<u8>>,
    /// Headers in wire order; a `None` value is null.
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl RecordSpec {
    /// The record body as it goes on the wire, length prefix included.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut body = Vec::with_capacity(16);
        body.push(0); // attributes
        put_varlong(&mut body, self.timestamp_delta);
        put_varint(&mut body, self.offset_delta);
        put_nullable(&mut body, self.key.as_deref());
        put_nullable(&mut body, self.value.as_deref());
        put_varint(&mut body, self.headers.len() as i32);
        for (k, v) in &self.headers {
            put_nullable(&mut body, Some(k));
            put_nullable(&mut body, v.as_deref());
        }
        put_varint(out, body.len() as i32);
        out.extend_from_slice(&body);
    }
}

fn put_nullable(out: &mut Vec<u8>, v: Option<&[u8]>) {
    match v {
        None => put_varint(out, -1),
        Some(v) => {
            put_varint(out, v.len() as i32);
            out.extend_from_slice(v);
        }
    }
}

/// Builds one RecordBatch v2. Defaults: base offset 0, no compression, CreateTime, not
/// transactional, producer id/epoch/sequence -1, base timestamp 0, max timestamp = base +
/// the largest record timestamp delta, last offset delta = the last record's offset delta.
#[derive(Clone, Debug)]
pub struct BatchBuilder {
    base_offset: i64,
    partition_leader_epoch: i32,
    compression: Compression,
    lz4: Lz4Style,
    snappy: SnappyStyle,
    zstd: ZstdStyle,
    log_append_time: bool,
    transactional: bool,
    control: bool,
    delete_horizon: bool,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    base_timestamp: i64,
    max_timestamp: Option<i64>,
    last_offset_delta: Option<i32>,
    record_count: Option<i32>,
    records: Vec<RecordSpec>,
}

impl BatchBuilder {
    /// An empty batch starting at `base_offset`.
    pub fn new(base_offset: i64) -> Self {
        BatchBuilder {
            base_offset,
            partition_leader_epoch: -1,
            compression: Compression::None,
            lz4: Lz4Style::Java,
            snappy: SnappyStyle::Xerial,
            zstd: ZstdStyle::WithContentSize,
            log_append_time: false,
            transactional: false,
            control: false,
            delete_horizon: false,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            base_timestamp: 0,
            max_timestamp: None,
            last_offset_delta: None,
            record_count: None,
            records: Vec::new(),
        }
    }

    /// Compression codec.
    pub fn compression(mut self, codec: Compression) -> Self {
        self.compression = codec;
        self
    }
    /// LZ4 framing style.
    pub fn lz4_style(mut self, style: Lz4Style) -> Self {
        self.lz4 = style;
        self
    }
    /// Snappy framing style.
    pub fn snappy_style(mut self, style: SnappyStyle) -> Self {
        self.snappy = style;
        self
    }
    /// zstd framing style.
    pub fn zstd_style(mut self, style: ZstdStyle) -> Self {
        self.zstd = style;
        self
    }
    /// LogAppendTime timestamps.
    pub fn log_append_time(mut self, yes: bool) -> Self {
        self.log_append_time = yes;
        self
    }
    /// Transactional flag.
    pub fn transactional(mut self, yes: bool) -> Self {
        self.transactional = yes;
        self
    }
    /// Delete-horizon flag (the base timestamp is the horizon).
    pub fn delete_horizon(mut self, yes: bool) -> Self {
        self.delete_horizon = yes;
        self
    }
    /// Producer id, epoch and base sequence.
    pub fn producer(mut self, id: i64, epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = id;
        self.producer_epoch = epoch;
        self.base_sequence = base_sequence;
        self
    }
    /// Partition leader epoch.
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }
    /// Base timestamp.
    pub fn base_timestamp(mut self, ts: i64) -> Self {
        self.base_timestamp = ts;
        self
    }
    /// Max timestamp (default: base + largest delta).
    pub fn max_timestamp(mut self, ts: i64) -> Self {
        self.max_timestamp = Some(ts);
        self
    }
    /// Last offset delta (default: the last record's offset delta, 0 when empty).
    pub fn last_offset_delta(mut self, delta: i32) -> Self {
        self.last_offset_delta = Some(delta);
        self
    }
    /// Declared record count (default: the number of records), to build lying batches.
    pub fn declared_record_count(mut self, count: i32) -> Self {
        self.record_count = Some(count);
        self
    }
    /// Appends a record with the next offset delta and timestamp delta 0.
    pub fn record(
        mut self,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&[u8], Option<&[u8]>)],
    ) -> Self {
        let offset_delta = self.records.last().map_or(0, |r| r.offset_delta + 1);
        self.records.push(RecordSpec {
            offset_delta,
            timestamp_delta: 0,
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
                .collect(),
        });
        self
    }
    /// Appends a fully specified record.
    pub fn record_spec(mut self, spec: RecordSpec) -> Self {
        self.records.push(spec);
        self
    }
    /// Makes this a control batch and appends one transaction marker (commit or abort).
    pub fn control_marker(mut self, kind: ControlKind, coordinator_epoch: i32) -> Self {
        self.control = true;
        self.transactional = true;
        let type_id: i16 = match kind {
            ControlKind::Abort => 0,
            ControlKind::Commit => 1,
            ControlKind::Other(t) => t,
        };
        let mut key = 0i16.to_be_bytes().to_vec();
        key.extend_from_slice(&type_id.to_be_bytes());
        let mut value = 0i16.to_be_bytes().to_vec();
        value.extend_from_slice(&coordinator_epoch.to_be_bytes());
        let offset_delta = self.records.last().map_or(0, |r| r.offset_delta + 1);
        self.records.push(RecordSpec {
            offset_delta,
            timestamp_delta: 0,
            key: Some(key),
            value: Some(value),
            headers: Vec::new(),
        });
        self
    }

    /// The records section, uncompressed.
    pub fn records_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for r in &self.records {
            r.encode(&mut out);
        }
        out
    }

    /// The whole batch, with a correct CRC32C.
    pub fn build(&self) -> Vec<u8> {
        let body = self.records_bytes();
        let payload = if self.records.is_empty() {
            Vec::new()
        } else {
            compress(self.compression, &body, self.lz4, self.snappy, self.zstd)
        };
        let mut attributes = self.compression.id() as i16;
        if self.log_append_time {
            attributes |= 0x08;
        }
        if self.transactional {
            attributes |= 0x10;
        }
        if self.control {
            attributes |= 0x20;
        }
        if self.delete_horizon {
            attributes |= 0x40;
        }
        let last_offset_delta = self
            .last_offset_delta
            .unwrap_or_else(|| self.records.last().map_or(0, |r| r.offset_delta));
        let max_delta = self
            .records
            .iter()
            .map(|r| r.timestamp_delta)
            .max()
            .unwrap_or(0);
        let max_timestamp = self
            .max_timestamp
            .unwrap_or(self.base_timestamp.wrapping_add(max_delta));
        let count = self.record_count.unwrap_or(self.records.len() as i32);

        let mut out = Vec::with_capacity(61 + payload.len());
        out.extend_from_slice(&self.base_offset.to_be_bytes());
        out.extend_from_slice(&((49 + payload.len()) as i32).to_be_bytes());
        out.extend_from_slice(&self.partition_leader_epoch.to_be_bytes());
        out.push(2);
        out.extend_from_slice(&[0; 4]); // CRC, filled below
        out.extend_from_slice(&attributes.to_be_bytes());
        out.extend_from_slice(&last_offset_delta.to_be_bytes());
        out.extend_from_slice(&self.base_timestamp.to_be_bytes());
        out.extend_from_slice(&max_timestamp.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.to_be_bytes());
        out.extend_from_slice(&self.base_sequence.to_be_bytes());
        out.extend_from_slice(&count.to_be_bytes());
        out.extend_from_slice(&payload);
        let crc = crc32c::crc32c(&out[21..]);
        out[17..21].copy_from_slice(&crc.to_be_bytes());
        out
    }
}
