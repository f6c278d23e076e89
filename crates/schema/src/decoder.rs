//! Framed values to JSON text: split the framing, find the schema, decode.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;

use crate::json_schema;
use crate::protobuf::ProtobufSchema;
use crate::schemas::{CompiledSchema, SchemaRegistry};
use crate::wire::{split_header, split_message_indexes};
use crate::Error;

/// How the values of a topic are encoded (kcat's `-s value=avro`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaFormat {
    /// Avro binary.
    Avro,
    /// Protobuf, with the message-index list after the schema id.
    Protobuf,
    /// JSON text checked against a JSON Schema by the producer (`json` or `json-schema`).
    Json,
}

impl SchemaFormat {
    /// The registry's name for this schema type.
    pub fn type_name(self) -> &'static str {
        match self {
            SchemaFormat::Avro => "AVRO",
            SchemaFormat::Protobuf => "PROTOBUF",
            SchemaFormat::Json => "JSON",
        }
    }
}

impl FromStr for SchemaFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "avro" => Ok(SchemaFormat::Avro),
            "protobuf" => Ok(SchemaFormat::Protobuf),
            "json" | "json-schema" => Ok(SchemaFormat::Json),
            other => Err(format!("`{other}`: expected avro, protobuf or json")),
        }
    }
}

/// Decodes framed values of one format; one per thread, sharing the registry. Keeps the
/// schemas it used in a map of its own, so the hot path takes no lock.
#[derive(Debug)]
pub struct ValueDecoder {
    registry: Arc<SchemaRegistry>,
    format: SchemaFormat,
    schemas: HashMap<u32, Arc<CompiledSchema>>,
    message_path: Vec<usize>,
}

impl ValueDecoder {
    /// A decoder of `format` values whose schemas come from `registry`.
    pub fn new(registry: Arc<SchemaRegistry>, format: SchemaFormat) -> Self {
        ValueDecoder {
            registry,
            format,
            schemas: HashMap::new(),
            message_path: Vec::new(),
        }
    }

    /// The format decoded.
    pub fn format(&self) -> SchemaFormat {
        self.format
    }

    /// Appends the JSON text of `value` to `out` and returns its schema id. On error `out`
    /// is as it was; the error names the schema id once the framing gave one.
    pub fn decode(&mut self, value: &[u8], out: &mut Vec<u8>) -> Result<u32, Error> {
        let start = out.len();
        let result = self.decode_into(value, out);
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    fn decode_into(&mut self, value: &[u8], out: &mut Vec<u8>) -> Result<u32, Error> {
        let (id, payload) = split_header(value)?;
        let schema = self.schema(id)?;
        let mismatch = |detail: String| Error::Mismatch { id, detail };
        match (&*schema, self.format) {
            (CompiledSchema::Avro(avro), SchemaFormat::Avro) => {
                avro.to_json(payload, out).map_err(mismatch)?
            }
            (CompiledSchema::Protobuf(protobuf), SchemaFormat::Protobuf) => {
                let message_bytes = split_message_indexes(payload, &mut self.message_path)?;
                let message = protobuf.message(&self.message_path).map_err(mismatch)?;
                ProtobufSchema::to_json(message, message_bytes, out).map_err(mismatch)?
            }
            (CompiledSchema::Json, SchemaFormat::Json) => {
                json_schema::to_json(payload, out).map_err(mismatch)?
            }
            (found, expected) => {
                return Err(Error::WrongSchemaType {
                    id,
                    expected: expected.type_name(),
                    found: found.type_name().to_owned(),
                })
            }
        }
        Ok(id)
    }

    fn schema(&mut self, id: u32) -> Result<Arc<CompiledSchema>, Error> {
        if let Some(schema) = self.schemas.get(&id) {
            return Ok(schema.clone());
        }
        let schema = self.registry.schema(id)?;
        self.schemas.insert(id, schema.clone());
        Ok(schema)
    }
}
