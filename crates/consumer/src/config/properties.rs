//! Client properties onto a [`ConsumerConfig`]: librdkafka's names and the Java client's, so
//! the `client.properties` operators already have works unchanged.
//!
//! The loader is krec-client's (`client_properties`, shared with krec-producer): the file
//! format, the security properties ([`SecurityConfig::from_properties`], which also reads
//! `${env:NAME}` and `${file:PATH}` values), and the keys every client has (brokers,
//! `client.id`, `request.timeout.ms`, `metadata.max.age.ms`); the consumer's and the group's
//! are read here. `schema.registry.*` and `basic.auth.*` belong to other libraries: they are kept as
//! given ([`ConsumerConfig::foreign_properties`]). A producer's properties are accepted with a
//! warning; any other key is refused by name and origin.

use std::path::Path;
use std::time::Duration;

pub use krec_client::client_properties::Property;
use krec_client::client_properties::{
    self as shared, CommonKeys, PropertyError, PropertyTarget, SecurityProperties, Setting,
};
use krec_client::SecurityConfig;

use super::{ConsumerConfig, OffsetReset, StartOffset};
use crate::group::{Assignor, GroupProtocol};
use crate::Error;

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
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.zstd.level",
    "max.request.size",
    "buffer.memory",
    "max.block.ms",
    "retry.backoff.ms",
    "partitioner.class",
    "partitioner.ignore.keys",
    "transactional.id",
    "transaction.timeout.ms",
    "key.serializer",
    "value.serializer",
    "key.deserializer",
    "value.deserializer",
    "client.dns.lookup",
];

/// What the typed fields cannot hold: the security properties as given and the foreign ones.
#[derive(Clone, Debug, Default)]
pub(crate) struct Retained {
    security: SecurityProperties,
    /// `schema.registry.*` and `basic.auth.*`, in order.
    foreign: Vec<Property>,
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
        let properties = Property::read_file(path.as_ref()).map_err(Error::from)?;
        Self::new(Vec::new()).apply_properties(properties)
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
        shared::apply_properties(&mut Loading(&mut self), properties)?;
        Ok(self)
    }

    /// The properties kept for other libraries (`schema.registry.*`, `basic.auth.*`), in the
    /// order given, with their origins. krec-consumer does not read them.
    pub fn foreign_properties(&self) -> &[Property] {
        &self.retained.foreign
    }

    /// The consumer's connection keys beyond the common ones; whether `setting` was one.
    fn apply_connection(&mut self, setting: &Setting) -> Result<bool, PropertyError> {
        match setting.key() {
            // Empty is librdkafka's default: no rack.
            "client.rack" => self.client_rack = setting.optional(),
            "fetch.sessions" => self.fetch_sessions = setting.flag()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// What a fetch asks for and where reading starts.
    fn apply_fetch(&mut self, setting: &Setting) -> Result<bool, PropertyError> {
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
            "fetch.max.bytes" => {
                let max_bytes = setting.bytes(1)?;
                self.set_max_bytes(max_bytes)
                    .map_err(|e| setting.bad(e.to_string()))?
            }
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
    fn apply_group(&mut self, setting: &Setting) -> Result<bool, PropertyError> {
        let group = &mut self.group;
        match setting.key() {
            "group.id" => group.group_id = setting.value().to_owned(),
            "group.protocol" => {
                group.protocol =
                    parse(setting, |v| v.to_ascii_lowercase().parse::<GroupProtocol>())?
            }
            "group.instance.id" => group.instance_id = setting.optional(),
            "group.remote.assignor" => group.server_assignor = setting.optional(),
            "partition.assignment.strategy" => group.assignors = parse(setting, assignors)?,
            "session.timeout.ms" => group.session_timeout = setting.millis()?,
            "heartbeat.interval.ms" => group.heartbeat_interval = setting.millis()?.max(MIN_TICK),
            "auto.commit.interval.ms" => group.commit_interval = setting.millis()?.max(MIN_TICK),
            "max.poll.interval.ms" => group.rebalance_timeout = setting.millis()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// A [`ConsumerConfig`] being loaded by the shared loader.
struct Loading<'a>(&'a mut ConsumerConfig);

impl PropertyTarget for Loading<'_> {
    fn security_properties(&mut self) -> &mut SecurityProperties {
        &mut self.0.retained.security
    }

    fn set_security(&mut self, security: SecurityConfig) {
        self.0.connection.security = security;
    }

    fn foreign_properties(&mut self) -> &mut Vec<Property> {
        &mut self.0.retained.foreign
    }

    fn common_keys(&mut self) -> CommonKeys<'_> {
        CommonKeys {
            bootstrap: &mut self.0.bootstrap,
            connection: &mut self.0.connection,
            metadata_refresh: &mut self.0.metadata_refresh,
        }
    }

    fn ignored_keys(&self) -> &'static [&'static str] {
        IGNORED
    }

    fn apply_own(&mut self, setting: &Setting) -> Result<bool, PropertyError> {
        Ok(self.0.apply_connection(setting)?
            || self.0.apply_fetch(setting)?
            || self.0.apply_group(setting)?)
    }
}

/// The value through a parser of the crate's, its error detail kept.
fn parse<T>(
    setting: &Setting,
    parser: impl FnOnce(&str) -> Result<T, Error>,
) -> Result<T, PropertyError> {
    parser(setting.value().trim()).map_err(|error| match error {
        Error::InvalidArgument { detail, .. } => setting.bad(detail),
        other => setting.bad(other.to_string()),
    })
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

#[cfg(test)]
#[path = "properties_tests.rs"]
mod tests;
