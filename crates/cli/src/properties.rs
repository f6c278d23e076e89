//! Client properties the way kcat users write them: `-X key=value`, `-F FILE`, and the file
//! `$KREC_CONFIG` names. `-X` wins over `-F`, which wins over `$KREC_CONFIG`.
//!
//! This module keeps only that precedence and the origins for messages: krec-consumer reads
//! the properties ([`ConsumerConfig::apply_properties`]), with librdkafka's and the Java
//! client's names, and keeps the Schema Registry's for `-s`. Flags are applied after, and win.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use krec_client::SecurityConfig;
use krec_consumer::{ConsumerConfig, Property};

use crate::format::schema::is_registry_property;
use crate::format::RegistryProperties;
use crate::Error;

/// The environment variable naming a default properties file.
pub const CONFIG_ENV: &str = "KREC_CONFIG";

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

impl ClientArgs {
    /// The consumer settings `$KREC_CONFIG`, then `-F`, then `-X` give, later values winning,
    /// built by krec-consumer. With `brokers_flag` (`-b` given), `bootstrap.servers` is not
    /// read. Schema Registry keys are checked here: krec-schema takes them later.
    pub fn load(&self, brokers_flag: bool) -> Result<ConsumerConfig, Error> {
        let given = self
            .properties()?
            .into_iter()
            .filter(|p| !(brokers_flag && BOOTSTRAP_KEYS.contains(&p.key.as_str())));
        let config = ConsumerConfig::new(Vec::new())
            .apply_properties(given)
            .map_err(property_error)?;
        if let Some(unknown) = config
            .foreign_properties()
            .iter()
            .find(|p| !is_registry_property(&p.key))
        {
            return Err(Error::Property {
                property: unknown.key.clone(),
                source_name: unknown.origin.clone(),
                detail: "unknown or unsupported property".to_owned(),
            });
        }
        Ok(config)
    }

    /// Every property in precedence order, each with its origin (`FILE:LINE`, `-X`).
    pub fn properties(&self) -> Result<Vec<Property>, Error> {
        let mut all = Vec::new();
        if let Some(path) = std::env::var_os(CONFIG_ENV).filter(|p| !p.is_empty()) {
            all.extend(read_file(Path::new(&path), &format!("${CONFIG_ENV}"))?);
        }
        if let Some(path) = &self.file {
            all.extend(read_file(path, "-F")?);
        }
        for property in &self.properties {
            all.push(Property::new(&property.key, &property.value, "-X"));
        }
        Ok(all)
    }
}

/// The keys `-b` stands for.
const BOOTSTRAP_KEYS: &[&str] = &["bootstrap.servers", "metadata.broker.list"];

/// Whether `key` names the bootstrap brokers (what `-b` stands for).
pub(crate) fn is_bootstrap_key(key: &str) -> bool {
    BOOTSTRAP_KEYS.contains(&key)
}

/// The Schema Registry properties of `config`, for `-s`.
pub fn registry_properties(config: &ConsumerConfig) -> RegistryProperties {
    let mut registry = RegistryProperties::default();
    for property in config.foreign_properties() {
        registry.push(&property.key, &property.value, &property.origin);
    }
    registry
}

/// A file's properties; a file that cannot be read is named with how it was given.
fn read_file(path: &Path, via: &str) -> Result<Vec<Property>, Error> {
    let read = Property::read_file(path).map_err(krec_consumer::Error::from);
    read.map_err(|error| match error {
        krec_consumer::Error::Property { key, detail, .. } => Error::Property {
            property: key,
            source_name: format!("{} ({via})", path.display()),
            detail,
        },
        other => Error::Consumer(other),
    })
}

/// A property the consumer refused, reported as the CLI reports properties.
fn property_error(error: krec_consumer::Error) -> Error {
    match error {
        krec_consumer::Error::Property {
            key,
            origin,
            detail,
        } => Error::Property {
            property: key,
            source_name: origin,
            detail,
        },
        other => Error::Consumer(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use krec_client::sasl::Plain;
    use krec_client::SecurityProtocol;
    use std::time::Duration;

    fn arg(text: &str) -> PropertyArg {
        text.parse().unwrap()
    }

    fn load_x(texts: &[&str]) -> Result<ConsumerConfig, Error> {
        ClientArgs {
            properties: texts.iter().map(|t| arg(t)).collect(),
            file: None,
        }
        .load(false)
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
        let loaded = args.load(false).unwrap();
        assert_eq!(
            loaded.connection.security.protocol,
            SecurityProtocol::SaslSsl
        );
        assert_eq!(loaded.bootstrap, ["b:9093"]);
        let sasl = loaded.connection.security.sasl.unwrap();
        let plain = sasl.downcast_ref::<Plain>().expect("PLAIN");
        let (username, password) = (plain.username(), plain.password());
        assert_eq!(username, "x-user");
        assert_eq!(password.expose(), "file-pass");
        // With -b, the properties' brokers are not read at all.
        assert!(args.load(true).unwrap().bootstrap.is_empty());
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
        let refresh = from_file.load(false).unwrap().metadata_refresh;
        assert_eq!(refresh, Duration::from_secs(1));
        let overridden = ClientArgs {
            properties: vec![arg("metadata.max.age.ms=2000")],
            file: Some(file),
        };
        let refresh = overridden.load(false).unwrap().metadata_refresh;
        assert_eq!(refresh, Duration::from_secs(2));
        assert!(load_x(&["metadata.max.age.ms=soon"]).is_err());
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
        let error = args.load(false).unwrap_err();
        assert_eq!(error.exit_code(), 2);
        let error = error.to_string();
        assert!(error.contains("fetch.magic"), "{error}");
        assert!(error.contains(&format!("{}:3", file.display())), "{error}");
    }

    #[test]
    fn an_unreadable_file_is_named_with_how_it_was_given() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("missing");
        let args = ClientArgs {
            properties: Vec::new(),
            file: Some(file.clone()),
        };
        let error = args.load(false).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("{} (-F): ", file.display())),
            "{error}"
        );
    }

    #[test]
    fn registry_properties_are_kept_for_dash_s_and_unknown_ones_refused() {
        let config = load_x(&[
            "schema.registry.url=http://r:8081",
            "basic.auth.user.info=u:p",
        ])
        .unwrap();
        let shown = format!("{:?}", registry_properties(&config));
        assert!(shown.contains("schema.registry.url (-X)"), "{shown}");
        assert!(!shown.contains("u:p"), "{shown}");
        let error = load_x(&["schema.registry.magic=1"])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("-X: property schema.registry.magic: unknown"),
            "{error}"
        );
    }

    #[test]
    fn client_rack_is_read_and_empty_means_none() {
        let rack = |text: &str| load_x(&[text]).unwrap().client_rack;
        assert_eq!(rack("client.rack=rack-2").as_deref(), Some("rack-2"));
        assert_eq!(rack("client.rack="), None);
    }

    #[test]
    fn fetch_sessions_take_true_or_false() {
        let load = |value: &str| load_x(&[&format!("fetch.sessions={value}")]);
        assert!(!load("false").unwrap().fetch_sessions);
        assert!(load("true").unwrap().fetch_sessions);
        let error = load("off").unwrap_err().to_string();
        assert!(
            error.contains("fetch.sessions") && error.contains("true or false"),
            "{error}"
        );
    }

    #[test]
    fn request_timeout_is_positive_milliseconds() {
        let load = |value: &str| load_x(&[&format!("request.timeout.ms={value}")]);
        assert_eq!(
            load("2500").unwrap().connection.request_timeout,
            Duration::from_millis(2500)
        );
        for bad in ["0", "soon"] {
            let error = load(bad).unwrap_err();
            assert_eq!(error.exit_code(), 2);
            assert!(error.to_string().contains("request.timeout.ms"), "{error}");
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
