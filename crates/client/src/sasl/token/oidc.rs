//! OAuth 2 client credentials (RFC 6749 section 4.4): tokens from an identity provider's token
//! endpoint, as librdkafka's `sasl.oauthbearer.method=oidc` and the Java client's
//! `OAuthBearerLoginCallbackHandler` fetch them. One token serves every connection and is
//! fetched again ahead of its expiry (`refresh`).
//!
//! The request is a form POST of `grant_type=client_credentials` and the scope, the client
//! authenticated with HTTP Basic (`client_secret_basic`, what both those clients send). It runs
//! on a blocking thread (`ureq`), bounded by timeouts and a response size limit.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::Engine;
use serde::Deserialize;

use crate::sasl::{BoxError, BoxFuture};
use crate::security::config::config_error;
use crate::security::jaas::JaasLogin;
use crate::security::properties_map::{check_module, PropertyMap};
use crate::security::secret::Secret;
use crate::Error;

use super::refresh::{FetchError, RefreshingToken, RetryPolicy};
use super::{BearerToken, Method, TokenProvider};

pub(super) const OIDC_METHOD: Method = Method {
    names: &["oidc"],
    // 3.4+ names the class in `oauthbearer`, 3.1 to 3.3 in `oauthbearer.secured`.
    java_handlers: &["OAuthBearerLoginCallbackHandler"],
    properties: &[
        "sasl.oauthbearer.client.id",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.client.credentials.client.id",
        "sasl.oauthbearer.client.credentials.client.secret",
        "sasl.oauthbearer.token.endpoint.url",
        "sasl.oauthbearer.scope",
        "sasl.oauthbearer.header.urlencode",
        "https.ca.location",
        "https.ca.pem",
        "sasl.login.connect.timeout.ms",
        "sasl.login.read.timeout.ms",
        "sasl.login.retry.backoff.ms",
        "sasl.login.retry.backoff.max.ms",
    ],
    secrets: &[
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.client.credentials.client.secret",
    ],
    build,
    available: true,
};

/// Largest token endpoint answer read: a token response is a few kilobytes.
const MAX_RESPONSE_BYTES: u64 = 256 * 1024;
/// Longest error description quoted from the endpoint.
const MAX_DESCRIPTION_CHARS: usize = 300;

/// What the properties say about the token endpoint and the client.
#[derive(Debug)]
pub(crate) struct OidcSettings {
    pub(crate) endpoint: String,
    pub(crate) client_id: String,
    pub(crate) client_secret: Secret,
    pub(crate) scope: Option<String>,
    /// Form-encode the id and secret in the Basic header (RFC 6749 section 2.3.1); off by
    /// default, as in librdkafka and the Java client, whose users' providers expect them raw.
    pub(crate) urlencode_credentials: bool,
    /// SASL extensions from the JAAS line's `extension_NAME` options.
    pub(crate) extensions: Vec<(String, String)>,
    /// The endpoint's CA certificates (PEM); `None`: the system's roots.
    pub(crate) ca_pem: Option<Vec<u8>>,
    pub(crate) connect_timeout: Duration,
    pub(crate) read_timeout: Duration,
    pub(crate) retry: RetryPolicy,
}

fn build(properties: &PropertyMap) -> Result<Arc<dyn TokenProvider>, Error> {
    Ok(Arc::new(OidcSource::new(settings(properties)?)?))
}

/// Reads librdkafka's properties, else the Java client's (properties and JAAS options).
pub(crate) fn settings(properties: &PropertyMap) -> Result<OidcSettings, Error> {
    let jaas = properties.jaas()?;
    if let Some(login) = &jaas {
        check_module(login, "OAuthBearerLoginModule")?;
    }
    let option = |name: &str| jaas.as_ref().and_then(|l| l.option(name));
    let endpoint = properties
        .get("sasl.oauthbearer.token.endpoint.url")
        .ok_or_else(|| {
            missing(
                "sasl.oauthbearer.token.endpoint.url",
                "the token endpoint URL",
            )
        })?;
    if !(endpoint.starts_with("https://") || endpoint.starts_with("http://")) {
        return Err(config_error(
            "sasl.oauthbearer.token.endpoint.url",
            format!("{endpoint:?} is not an https:// (or http://) URL"),
        ));
    }
    let client_id = properties
        .first(&[
            "sasl.oauthbearer.client.id",
            "sasl.oauthbearer.client.credentials.client.id",
        ])
        .map(|(_, v)| v)
        .or_else(|| option("clientId"))
        .ok_or_else(|| missing("sasl.oauthbearer.client.id", "the OAuth client id"))?;
    let client_secret = properties
        .first(&[
            "sasl.oauthbearer.client.secret",
            "sasl.oauthbearer.client.credentials.client.secret",
        ])
        .map(|(_, v)| v)
        .or_else(|| option("clientSecret"))
        .ok_or_else(|| missing("sasl.oauthbearer.client.secret", "the OAuth client secret"))?;
    let scope = properties
        .get("sasl.oauthbearer.scope")
        .or_else(|| option("scope"))
        .filter(|s| !s.trim().is_empty());
    let extensions = jaas.as_ref().map(jaas_extensions).unwrap_or_default();
    let retry_default = RetryPolicy::default();
    Ok(OidcSettings {
        endpoint: endpoint.to_owned(),
        client_id: client_id.to_owned(),
        client_secret: Secret::new(client_secret.to_owned()),
        scope: scope.map(str::to_owned),
        urlencode_credentials: properties
            .flag("sasl.oauthbearer.header.urlencode")?
            .unwrap_or(false),
        extensions,
        ca_pem: ca_pem(properties, jaas.as_ref())?,
        connect_timeout: millis(properties, "sasl.login.connect.timeout.ms", 10_000)?,
        read_timeout: millis(properties, "sasl.login.read.timeout.ms", 10_000)?,
        retry: RetryPolicy {
            initial_backoff: millis(
                properties,
                "sasl.login.retry.backoff.ms",
                retry_default.initial_backoff.as_millis() as u64,
            )?,
            give_up_after: millis(
                properties,
                "sasl.login.retry.backoff.max.ms",
                retry_default.give_up_after.as_millis() as u64,
            )?,
        },
    })
}

fn missing(key: &str, what: &str) -> Error {
    config_error(
        key,
        format!(
            "sasl.oauthbearer.method=oidc needs {what} (librdkafka's {key}, or the Java \
             client's JAAS options clientId and clientSecret)"
        ),
    )
}

fn millis(properties: &PropertyMap, key: &str, default: u64) -> Result<Duration, Error> {
    match properties.get(key) {
        None => Ok(Duration::from_millis(default)),
        Some(text) => text
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis)
            .ok_or_else(|| config_error(key, format!("{text:?} is not a positive number of ms"))),
    }
}

/// The Java client's `extension_NAME=value` options, as SASL extensions.
fn jaas_extensions(login: &JaasLogin) -> Vec<(String, String)> {
    login
        .options
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("extension_")?.to_owned(), v.clone())))
        .collect()
}

/// The endpoint's own CA: librdkafka's `https.ca.location` (a file) or `https.ca.pem`, or the
/// JAAS options `ssl.truststore.location`/`ssl.truststore.certificates` of type PEM.
fn ca_pem(properties: &PropertyMap, jaas: Option<&JaasLogin>) -> Result<Option<Vec<u8>>, Error> {
    if let Some(pem) = properties.get("https.ca.pem") {
        return Ok(Some(pem.as_bytes().to_vec()));
    }
    let option = |name: &str| jaas.and_then(|l| l.option(name));
    let (key, path) = match (
        properties.get("https.ca.location"),
        option("ssl.truststore.location"),
    ) {
        (Some(path), _) => ("https.ca.location", path),
        (None, Some(path)) => ("sasl.jaas.config", path),
        (None, None) => {
            return Ok(option("ssl.truststore.certificates").map(|pem| pem.as_bytes().to_vec()))
        }
    };
    if key == "sasl.jaas.config" {
        let store_type = option("ssl.truststore.type").unwrap_or("JKS");
        if !store_type.eq_ignore_ascii_case("PEM") {
            return Err(config_error(
                key,
                format!(
                    "ssl.truststore.type={store_type}: only PEM trust stores are read; convert \
                     it (keytool -exportcert -rfc) and set ssl.truststore.type=\"PEM\""
                ),
            ));
        }
    }
    std::fs::read(path)
        .map(Some)
        .map_err(|error| config_error(key, format!("cannot read the CA file {path}: {error}")))
}

/// Tokens from a token endpoint, cached and refreshed for all connections.
pub(crate) struct OidcSource {
    settings: Arc<OidcSettings>,
    agent: ureq::Agent,
    cache: RefreshingToken,
}

impl std::fmt::Debug for OidcSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcSource")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl OidcSource {
    pub(crate) fn new(settings: OidcSettings) -> Result<Self, Error> {
        let mut tls = ureq::tls::TlsConfig::builder();
        if let Some(pem) = &settings.ca_pem {
            tls = tls.root_certs(root_certs(pem)?);
        }
        let agent = ureq::Agent::config_builder()
            .timeout_connect(Some(settings.connect_timeout))
            .timeout_global(Some(settings.connect_timeout + settings.read_timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .tls_config(tls.build())
            .build()
            .into();
        Ok(Self {
            cache: RefreshingToken::new(settings.retry),
            settings: Arc::new(settings),
            agent,
        })
    }

    async fn fetch(&self) -> Result<BearerToken, FetchError> {
        let settings = Arc::clone(&self.settings);
        let agent = self.agent.clone();
        let fetched = tokio::task::spawn_blocking(move || request_token(&agent, &settings))
            .await
            .map_err(|join| FetchError::Retriable(join.to_string().into()))?;
        let (token, expires_at) = fetched?;
        tracing::debug!(
            client_id = %self.settings.client_id,
            endpoint = %self.settings.endpoint,
            expires_in = ?expires_at.and_then(|e| e.duration_since(SystemTime::now()).ok()),
            "OAuth token fetched"
        );
        let mut token = BearerToken::new(token).with_extensions(self.settings.extensions.clone());
        if let Some(expires_at) = expires_at {
            token = token.expiring_at(expires_at);
        }
        Ok(token)
    }
}

impl TokenProvider for OidcSource {
    fn describe(&self) -> String {
        format!(
            "OAuth client {} of {}",
            self.settings.client_id, self.settings.endpoint
        )
    }

    fn token<'a>(&'a self, _broker: &'a str) -> BoxFuture<'a, Result<BearerToken, BoxError>> {
        Box::pin(async move { self.cache.get(|| self.fetch()).await })
    }
}

fn root_certs(pem: &[u8]) -> Result<ureq::tls::RootCerts, Error> {
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(pem) {
        match item {
            Ok(ureq::tls::PemItem::Certificate(cert)) => certs.push(cert),
            Ok(_) => {}
            Err(error) => return Err(config_error("https.ca.location", error.to_string())),
        }
    }
    if certs.is_empty() {
        return Err(config_error(
            "https.ca.location",
            "the token endpoint's CA holds no PEM certificate".to_owned(),
        ));
    }
    Ok(ureq::tls::RootCerts::new_with_certs(&certs))
}

/// One token request. Errors name the endpoint, never the secret.
fn request_token(
    agent: &ureq::Agent,
    settings: &OidcSettings,
) -> Result<(Secret, Option<SystemTime>), FetchError> {
    let endpoint = &settings.endpoint;
    let retriable = |detail: String| FetchError::Retriable(format!("{endpoint}: {detail}").into());
    let mut body = String::from("grant_type=client_credentials");
    if let Some(scope) = &settings.scope {
        body.push_str("&scope=");
        body.push_str(&form_encode(scope));
    }
    let response = agent
        .post(endpoint)
        .header("Authorization", basic_authorization(settings).expose())
        .header("Accept", "application/json")
        .content_type("application/x-www-form-urlencoded")
        .send(body);
    let mut response = match response {
        Ok(response) => response,
        Err(error) => {
            return Err(match tls_failure(&error) {
                Some(detail) => FetchError::Fatal(
                    format!(
                        "{endpoint}: TLS: {detail} (the endpoint's CA goes in https.ca.location)"
                    )
                    .into(),
                ),
                // ureq's messages name the host and the failure, never the headers.
                None => retriable(error.to_string()),
            });
        }
    };
    let status = response.status().as_u16();
    let text = response
        .body_mut()
        .with_config()
        .limit(MAX_RESPONSE_BYTES)
        .read_to_string()
        .map_err(|error| retriable(format!("HTTP {status}, reading the answer: {error}")))?;
    match status {
        200 => parse_token(&text, SystemTime::now())
            .map_err(|detail| FetchError::Fatal(format!("{endpoint}: {detail}").into())),
        408 | 429 | 500..=599 => Err(retriable(format!("HTTP {status}{}", describe_error(&text)))),
        _ => Err(FetchError::Fatal(refusal(settings, status, &text).into())),
    }
}

/// `Authorization: Basic` of the client id and secret, form-encoded if asked.
fn basic_authorization(settings: &OidcSettings) -> Secret {
    let pair = if settings.urlencode_credentials {
        Secret::new(format!(
            "{}:{}",
            form_encode(&settings.client_id),
            form_encode(settings.client_secret.expose())
        ))
    } else {
        Secret::new(format!(
            "{}:{}",
            settings.client_id,
            settings.client_secret.expose()
        ))
    };
    let encoded = base64::engine::general_purpose::STANDARD.encode(pair.expose());
    Secret::new(format!("Basic {encoded}"))
}

/// What a person must fix when the endpoint refuses the client (RFC 6749 section 5.2).
fn refusal(settings: &OidcSettings, status: u16, body: &str) -> String {
    let code = serde_json::from_str::<ErrorBody>(body)
        .ok()
        .map(|e| e.error)
        .unwrap_or_default();
    let fix = match code.as_str() {
        "invalid_client" | "unauthorized_client" => {
            "check sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret"
        }
        "invalid_scope" => "check sasl.oauthbearer.scope",
        "" if status == 404 || status == 405 => "check sasl.oauthbearer.token.endpoint.url",
        _ => "check the client's settings at the identity provider",
    };
    format!(
        "{} refused OAuth client {:?}: HTTP {status}{}; {fix}",
        settings.endpoint,
        settings.client_id,
        describe_error(body)
    )
}

#[derive(Deserialize)]
struct ErrorBody {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// `: error (description)` from an OAuth error body, or the start of another body.
fn describe_error(body: &str) -> String {
    let text = match serde_json::from_str::<ErrorBody>(body) {
        Ok(ErrorBody {
            error,
            error_description: Some(description),
        }) => format!("{error} ({description})"),
        Ok(ErrorBody { error, .. }) => error,
        Err(_) => body.trim().to_owned(),
    };
    if text.is_empty() {
        return String::new();
    }
    let cut: String = text.chars().take(MAX_DESCRIPTION_CHARS).collect();
    format!(": {cut}")
}

/// The token and its expiry from a successful answer (RFC 6749 section 5.1): `expires_in`,
/// or the JWT's `exp`, whichever comes first.
pub(crate) fn parse_token(
    body: &str,
    now: SystemTime,
) -> Result<(Secret, Option<SystemTime>), String> {
    #[derive(Deserialize)]
    struct TokenBody {
        access_token: Option<String>,
        #[serde(default)]
        expires_in: Option<serde_json::Value>,
    }
    let parsed: TokenBody = serde_json::from_str(body)
        .map_err(|error| format!("the answer is not a token response: {error}"))?;
    let token = parsed
        .access_token
        .filter(|t| !t.is_empty())
        .ok_or("the answer has no access_token")?;
    // Some providers (Entra ID's v1 endpoint) send expires_in as a string.
    let expires_in = match parsed.expires_in {
        Some(serde_json::Value::Number(n)) => n.as_u64(),
        Some(serde_json::Value::String(s)) => s.parse().ok(),
        _ => None,
    }
    .map(|s| now + Duration::from_secs(s));
    let expiries = [expires_in, jwt_expiry(&token)];
    let expires_at = expiries.into_iter().flatten().min();
    Ok((Secret::new(token), expires_at))
}

/// The `exp` claim if the token is a JWT (unverified: only to schedule the refresh).
fn jwt_expiry(token: &str) -> Option<SystemTime> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let exp = claims.get("exp")?.as_f64()?;
    (exp > 0.0).then(|| SystemTime::UNIX_EPOCH + Duration::from_secs_f64(exp))
}

/// `application/x-www-form-urlencoded` of one value.
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(byte as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// What rustls refused, if `error` is a TLS failure: the next attempt would meet it again.
/// krec-schema's registry client has the same test (it depends on no krec crate).
fn tls_failure(error: &ureq::Error) -> Option<String> {
    let rustls_error = match error {
        ureq::Error::Rustls(error) => Some(error),
        ureq::Error::Io(io) => io
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>()),
        _ => None,
    };
    rustls_error.map(ToString::to_string)
}

#[cfg(test)]
#[path = "oidc_tests.rs"]
mod tests;
