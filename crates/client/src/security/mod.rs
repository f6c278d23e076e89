//! Connection security: what it is ([`SecurityConfig`], from typed fields or from librdkafka
//! and Java client properties), the TLS configuration it builds, secrets that never print,
//! and the `sasl.jaas.config` and properties-file parsers. The SASL mechanisms themselves are
//! in [`crate::sasl`].

pub mod config;
pub(crate) mod jaas;
pub mod properties;
pub(crate) mod properties_map;
pub(crate) mod secret;
pub(crate) mod tls;

pub use crate::sasl::{SaslConfig, ScramMechanism};
pub use config::{Pem, SecurityConfig, SecurityProtocol, TlsConfig, SECURITY_PROPERTIES};
pub use secret::Secret;
pub use tls::TLS_PROVIDER;
