//! Legacy (magic 0 and 1) message builder.

use super::{compress, Lz4Style, SnappyStyle, ZstdStyle};
use crate::Compression;

/// One legacy message to encode.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LegacyMessage {
    /// Offset written in the message (absolute for magic 0, relative inside v1 wrappers).
    pub offset: i64,
    /// Timestamp (ignored for magic 0).
    pub timestamp: i64,
    /// Key, `None` for null.
    pub key: Option<Vec<u8>>,
    /// Value, `None` for null.
    pub value: Option<Vec<u8>>,
}

/// Encodes one message with the given magic and attributes.
pub fn encode_message(magic: u8, attributes: u8, m: &LegacyMessage) -> Vec<u8> {
    let mut body = vec![magic, attributes];
    if magic == 1 {
        body.extend_from_slice(&m.timestamp.to_be_bytes());
    }
    for field in [&m.key, &m.value] {
        match field {
            None => body.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(v) => {
                body.extend_from_slice(&(v.len() as i32).to_be_bytes());
                body.extend_from_slice(v);
            }
        }
    }
    let mut out = Vec::with_capacity(16 + body.len());
    out.extend_from_slice(&m.offset.to_be_bytes());
    out.extend_from_slice(&((4 + body.len()) as i32).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// Builds a legacy message set: plain messages, or one compressed wrapper holding them.
#[derive(Clone, Debug)]
pub struct LegacyBuilder {
    magic: u8,
    compression: Compression,
    log_append_time: Option<i64>,
    messages: Vec<LegacyMessage>,
}

impl LegacyBuilder {
    /// A builder for magic 0 or 1.
    pub fn new(magic: u8) -> Self {
        assert!(magic <= 1, "legacy magic is 0 or 1");
        LegacyBuilder {
            magic,
            compression: Compression::None,
            log_append_time: None,
            messages: Vec::new(),
        }
    }
    /// Wrap the messages in one compressed message (zstd is not allowed before v2).
    pub fn compression(mut self, codec: Compression) -> Self {
        assert!(codec != Compression::Zstd, "zstd needs magic 2");
        self.compression = codec;
        self
    }
    /// v1 wrapper with LogAppendTime and this timestamp.
    pub fn log_append_time(mut self, timestamp: i64) -> Self {
        self.log_append_time = Some(timestamp);
        self
    }
    /// Appends a message. For compressed v1 sets, give inner relative offsets (0, 1, ...).
    pub fn message(mut self, m: LegacyMessage) -> Self {
        self.messages.push(m);
        self
    }

    /// The message set. A compressed set is one wrapper at `wrapper_offset`: for magic 1 the
    /// absolute offset of the last inner message, for magic 0 likewise (inner offsets absolute).
    pub fn build(&self, wrapper_offset: i64) -> Vec<u8> {
        let lat = if self.magic == 1 && self.log_append_time.is_some() {
            0x08
        } else {
            0
        };
        if self.compression == Compression::None {
            return self
                .messages
                .iter()
                .flat_map(|m| encode_message(self.magic, lat, m))
                .collect();
        }
        let inner: Vec<u8> = self
            .messages
            .iter()
            .flat_map(|m| encode_message(self.magic, 0, m))
            .collect();
        let lz4 = if self.magic == 0 {
            Lz4Style::LegacyBrokenChecksum
        } else {
            Lz4Style::Java
        };
        let payload = compress(
            self.compression,
            &inner,
            lz4,
            SnappyStyle::Xerial,
            ZstdStyle::WithContentSize,
        );
        let timestamp = self.log_append_time.unwrap_or_else(|| {
            self.messages
                .iter()
                .map(|m| m.timestamp)
                .max()
                .unwrap_or(-1)
        });
        encode_message(
            self.magic,
            self.compression.id() | lat,
            &LegacyMessage {
                offset: wrapper_offset,
                timestamp,
                key: None,
                value: Some(payload),
            },
        )
    }
}
