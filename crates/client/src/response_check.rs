//! A walk over a response body, by the message's layout, before kafka-protocol decodes it.
//!
//! kafka-protocol reserves `count` elements for an array before decoding one, whatever the
//! count says. The walk visits every field the decoder will read, in the same order, and
//! refuses an array whose count exceeds the bytes left: every element reachable in these
//! layouts takes at least one byte, so a real array never does. An accepted body holds every
//! element it announces, so what the decoder then allocates grows with the frame's size.

use kafka_protocol::messages::ApiKey;

/// Versions from this one on are "flexible": compact lengths and tagged fields.
const NEVER: i16 = i16::MAX;

/// How a field is laid out on the wire.
#[derive(Clone, Copy)]
enum Kind {
    /// A fixed number of bytes (integers, booleans, UUIDs).
    Fixed(usize),
    /// A string: i16 length, or a compact length (length + 1, 0 for null).
    Str,
    /// Bytes: i32 length, or a compact length.
    Bytes,
    /// An array: i32 count, or a compact count.
    Array(&'static Kind),
    /// A structure, inline.
    Struct(&'static Layout),
    /// A nullable structure: an i8 marker (1: present), then the structure.
    OptionalStruct(&'static Layout),
}

/// A field present in versions `from..=to`.
#[derive(Clone, Copy)]
struct Field {
    from: i16,
    to: i16,
    kind: Kind,
}

/// A tagged field the decoder reads by its layout (unknown tags it skips by their size).
#[derive(Clone, Copy)]
struct Tag {
    tag: u32,
    from: i16,
    kind: Kind,
}

/// A structure: its fields in wire order and its known tags.
struct Layout {
    fields: &'static [Field],
    tags: &'static [Tag],
}

/// A response message: the versions kafka-protocol decodes and where flexible versions begin.
struct Message {
    versions: (i16, i16),
    flexible_from: i16,
    body: Layout,
}

const fn all(kind: Kind) -> Field {
    Field {
        from: 0,
        to: NEVER,
        kind,
    }
}

const fn since(from: i16, kind: Kind) -> Field {
    Field {
        from,
        to: NEVER,
        kind,
    }
}

const fn until(to: i16, kind: Kind) -> Field {
    Field { from: 0, to, kind }
}

const fn between(from: i16, to: i16, kind: Kind) -> Field {
    Field { from, to, kind }
}

const fn plain(fields: &'static [Field]) -> Layout {
    Layout { fields, tags: &[] }
}

const I8: Kind = Kind::Fixed(1);
const I16: Kind = Kind::Fixed(2);
const I32: Kind = Kind::Fixed(4);
const I64: Kind = Kind::Fixed(8);
const UUID: Kind = Kind::Fixed(16);
const STR: Kind = Kind::Str;
const BYTES: Kind = Kind::Bytes;
const I32_ARRAY: Kind = Kind::Array(&I32);

mod admin_layouts;
mod layouts;
mod transaction_layouts;

/// The layout of `api_key`'s response, for every API this client sends.
fn message(api_key: i16) -> Option<&'static Message> {
    let key = ApiKey::try_from(api_key).ok()?;
    Some(match key {
        ApiKey::ApiVersions => &layouts::API_VERSIONS,
        ApiKey::Metadata => &layouts::METADATA,
        ApiKey::ListOffsets => &layouts::LIST_OFFSETS,
        ApiKey::Fetch => &layouts::FETCH,
        ApiKey::FindCoordinator => &layouts::FIND_COORDINATOR,
        ApiKey::JoinGroup => &layouts::JOIN_GROUP,
        ApiKey::SyncGroup => &layouts::SYNC_GROUP,
        ApiKey::Heartbeat => &layouts::HEARTBEAT,
        ApiKey::LeaveGroup => &layouts::LEAVE_GROUP,
        ApiKey::OffsetFetch => &layouts::OFFSET_FETCH,
        ApiKey::OffsetCommit => &layouts::OFFSET_COMMIT,
        ApiKey::ConsumerGroupHeartbeat => &layouts::CONSUMER_GROUP_HEARTBEAT,
        ApiKey::SaslHandshake => &layouts::SASL_HANDSHAKE,
        ApiKey::SaslAuthenticate => &layouts::SASL_AUTHENTICATE,
        ApiKey::ListGroups => &layouts::LIST_GROUPS,
        ApiKey::DescribeGroups => &layouts::DESCRIBE_GROUPS,
        ApiKey::ConsumerGroupDescribe => &layouts::CONSUMER_GROUP_DESCRIBE,
        ApiKey::ShareGroupDescribe => &layouts::SHARE_GROUP_DESCRIBE,
        ApiKey::DescribeShareGroupOffsets => &layouts::DESCRIBE_SHARE_GROUP_OFFSETS,
        ApiKey::ShareGroupHeartbeat => &layouts::SHARE_GROUP_HEARTBEAT,
        ApiKey::ShareFetch => &layouts::SHARE_FETCH,
        ApiKey::ShareAcknowledge => &layouts::SHARE_ACKNOWLEDGE,
        ApiKey::InitProducerId => &layouts::INIT_PRODUCER_ID,
        ApiKey::Produce => &layouts::PRODUCE,
        ApiKey::AddPartitionsToTxn => &transaction_layouts::ADD_PARTITIONS_TO_TXN,
        ApiKey::AddOffsetsToTxn => &transaction_layouts::ADD_OFFSETS_TO_TXN,
        ApiKey::EndTxn => &transaction_layouts::END_TXN,
        ApiKey::TxnOffsetCommit => &transaction_layouts::TXN_OFFSET_COMMIT,
        ApiKey::CreateTopics => &admin_layouts::CREATE_TOPICS,
        ApiKey::DescribeConfigs => &admin_layouts::DESCRIBE_CONFIGS,
        ApiKey::CreatePartitions => &admin_layouts::CREATE_PARTITIONS,
        _ => return None,
    })
}

/// The versions of `api_key`'s response this module knows the layout of.
#[cfg(test)]
pub(crate) fn known_versions(api_key: i16) -> Option<(i16, i16)> {
    message(api_key).map(|m| m.versions)
}

/// Checks a response body (after its header) of `api_key` at `version`: every length and
/// count fits in the bytes left. Returns the bytes the layout covers (the decoder ignores any
/// after them); the error says what was wrong and at which byte.
pub(crate) fn check(api_key: i16, version: i16, body: &[u8]) -> Result<usize, String> {
    let Some(message) = message(api_key) else {
        return Err(format!("no known layout for API key {api_key}"));
    };
    let (min, max) = message.versions;
    if !(min..=max).contains(&version) {
        return Err(format!("version {version} is outside {min}..={max}"));
    }
    let mut walk = Walk {
        body,
        position: 0,
        version,
        flexible: version >= message.flexible_from,
    };
    walk.layout(&message.body)?;
    Ok(walk.position)
}

/// A cursor over the body at one version.
struct Walk<'a> {
    body: &'a [u8],
    position: usize,
    version: i16,
    flexible: bool,
}

impl Walk<'_> {
    fn left(&self) -> usize {
        self.body.len() - self.position
    }

    fn layout(&mut self, layout: &Layout) -> Result<(), String> {
        for field in layout.fields {
            if (field.from..=field.to).contains(&self.version) {
                self.kind(field.kind)?;
            }
        }
        if self.flexible {
            self.tagged_fields(layout.tags)?;
        }
        Ok(())
    }

    fn kind(&mut self, kind: Kind) -> Result<(), String> {
        match kind {
            Kind::Fixed(size) => self.skip(size, "field"),
            Kind::Str => {
                let length = if self.flexible {
                    self.compact_length()?
                } else {
                    let raw = self.i16()?;
                    self.length(i32::from(raw), 2)?
                };
                self.skip(length, "string")
            }
            Kind::Bytes => {
                let length = if self.flexible {
                    self.compact_length()?
                } else {
                    let raw = self.i32()?;
                    self.length(raw, 4)?
                };
                self.skip(length, "bytes")
            }
            Kind::Array(element) => {
                let at = self.position;
                let count = if self.flexible {
                    self.compact_length()?
                } else {
                    let raw = self.i32()?;
                    self.length(raw, 4)?
                };
                if count > self.left() {
                    return Err(format!(
                        "array of {count} elements at byte {at} with {} bytes left",
                        self.left()
                    ));
                }
                (0..count).try_for_each(|_| self.kind(*element))
            }
            Kind::Struct(layout) => self.layout(layout),
            Kind::OptionalStruct(layout) => {
                let present = self.take(1, "struct marker")?[0] as i8;
                if present == 1 {
                    self.layout(layout)
                } else {
                    Ok(())
                }
            }
        }
    }

    /// The tag section: known tags walked by their layout (as the decoder reads them,
    /// whatever their size says), unknown ones skipped by their size.
    fn tagged_fields(&mut self, tags: &[Tag]) -> Result<(), String> {
        let count = self.varint()? as usize;
        if count > self.left() {
            return Err(format!(
                "{count} tagged fields at byte {} with {} bytes left",
                self.position,
                self.left()
            ));
        }
        for _ in 0..count {
            let tag = self.varint()?;
            let size = self.varint()? as usize;
            match tags.iter().find(|known| known.tag == tag) {
                Some(known) if self.version >= known.from => self.kind(known.kind)?,
                Some(_) => return Err(format!("tag {tag} is not valid in this version")),
                None => self.skip(size, "tagged field")?,
            }
        }
        Ok(())
    }

    /// A non-compact length of `width` bytes, just read: -1 is null (no bytes), below that
    /// is invalid.
    fn length(&self, raw: i32, width: usize) -> Result<usize, String> {
        match raw {
            -1 => Ok(0),
            n if n >= 0 => Ok(n as usize),
            n => Err(format!(
                "negative length {n} at byte {}",
                self.position - width
            )),
        }
    }

    /// A compact length: 0 is null, n is n - 1.
    fn compact_length(&mut self) -> Result<usize, String> {
        Ok((self.varint()? as usize).saturating_sub(1))
    }

    /// An unsigned varint of at most five bytes, read exactly as kafka-protocol reads it.
    fn varint(&mut self) -> Result<u32, String> {
        let mut value = 0u32;
        for i in 0..5 {
            let byte = u32::from(self.take(1, "varint")?[0]);
            value |= (byte & 0x7f) << (i * 7);
            if byte < 0x80 {
                break;
            }
        }
        Ok(value)
    }

    fn i16(&mut self) -> Result<i16, String> {
        let bytes = self.take(2, "length")?;
        Ok(i16::from_be_bytes([bytes[0], bytes[1]]))
    }

    fn i32(&mut self) -> Result<i32, String> {
        let bytes = self.take(4, "length")?;
        Ok(i32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    fn skip(&mut self, size: usize, what: &str) -> Result<(), String> {
        self.take(size, what).map(|_| ())
    }

    fn take(&mut self, size: usize, what: &str) -> Result<&[u8], String> {
        if size > self.left() {
            return Err(format!(
                "{what} of {size} bytes at byte {} with {} bytes left",
                self.position,
                self.left()
            ));
        }
        let start = self.position;
        self.position += size;
        Ok(&self.body[start..self.position])
    }
}

#[cfg(test)]
mod tests;
