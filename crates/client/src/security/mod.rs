//! SASL building blocks: credentials that never print, the SCRAM and OAUTHBEARER client
//! messages, and the `sasl.jaas.config` and properties-file parsers that configure them.
//!
//! Each module is a pure function of its input (no I/O but the token file), so the SASL
//! exchange in [`crate::connection`] drives them and the tests need no broker.

pub(crate) mod jaas;
pub(crate) mod oauthbearer;
pub(crate) mod properties;
pub(crate) mod scram;
pub(crate) mod secret;

pub use scram::ScramMechanism;
pub use secret::Secret;
