//! PLAIN (RFC 4616): the user name and password in one message, as they are. Use it over TLS.

use crate::security::properties_map::PropertyMap;
use crate::security::secret::Secret;
use crate::Error;

use super::{BoxError, BoxFuture, Registration, SaslConfig, SaslExchange, SaslMechanism};

pub(super) const REGISTRATION: Registration = Registration {
    names: &["PLAIN"],
    properties: &[],
    secrets: &[],
    build,
    available: true,
};

fn build(_name: &str, properties: &PropertyMap) -> Result<SaslConfig, Error> {
    let (username, password) = properties.credentials("PlainLoginModule")?;
    Ok(SaslConfig::plain(username, password))
}

/// PLAIN with its user name and password ([`SaslConfig::plain`] builds one).
#[derive(Debug)]
pub struct Plain {
    username: String,
    password: Secret,
}

impl Plain {
    /// The user name.
    pub fn username(&self) -> &str {
        &self.username
    }

    /// The password.
    pub fn password(&self) -> &Secret {
        &self.password
    }

    pub(super) fn new(username: String, password: Secret) -> Self {
        Self { username, password }
    }
}

impl SaslMechanism for Plain {
    fn name(&self) -> &'static str {
        "PLAIN"
    }

    fn identity(&self) -> String {
        format!("user {:?}", self.username)
    }

    fn start<'a>(
        &'a self,
        _broker: &'a str,
    ) -> BoxFuture<'a, Result<Box<dyn SaslExchange>, BoxError>> {
        let password = self.password.expose();
        // authzid NUL authcid NUL passwd, with an empty authzid.
        let mut message = Vec::with_capacity(self.username.len() + password.len() + 2);
        message.push(0);
        message.extend_from_slice(self.username.as_bytes());
        message.push(0);
        message.extend_from_slice(password.as_bytes());
        Box::pin(async move { Ok(Box::new(PlainExchange(Some(message))) as Box<dyn SaslExchange>) })
    }
}

/// The one message, then nothing: the broker's empty answer ends it.
struct PlainExchange(Option<Vec<u8>>);

impl SaslExchange for PlainExchange {
    fn step<'a>(
        &'a mut self,
        _challenge: Option<&'a [u8]>,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, BoxError>> {
        let next = self.0.take();
        Box::pin(async move { Ok(next) })
    }
}
