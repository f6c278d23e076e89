//! krec-schema: values in the Confluent Schema Registry wire format (magic byte 0, a 4-byte
//! schema id, the encoded value) turned into JSON text, for Avro, Protobuf and JSON Schema.
//!
//! Layout, from the bottom up:
//! - [`error`]: the crate's one error enum.
//! - `json`, `time`, `decimal`: JSON text written straight into a buffer.
//! - [`wire`]: the framing (schema id, Protobuf message indexes).
//! - [`registry`]: the blocking HTTP client (rustls, basic auth, timeout, retries).
//! - [`avro`], [`protobuf`], `json_schema`: one schema's values to JSON.
//! - [`schemas`]: schemas by id, fetched once and shared between threads.
//! - [`decoder`]: a per-thread decoder of one format's framed values.
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
//! # Public surface
//!
//! - Decoding values: [`ValueDecoder`] with [`SchemaFormat`], [`Error`].
//! - Schemas: [`SchemaRegistry`] (ids to [`CompiledSchema`]s), [`RegistryConfig`] and
//!   [`registry::RegistryClient`] (the Schema Registry's HTTP API), [`avro::AvroSchema`],
//!   [`protobuf::ProtobufSchema`].
//! - [`wire`]: the Confluent framing (magic byte, schema id, Protobuf message indexes).
//!
//! Internal: the JSON writer, JSON Schema, decimal and time formatting.
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
pub use encoder::{SchemaSource, ValueEncoder};
pub use error::Error;
pub use registry::{RegistryConfig, SubjectVersion};
pub use schemas::{CompiledSchema, SchemaRegistry};
