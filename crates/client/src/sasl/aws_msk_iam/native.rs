//! The native `AWS_MSK_IAM` mechanism: one signed JSON payload for the broker's host, and the
//! broker's JSON answer (`version`, `request-id`) checked.

use std::time::SystemTime;

use aws_credential_types::Credentials;

use super::credentials::{CredentialChain, CredentialsFailure};
use super::region::host_of;
use super::sign::{native_payload, PAYLOAD_VERSION};
use super::Settings;
use crate::sasl::token::refresh::{Expiring, FetchError, Refreshing, RetryPolicy};
use crate::sasl::{BoxError, BoxFuture, SaslExchange, SaslMechanism};

/// What the payload says the client is, as AWS's libraries name themselves.
pub(crate) const USER_AGENT: &str = concat!("krec/", env!("CARGO_PKG_VERSION"));

impl Expiring for Credentials {
    fn expires_at(&self) -> Option<SystemTime> {
        self.expiry()
    }
}

/// `AWS_MSK_IAM` with its settings; one credentials cache for all of a process's connections.
#[derive(Debug)]
pub struct AwsMskIam {
    settings: Settings,
    chain: CredentialChain,
    credentials: Refreshing<Credentials>,
}

impl AwsMskIam {
    /// The mechanism with `settings`, its credentials not yet looked for.
    pub fn new(settings: Settings) -> Self {
        Self {
            chain: CredentialChain::new(settings.source.clone()),
            settings,
            credentials: Refreshing::new(RetryPolicy::default()),
        }
    }

    /// Its settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Credentials valid now, from the cache or AWS's chain; `region` is the cluster's.
    async fn credentials(&self, region: &str) -> Result<Credentials, BoxError> {
        let sts_region = self.settings.sts_region.as_deref().unwrap_or(region);
        self.credentials
            .get(|| async {
                self.chain
                    .credentials(sts_region)
                    .await
                    .map_err(|failure| match failure {
                        CredentialsFailure::Retriable(error) => FetchError::Retriable(error),
                        CredentialsFailure::Fatal(error) => FetchError::Fatal(error),
                    })
            })
            .await
    }
}

impl SaslMechanism for AwsMskIam {
    fn name(&self) -> &'static str {
        "AWS_MSK_IAM"
    }

    fn identity(&self) -> String {
        self.settings.source.describe()
    }

    fn prepare<'a>(&'a self, broker: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            let region = self.settings.region_for(broker)?;
            self.credentials(region).await.map(drop)
        })
    }

    fn start<'a>(
        &'a self,
        broker: &'a str,
    ) -> BoxFuture<'a, Result<Box<dyn SaslExchange>, BoxError>> {
        Box::pin(async move {
            let region = self.settings.region_for(broker)?;
            let credentials = self.credentials(region).await?;
            let payload = native_payload(
                &credentials,
                region,
                host_of(broker),
                USER_AGENT,
                SystemTime::now(),
            )?;
            Ok(Box::new(Exchange::First(payload)) as Box<dyn SaslExchange>)
        })
    }
}

/// Where the exchange is.
enum Exchange {
    /// The signed payload is next.
    First(Vec<u8>),
    /// Sent; the broker's answer is next.
    Sent,
    /// Answered and checked.
    Done,
}

impl SaslExchange for Exchange {
    fn step<'a>(
        &'a mut self,
        challenge: Option<&'a [u8]>,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, BoxError>> {
        let next = match (std::mem::replace(self, Exchange::Done), challenge) {
            (Exchange::First(payload), None) => {
                *self = Exchange::Sent;
                Ok(Some(payload))
            }
            (Exchange::Sent, Some(answer)) => check_answer(answer).map(|()| None),
            _ => Err("AWS_MSK_IAM messages out of order".into()),
        };
        Box::pin(async move { next })
    }
}

/// The broker's answer to an accepted payload: `{"version":"2020_10_22","request-id":"..."}`.
fn check_answer(answer: &[u8]) -> Result<(), BoxError> {
    let refused =
        |why: &str| -> BoxError { format!("the broker's AWS_MSK_IAM answer {why}").into() };
    if answer.is_empty() {
        return Err(refused("is empty"));
    }
    let json: serde_json::Value =
        serde_json::from_slice(answer).map_err(|_| refused("is not JSON"))?;
    match json.get("version").and_then(|v| v.as_str()) {
        Some(PAYLOAD_VERSION) => {}
        Some(other) => {
            return Err(refused(&format!(
                "has version {other:?}, not {PAYLOAD_VERSION}"
            )))
        }
        None => return Err(refused("has no version")),
    }
    match json.get("request-id").and_then(|v| v.as_str()) {
        Some(id) if !id.is_empty() => {
            tracing::debug!(request_id = id, "AWS_MSK_IAM accepted");
            Ok(())
        }
        _ => Err(refused("has no request-id")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(exchange: &mut Exchange, challenge: Option<&[u8]>) -> Result<Option<Vec<u8>>, BoxError> {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(exchange.step(challenge))
    }

    #[test]
    fn the_payload_goes_first_and_a_well_formed_answer_ends_the_exchange() {
        let mut exchange = Exchange::First(b"{}".to_vec());
        assert_eq!(run(&mut exchange, None).unwrap(), Some(b"{}".to_vec()));
        let answer = br#"{"version":"2020_10_22","request-id":"a1b2"}"#;
        assert_eq!(run(&mut exchange, Some(answer)).unwrap(), None);
        assert!(
            run(&mut exchange, Some(answer)).is_err(),
            "nothing after the end"
        );
    }

    #[test]
    fn answers_the_java_library_would_refuse_are_refused() {
        for (answer, why) in [
            (&b""[..], "is empty"),
            (b"not json", "is not JSON"),
            (br#"{"request-id":"x"}"#, "has no version"),
            (
                br#"{"version":"2099_01_01","request-id":"x"}"#,
                "has version \"2099_01_01\"",
            ),
            (
                br#"{"version":"2020_10_22","request-id":""}"#,
                "has no request-id",
            ),
        ] {
            let error = check_answer(answer).unwrap_err().to_string();
            assert!(error.contains(why), "{error}");
        }
    }
}
