//! The Schema Registry client: `GET /schemas/ids/N`, `GET /subjects/S/versions/V` and
//! `POST /subjects/S/versions` (registration) of the Confluent REST API, over HTTP or HTTPS (rustls), with basic auth, a request timeout and
//! retries with backoff for a registry that is down or overloaded.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::Error;

/// Largest registry answer read: far above any real schema, a bound on a hostile one.
const MAX_RESPONSE_BYTES: u64 = 16 << 20;
/// Longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Where the registry is and how to talk to it.
#[derive(Clone, PartialEq, Eq)]
pub struct RegistryConfig {
    /// Base URLs (each with any path prefix, e.g. Apicurio's `/apis/ccompat/v7`), tried in turn.
    pub urls: Vec<String>,
    /// `USER:PASSWORD` for HTTP basic auth.
    pub basic_auth: Option<String>,
    /// PEM file of the CA certificates that an HTTPS registry's certificate must chain to
    /// (default: the Mozilla roots).
    pub ca_file: Option<PathBuf>,
    /// Bound on one request, connection included.
    pub request_timeout: Duration,
    /// Retries after a failed attempt (connection refused, timeout, HTTP 5xx or 429).
    pub max_retries: u32,
    /// Wait before the first retry; doubled for each next one.
    pub retry_backoff: Duration,
}

impl Default for RegistryConfig {
    fn default() -> Self {
        RegistryConfig {
            urls: Vec::new(),
            basic_auth: None,
            ca_file: None,
            request_timeout: Duration::from_secs(10),
            max_retries: 3,
            retry_backoff: Duration::from_millis(200),
        }
    }
}

impl std::fmt::Debug for RegistryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryConfig")
            .field("urls", &self.urls)
            .field(
                "basic_auth",
                &self.basic_auth.as_ref().map(|_| "[redacted]"),
            )
            .field("ca_file", &self.ca_file)
            .field("request_timeout", &self.request_timeout)
            .field("max_retries", &self.max_retries)
            .field("retry_backoff", &self.retry_backoff)
            .finish()
    }
}

impl RegistryConfig {
    /// Sets the URLs from a comma-separated list; credentials in a URL
    /// (`https://user:pass@host`, as kcat's `-r` takes them) become basic auth.
    pub fn set_urls(&mut self, list: &str) -> Result<(), Error> {
        self.urls.clear();
        for url in list.split(',').map(str::trim).filter(|url| !url.is_empty()) {
            let (url, user_info) = split_user_info(url)?;
            if let Some(user_info) = user_info {
                self.basic_auth = Some(user_info);
            }
            self.urls.push(url.trim_end_matches('/').to_owned());
        }
        if self.urls.is_empty() {
            return Err(Error::Config {
                property: "schema.registry.url",
                detail: "no URL given".into(),
            });
        }
        Ok(())
    }
}

/// `scheme://user:pass@host/...` into the URL without credentials and `user:pass`.
fn split_user_info(url: &str) -> Result<(String, Option<String>), Error> {
    let Some((scheme, rest)) = url
        .split_once("://")
        .filter(|(scheme, _)| matches!(*scheme, "http" | "https"))
    else {
        return Err(Error::Config {
            property: "schema.registry.url",
            detail: "expected an http:// or https:// URL".into(),
        });
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((user_info, host)) => Ok((
            format!("{scheme}://{host}{}", &rest[authority_end..]),
            Some(user_info.to_owned()),
        )),
        None => Ok((url.to_owned(), None)),
    }
}

/// A schema as the registry returns it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisteredSchema {
    /// The schema text: Avro JSON, JSON Schema, or Protobuf as `.proto` text or a base64
    /// `FileDescriptorProto`.
    pub schema: String,
    /// `AVRO` (also when absent), `PROTOBUF` or `JSON`.
    #[serde(default)]
    pub schema_type: Option<String>,
    /// Other registered schemas this one imports or names.
    #[serde(default)]
    pub references: Vec<SchemaReference>,
}

impl RegisteredSchema {
    /// The schema type, `AVRO` when the registry leaves it out.
    pub fn schema_type(&self) -> &str {
        self.schema_type.as_deref().unwrap_or("AVRO")
    }
}

/// A reference from one schema to a subject version.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct SchemaReference {
    /// The name the referring schema uses (a Protobuf import path, an Avro type name).
    pub name: String,
    /// The subject holding it.
    pub subject: String,
    /// The subject's version.
    pub version: i64,
}

/// A blocking registry client; cheap to share between threads.
#[derive(Debug)]
pub struct RegistryClient {
    agent: ureq::Agent,
    config: RegistryConfig,
    authorization: Option<String>,
}

impl RegistryClient {
    /// A client for `config`; reads the CA file now, so a bad one is reported up front.
    pub fn new(config: RegistryConfig) -> Result<Self, Error> {
        if config.urls.is_empty() {
            return Err(Error::Config {
                property: "schema.registry.url",
                detail: "not set: the URL of the schema registry is needed".into(),
            });
        }
        let mut tls = ureq::tls::TlsConfig::builder();
        if let Some(path) = &config.ca_file {
            tls = tls.root_certs(read_ca_file(path)?);
        }
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.request_timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .tls_config(tls.build())
            .build()
            .into();
        let authorization = config.basic_auth.as_ref().map(|user_info| {
            let encoded = base64::engine::general_purpose::STANDARD.encode(user_info);
            format!("Basic {encoded}")
        });
        Ok(RegistryClient {
            agent,
            config,
            authorization,
        })
    }

    /// The schema with this id.
    pub fn schema_by_id(&self, id: u32) -> Result<RegisteredSchema, Error> {
        let what = format!("schema id {id}");
        match self.request(&format!("/schemas/ids/{id}"), None, &what)? {
            Answer::Found(schema) => Ok(schema),
            Answer::NotFound(_) => Err(Error::UnknownSchema { id }),
        }
    }

    /// The schema registered under `subject` at `version` (a reference's target).
    pub fn schema_by_subject(
        &self,
        subject: &str,
        version: i64,
    ) -> Result<RegisteredSchema, Error> {
        let version = SubjectVersion::Number(version);
        self.subject_version(subject, version)
            .map(|found| found.schema)
    }

    /// A version of `subject` (`GET /subjects/{subject}/versions/{version}`), with its id.
    pub fn subject_version(
        &self,
        subject: &str,
        version: SubjectVersion,
    ) -> Result<SubjectSchema, Error> {
        let what = format!("subject {subject:?} version {version}");
        let path = format!("/subjects/{}/versions/{version}", encode_path(subject));
        let found: SubjectSchema = self.found(&path, None, what)?;
        if found.id.is_none() {
            return Err(Error::RegistryRefused {
                url: self.config.urls[0].clone(),
                what: format!("subject {subject:?} version {version}"),
                status: 200,
                detail: "the answer has no schema id".into(),
            });
        }
        Ok(found)
    }

    /// Registers `schema` under `subject` (`POST /subjects/{subject}/versions`) and returns its
    /// id; a schema already registered there gets its existing id back.
    pub fn register(&self, subject: &str, schema: &NewSchema<'_>) -> Result<u32, Error> {
        #[derive(Deserialize)]
        struct Registered {
            id: u32,
        }
        let what = format!("registering a schema under subject {subject:?}");
        let path = format!("/subjects/{}/versions", encode_path(subject));
        let body = serde_json::to_string(schema).map_err(|e| Error::Config {
            property: "schema.registry.url",
            detail: format!("{what}: {e}"),
        })?;
        let registered: Registered = self.found(&path, Some(&body), what)?;
        Ok(registered.id)
    }

    /// A request whose 404 is an error carrying the registry's message.
    fn found<T: DeserializeOwned>(
        &self,
        path: &str,
        body: Option<&str>,
        what: String,
    ) -> Result<T, Error> {
        match self.request(path, body, &what)? {
            Answer::Found(value) => Ok(value),
            Answer::NotFound(detail) => Err(Error::RegistryRefused {
                url: self.config.urls[0].clone(),
                what,
                status: 404,
                detail,
            }),
        }
    }

    /// One GET (or POST of `body`), retried with backoff over the URLs while the failure may
    /// pass. Registering is safe to retry: the same schema gets the same id.
    fn request<T: DeserializeOwned>(
        &self,
        path: &str,
        body: Option<&str>,
        what: &str,
    ) -> Result<Answer<T>, Error> {
        let attempts = self.config.max_retries.saturating_add(1);
        let mut backoff = self.config.retry_backoff;
        let mut last_failure = String::new();
        for attempt in 0..attempts {
            if attempt > 0 {
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            let base = &self.config.urls[attempt as usize % self.config.urls.len()];
            match self.request_once(base, path, body) {
                Ok(Outcome::Done(answer)) => return Ok(answer),
                Ok(Outcome::Refused { status, detail }) => {
                    return Err(Error::RegistryRefused {
                        url: base.clone(),
                        what: what.to_owned(),
                        status,
                        detail,
                    })
                }
                Ok(Outcome::Untrusted(detail)) => {
                    return Err(Error::RegistryTls {
                        url: base.clone(),
                        detail,
                    })
                }
                Ok(Outcome::Retry(detail)) | Err(detail) => last_failure = detail,
            }
        }
        Err(Error::RegistryUnavailable {
            url: self.config.urls.join(","),
            attempts,
            detail: last_failure,
        })
    }

    fn request_once<T: DeserializeOwned>(
        &self,
        base: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<Outcome<T>, String> {
        const ACCEPT: &str = "application/vnd.schemaregistry.v1+json, application/json";
        let url = format!("{base}{path}");
        let authorization = self.authorization.as_deref();
        // ureq's messages name the host and the failure, never the headers.
        let sent = match body {
            None => {
                let request = self.agent.get(url).header("Accept", ACCEPT);
                match authorization {
                    Some(value) => request.header("Authorization", value).call(),
                    None => request.call(),
                }
            }
            Some(body) => {
                let request = self
                    .agent
                    .post(url)
                    .header("Accept", ACCEPT)
                    .header("Content-Type", "application/vnd.schemaregistry.v1+json");
                match authorization {
                    Some(value) => request.header("Authorization", value).send(body),
                    None => request.send(body),
                }
            }
        };
        let mut response = match sent {
            Ok(response) => response,
            Err(error) => match tls_failure(&error) {
                Some(detail) => return Ok(Outcome::Untrusted(detail)),
                None => return Err(error.to_string()),
            },
        };
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_to_string()
            .map_err(|error| error.to_string())?;
        Ok(match status {
            200 => Outcome::Done(Answer::Found(
                serde_json::from_str(&body)
                    .map_err(|error| format!("unexpected answer: {error}"))?,
            )),
            404 => Outcome::Done(Answer::NotFound(message(&body))),
            429 | 500..=599 => Outcome::Retry(format!("HTTP {status}: {}", message(&body))),
            _ => Outcome::Refused {
                status,
                detail: message(&body),
            },
        })
    }
}

/// A subject's version: a number, or the latest one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubjectVersion {
    /// The newest version registered.
    Latest,
    /// A version number (from 1).
    Number(i64),
}

impl std::fmt::Display for SubjectVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SubjectVersion::Latest => f.write_str("latest"),
            SubjectVersion::Number(number) => write!(f, "{number}"),
        }
    }
}

/// A subject's version as the registry returns it: the schema and its id.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct SubjectSchema {
    /// The schema id (present in every answer of a Confluent-compatible registry).
    #[serde(default)]
    pub id: Option<u32>,
    /// The version number.
    #[serde(default)]
    pub version: Option<i64>,
    /// The schema, its type and references.
    #[serde(flatten)]
    pub schema: RegisteredSchema,
}

/// A schema to register: its text, its type and the subject versions it references.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSchema<'a> {
    /// Avro JSON, JSON Schema, or `.proto` text.
    pub schema: &'a str,
    /// `AVRO`, `PROTOBUF` or `JSON`.
    pub schema_type: &'a str,
    /// Other registered schemas this one imports or names.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub references: &'a [SchemaReference],
}

enum Answer<T> {
    Found(T),
    /// The registry's message.
    NotFound(String),
}

enum Outcome<T> {
    Done(Answer<T>),
    Refused { status: u16, detail: String },
    Untrusted(String),
    Retry(String),
}

/// What rustls refused, if `error` is a TLS failure: a certificate or handshake the next
/// attempt would meet again (so it is not retried). krec-client's OIDC token provider has the
/// same test: kept twice because krec-schema depends on no krec crate, for ten lines.
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

/// The registry's `message` field, or the start of the body.
fn message(body: &str) -> String {
    #[derive(Deserialize)]
    struct ErrorBody {
        message: String,
    }
    match serde_json::from_str::<ErrorBody>(body) {
        Ok(error) => error.message,
        Err(_) => body.chars().take(200).collect(),
    }
}

/// Percent-encodes a subject name for a URL path.
fn encode_path(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn read_ca_file(path: &std::path::Path) -> Result<ureq::tls::RootCerts, Error> {
    let error = |detail: String| Error::Config {
        property: "schema.registry.ssl.ca.location",
        detail: format!("{}: {detail}", path.display()),
    };
    let pem = std::fs::read(path).map_err(|e| error(e.to_string()))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        if let ureq::tls::PemItem::Certificate(cert) = item.map_err(|e| error(e.to_string()))? {
            certs.push(cert);
        }
    }
    if certs.is_empty() {
        return Err(error("no PEM certificate in it".into()));
    }
    Ok(ureq::tls::RootCerts::new_with_certs(&certs))
}

#[cfg(test)]
mod tests {
    use super::{encode_path, NewSchema, RegistryClient, RegistryConfig, SubjectVersion};
    use crate::Error;

    #[test]
    fn credentials_in_a_url_become_basic_auth_and_leave_the_url() {
        let mut config = RegistryConfig::default();
        config
            .set_urls("https://alice:s3cret@reg.example:8081/apis/ccompat/v7/, http://b:1")
            .unwrap();
        assert_eq!(
            config.urls,
            ["https://reg.example:8081/apis/ccompat/v7", "http://b:1"]
        );
        assert_eq!(config.basic_auth.as_deref(), Some("alice:s3cret"));
        assert!(!format!("{config:?}").contains("s3cret"));
        assert!(config.set_urls("reg.example:8081").is_err());
        assert!(config.set_urls(" , ").is_err());
    }

    /// Answers one request with `status` and `body`; returns the request's text.
    fn answer_once(status: &str, body: &'static str) -> (String, std::thread::JoinHandle<String>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let status = status.to_owned();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            let mut buffer = [0; 4096];
            // The headers, then a body if the request is a POST (a JSON object).
            loop {
                let read = stream.read(&mut buffer).unwrap();
                request.extend_from_slice(&buffer[..read]);
                let text = String::from_utf8_lossy(&request);
                let body = text.split_once("\r\n\r\n").map(|(_, body)| body);
                match body {
                    Some(body) if !text.starts_with("POST") || body.ends_with('}') => break,
                    _ if read == 0 => break,
                    _ => {}
                }
            }
            let answer = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(answer.as_bytes()).unwrap();
            String::from_utf8(request).unwrap()
        });
        (url, server)
    }

    #[test]
    fn registering_posts_the_schema_and_a_refusal_shows_no_secret() {
        let (url, server) = answer_once(
            "401 Unauthorized",
            r#"{"error_code":40101,"message":"Unauthorized"}"#,
        );
        let mut config = RegistryConfig::default();
        config
            .set_urls(&url.replace("://", "://alice:s3cret@"))
            .unwrap();
        let client = RegistryClient::new(config).unwrap();
        let schema = NewSchema {
            schema: "{}",
            schema_type: "JSON",
            references: &[],
        };
        let error = client.register("orders value", &schema).unwrap_err();
        let request = server.join().unwrap();
        assert!(request.starts_with("POST /subjects/orders%20value/versions HTTP/1.1\r\n"));
        assert!(request.contains("\r\nauthorization: Basic YWxpY2U6czNjcmV0\r\n"));
        assert!(
            request.ends_with(r#"{"schema":"{}","schemaType":"JSON"}"#),
            "{request}"
        );
        assert!(
            matches!(&error, Error::RegistryRefused { status: 401, detail, .. } if detail == "Unauthorized"),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.contains("registering a schema under subject \"orders value\""));
        assert!(
            !message.contains("s3cret") && !message.contains("alice"),
            "{message}"
        );
    }

    #[test]
    fn a_missing_subject_keeps_the_registry_message() {
        let (url, server) = answer_once(
            "404 Not Found",
            r#"{"error_code":40401,"message":"Subject 'x' not found."}"#,
        );
        let mut config = RegistryConfig::default();
        config.set_urls(&url).unwrap();
        let client = RegistryClient::new(config).unwrap();
        let error = client
            .subject_version("x", SubjectVersion::Latest)
            .unwrap_err();
        assert!(server
            .join()
            .unwrap()
            .starts_with("GET /subjects/x/versions/latest "));
        assert_eq!(
            error.to_string(),
            format!("schema registry {url}: subject \"x\" version latest: HTTP 404: Subject 'x' not found.")
        );
    }

    #[test]
    fn subjects_are_percent_encoded() {
        assert_eq!(encode_path("a/b c.proto"), "a%2Fb%20c.proto");
    }
}
