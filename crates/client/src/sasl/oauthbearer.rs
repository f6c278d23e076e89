//! OAUTHBEARER (RFC 7628, KIP-255): one message carrying a bearer token from a
//! [`TokenProvider`], and RFC 7628's failure dance when the broker refuses it. The wire form
//! and the token checks are in `message`; where tokens come from is in `token`.

use std::sync::Arc;

use crate::security::properties_map::PropertyMap;
use crate::Error;

use super::token::{self, TokenProvider};
use super::{BoxError, BoxFuture, Registration, SaslConfig, SaslExchange, SaslMechanism};

pub(crate) mod message;

pub(super) const REGISTRATION: Registration = Registration {
    names: &["OAUTHBEARER"],
    properties: &["sasl.oauthbearer.method", "sasl.oauthbearer.extensions"],
    secrets: &[],
    build,
    available: true,
};

fn build(_name: &str, properties: &PropertyMap) -> Result<SaslConfig, Error> {
    let provider = token::from_properties(properties)?;
    Ok(SaslConfig::oauthbearer(provider, extensions(properties)?))
}

/// librdkafka's `sasl.oauthbearer.extensions`: `key=value` pairs separated by commas.
fn extensions(properties: &PropertyMap) -> Result<Vec<(String, String)>, Error> {
    let Some(text) = properties.get("sasl.oauthbearer.extensions") else {
        return Ok(Vec::new());
    };
    text.split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) => Ok((key.trim().to_owned(), value.trim().to_owned())),
            None => Err(crate::security::config::config_error(
                "sasl.oauthbearer.extensions",
                format!("{pair:?} is not key=value"),
            )),
        })
        .collect()
}

/// OAUTHBEARER with its token source and the extensions sent besides the token's own.
#[derive(Debug)]
pub(super) struct OAuthBearer {
    provider: Arc<dyn TokenProvider>,
    extensions: Vec<(String, String)>,
}

impl OAuthBearer {
    pub(super) fn new(provider: Arc<dyn TokenProvider>, extensions: Vec<(String, String)>) -> Self {
        Self {
            provider,
            extensions,
        }
    }
}

impl SaslMechanism for OAuthBearer {
    fn name(&self) -> &'static str {
        "OAUTHBEARER"
    }

    fn identity(&self) -> String {
        self.provider.describe()
    }

    fn prepare<'a>(&'a self, broker: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move { self.provider.token(broker).await.map(drop) })
    }

    fn start<'a>(
        &'a self,
        broker: &'a str,
    ) -> BoxFuture<'a, Result<Box<dyn SaslExchange>, BoxError>> {
        Box::pin(async move {
            let token = self.provider.token(broker).await?;
            let mut extensions = token.extensions;
            extensions.extend_from_slice(&self.extensions);
            let first = message::client_first_message(&token.token, &extensions)?;
            Ok(Box::new(OAuthBearerExchange::First(first)) as Box<dyn SaslExchange>)
        })
    }
}

/// Where the exchange is.
enum OAuthBearerExchange {
    /// The client's one message is next.
    First(Vec<u8>),
    /// Sent; an empty answer accepts the token.
    Sent,
    /// The broker refused with this JSON challenge; it ends the exchange after our reply.
    Refused(String),
}

impl SaslExchange for OAuthBearerExchange {
    fn step<'a>(
        &'a mut self,
        challenge: Option<&'a [u8]>,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, BoxError>> {
        let state = std::mem::replace(self, OAuthBearerExchange::Sent);
        let next: Result<Option<Vec<u8>>, BoxError> = match (state, challenge) {
            (OAuthBearerExchange::First(first), None) => Ok(Some(first)),
            (OAuthBearerExchange::Sent, Some([])) => Ok(None),
            (OAuthBearerExchange::Sent, Some(challenge)) => {
                *self =
                    OAuthBearerExchange::Refused(String::from_utf8_lossy(challenge).into_owned());
                Ok(Some(message::FAILURE_ACKNOWLEDGEMENT.to_vec()))
            }
            (OAuthBearerExchange::Refused(challenge), _) => Err(format!(
                "token refused: {challenge} (the broker checks a token's signature, \
                     issuer, audience and expiry: compare them with its \
                     sasl.oauthbearer.expected.* and JWKS settings)"
            )
            .into()),
            (_, _) => Err("OAUTHBEARER messages out of order".into()),
        };
        Box::pin(async move { next })
    }
}
