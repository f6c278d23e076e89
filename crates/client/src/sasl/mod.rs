//! SASL mechanisms behind one seam: [`SaslMechanism`] names a mechanism and starts one
//! [`SaslExchange`] per (re-)authentication; OAUTHBEARER takes its tokens from a
//! [`TokenProvider`].
//!
//! Each mechanism lives in its own module, which also reads its properties. Adding one is a
//! new module and one line in `REGISTERED`: its names, the property keys it reads (and which
//! of them hold secrets), and the function that builds it from them. Adding a token source
//! for OAUTHBEARER is the same, in `token` and its `METHODS` table (`sasl.oauthbearer.method`).
//!
//! An embedder plugs in its own mechanism with [`SaslConfig::new`], or its own token source
//! with [`SaslConfig::oauthbearer`]:
//!
//! ```
//! use std::sync::Arc;
//! use krec_client::sasl::{BearerToken, BoxError, BoxFuture, SaslConfig, TokenProvider};
//! use krec_client::Secret;
//!
//! #[derive(Debug)]
//! struct Vault;
//!
//! impl TokenProvider for Vault {
//!     fn describe(&self) -> String {
//!         "tokens from the vault".to_owned()
//!     }
//!     fn token<'a>(&'a self, _broker: &'a str) -> BoxFuture<'a, Result<BearerToken, BoxError>> {
//!         Box::pin(async { Ok(BearerToken::new(Secret::new("eyJ...".to_owned()))) })
//!     }
//! }
//!
//! let sasl = SaslConfig::oauthbearer(Arc::new(Vault), Vec::new());
//! assert_eq!(sasl.mechanism(), "OAUTHBEARER");
//! ```

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::security::properties_map::PropertyMap;
use crate::security::secret::Secret;
use crate::Error;

pub mod aws_msk_iam;
mod gssapi;
pub(crate) mod oauthbearer;
pub(crate) mod plain;
pub(crate) mod scram;
pub(crate) mod token;

#[cfg(feature = "gssapi")]
pub use gssapi::Gssapi;
pub use plain::Plain;
pub use scram::{Scram, ScramMechanism};
pub use token::{BearerToken, TokenProvider};

/// A future a mechanism or token provider returns (boxed: the traits are used as objects).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a mechanism or token provider failed, in words a person can act on. Never holds a
/// secret: it is shown to users and logged.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A SASL mechanism with its credentials: its name, and a new exchange for each
/// authentication of each connection.
pub trait SaslMechanism: Any + fmt::Debug + Send + Sync {
    /// The mechanism's name as brokers list it (`SCRAM-SHA-256`).
    fn name(&self) -> &'static str;

    /// Who authenticates, for messages: a user name, a principal, a token's source. Never a
    /// secret.
    fn identity(&self) -> String;

    /// Gets ready to authenticate with `broker` before a connection to it opens (fetches a
    /// token into a cache, say), so that a slow source does not hold an open socket.
    fn prepare<'a>(&'a self, broker: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        let _ = broker;
        Box::pin(async { Ok(()) })
    }

    /// Starts one authentication with the broker at `broker` (`host:port`, as connected to:
    /// Kerberos and AWS sign for its host). Slow work (fetching a token, signing) belongs here
    /// or in [`SaslExchange::step`], never on a fetch.
    fn start<'a>(
        &'a self,
        broker: &'a str,
    ) -> BoxFuture<'a, Result<Box<dyn SaslExchange>, BoxError>>;
}

/// One authentication in progress: the client's messages, each answering the broker's last.
pub trait SaslExchange: Send {
    /// The next message to send. `challenge` is `None` for the first message, then the bytes
    /// of the broker's last SaslAuthenticate response. `Ok(None)`: the client is satisfied
    /// and the exchange is over (after verifying the broker's last answer, if the mechanism
    /// can).
    fn step<'a>(
        &'a mut self,
        challenge: Option<&'a [u8]>,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, BoxError>>;
}

/// The SASL mechanism and credentials a connection authenticates with; cheap to clone (all
/// clones share one mechanism, and so one token cache).
#[derive(Clone)]
pub struct SaslConfig(Arc<dyn SaslMechanism>);

impl SaslConfig {
    /// Any mechanism, the crate's own or an embedder's.
    pub fn new(mechanism: impl SaslMechanism + 'static) -> Self {
        Self(Arc::new(mechanism))
    }

    /// PLAIN: user name and password, sent as they are (use it over TLS).
    pub fn plain(username: impl Into<String>, password: Secret) -> Self {
        Self::new(plain::Plain::new(username.into(), password))
    }

    /// SCRAM-SHA-256 or SCRAM-SHA-512: the password never crosses the wire.
    pub fn scram(mechanism: ScramMechanism, username: impl Into<String>, password: Secret) -> Self {
        Self::new(scram::Scram::new(mechanism, username.into(), password))
    }

    /// OAUTHBEARER with tokens from `provider`, and SASL `extensions` (`key=value`) sent with
    /// each besides the token's own.
    pub fn oauthbearer(
        provider: Arc<dyn TokenProvider>,
        extensions: Vec<(String, String)>,
    ) -> Self {
        Self::new(oauthbearer::OAuthBearer::new(provider, extensions))
    }

    /// The mechanism's name as brokers list it.
    pub fn mechanism(&self) -> &'static str {
        self.0.name()
    }

    /// Who authenticates, for messages (never a secret).
    pub fn identity(&self) -> String {
        self.0.identity()
    }

    /// The mechanism itself.
    pub fn get(&self) -> &dyn SaslMechanism {
        &*self.0
    }

    /// The mechanism as its own type, if it is a `T` ([`Plain`], [`Scram`], an embedder's).
    pub fn downcast_ref<T: SaslMechanism>(&self) -> Option<&T> {
        let any: &dyn Any = &*self.0;
        any.downcast_ref()
    }
}

impl fmt::Debug for SaslConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Two configurations are equal when they are the same mechanism for the same identity (the
/// credentials themselves are not compared).
impl PartialEq for SaslConfig {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.mechanism() == other.mechanism() && self.identity() == other.identity())
    }
}

impl Eq for SaslConfig {}

/// A mechanism krec knows by name: what `sasl.mechanism` selects.
pub(crate) struct Registration {
    /// The names `sasl.mechanism` takes for it (upper case).
    pub(crate) names: &'static [&'static str],
    /// The property keys only it reads.
    pub(crate) properties: &'static [&'static str],
    /// Those of them whose values are secrets.
    pub(crate) secrets: &'static [&'static str],
    /// Builds it from the properties; `name` is the one `sasl.mechanism` gave.
    pub(crate) build: fn(name: &str, properties: &PropertyMap) -> Result<SaslConfig, Error>,
    /// Whether this build can use it (false: its cargo feature is off).
    pub(crate) available: bool,
}

/// Every mechanism krec knows by name. A mechanism behind a cargo feature that is off still
/// has its entry, whose `build` says which feature to turn on.
pub(crate) const REGISTERED: &[Registration] = &[
    plain::REGISTRATION,
    scram::REGISTRATION,
    oauthbearer::REGISTRATION,
    aws_msk_iam::REGISTRATION,
    gssapi::REGISTRATION,
];

/// The mechanism `sasl.mechanism` names, built from the properties.
pub(crate) fn from_properties(
    key: &str,
    name: &str,
    properties: &PropertyMap,
) -> Result<SaslConfig, Error> {
    let upper = name.to_ascii_uppercase();
    match REGISTERED
        .iter()
        .find(|r| r.names.contains(&upper.as_str()))
    {
        Some(registration) => (registration.build)(&upper, properties),
        None => Err(crate::security::config::config_error(
            key,
            format!(
                "unknown mechanism {name:?}: use one of {}",
                known_names().join(", ")
            ),
        )),
    }
}

/// The mechanism names `sasl.mechanism` takes that this build can use: a mechanism whose
/// cargo feature is off is left out.
pub fn mechanisms() -> Vec<&'static str> {
    REGISTERED
        .iter()
        .filter(|r| r.available)
        .flat_map(|r| r.names.iter().copied())
        .collect()
}

/// The OAUTHBEARER token sources (`sasl.oauthbearer.method`) this build can use.
pub fn token_methods() -> Vec<&'static str> {
    token::available_methods()
}

/// Every mechanism name `sasl.mechanism` takes, for messages.
pub(crate) fn known_names() -> Vec<&'static str> {
    REGISTERED
        .iter()
        .flat_map(|r| r.names.iter().copied())
        .collect()
}

/// Whether some mechanism (or token source) reads property `key`.
pub(crate) fn handles(key: &str) -> bool {
    REGISTERED.iter().any(|r| r.properties.contains(&key)) || token::handles(key)
}

/// Whether the value of a mechanism's property `key` is a secret.
pub(crate) fn is_secret(key: &str) -> bool {
    REGISTERED.iter().any(|r| r.secrets.contains(&key)) || token::is_secret(key)
}
