//! What a connection's security is: the protocol, TLS files and checks, the SASL mechanism
//! and its credentials; built from typed fields or from librdkafka/Java client properties.

use std::path::PathBuf;
use std::str::FromStr;

use super::secret::Secret;
use crate::sasl::SaslConfig;
use crate::Error;

/// `security.protocol`: whether connections use TLS, SASL, both or neither.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SecurityProtocol {
    /// Plain TCP.
    #[default]
    Plaintext,
    /// TLS.
    Ssl,
    /// SASL over plain TCP.
    SaslPlaintext,
    /// SASL over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's name for it (`SASL_SSL`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Plaintext => "PLAINTEXT",
            Self::Ssl => "SSL",
            Self::SaslPlaintext => "SASL_PLAINTEXT",
            Self::SaslSsl => "SASL_SSL",
        }
    }

    /// Whether connections start with a TLS handshake.
    pub fn uses_tls(self) -> bool {
        matches!(self, Self::Ssl | Self::SaslSsl)
    }

    /// Whether connections authenticate with SASL.
    pub fn uses_sasl(self) -> bool {
        matches!(self, Self::SaslPlaintext | Self::SaslSsl)
    }
}

impl FromStr for SecurityProtocol {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        match text.to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Ok(Self::Plaintext),
            "SSL" => Ok(Self::Ssl),
            "SASL_PLAINTEXT" => Ok(Self::SaslPlaintext),
            "SASL_SSL" => Ok(Self::SaslSsl),
            _ => Err(config_error(
                "security.protocol",
                format!("{text:?} is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
            )),
        }
    }
}

/// PEM text, from a file or given inline (Java's `ssl.truststore.certificates`, librdkafka's
/// `ssl.ca.pem`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pem {
    /// A file holding PEM blocks.
    File(PathBuf),
    /// The PEM text itself (a secret: it may hold a key).
    Text(Secret),
}

/// TLS settings; only used when the protocol is `SSL` or `SASL_SSL`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsConfig {
    /// CA certificates the broker's certificate must chain to; `None`: the system's roots.
    pub ca: Option<Pem>,
    /// Client certificate chain, for mutual TLS.
    pub certificate: Option<Pem>,
    /// Client private key (PKCS#8, PKCS#1 or SEC1; encrypted PKCS#8 with `key_password`).
    pub key: Option<Pem>,
    /// Password of an encrypted PKCS#8 key.
    pub key_password: Option<Secret>,
    /// Verify the broker's certificate chain. Off only for tests: anyone can then pose as the
    /// broker.
    pub verify_certificate: bool,
    /// Verify that the certificate names the host connected to.
    pub verify_hostname: bool,
    /// Offer TLS 1.2.
    pub tls12: bool,
    /// Offer TLS 1.3.
    pub tls13: bool,
}

impl Default for TlsConfig {
    fn default() -> Self {
        Self {
            ca: None,
            certificate: None,
            key: None,
            key_password: None,
            verify_certificate: true,
            verify_hostname: true,
            tls12: true,
            tls13: true,
        }
    }
}

/// How connections are secured: the protocol, TLS and SASL settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SecurityConfig {
    /// `security.protocol`.
    pub protocol: SecurityProtocol,
    /// TLS settings (used with `SSL` and `SASL_SSL`).
    pub tls: TlsConfig,
    /// SASL mechanism and credentials (required with `SASL_*`).
    pub sasl: Option<SaslConfig>,
}

/// The properties [`SecurityConfig::from_properties`] understands besides those of each SASL
/// mechanism (which [`SecurityConfig::handles`] also knows).
pub const SECURITY_PROPERTIES: &[&str] = &[
    "security.protocol",
    "sasl.mechanisms",
    "sasl.mechanism",
    "sasl.username",
    "sasl.password",
    "sasl.jaas.config",
    "ssl.ca.location",
    "ssl.ca.pem",
    "ssl.certificate.location",
    "ssl.certificate.pem",
    "ssl.key.location",
    "ssl.key.pem",
    "ssl.key.password",
    "enable.ssl.certificate.verification",
    "ssl.endpoint.identification.algorithm",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.truststore.certificates",
    "ssl.truststore.password",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.password",
    "ssl.protocol",
    "ssl.enabled.protocols",
];

/// Properties whose values are secrets: never echoed in a message.
const SECRET_PROPERTIES: &[&str] = &[
    "sasl.password",
    "sasl.jaas.config",
    "ssl.key.password",
    "ssl.key.pem",
    "ssl.keystore.key",
    "ssl.keystore.password",
    "ssl.truststore.password",
];

impl SecurityConfig {
    /// Whether `key` is a security property: one of [`SECURITY_PROPERTIES`] or a SASL
    /// mechanism's.
    pub fn handles(key: &str) -> bool {
        SECURITY_PROPERTIES.contains(&key) || crate::sasl::handles(key)
    }

    /// Whether the value of property `key` must never be shown.
    pub fn is_secret(key: &str) -> bool {
        SECRET_PROPERTIES.contains(&key) || crate::sasl::is_secret(key)
    }

    /// Builds the configuration from librdkafka or Java client properties, in order (a later
    /// value of a key wins). A value `${env:NAME}` or `${file:PATH}` is read from that
    /// environment variable or file, so secrets need not be on a command line.
    pub fn from_properties<'a>(
        properties: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, Error> {
        super::properties_map::build(properties)
    }
}

/// An invalid security property; `detail` never holds a secret's value.
pub(crate) fn config_error(property: &str, detail: String) -> Error {
    Error::Config {
        property: property.to_owned(),
        detail,
    }
}
