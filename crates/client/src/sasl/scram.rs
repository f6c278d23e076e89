//! SCRAM-SHA-256 and SCRAM-SHA-512: the mechanism around the client in `client`, which holds
//! the RFC 5802 state machine.

use crate::security::properties_map::PropertyMap;
use crate::security::secret::Secret;
use crate::Error;

use super::{BoxError, BoxFuture, Registration, SaslConfig, SaslExchange, SaslMechanism};

pub(crate) mod client;

pub(crate) use client::ScramClient;
pub use client::ScramMechanism;

pub(super) const REGISTRATION: Registration = Registration {
    names: &["SCRAM-SHA-256", "SCRAM-SHA-512"],
    properties: &[],
    secrets: &[],
    build,
    available: true,
};

fn build(name: &str, properties: &PropertyMap) -> Result<SaslConfig, Error> {
    let mechanism = if name == "SCRAM-SHA-512" {
        ScramMechanism::Sha512
    } else {
        ScramMechanism::Sha256
    };
    let (username, password) = properties.credentials("ScramLoginModule")?;
    Ok(SaslConfig::scram(mechanism, username, password))
}

/// SCRAM with its hash, user name and password ([`SaslConfig::scram`] builds one).
#[derive(Debug)]
pub struct Scram {
    mechanism: ScramMechanism,
    username: String,
    password: Secret,
}

impl Scram {
    /// The user name.
    pub fn username(&self) -> &str {
        &self.username
    }

    /// The password.
    pub fn password(&self) -> &Secret {
        &self.password
    }

    pub(super) fn new(mechanism: ScramMechanism, username: String, password: Secret) -> Self {
        Self {
            mechanism,
            username,
            password,
        }
    }
}

impl SaslMechanism for Scram {
    fn name(&self) -> &'static str {
        self.mechanism.name()
    }

    fn identity(&self) -> String {
        format!("user {:?}", self.username)
    }

    fn start<'a>(
        &'a self,
        _broker: &'a str,
    ) -> BoxFuture<'a, Result<Box<dyn SaslExchange>, BoxError>> {
        Box::pin(async move {
            let client = ScramClient::new(self.mechanism, &self.username, &self.password)?;
            Ok(Box::new(ScramExchange(Some(client))) as Box<dyn SaslExchange>)
        })
    }
}

/// client-first, client-final, then the server-final's proof checked.
struct ScramExchange(Option<ScramClient>);

impl SaslExchange for ScramExchange {
    fn step<'a>(
        &'a mut self,
        challenge: Option<&'a [u8]>,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, BoxError>> {
        Box::pin(async move {
            let mut client = self.0.take().ok_or("SCRAM exchange already ended")?;
            let Some(challenge) = challenge else {
                let first = client.client_first();
                self.0 = Some(client);
                return Ok(Some(first));
            };
            if client.awaits_server_final() {
                client.handle_server_final(challenge)?;
                return Ok(None);
            }
            // Up to a million PBKDF2 rounds: off the runtime thread, which serves the fetches.
            let challenge = challenge.to_vec();
            let (client, answer) = tokio::task::spawn_blocking(move || {
                let answer = client.handle_server_first(&challenge);
                (client, answer)
            })
            .await
            .map_err(|e| format!("SCRAM key derivation: {e}"))?;
            self.0 = Some(client);
            Ok(Some(answer?))
        })
    }
}
