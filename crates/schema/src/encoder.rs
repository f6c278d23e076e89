//! JSON values to framed values, for producing: the schema from a file (registered under a
//! subject) or from the registry (a subject's version), then each value checked against it
//! and encoded after the Confluent framing.

use std::collections::HashMap;
use std::path::PathBuf;

use prost_reflect::MessageDescriptor;
use serde_json::Value;

use crate::avro_json::{AvroEncoder, Notation};
use crate::json_schema::JsonSchemaValidator;
use crate::misfit::Misfit;
use crate::protobuf::ProtobufSchema;
use crate::registry::{NewSchema, RegisteredSchema, RegistryClient, SubjectVersion};
use crate::schemas::collect_references;
use crate::wire::{HEADER_LEN, MAGIC};
use crate::{Error, SchemaFormat};

/// Where the schema of the values to encode comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaSource {
    /// A schema file, registered under `subject` (Confluent's TopicNameStrategy names it
    /// `TOPIC-value` or `TOPIC-key`); the registry returns the existing id when the subject
    /// already has this schema.
    File {
        /// The schema file: Avro JSON, `.proto` text or JSON Schema.
        path: PathBuf,
        /// The subject to register it under.
        subject: String,
    },
    /// A schema already registered: a version of a subject.
    Subject {
        /// The subject.
        subject: String,
        /// Its version (the latest when not given).
        version: SubjectVersion,
    },
}

impl SchemaSource {
    /// `SUBJECT[:VERSION]`: a version number or `latest` after the last colon (the latest
    /// version when there is none). The error says what is wrong with `text`.
    pub fn subject(text: &str) -> Result<SchemaSource, String> {
        let (subject, version) = match text.rsplit_once(':') {
            Some((subject, "latest")) => (subject, SubjectVersion::Latest),
            Some((subject, number)) if number.bytes().all(|b| b.is_ascii_digit()) => {
                let version = number.parse().ok().filter(|&n: &i64| n > 0);
                let version = version.ok_or_else(|| {
                    format!("{text:?}: version {number:?} is not a version number (from 1)")
                })?;
                (subject, SubjectVersion::Number(version))
            }
            _ => (text, SubjectVersion::Latest),
        };
        if subject.is_empty() {
            return Err(format!("{text:?}: expected SUBJECT[:VERSION]"));
        }
        Ok(SchemaSource::Subject {
            subject: subject.to_owned(),
            version,
        })
    }
}

/// The JSON notation of the values to encode: what a JSON value stands for where JSON has no
/// type of its own (Avro's unions, bytes, logical types). Protobuf's and JSON Schema's values
/// read the same in both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonNotation {
    /// Avro's JSON encoding, as Confluent's kafka-avro-console-producer reads it: a union's
    /// value tagged with its branch (`{"string": "x"}`), bytes and fixed as strings of code
    /// points U+0000 to U+00FF, logical types as their underlying type.
    #[default]
    AvroEncoding,
    /// What [`crate::ValueDecoder`] writes (README, "The JSON mapping"): unions untagged (the
    /// first branch the value fits, in schema order), bytes and fixed base64, logical types
    /// formatted (`"2024-02-29"`, `"-12.30"`, RFC 3339 timestamps). Values decoded from an
    /// Avro schema encode back to the same bytes, unless a union has two branches the value
    /// fits (`string` and `bytes`, `int` and `long`, two alike records).
    Decoded,
}

/// Encodes JSON values in one schema as framed values: magic byte 0, the schema id, (for
/// Protobuf) the message-index list, then the value in the schema's format. Built once per
/// schema; `Send + Sync`, encoding takes `&self`.
#[derive(Debug)]
pub struct ValueEncoder {
    id: u32,
    format: SchemaFormat,
    /// The framing every value starts with.
    header: Vec<u8>,
    body: Body,
}

#[derive(Debug)]
enum Body {
    Avro(AvroEncoder),
    Protobuf(MessageDescriptor),
    Json(JsonSchemaValidator),
}

impl ValueEncoder {
    /// Finds or registers the schema of `source` in the registry and compiles it. `message`
    /// names the Protobuf message type (its full name or its name within the package; the
    /// file's first message when `None`); it must be `None` for other formats.
    pub fn new(
        client: &RegistryClient,
        format: SchemaFormat,
        source: &SchemaSource,
        message: Option<&str>,
    ) -> Result<Self, Error> {
        match source {
            SchemaSource::File { path, subject } => {
                let text = std::fs::read_to_string(path).map_err(|e| Error::SchemaFile {
                    path: path.clone(),
                    detail: e.to_string(),
                })?;
                let root_name = path.file_name().map(|name| name.to_string_lossy());
                let root_name = root_name.unwrap_or_else(|| "schema".into());
                // Compiled before registering, so a broken file is reported as the file's
                // fault and never reaches the registry.
                let (body, indexes) = compile(format, &root_name, &text, HashMap::new(), message)
                    .map_err(|detail| Error::SchemaFile {
                    path: path.clone(),
                    detail: format!("not a valid {} schema: {detail}", format.type_name()),
                })?;
                let schema = NewSchema {
                    schema: &text,
                    schema_type: format.type_name(),
                    references: &[],
                };
                let id = client.register(subject, &schema)?;
                Ok(Self::assemble(id, format, body, &indexes))
            }
            SchemaSource::Subject { subject, version } => {
                let found = client.subject_version(subject, *version)?;
                let id = found.id.unwrap_or_default();
                Self::from_registered(client, id, format, found.schema, message)
            }
        }
    }

    /// An encoder for a schema whose text is at hand, with id `id` (no registry involved:
    /// for schemas without references whose id is known).
    pub fn from_schema(
        id: u32,
        format: SchemaFormat,
        schema: &str,
        message: Option<&str>,
    ) -> Result<Self, Error> {
        let (body, indexes) = compile(format, "schema", schema, HashMap::new(), message)
            .map_err(|detail| Error::InvalidSchema { id, detail })?;
        Ok(Self::assemble(id, format, body, &indexes))
    }

    fn from_registered(
        client: &RegistryClient,
        id: u32,
        format: SchemaFormat,
        registered: RegisteredSchema,
        message: Option<&str>,
    ) -> Result<Self, Error> {
        if registered.schema_type() != format.type_name() {
            return Err(Error::WrongSchemaType {
                id,
                expected: format.type_name(),
                found: registered.schema_type().to_owned(),
            });
        }
        let mut references = HashMap::new();
        collect_references(client, &registered.references, &mut references)?;
        let root_name = format!("schema-{id}.proto");
        let (body, indexes) = compile(format, &root_name, &registered.schema, references, message)
            .map_err(|detail| Error::InvalidSchema { id, detail })?;
        Ok(Self::assemble(id, format, body, &indexes))
    }

    fn assemble(id: u32, format: SchemaFormat, body: Body, indexes: &[usize]) -> Self {
        let mut header = Vec::with_capacity(HEADER_LEN + indexes.len() + 1);
        header.push(MAGIC);
        header.extend_from_slice(&id.to_be_bytes());
        if let Body::Protobuf(_) = body {
            push_message_indexes(&mut header, indexes);
        }
        ValueEncoder {
            id,
            format,
            header,
            body,
        }
    }

    /// The schema id every value carries.
    pub fn schema_id(&self) -> u32 {
        self.id
    }

    /// The format encoded.
    pub fn format(&self) -> SchemaFormat {
        self.format
    }

    /// Appends the framed encoding of `value`, in Avro's JSON encoding, to `out` (a buffer
    /// the caller reuses). On error `out` is as it was, and the error names the path to the
    /// part of `value` at fault.
    pub fn encode(&self, value: &Value, out: &mut Vec<u8>) -> Result<(), Error> {
        self.encode_in(value, JsonNotation::AvroEncoding, out)
    }

    /// [`ValueEncoder::encode`] for a value in `notation`.
    pub fn encode_in(
        &self,
        value: &Value,
        notation: JsonNotation,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        let start = out.len();
        out.extend_from_slice(&self.header);
        let notation = match notation {
            JsonNotation::AvroEncoding => Notation::Tagged,
            JsonNotation::Decoded => Notation::Decoded,
        };
        let encoded = match &self.body {
            Body::Avro(avro) => avro.encode(value, notation, out),
            Body::Protobuf(message) => ProtobufSchema::from_json(message, value, out),
            Body::Json(validator) => validator.encode(value, out),
        };
        encoded.map_err(|misfit: Misfit| {
            out.truncate(start);
            let (path, detail) = misfit.into_parts();
            Error::Misfit {
                id: self.id,
                path,
                detail,
            }
        })
    }

    /// The framed encoding of `value` in a new buffer.
    pub fn encode_to_vec(&self, value: &Value) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        self.encode(value, &mut out)?;
        Ok(out)
    }
}

/// Compiles a schema text of `format` with its references (by reference name); for Protobuf
/// also the message's index path.
fn compile(
    format: SchemaFormat,
    root_name: &str,
    text: &str,
    references: HashMap<String, RegisteredSchema>,
    message: Option<&str>,
) -> Result<(Body, Vec<usize>), String> {
    if message.is_some() && format != SchemaFormat::Protobuf {
        return Err("a message name applies to Protobuf schemas only".into());
    }
    match format {
        SchemaFormat::Avro => {
            let named: Vec<String> = references.into_values().map(|s| s.schema).collect();
            Ok((Body::Avro(AvroEncoder::parse(text, &named)?), Vec::new()))
        }
        SchemaFormat::Protobuf => {
            let imports = references
                .into_iter()
                .map(|(name, schema)| (name, schema.schema))
                .collect();
            let schema = ProtobufSchema::compile(root_name, text, &imports)?;
            let (descriptor, indexes) = schema.message_named(message)?;
            Ok((Body::Protobuf(descriptor), indexes))
        }
        SchemaFormat::Json => Ok((Body::Json(JsonSchemaValidator::parse(text)?), Vec::new())),
    }
}

/// Confluent's message-index list: `0` alone for the first message, else the count and the
/// indexes, each a zigzag varint.
fn push_message_indexes(out: &mut Vec<u8>, indexes: &[usize]) {
    if indexes == [0] {
        out.push(0);
        return;
    }
    push_zigzag(out, indexes.len() as i64);
    for &index in indexes {
        push_zigzag(out, index as i64);
    }
}

fn push_zigzag(out: &mut Vec<u8>, value: i64) {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag >= 0x80 {
        out.push(zigzag as u8 | 0x80);
        zigzag >>= 7;
    }
    out.push(zigzag as u8);
}

#[cfg(test)]
mod tests {
    use super::{push_message_indexes, SchemaSource};
    use crate::registry::SubjectVersion;

    fn subject(subject: &str, version: SubjectVersion) -> Result<SchemaSource, String> {
        Ok(SchemaSource::Subject {
            subject: subject.to_owned(),
            version,
        })
    }

    #[test]
    fn subject_and_version_split_at_the_last_colon() {
        use SubjectVersion::{Latest, Number};
        assert_eq!(
            SchemaSource::subject("orders-value"),
            subject("orders-value", Latest)
        );
        assert_eq!(
            SchemaSource::subject("orders-value:3"),
            subject("orders-value", Number(3))
        );
        assert_eq!(SchemaSource::subject("o:latest"), subject("o", Latest));
        // A context prefix or a colon inside the name stays in the subject.
        assert_eq!(
            SchemaSource::subject(":.ctx:orders"),
            subject(":.ctx:orders", Latest)
        );
        assert_eq!(SchemaSource::subject("a:b:2"), subject("a:b", Number(2)));
        for bad in ["", ":3", "orders:0", "orders:99999999999999999999"] {
            assert!(SchemaSource::subject(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn message_indexes_use_the_zero_shortcut_only_for_the_first_message() {
        let mut out = Vec::new();
        push_message_indexes(&mut out, &[0]);
        assert_eq!(out, [0]);
        out.clear();
        push_message_indexes(&mut out, &[1]);
        assert_eq!(out, [2, 2]);
        out.clear();
        push_message_indexes(&mut out, &[0, 70]);
        assert_eq!(out, [4, 0, 0x8c, 0x01]);
    }
}
