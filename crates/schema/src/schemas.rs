//! Schemas by id: fetched from the registry, compiled, and kept for the life of the process.
//! Each id is fetched once, even when many threads ask for it at the same moment.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::avro::AvroSchema;
use crate::protobuf::ProtobufSchema;
use crate::registry::{RegisteredSchema, RegistryClient, RegistryConfig, SchemaReference};
use crate::Error;

/// Most referenced schemas followed from one schema (a bound on a reference cycle).
const MAX_REFERENCES: usize = 256;

/// A schema compiled for decoding.
#[derive(Debug)]
pub enum CompiledSchema {
    /// An Avro schema.
    Avro(AvroSchema),
    /// A Protobuf file with its imports.
    Protobuf(ProtobufSchema),
    /// A JSON Schema (values are JSON text already).
    Json,
}

impl CompiledSchema {
    /// The registry's name for the schema type.
    pub fn type_name(&self) -> &'static str {
        match self {
            CompiledSchema::Avro(_) => "AVRO",
            CompiledSchema::Protobuf(_) => "PROTOBUF",
            CompiledSchema::Json => "JSON",
        }
    }
}

/// One slot per id: whoever finds it empty fetches while the others wait on its lock.
type Slot = Arc<Mutex<Option<Arc<CompiledSchema>>>>;

/// The registry client and every schema fetched so far; share it with an `Arc`.
#[derive(Debug)]
pub struct SchemaRegistry {
    client: RegistryClient,
    slots: Mutex<HashMap<u32, Slot>>,
    fetches: AtomicU64,
}

impl SchemaRegistry {
    /// A registry for `config`, fetching nothing yet.
    pub fn new(config: RegistryConfig) -> Result<Self, Error> {
        Ok(SchemaRegistry {
            client: RegistryClient::new(config)?,
            slots: Mutex::new(HashMap::new()),
            fetches: AtomicU64::new(0),
        })
    }

    /// The schema with this id, fetched and compiled on first use. A failure is not kept:
    /// the next call asks the registry again.
    pub fn schema(&self, id: u32) -> Result<Arc<CompiledSchema>, Error> {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            slots.entry(id).or_default().clone()
        };
        let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(schema) = slot.as_ref() {
            return Ok(schema.clone());
        }
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let schema = Arc::new(self.fetch(id)?);
        *slot = Some(schema.clone());
        Ok(schema)
    }

    /// The registry client, for lookups by subject and registration.
    pub fn client(&self) -> &RegistryClient {
        &self.client
    }

    /// Schemas fetched by id so far (each id once when all goes well).
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    fn fetch(&self, id: u32) -> Result<CompiledSchema, Error> {
        let registered = self.client.schema_by_id(id)?;
        let invalid = |detail: String| Error::InvalidSchema { id, detail };
        let mut references = HashMap::new();
        collect_references(&self.client, &registered.references, &mut references)?;
        match registered.schema_type() {
            "AVRO" => {
                let named: Vec<String> = references.into_values().map(|s| s.schema).collect();
                AvroSchema::parse(&registered.schema, &named)
                    .map(CompiledSchema::Avro)
                    .map_err(invalid)
            }
            "PROTOBUF" => {
                let imports = references
                    .into_iter()
                    .map(|(name, s)| (name, s.schema))
                    .collect();
                ProtobufSchema::compile(&format!("schema-{id}.proto"), &registered.schema, &imports)
                    .map(CompiledSchema::Protobuf)
                    .map_err(invalid)
            }
            "JSON" => Ok(CompiledSchema::Json),
            other => Err(invalid(format!("unknown schema type {other:?}"))),
        }
    }
}

/// Fetches `references` and theirs from the registry, by reference name.
pub(crate) fn collect_references(
    client: &RegistryClient,
    references: &[SchemaReference],
    into: &mut HashMap<String, RegisteredSchema>,
) -> Result<(), Error> {
    for reference in references {
        if into.contains_key(&reference.name) {
            continue;
        }
        if into.len() >= MAX_REFERENCES {
            return Err(Error::Config {
                property: "schema.registry.url",
                detail: format!("more than {MAX_REFERENCES} schema references"),
            });
        }
        let schema = client.schema_by_subject(&reference.subject, reference.version)?;
        let nested = schema.references.clone();
        into.insert(reference.name.clone(), schema);
        collect_references(client, &nested, into)?;
    }
    Ok(())
}
