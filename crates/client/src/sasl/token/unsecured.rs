//! The default token sources: krec's token file, and librdkafka's unsecured JWT (or the Java
//! client's unsecured login options) for test clusters.

use std::sync::Arc;
use std::time::SystemTime;

use crate::sasl::oauthbearer::message;
use crate::sasl::{BoxError, BoxFuture};
use crate::security::config::config_error;
use crate::security::jaas::JaasLogin;
use crate::security::properties_map::{check_module, PropertyMap};
use crate::Error;

use super::{BearerToken, Method, TokenFile, TokenProvider};

pub(super) const DEFAULT_METHOD: Method = Method {
    names: &["default"],
    java_handlers: &["OAuthBearerUnsecuredLoginCallbackHandler"],
    properties: &[
        "sasl.oauthbearer.token.file",
        "sasl.oauthbearer.config",
        "enable.sasl.oauthbearer.unsecure.jwt",
    ],
    secrets: &[],
    build,
    available: true,
};

fn build(properties: &PropertyMap) -> Result<Arc<dyn TokenProvider>, Error> {
    if let Some(path) = properties.get("sasl.oauthbearer.token.file") {
        return Ok(Arc::new(TokenFile(path.into())));
    }
    if properties.flag("enable.sasl.oauthbearer.unsecure.jwt")? == Some(true) {
        let config = properties.get("sasl.oauthbearer.config").ok_or_else(|| {
            config_error(
                "sasl.oauthbearer.config",
                "the unsecured JWT needs principal=NAME".to_owned(),
            )
        })?;
        return Ok(Arc::new(UnsecuredJwt(config.to_owned())));
    }
    if let Some(login) = properties.jaas()? {
        check_module(&login, "OAuthBearerLoginModule")?;
        return Ok(Arc::new(UnsecuredJwt(java_unsecured_config(&login)?)));
    }
    Err(config_error(
        "sasl.oauthbearer.token.file",
        "OAUTHBEARER needs a token: sasl.oauthbearer.method=oidc with a client id, secret and \
         token endpoint; sasl.oauthbearer.token.file=PATH; or for test clusters \
         enable.sasl.oauthbearer.unsecure.jwt=true with sasl.oauthbearer.config=principal=NAME"
            .to_owned(),
    ))
}

/// An unsigned JWT built afresh at every authentication from librdkafka's
/// `sasl.oauthbearer.config` (`principal=NAME [scope=..] [lifeSeconds=..]`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct UnsecuredJwt(pub(crate) String);

impl TokenProvider for UnsecuredJwt {
    fn describe(&self) -> String {
        format!("an unsecured JWT ({})", self.0)
    }

    fn token<'a>(&'a self, _broker: &'a str) -> BoxFuture<'a, Result<BearerToken, BoxError>> {
        let now = SystemTime::now();
        let built = message::unsecured_jwt(&self.0, now).map(|jwt| {
            tracing::debug!(principal = %jwt.principal, lifetime = ?jwt.lifetime, "unsecured JWT built");
            BearerToken::new(jwt.token)
                .expiring_at(now + jwt.lifetime)
                .with_extensions(jwt.extensions)
        });
        Box::pin(async move { Ok(built?) })
    }
}

/// The Java client's unsecured login options, as librdkafka's `sasl.oauthbearer.config`.
fn java_unsecured_config(login: &JaasLogin) -> Result<String, Error> {
    let principal = login
        .option("unsecuredLoginStringClaim_sub")
        .ok_or_else(|| {
            config_error(
                "sasl.jaas.config",
                "OAuthBearerLoginModule needs unsecuredLoginStringClaim_sub (only the unsecured \
             login is supported from JAAS; use sasl.oauthbearer.token.file otherwise)"
                    .to_owned(),
            )
        })?;
    let mut config = format!("principal={principal}");
    if let Some(life) = login.option("unsecuredLoginLifetimeSeconds") {
        config.push_str(&format!(" lifeSeconds={life}"));
    }
    if let Some(scope) = login.option("unsecuredLoginListClaim_scope") {
        // Java lists claims as a separator-prefixed string (",a,b"); librdkafka wants "a,b".
        let scope = scope.trim_start_matches(|c: char| !c.is_alphanumeric());
        config.push_str(&format!(" scope={scope}"));
    }
    Ok(config)
}
