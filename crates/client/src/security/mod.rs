//! Connection security: what it is ([`SecurityConfig`], from typed fields or from librdkafka
//! and Java client properties), the TLS configuration it builds, and the SASL pieces: secrets
//! that never print, the SCRAM and OAUTHBEARER client messages, and the `sasl.jaas.config`
//! and properties-file parsers.
//!
//! The SASL modules are pure functions of their input (no I/O but the token file): the
//! exchange in `authenticate` drives them, and their tests need no broker.

pub mod config;
pub(crate) mod jaas;
pub(crate) mod oauthbearer;
pub mod properties;
mod properties_map;
pub(crate) mod scram;
pub(crate) mod secret;
pub(crate) mod tls;

pub use config::{
    OAuthBearerToken, Pem, SaslConfig, SecurityConfig, SecurityProtocol, TlsConfig,
    SECURITY_PROPERTIES,
};
pub use scram::ScramMechanism;
pub use secret::Secret;
