//! The crate's one error enum.

/// What can go wrong fetching or registering a schema, or decoding or encoding a value with
/// it.
///
/// Registry addresses in messages never carry credentials; property values are never shown.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A registry setting is missing or invalid.
    #[error("property {property}: {detail}")]
    Config {
        /// The property at fault.
        property: &'static str,
        /// What is wrong, and how to fix it.
        detail: String,
    },

    /// The value does not start with the Confluent framing (magic byte 0, 4-byte schema id).
    #[error("not in the Confluent wire format: {reason}")]
    Framing {
        /// What was found instead.
        reason: String,
    },

    /// The registry could not be reached (or kept failing) after every retry.
    #[error("schema registry {url} unavailable after {attempts} attempts: {detail}")]
    RegistryUnavailable {
        /// The registry address, without credentials.
        url: String,
        /// Requests made.
        attempts: u32,
        /// The last failure.
        detail: String,
    },

    /// The registry answered a request with an error that retrying cannot fix.
    #[error("schema registry {url}: {what}: HTTP {status}: {detail}")]
    RegistryRefused {
        /// The registry address, without credentials.
        url: String,
        /// What was asked (e.g. `schema id 7`).
        what: String,
        /// The HTTP status.
        status: u16,
        /// The registry's message.
        detail: String,
    },

    /// The TLS connection to the registry failed in a way retrying cannot fix (an untrusted
    /// or wrong certificate, a refused handshake).
    #[error(
        "schema registry {url}: TLS: {detail} (its CA goes in schema.registry.ssl.ca.location)"
    )]
    RegistryTls {
        /// The registry address, without credentials.
        url: String,
        /// What rustls said.
        detail: String,
    },

    /// The registry has no schema with this id.
    #[error("schema id {id}: not found in the schema registry")]
    UnknownSchema {
        /// The schema id from the value's framing.
        id: u32,
    },

    /// The schema is of another type than the one asked for (`-s value=avro` on a Protobuf id).
    #[error("schema id {id}: schema type {found}, not {expected}")]
    WrongSchemaType {
        /// The schema id.
        id: u32,
        /// The type asked for.
        expected: &'static str,
        /// The type the registry holds.
        found: String,
    },

    /// The schema (or one of its references) could not be parsed or compiled.
    #[error("schema id {id}: invalid schema: {detail}")]
    InvalidSchema {
        /// The schema id.
        id: u32,
        /// What the parser said.
        detail: String,
    },

    /// A JSON value to encode does not fit its schema.
    #[error("{path}: {detail} (schema id {id})")]
    Misfit {
        /// The schema id.
        id: u32,
        /// Where in the value, from its root: `.order.lines[2].sku` (`.` for the root).
        path: String,
        /// What was expected and what was found.
        detail: String,
    },

    /// A schema file could not be read or is not a valid schema of its format.
    #[error("schema file {}: {detail}", path.display())]
    SchemaFile {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        detail: String,
    },

    /// The value's bytes do not match its schema.
    #[error("schema id {id}: value does not match its schema: {detail}")]
    Mismatch {
        /// The schema id.
        id: u32,
        /// What is wrong, with the byte position in the payload where known.
        detail: String,
    },
}

impl Error {
    /// Whether the error lies in the value or its schema (a record a caller may skip), not in
    /// reaching the registry or the settings (which would fail every record alike).
    pub fn is_in_the_value(&self) -> bool {
        !matches!(
            self,
            Error::Config { .. }
                | Error::RegistryUnavailable { .. }
                | Error::RegistryRefused { .. }
                | Error::RegistryTls { .. }
                | Error::SchemaFile { .. }
        )
    }
}
