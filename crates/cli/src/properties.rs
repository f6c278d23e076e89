//! Client properties the way kcat users write them: `-X key=value`, `-F FILE`, and the file
//! `$KREC_CONFIG` names. `-X` wins over `-F`, which wins over `$KREC_CONFIG`.
//!
//! Names are librdkafka's, and the Java client's are accepted too, so a `client.properties`
//! handed out for a cluster works unchanged. Security properties go to krec-client's
//! [`SecurityConfig`]; the few others krec uses are read here (with `fetch.sessions`, krec's
//! own, turning KIP-227 fetch sessions off); the rest are refused by name.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use krec_client::security::properties;
use krec_client::SecurityConfig;

use crate::format::schema::is_registry_property;
use crate::format::RegistryProperties;
use crate::Error;

/// The environment variable naming a default properties file.
pub const CONFIG_ENV: &str = "KREC_CONFIG";

/// Largest properties file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// `-X` and `-F`, on every subcommand that talks to a broker.
#[derive(Debug, Default, clap::Args)]
pub struct ClientArgs {
    /// Set a client property (repeatable), with librdkafka's or the Java client's name:
    /// security.protocol, sasl.mechanisms, sasl.username, sasl.password, ssl.ca.location, ...
    /// A value ${env:NAME} or ${file:PATH} is read from there (keeps secrets off argv).
    /// krec's own: fetch.sessions=false sends full fetches instead of KIP-227 sessions.
    #[arg(short = 'X', value_name = "KEY=VALUE")]
    pub properties: Vec<PropertyArg>,

    /// Read client properties from FILE (`key=value` lines, `#` comments), e.g. the
    /// client.properties of a cloud provider. $KREC_CONFIG names a file read first.
    #[arg(short = 'F', value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// One `-X key=value`; its `Debug` hides a secret's value.
#[derive(Clone)]
pub struct PropertyArg {
    key: String,
    value: String,
}

impl FromStr for PropertyArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => Ok(Self {
                key: key.trim().to_owned(),
                value: value.to_owned(),
            }),
            _ => Err("expected KEY=VALUE".to_owned()),
        }
    }
}

impl std::fmt::Debug for PropertyArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if SecurityConfig::is_secret(&self.key) {
            write!(f, "{}=[redacted]", self.key)
        } else {
            write!(f, "{}={}", self.key, self.value)
        }
    }
}

/// What the properties say, sorted by who uses it.
#[derive(Debug, Default)]
pub struct ClientProperties {
    /// TLS and SASL.
    pub security: SecurityConfig,
    /// `bootstrap.servers` / `metadata.broker.list`, used when `-b` is not given.
    pub bootstrap: Option<String>,
    /// `client.id`.
    pub client_id: Option<String>,
    /// `group.id`, used when `-G` is not given.
    pub group_id: Option<String>,
    /// `session.timeout.ms`.
    pub session_timeout_ms: Option<u64>,
    /// `heartbeat.interval.ms`.
    pub heartbeat_interval_ms: Option<u64>,
    /// `client.rack`: read from a follower in this rack when the leader names one (KIP-392).
    pub client_rack: Option<String>,
    /// `metadata.max.age.ms` (Java) or `topic.metadata.refresh.interval.ms` (librdkafka):
    /// how often a topic pattern's matches are looked at again.
    pub metadata_refresh_ms: Option<u64>,
    /// `fetch.sessions` (krec's own): KIP-227 incremental fetch sessions on or off.
    pub fetch_sessions: Option<bool>,
    /// `schema.registry.*` and the Confluent clients' `basic.auth.*`, for `-s`.
    pub schema_registry: RegistryProperties,
    /// `request.timeout.ms`: how long a request waits for its response (a fetch also waits
    /// its max wait) before the connection is dropped and opened again.
    pub request_timeout_ms: Option<u64>,
}

/// Properties of producers or of the Java consumer's own machinery, which a shared
/// client.properties carries but which mean nothing to krec: accepted with one warning.
const IGNORED: &[&str] = &[
    "acks",
    "linger.ms",
    "batch.size",
    "compression.type",
    "retries",
    "enable.idempotence",
    "delivery.timeout.ms",
    "max.in.flight.requests.per.connection",
    "key.serializer",
    "value.serializer",
    "key.deserializer",
    "value.deserializer",
    "client.dns.lookup",
];

impl ClientArgs {
    /// Reads `$KREC_CONFIG`, then `-F`, then `-X`, later values winning.
    pub fn load(&self) -> Result<ClientProperties, Error> {
        let mut all: Vec<(String, String, String)> = Vec::new();
        if let Some(path) = std::env::var_os(CONFIG_ENV).filter(|p| !p.is_empty()) {
            read_file(Path::new(&path), &format!("${CONFIG_ENV}"), &mut all)?;
        }
        if let Some(path) = &self.file {
            read_file(path, "-F", &mut all)?;
        }
        for property in &self.properties {
            all.push((
                property.key.clone(),
                property.value.clone(),
                "-X".to_owned(),
            ));
        }
        sort_properties(&all)
    }
}

fn read_file(
    path: &Path,
    via: &str,
    into: &mut Vec<(String, String, String)>,
) -> Result<(), Error> {
    let context = |detail: String| Error::Property {
        property: String::new(),
        source_name: format!("{} ({via})", path.display()),
        detail,
    };
    let file = std::fs::File::open(path).map_err(|e| context(e.to_string()))?;
    let size = file.metadata().map_err(|e| context(e.to_string()))?.len();
    if size > MAX_FILE_BYTES {
        return Err(context(format!("{size} bytes: larger than 1 MiB")));
    }
    let bytes = std::fs::read(path).map_err(|e| context(e.to_string()))?;
    let parsed = properties::parse(&bytes).map_err(|fault| context(fault.to_string()))?;
    for property in parsed {
        let origin = format!("{}:{}", path.display(), property.line);
        into.push((property.key, property.value, origin));
    }
    Ok(())
}

fn sort_properties(all: &[(String, String, String)]) -> Result<ClientProperties, Error> {
    let mut client = ClientProperties::default();
    let mut security = Vec::new();
    for (key, value, origin) in all {
        let bad = |detail: String| Error::Property {
            property: key.clone(),
            source_name: origin.clone(),
            detail,
        };
        let millis = || {
            value
                .trim()
                .parse::<u64>()
                .map_err(|_| bad(format!("{value:?} is not a number of milliseconds")))
        };
        match key.as_str() {
            key if SecurityConfig::handles(key) => security.push((key, value.as_str())),
            "bootstrap.servers" | "metadata.broker.list" => client.bootstrap = Some(value.clone()),
            "client.id" => client.client_id = Some(value.clone()),
            "group.id" => client.group_id = Some(value.clone()),
            // Empty is librdkafka's default: no rack.
            "client.rack" => {
                client.client_rack = Some(value.trim().to_owned()).filter(|r| !r.is_empty())
            }
            "session.timeout.ms" => client.session_timeout_ms = Some(millis()?),
            "heartbeat.interval.ms" => client.heartbeat_interval_ms = Some(millis()?),
            "metadata.max.age.ms" | "topic.metadata.refresh.interval.ms" => {
                client.metadata_refresh_ms = Some(millis()?)
            }
            "request.timeout.ms" => match millis()? {
                0 => return Err(bad("must be positive".to_owned())),
                ms => client.request_timeout_ms = Some(ms),
            },
            "fetch.sessions" => {
                client.fetch_sessions = Some(match value.trim() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(bad(format!("{value:?}: expected true or false"))),
                })
            }
            key if is_registry_property(key) => client.schema_registry.push(key, value, origin),
            key if IGNORED.contains(&key) => {
                tracing::warn!(property = key, from = %origin, "property not used by krec; ignored");
            }
            _ => return Err(bad("unknown or unsupported property".to_owned())),
        }
    }
    client.security = SecurityConfig::from_properties(security.iter().map(|(k, v)| (*k, *v)))
        .map_err(|error| match error {
            krec_client::Error::Config { property, detail } => Error::Property {
                source_name: origin_of(all, &property),
                property,
                detail,
            },
            other => Error::Consumer(other.into()),
        })?;
    Ok(client)
}

/// Where the last value of `key` came from.
fn origin_of(all: &[(String, String, String)], key: &str) -> String {
    all.iter()
        .rev()
        .find(|(k, _, _)| k == key)
        .map_or_else(String::new, |(_, _, origin)| origin.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use krec_client::{SaslConfig, SecurityProtocol};

    fn arg(text: &str) -> PropertyArg {
        text.parse().unwrap()
    }

    #[test]
    fn x_wins_over_f() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("client.properties");
        std::fs::write(
            &file,
            "# comment\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=file-user\nsasl.password=file-pass\nbootstrap.servers=b:9093\n",
        )
        .unwrap();
        let args = ClientArgs {
            properties: vec![arg("sasl.username=x-user")],
            file: Some(file),
        };
        let loaded = args.load().unwrap();
        assert_eq!(loaded.security.protocol, SecurityProtocol::SaslSsl);
        assert_eq!(loaded.bootstrap.as_deref(), Some("b:9093"));
        let Some(SaslConfig::Plain { username, password }) = loaded.security.sasl else {
            panic!("PLAIN expected");
        };
        assert_eq!(username, "x-user");
        assert_eq!(password.expose(), "file-pass");
    }

    #[test]
    fn both_refresh_names_are_read_and_x_wins() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("client.properties");
        std::fs::write(&file, "topic.metadata.refresh.interval.ms=1000\n").unwrap();
        let from_file = ClientArgs {
            properties: Vec::new(),
            file: Some(file.clone()),
        };
        assert_eq!(from_file.load().unwrap().metadata_refresh_ms, Some(1000));
        let overridden = ClientArgs {
            properties: vec![arg("metadata.max.age.ms=2000")],
            file: Some(file),
        };
        assert_eq!(overridden.load().unwrap().metadata_refresh_ms, Some(2000));
        let bad = ClientArgs {
            properties: vec![arg("metadata.max.age.ms=soon")],
            file: None,
        };
        assert!(bad.load().is_err());
    }

    #[test]
    fn an_unknown_property_is_named_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p");
        std::fs::write(&file, "client.id=a\n\nfetch.magic=1\n").unwrap();
        let args = ClientArgs {
            properties: Vec::new(),
            file: Some(file.clone()),
        };
        let error = args.load().unwrap_err().to_string();
        assert!(error.contains("fetch.magic"), "{error}");
        assert!(error.contains(&format!("{}:3", file.display())), "{error}");
    }

    #[test]
    fn client_rack_is_read_and_empty_means_none() {
        let load = |text: &str| {
            ClientArgs {
                properties: vec![arg(text)],
                file: None,
            }
            .load()
            .unwrap()
            .client_rack
        };
        assert_eq!(load("client.rack=rack-2").as_deref(), Some("rack-2"));
        assert_eq!(load("client.rack="), None);
    }

    #[test]
    fn fetch_sessions_take_true_or_false() {
        let load = |value: &str| {
            ClientArgs {
                properties: vec![arg(&format!("fetch.sessions={value}"))],
                file: None,
            }
            .load()
        };
        assert_eq!(load("false").unwrap().fetch_sessions, Some(false));
        assert_eq!(load("true").unwrap().fetch_sessions, Some(true));
        let error = load("off").unwrap_err().to_string();
        assert!(
            error.contains("fetch.sessions") && error.contains("true or false"),
            "{error}"
        );
    }

    #[test]
    fn request_timeout_is_positive_milliseconds() {
        let load = |value: &str| {
            ClientArgs {
                properties: vec![arg(&format!("request.timeout.ms={value}"))],
                file: None,
            }
            .load()
        };
        assert_eq!(load("2500").unwrap().request_timeout_ms, Some(2500));
        for bad in ["0", "soon"] {
            let error = load(bad).unwrap_err().to_string();
            assert!(error.contains("request.timeout.ms"), "{error}");
        }
    }

    #[test]
    fn debug_hides_secret_values() {
        let shown = format!(
            "{:?}",
            vec![arg("sasl.password=hunter2"), arg("client.id=c")]
        );
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("client.id=c"), "{shown}");
    }
}
