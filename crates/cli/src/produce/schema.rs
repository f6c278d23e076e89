//! `--value-format` / `--key-format`: each value (and key) read is a JSON document, encoded
//! with a Schema Registry schema into the Confluent wire format by krec-schema's
//! [`ValueEncoder`], from a schema file (registered under `TOPIC-value` / `TOPIC-key`) or a
//! subject already registered. The registry is the one `krec consume -s` uses: `-r URL` or
//! `schema.registry.url` and its companions in the properties.

use std::path::PathBuf;

use krec_producer::ProducerConfig;
use krec_schema::{JsonNotation, SchemaFormat, SchemaSource, ValueEncoder};

use super::input::Origin;
use crate::format::schema::{RegistryProperties, SchemaArgs};
use crate::Error;

/// The Schema Registry flags of `krec produce`.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ProduceSchemaArgs {
    /// Encode each value, a JSON document, with a Schema Registry schema: avro, protobuf or
    /// json-schema (give --value-schema or --value-subject).
    #[arg(long = "value-format", value_name = "FORMAT", value_parser = ["avro", "protobuf", "json-schema"])]
    pub value_format: Option<String>,
    /// The value schema file, registered under TOPIC-value (its existing id when it is there).
    #[arg(
        long = "value-schema",
        value_name = "FILE",
        requires = "value_format",
        conflicts_with = "value_subject"
    )]
    pub value_schema: Option<PathBuf>,
    /// The value schema registered as SUBJECT (its latest version, or VERSION).
    #[arg(
        long = "value-subject",
        value_name = "SUBJECT[:VERSION]",
        requires = "value_format"
    )]
    pub value_subject: Option<String>,
    /// The Protobuf message type of values (default: the schema's first message).
    #[arg(long = "value-message", value_name = "NAME", requires = "value_format")]
    pub value_message: Option<String>,
    /// Encode each key the same way: avro, protobuf or json-schema.
    #[arg(long = "key-format", value_name = "FORMAT", value_parser = ["avro", "protobuf", "json-schema"])]
    pub key_format: Option<String>,
    /// The key schema file, registered under TOPIC-key.
    #[arg(
        long = "key-schema",
        value_name = "FILE",
        requires = "key_format",
        conflicts_with = "key_subject"
    )]
    pub key_schema: Option<PathBuf>,
    /// The key schema registered as SUBJECT (its latest version, or VERSION).
    #[arg(
        long = "key-subject",
        value_name = "SUBJECT[:VERSION]",
        requires = "key_format"
    )]
    pub key_subject: Option<String>,
    /// The Protobuf message type of keys.
    #[arg(long = "key-message", value_name = "NAME", requires = "key_format")]
    pub key_message: Option<String>,
    /// Schema Registry URL(s), comma-separated (else `-X schema.registry.url`);
    /// `https://USER:PASSWORD@host` gives basic auth.
    #[arg(short = 'r', long = "schema-registry", value_name = "URL")]
    pub registry_url: Option<String>,
}

/// The encoders of keys and values, each `None` when that part is sent as read.
#[derive(Debug, Default)]
pub struct Encoders {
    key: Option<ValueEncoder>,
    value: Option<ValueEncoder>,
}

/// One part of a record: what the flags and errors call it.
#[derive(Clone, Copy, Debug)]
struct Part {
    name: &'static str,
    /// The subject a schema file is registered under: `TOPIC-key` or `TOPIC-value`.
    subject_suffix: &'static str,
}

const KEY: Part = Part {
    name: "key",
    subject_suffix: "-key",
};
const VALUE: Part = Part {
    name: "value",
    subject_suffix: "-value",
};

impl ProduceSchemaArgs {
    /// Finds or registers the schemas and compiles them (blocking HTTP: call outside the
    /// async runtime).
    pub fn encoders(&self, topic: &str, config: &ProducerConfig) -> Result<Encoders, Error> {
        if self.key_format.is_none() && self.value_format.is_none() {
            return Ok(Encoders::default());
        }
        let mut registry_args = SchemaArgs::default();
        registry_args.registry_url.clone_from(&self.registry_url);
        let mut properties = RegistryProperties::default();
        for property in config.foreign_properties() {
            properties.push(&property.key, &property.value, &property.origin);
        }
        registry_args.set_properties(&properties);
        let registry = registry_args.registry()?;
        let encoder = |part: Part,
                       format: &Option<String>,
                       file: &Option<PathBuf>,
                       subject: &Option<String>,
                       message: &Option<String>| {
            let Some(format) = format else {
                return Ok(None);
            };
            let format: SchemaFormat = format.parse().map_err(|detail| Error::InvalidArgument {
                what: "schema format",
                detail,
            })?;
            let source = match (file, subject) {
                (Some(path), _) => SchemaSource::File {
                    path: path.clone(),
                    subject: format!("{topic}{}", part.subject_suffix),
                },
                (None, Some(text)) => {
                    SchemaSource::subject(text).map_err(|detail| Error::InvalidArgument {
                        what: "subject",
                        detail,
                    })?
                }
                (None, None) => {
                    return Err(Error::InvalidArgument {
                        what: "schema",
                        detail: format!(
                            "--{0}-format needs --{0}-schema FILE or --{0}-subject SUBJECT",
                            part.name
                        ),
                    })
                }
            };
            ValueEncoder::new(registry.client(), format, &source, message.as_deref())
                .map(Some)
                .map_err(|e| Error::SchemaSetup(Box::new(e)))
        };
        Ok(Encoders {
            key: encoder(
                KEY,
                &self.key_format,
                &self.key_schema,
                &self.key_subject,
                &self.key_message,
            )?,
            value: encoder(
                VALUE,
                &self.value_format,
                &self.value_schema,
                &self.value_subject,
                &self.value_message,
            )?,
        })
    }
}

impl Encoders {
    /// Whether keys are encoded.
    pub fn keys(&self) -> bool {
        self.key.is_some()
    }

    /// Whether values are encoded.
    pub fn values(&self) -> bool {
        self.value.is_some()
    }

    /// Encodes the key read (a JSON document; `decoded`: in the notation `krec consume -J -s`
    /// writes) into `out`, cleared first.
    pub fn encode_key(
        &self,
        read: &[u8],
        decoded: bool,
        out: &mut Vec<u8>,
        origin: &Origin,
    ) -> Result<(), String> {
        encode(self.key.as_ref(), KEY, (read, decoded), out, origin)
    }

    /// Encodes the value read the same way.
    pub fn encode_value(
        &self,
        read: &[u8],
        decoded: bool,
        out: &mut Vec<u8>,
        origin: &Origin,
    ) -> Result<(), String> {
        encode(self.value.as_ref(), VALUE, (read, decoded), out, origin)
    }
}

/// `FILE:LINE: value: not JSON: ...`, or `FILE:LINE: value.path: detail (schema id N)`.
fn encode(
    encoder: Option<&ValueEncoder>,
    part: Part,
    (read, decoded): (&[u8], bool),
    out: &mut Vec<u8>,
    origin: &Origin,
) -> Result<(), String> {
    let Some(encoder) = encoder else {
        return Ok(());
    };
    out.clear();
    let document: serde_json::Value = serde_json::from_slice(read)
        .map_err(|error| format!("{origin}: {}: not JSON: {error}", part.name))?;
    let notation = if decoded {
        JsonNotation::Decoded
    } else {
        JsonNotation::AvroEncoding
    };
    let encoded = encoder.encode_in(&document, notation, out);
    encoded.map_err(|error| match error {
        // The path is `.` for the root, else `.order.lines[2].sku`.
        krec_schema::Error::Misfit { id, path, detail } => {
            let path = if path == "." { "" } else { &path };
            format!("{origin}: {}{path}: {detail} (schema id {id})", part.name)
        }
        other => format!("{origin}: {}: {other}", part.name),
    })
}
