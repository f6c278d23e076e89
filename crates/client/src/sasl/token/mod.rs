//! Where OAUTHBEARER tokens come from: the [`TokenProvider`] seam, and the sources krec knows,
//! chosen by `sasl.oauthbearer.method` (or the Java client's login callback handler class).
//!
//! A source is a module here plus one entry in [`METHODS`]. Sources that fetch tokens share
//! the cache in `refresh`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use crate::security::config::config_error;
use crate::security::properties_map::PropertyMap;
use crate::security::secret::Secret;
use crate::Error;

use super::oauthbearer::message;
use super::{BoxError, BoxFuture};

pub(crate) mod aws_msk_iam;
mod oidc;
pub(crate) mod refresh;
mod unsecured;

/// A source of OAUTHBEARER tokens. Asked at every (re-)authentication of every connection:
/// cache inside, and refresh ahead of expiry.
pub trait TokenProvider: std::fmt::Debug + Send + Sync {
    /// Whose tokens these are, for messages: a client id, a file path. Never a secret.
    fn describe(&self) -> String;

    /// A token valid now, for the broker at `broker` (`host:port`; AWS signs for its region).
    fn token<'a>(&'a self, broker: &'a str) -> BoxFuture<'a, Result<BearerToken, BoxError>>;
}

/// A bearer token and what goes with it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct BearerToken {
    /// The token (a JWT, or whatever the broker's validator takes).
    pub token: Secret,
    /// When it stops being valid, if known.
    pub expires_at: Option<SystemTime>,
    /// SASL extensions that belong to this token (`key=value`).
    pub extensions: Vec<(String, String)>,
}

impl BearerToken {
    /// A token of unknown lifetime, without extensions.
    pub fn new(token: Secret) -> Self {
        Self {
            token,
            expires_at: None,
            extensions: Vec::new(),
        }
    }

    /// The same token, valid until `expires_at`.
    pub fn expiring_at(mut self, expires_at: SystemTime) -> Self {
        self.expires_at = Some(expires_at);
        self
    }

    /// The same token, with SASL extensions.
    pub fn with_extensions(mut self, extensions: Vec<(String, String)>) -> Self {
        self.extensions = extensions;
        self
    }
}

/// A token source krec knows by name.
pub(crate) struct Method {
    /// The values `sasl.oauthbearer.method` takes for it (lower case).
    pub(crate) names: &'static [&'static str],
    /// The Java login callback handler classes that mean it (the class name, no package).
    pub(crate) java_handlers: &'static [&'static str],
    /// The property keys only it reads.
    pub(crate) properties: &'static [&'static str],
    /// Those of them whose values are secrets.
    pub(crate) secrets: &'static [&'static str],
    /// Builds it from the properties.
    pub(crate) build: fn(&PropertyMap) -> Result<Arc<dyn TokenProvider>, Error>,
    /// Whether this build can use it (false: its cargo feature is off).
    pub(crate) available: bool,
}

/// Every token source krec knows. The first is the default.
pub(crate) const METHODS: &[Method] = &[
    unsecured::DEFAULT_METHOD,
    oidc::OIDC_METHOD,
    aws_msk_iam::METHOD,
];

/// The names of the methods this build can use.
pub(crate) fn available_methods() -> Vec<&'static str> {
    METHODS
        .iter()
        .filter(|m| m.available)
        .flat_map(|m| m.names.iter().copied())
        .collect()
}

/// Keys every method shares: how one is chosen.
const CHOOSING: &[&str] = &["sasl.login.callback.handler.class"];

/// The token source the properties choose.
pub(crate) fn from_properties(properties: &PropertyMap) -> Result<Arc<dyn TokenProvider>, Error> {
    let method = if let Some(name) = properties.get("sasl.oauthbearer.method") {
        let lower = name.to_ascii_lowercase();
        METHODS
            .iter()
            .find(|m| m.names.contains(&lower.as_str()))
            .ok_or_else(|| {
                let known: Vec<&str> = METHODS
                    .iter()
                    .flat_map(|m| m.names.iter().copied())
                    .collect();
                config_error(
                    "sasl.oauthbearer.method",
                    format!("{name:?} is not one of {}", known.join(", ")),
                )
            })?
    } else if let Some(class) = properties.get("sasl.login.callback.handler.class") {
        let simple = class.rsplit('.').next().unwrap_or(class);
        METHODS
            .iter()
            .find(|m| m.java_handlers.contains(&simple))
            .ok_or_else(|| {
                config_error(
                    "sasl.login.callback.handler.class",
                    format!("{class} is not a login callback handler krec knows"),
                )
            })?
    } else {
        &METHODS[0]
    };
    (method.build)(properties)
}

/// Whether some token source reads property `key`.
pub(crate) fn handles(key: &str) -> bool {
    CHOOSING.contains(&key) || METHODS.iter().any(|m| m.properties.contains(&key))
}

/// Whether the value of a token source's property `key` is a secret.
pub(crate) fn is_secret(key: &str) -> bool {
    METHODS.iter().any(|m| m.secrets.contains(&key))
}

/// krec's `sasl.oauthbearer.token.file`: re-read at every authentication, so whatever
/// rewrites the file refreshes the token.
#[derive(Debug)]
pub(crate) struct TokenFile(pub(crate) PathBuf);

impl TokenProvider for TokenFile {
    fn describe(&self) -> String {
        format!("the token in {}", self.0.display())
    }

    fn token<'a>(&'a self, _broker: &'a str) -> BoxFuture<'a, Result<BearerToken, BoxError>> {
        let path = self.0.clone();
        Box::pin(async move {
            // A file read blocks: off the async threads.
            let token = tokio::task::spawn_blocking(move || message::read_token_file(&path))
                .await
                .map_err(|error| format!("reading the token file failed: {error}"))??;
            Ok(BearerToken::new(token))
        })
    }
}
