//! Client properties onto a [`ConsumerConfig`]: librdkafka's names and the Java client's, so
//! the `client.properties` operators already have works unchanged.
//!
//! Security properties are krec-client's ([`SecurityConfig::from_properties`], which also
//! reads `${env:NAME}` and `${file:PATH}` values); the consumer's and the group's are read
//! here. `schema.registry.*` and `basic.auth.*` belong to other libraries: they are kept as
//! given ([`ConsumerConfig::foreign_properties`]). A producer's properties are accepted with a
//! warning; any other key is refused by name and origin.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use krec_client::security::properties::{self as file_format, PropertiesFault};
use krec_client::{Secret, SecurityConfig};

use super::{ConsumerConfig, OffsetReset, StartOffset};
use crate::group::{Assignor, GroupProtocol};
use crate::Error;

/// Key prefixes of the properties kept for other libraries (the Schema Registry client's).
pub const FOREIGN_PREFIXES: &[&str] = &["schema.registry.", "basic.auth."];

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

/// One `key=value` and where it was set (`FILE:LINE`, `-X`, ...). `Debug` hides the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Property {
    /// The key, librdkafka's or the Java client's name.
    pub key: String,
    /// The value as given (`${env:NAME}` and `${file:PATH}` unresolved).
    pub value: String,
    /// Where it was set, for error messages.
    pub origin: String,
}

impl Property {
    /// A property set in `origin`.
    pub fn new(
        key: impl Into<String>,
        value: impl Into<String>,
        origin: impl Into<String>,
    ) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
            origin: origin.into(),
        }
    }

    /// The entries of a properties file (Java `client.properties` or librdkafka `-F` syntax),
    /// in file order, each with origin `PATH:LINE`. Files over 1 MiB are refused.
    pub fn read_file(path: &Path) -> Result<Vec<Property>, Error> {
        let shown = path.display();
        let fault = |origin: String, detail: String| Error::Property {
            key: String::new(),
            origin,
            detail,
        };
        let io = |error: std::io::Error| fault(shown.to_string(), error.to_string());
        let file = std::fs::File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        if size > file_format::MAX_PROPERTIES_FILE as u64 {
            return Err(fault(
                shown.to_string(),
                format!("{size} bytes: larger than 1 MiB"),
            ));
        }
        let bytes = std::fs::read(path).map_err(io)?;
        let parsed = file_format::parse(&bytes).map_err(|error| match error {
            PropertiesFault::Line { line, .. } => {
                fault(format!("{shown}:{line}"), error.to_string())
            }
            PropertiesFault::TooLarge { .. } => fault(shown.to_string(), error.to_string()),
        })?;
        Ok(parsed
            .into_iter()
            .map(|p| Property::new(p.key, p.value, format!("{shown}:{}", p.line)))
            .collect())
    }

    /// Whether the key belongs to another library (`FOREIGN_PREFIXES`).
    pub(crate) fn is_foreign(&self) -> bool {
        FOREIGN_PREFIXES.iter().any(|p| self.key.starts_with(p))
    }
}

impl fmt::Debug for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=[redacted] ({})", self.key, self.origin)
    }
}

/// What the typed fields cannot hold: the security properties as given, since a later one
/// (`sasl.password` after `sasl.username`) changes what they build, and the foreign ones.
#[derive(Clone, Default)]
pub(crate) struct Retained {
    /// Key, value and origin of each security property, in order.
    security: Vec<(String, Secret, String)>,
    /// `schema.registry.*` and `basic.auth.*`, in order.
    foreign: Vec<Property>,
}

/// Keys and origins only: values are passwords as often as not.
impl fmt::Debug for Retained {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let security = self.security.iter().map(|(key, _, origin)| (key, origin));
        f.debug_struct("Retained")
            .field("security", &security.collect::<Vec<_>>())
            .field("foreign", &self.foreign)
            .finish()
    }
}

/// Origin of properties given to [`ConsumerConfig::from_properties`].
const FROM_PROPERTIES: &str = "ConsumerConfig::from_properties";
/// Origin of a property given to [`ConsumerConfig::with`].
const WITH: &str = "ConsumerConfig::with";

impl ConsumerConfig {
    /// Defaults, then `pairs` applied in order (a later value of a key wins). Bootstrap
    /// brokers may come later ([`ConsumerConfig::with`]`("bootstrap.servers", ..)`).
    pub fn from_properties<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Result<Self, Error>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let given = pairs
            .into_iter()
            .map(|(key, value)| Property::new(key.as_ref(), value.as_ref(), FROM_PROPERTIES));
        Self::new(Vec::new()).apply_properties(given)
    }

    /// Defaults, then the properties of the file at `path` (Java or librdkafka syntax, at most
    /// 1 MiB); errors name `PATH:LINE`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::new(Vec::new()).apply_properties(Property::read_file(path.as_ref())?)
    }

    /// This configuration with one more property: `config.with("group.id", "billing")?`.
    pub fn with(self, key: &str, value: &str) -> Result<Self, Error> {
        self.apply_properties([Property::new(key, value, WITH)])
    }

    /// Applies `properties` in order, each error naming the key and its origin. What a
    /// property sets stays a typed field, free to be changed after.
    ///
    /// Keys: every security property of [`SecurityConfig::from_properties`];
    /// `bootstrap.servers` (`metadata.broker.list`), `client.id`, `client.rack`,
    /// `request.timeout.ms`, `metadata.max.age.ms` (`topic.metadata.refresh.interval.ms`),
    /// `fetch.sessions` (krec's own: KIP-227 sessions on or off), `isolation.level`,
    /// `auto.offset.reset` (where a group starts without a commit, and the reset after
    /// OFFSET_OUT_OF_RANGE), `fetch.max.bytes`, `max.partition.fetch.bytes`
    /// (`fetch.message.max.bytes`), `fetch.min.bytes`, `fetch.max.wait.ms`
    /// (`fetch.wait.max.ms`); for [`ConsumerConfig::group`]: `group.id`, `group.protocol`,
    /// `group.instance.id`, `group.remote.assignor`, `partition.assignment.strategy`,
    /// `session.timeout.ms`, `heartbeat.interval.ms`, `auto.commit.interval.ms`, and
    /// `max.poll.interval.ms`, which becomes the rebalance timeout (krec has no poll deadline).
    pub fn apply_properties(
        mut self,
        properties: impl IntoIterator<Item = Property>,
    ) -> Result<Self, Error> {
        let mut security_changed = false;
        for property in properties {
            security_changed |= self.apply(property)?;
        }
        if security_changed {
            self.rebuild_security()?;
        }
        Ok(self)
    }

    /// The properties kept for other libraries (`schema.registry.*`, `basic.auth.*`), in the
    /// order given, with their origins. krec-consumer does not read them.
    pub fn foreign_properties(&self) -> &[Property] {
        &self.retained.foreign
    }

    /// Applies one property; whether it was a security property.
    fn apply(&mut self, property: Property) -> Result<bool, Error> {
        let key = property.key.as_str();
        if SecurityConfig::handles(key) {
            let Property { key, value, origin } = property;
            self.retained
                .security
                .push((key, Secret::new(value), origin));
            return Ok(true);
        }
        if property.is_foreign() {
            self.retained.foreign.push(property);
            return Ok(false);
        }
        if IGNORED.contains(&key) {
            tracing::warn!(property = key, from = %property.origin, "property not used by krec; ignored");
            return Ok(false);
        }
        let setting = Setting(&property);
        if !(self.apply_connection(&setting)?
            || self.apply_fetch(&setting)?
            || self.apply_group(&setting)?)
        {
            return Err(setting.bad("unknown or unsupported property".to_owned()));
        }
        Ok(false)
    }

    /// Brokers, identity, timeouts and the fetch protocol; whether `setting` was one of them.
    fn apply_connection(&mut self, setting: &Setting) -> Result<bool, Error> {
        match setting.key() {
            "bootstrap.servers" | "metadata.broker.list" => {
                self.bootstrap = setting.parse(Self::parse_bootstrap)?
            }
            "client.id" => self.connection.client_id = setting.value().to_owned(),
            // Empty is librdkafka's default: no rack.
            "client.rack" => self.client_rack = setting.optional(),
            "request.timeout.ms" => self.connection.request_timeout = setting.positive_millis()?,
            "metadata.max.age.ms" | "topic.metadata.refresh.interval.ms" => {
                self.metadata_refresh = setting.positive_millis()?
            }
            "fetch.sessions" => self.fetch_sessions = setting.flag()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// What a fetch asks for and where reading starts.
    fn apply_fetch(&mut self, setting: &Setting) -> Result<bool, Error> {
        match setting.key() {
            "isolation.level" => {
                self.read_committed = match setting.value().trim() {
                    "read_committed" => true,
                    "read_uncommitted" => false,
                    _ => return Err(setting.expected("read_committed or read_uncommitted")),
                }
            }
            "auto.offset.reset" => {
                (self.group.start_without_commit, self.offset_reset) = match setting.value().trim()
                {
                    "earliest" | "smallest" | "beginning" => {
                        (StartOffset::Beginning, OffsetReset::Earliest)
                    }
                    "latest" | "largest" | "end" => (StartOffset::End, OffsetReset::Latest),
                    _ => return Err(setting.expected("earliest or latest")),
                }
            }
            "fetch.max.bytes" => self.set_max_bytes(setting.bytes(1)?)?,
            "max.partition.fetch.bytes" | "fetch.message.max.bytes" => {
                self.partition_max_bytes = setting.bytes(1)?
            }
            "fetch.min.bytes" => self.min_bytes = setting.bytes(0)?,
            "fetch.max.wait.ms" | "fetch.wait.max.ms" => self.max_wait = setting.millis()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Group membership, into [`ConsumerConfig::group`].
    fn apply_group(&mut self, setting: &Setting) -> Result<bool, Error> {
        let group = &mut self.group;
        match setting.key() {
            "group.id" => group.group_id = setting.value().to_owned(),
            "group.protocol" => {
                group.protocol =
                    setting.parse(|v| v.to_ascii_lowercase().parse::<GroupProtocol>())?
            }
            "group.instance.id" => group.instance_id = setting.optional(),
            "group.remote.assignor" => group.server_assignor = setting.optional(),
            "partition.assignment.strategy" => group.assignors = setting.parse(assignors)?,
            "session.timeout.ms" => group.session_timeout = setting.millis()?,
            "heartbeat.interval.ms" => group.heartbeat_interval = setting.millis()?.max(MIN_TICK),
            "auto.commit.interval.ms" => group.commit_interval = setting.millis()?.max(MIN_TICK),
            "max.poll.interval.ms" => group.rebalance_timeout = setting.millis()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `connection.security` from the security properties given so far.
    fn rebuild_security(&mut self) -> Result<(), Error> {
        let entries = &self.retained.security;
        let pairs = entries
            .iter()
            .map(|(key, value, _)| (key.as_str(), value.expose()));
        let built = SecurityConfig::from_properties(pairs).map_err(|error| match error {
            krec_client::Error::Config { property, detail } => Error::Property {
                origin: entries
                    .iter()
                    .rev()
                    .find(|(key, _, _)| *key == property)
                    .map_or_else(String::new, |(_, _, origin)| origin.clone()),
                key: property,
                detail,
            },
            other => Error::Client(other),
        })?;
        self.connection.security = built;
        Ok(())
    }
}

/// The shortest heartbeat and commit interval (a zero interval would spin).
const MIN_TICK: Duration = Duration::from_millis(1);

/// `partition.assignment.strategy`: assignor names or the Java client's class names.
fn assignors(list: &str) -> Result<Vec<Assignor>, Error> {
    let invalid = |detail: String| Error::InvalidArgument {
        what: "assignor",
        detail,
    };
    let names: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() {
        return Err(invalid("names no assignor".to_owned()));
    }
    names
        .into_iter()
        .map(|name| {
            let class = name.rsplit('.').next().unwrap_or(name);
            let protocol = match class {
                "RangeAssignor" => "range",
                "RoundRobinAssignor" => "roundrobin",
                "CooperativeStickyAssignor" => "cooperative-sticky",
                _ => name,
            };
            Assignor::from_protocol_name(protocol).ok_or_else(|| {
                invalid(format!(
                    "{name:?}: expected range, roundrobin or cooperative-sticky (or the Java \
                     client's RangeAssignor, RoundRobinAssignor, CooperativeStickyAssignor)"
                ))
            })
        })
        .collect()
}

/// A property being applied: its value read as the key needs, errors naming key and origin.
/// Only used for non-secret keys, so a value may appear in a message.
struct Setting<'a>(&'a Property);

impl Setting<'_> {
    fn key(&self) -> &str {
        &self.0.key
    }

    fn value(&self) -> &str {
        &self.0.value
    }

    fn bad(&self, detail: String) -> Error {
        Error::Property {
            key: self.0.key.clone(),
            origin: self.0.origin.clone(),
            detail,
        }
    }

    fn expected(&self, what: &str) -> Error {
        self.bad(format!("{:?}: expected {what}", self.value()))
    }

    /// The value through a parser of the crate's, its error detail kept.
    fn parse<T>(&self, parser: impl FnOnce(&str) -> Result<T, Error>) -> Result<T, Error> {
        parser(self.value().trim()).map_err(|error| match error {
            Error::InvalidArgument { detail, .. } => self.bad(detail),
            other => self.bad(other.to_string()),
        })
    }

    /// The trimmed value; empty means none.
    fn optional(&self) -> Option<String> {
        Some(self.value().trim().to_owned()).filter(|v| !v.is_empty())
    }

    fn millis(&self) -> Result<Duration, Error> {
        let value = self.value();
        value
            .trim()
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| self.bad(format!("{value:?} is not a number of milliseconds")))
    }

    fn positive_millis(&self) -> Result<Duration, Error> {
        match self.millis()? {
            Duration::ZERO => Err(self.bad("must be positive".to_owned())),
            millis => Ok(millis),
        }
    }

    fn flag(&self) -> Result<bool, Error> {
        match self.value().trim() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(self.expected("true or false")),
        }
    }

    /// A byte count of at least `min`.
    fn bytes(&self, min: i32) -> Result<i32, Error> {
        self.value()
            .trim()
            .parse::<i32>()
            .ok()
            .filter(|bytes| *bytes >= min)
            .ok_or_else(|| self.expected(&format!("a number of bytes, at least {min}")))
    }
}

#[cfg(test)]
#[path = "properties_tests.rs"]
mod tests;
