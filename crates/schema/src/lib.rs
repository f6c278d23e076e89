//! krec-schema: values in the Confluent Schema Registry wire format (magic byte 0, a 4-byte
//! schema id, the encoded value) turned into JSON text, for Avro, Protobuf and JSON Schema;
//! and the other way, JSON values encoded in that format for producing.
//!
//! Layout, from the bottom up:
//! - [`error`]: the crate's one error enum.
//! - `json`, `time`, `decimal`: JSON text written straight into a buffer (and, for times and
//!   decimals, read back).
//! - [`wire`]: the framing (schema id, Protobuf message indexes).
//! - [`registry`]: the blocking HTTP client (rustls, basic auth, timeout, retries): schemas
//!   by id or by subject version, registration.
//! - `misfit`: the path to the part of a JSON value that does not fit its schema.
//! - [`avro`], [`protobuf`], `json_schema`: one schema's values to JSON; `avro_json`, and
//!   [`protobuf`] and `json_schema` again: JSON values to the schema's encoding.
//! - [`schemas`]: schemas by id, fetched once and shared between threads.
//! - [`decoder`]: a per-thread decoder of one format's framed values.
//! - [`encoder`]: an encoder of JSON values into one schema's framed values, its schema from
//!   a file (registered under a subject) or a subject's version.
//!
//! ```no_run
//! use std::sync::Arc;
//! use krec_schema::{RegistryConfig, SchemaFormat, SchemaRegistry, ValueDecoder};
//!
//! let mut config = RegistryConfig::default();
//! config.set_urls("http://127.0.0.1:8081").unwrap();
//! let registry = Arc::new(SchemaRegistry::new(config).unwrap());
//! let mut decoder = ValueDecoder::new(registry, SchemaFormat::Avro);
//! let mut json = Vec::new();
//! let framed_value: &[u8] = &[0, 0, 0, 0, 1, 2, b'h'];
//! let schema_id = decoder.decode(framed_value, &mut json).unwrap();
//! ```
//!
//! Producing: Avro's JSON encoding (unions tagged, `{"string": "x"}`), as Confluent's
//! kafka-avro-console-producer reads it, or the notation [`ValueDecoder`] writes
//! ([`JsonNotation`]); Protobuf's proto3 JSON mapping; JSON Schema values checked against
//! their schema. A value that does not fit is [`Error::Misfit`], naming the
//! path to the field at fault.
//!
//! ```no_run
//! use krec_schema::registry::RegistryClient;
//! use krec_schema::{RegistryConfig, SchemaFormat, SchemaSource, ValueEncoder};
//!
//! let mut config = RegistryConfig::default();
//! config.set_urls("http://127.0.0.1:8081").unwrap();
//! let client = RegistryClient::new(config).unwrap();
//! let source = SchemaSource::File { path: "order.avsc".into(), subject: "orders-value".into() };
//! let encoder = ValueEncoder::new(&client, SchemaFormat::Avro, &source, None).unwrap();
//! let mut framed = Vec::new();
//! encoder.encode(&serde_json::json!({"id": 1, "note": {"string": "rush"}}), &mut framed).unwrap();
//! ```
//!
//! # Public surface
//!
//! - Decoding values: [`ValueDecoder`] with [`SchemaFormat`], [`Error`].
//! - Encoding values: [`ValueEncoder`] with [`SchemaSource`], [`SubjectVersion`] and
//!   [`JsonNotation`].
//! - Schemas: [`SchemaRegistry`] (ids to [`CompiledSchema`]s), [`RegistryConfig`] and
//!   [`registry::RegistryClient`] (the Schema Registry's HTTP API, registration included), [`avro::AvroSchema`],
//!   [`protobuf::ProtobufSchema`].
//! - [`wire`]: the Confluent framing (magic byte, schema id, Protobuf message indexes).
//!
//! Internal: the JSON writer, JSON Schema, decimal and time formatting, Avro's JSON
//! encoding, the misfit path.
//!
//! How this crate fits into krec (the crates, the hot path, the invariants):
//! `docs/ARCHITECTURE.md` in the repository.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod avro;
mod avro_json;
mod decimal;
pub mod decoder;
pub mod encoder;
pub mod error;
mod json;
mod json_schema;
mod misfit;
pub mod protobuf;
pub mod registry;
pub mod schemas;
mod time;
pub mod wire;

pub use decoder::{SchemaFormat, ValueDecoder};
pub use encoder::{JsonNotation, SchemaSource, ValueEncoder};
pub use error::Error;
pub use registry::{RegistryConfig, SubjectVersion};
pub use schemas::{CompiledSchema, SchemaRegistry};
