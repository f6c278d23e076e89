//! Client properties onto a [`ProducerConfig`]: the Java client's names and librdkafka's,
//! through krec-client's loader, the one [`ConsumerConfig`](https://docs.rs/krec-consumer)
//! uses (`${env:NAME}` and `${file:PATH}` values, errors naming key and `FILE:LINE`, security
//! and Schema Registry keys). The producer adds its own keys here, then checks them together
//! as the Java client does.

use std::path::Path;

use krec_batch::{Codec, Compression};
use krec_client::client_properties::{
    self as shared, CommonKeys, Property, PropertyError, PropertyTarget, SecurityProperties,
    Setting,
};
use krec_client::partitioner::Partitioning;
use krec_client::SecurityConfig;

use super::{Acks, ProducerConfig, MAX_IDEMPOTENT_IN_FLIGHT};
use crate::Error;

/// Keys of serializer classes and the Java client's own machinery that a shared
/// client.properties carries: accepted with one warning, as ConsumerConfig does.
const IGNORED: &[&str] = &[
    "key.serializer",
    "value.serializer",
    "key.deserializer",
    "value.deserializer",
    "client.dns.lookup",
];

/// Keys only a consumer reads: refused by name, so a producer's file that carries them says so.
const CONSUMER_KEYS: &[&str] = &[
    "group.id",
    "group.instance.id",
    "group.protocol",
    "group.remote.assignor",
    "partition.assignment.strategy",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "max.poll.interval.ms",
    "max.poll.records",
    "auto.offset.reset",
    "enable.auto.commit",
    "auto.commit.interval.ms",
    "isolation.level",
    "client.rack",
    "fetch.sessions",
    "fetch.min.bytes",
    "fetch.max.bytes",
    "fetch.max.wait.ms",
    "fetch.wait.max.ms",
    "max.partition.fetch.bytes",
    "fetch.message.max.bytes",
];

/// Origin of properties given to [`ProducerConfig::from_properties`].
const FROM_PROPERTIES: &str = "ProducerConfig::from_properties";
/// Origin of a property given to [`ProducerConfig::with`].
const WITH: &str = "ProducerConfig::with";

impl ProducerConfig {
    /// Defaults, then `pairs` applied in order (a later value of a key wins). Bootstrap
    /// brokers may come later ([`ProducerConfig::with`]`("bootstrap.servers", ..)`).
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

    /// This configuration with one more property: `config.with("acks", "1")?`.
    pub fn with(self, key: &str, value: impl AsRef<str>) -> Result<Self, Error> {
        self.apply_properties([Property::new(key, value.as_ref(), WITH)])
    }

    /// Applies `properties` in order, each error naming the key and its origin, then checks
    /// them together as the Java client does (see the crate docs for every key).
    ///
    /// `enable.idempotence` needs `acks=all`, at most 5 requests in flight and `retries` > 0:
    /// set explicitly against one of them it is an error naming both keys; left at its
    /// default, it gives way (idempotence off), as in the Java client. `delivery.timeout.ms`
    /// must be at least `linger.ms` + `request.timeout.ms` when set; unset, it is raised to
    /// that sum.
    pub fn apply_properties(
        mut self,
        properties: impl IntoIterator<Item = Property>,
    ) -> Result<Self, Error> {
        shared::apply_properties(&mut Loading(&mut self), properties)?;
        self.settle()?;
        Ok(self)
    }

    /// The key's value and origin when a property set it.
    fn explicit(&self, key: &str) -> Option<&(&'static str, String, String)> {
        self.retained
            .explicit
            .iter()
            .rev()
            .find(|(k, _, _)| *k == key)
    }

    /// Notes that `key` (its Java name) was set by `setting`.
    fn mark(&mut self, key: &'static str, setting: &Setting) {
        let (value, origin) = (setting.value().trim().to_owned(), setting.0.origin.clone());
        self.retained.explicit.push((key, value, origin));
    }

    /// The checks across keys, and what is built from several keys at once.
    fn settle(&mut self) -> Result<(), Error> {
        self.settle_codec()?;
        self.settle_partitioning()?;
        self.settle_idempotence()?;
        self.settle_transactions()?;
        self.settle_delivery_timeout()
    }

    /// The codec from `compression.type` and its level, when a property named either.
    fn settle_codec(&mut self) -> Result<(), Error> {
        let Some(compression) = self.retained.compression else {
            return Ok(());
        };
        let levels = self.retained.levels;
        self.codec = match compression {
            Compression::Gzip => Codec::gzip(levels.gzip),
            Compression::Lz4 => Codec::lz4(levels.lz4),
            Compression::Zstd => Codec::zstd(levels.zstd),
            other => Ok(Codec::new(other)),
        }
        .map_err(|error| Error::Property {
            key: "compression.type".to_owned(),
            origin: String::new(),
            detail: error.to_string(),
        })?;
        Ok(())
    }

    /// The partitioning from the partitioner keys, when a property named one.
    fn settle_partitioning(&mut self) -> Result<(), Error> {
        if let Some(adaptive) = self.retained.adaptive {
            self.partitioning = self.partitioning.with_adaptive(adaptive);
        }
        let given = &self.retained.partitioner;
        if given.iter().all(Option::is_none) {
            return Ok(());
        }
        let value = |i: usize| given[i].as_ref().map(|(value, _)| value.as_str());
        let adaptive = self.partitioning.is_adaptive();
        self.partitioning = Partitioning::from_settings(value(0), value(1), value(2)).map_err(
            |error| match error {
                krec_client::Error::InvalidArgument { what, detail } => {
                    let index = [
                        "partitioner",
                        "partitioner.class",
                        "partitioner.ignore.keys",
                    ]
                    .iter()
                    .position(|key| *key == what);
                    let origin = index.and_then(|i| given[i].as_ref());
                    Error::Property {
                        key: what.to_owned(),
                        origin: origin.map_or_else(String::new, |(_, o)| o.clone()),
                        detail,
                    }
                }
                other => Error::Property {
                    key: "partitioner".to_owned(),
                    origin: String::new(),
                    detail: other.to_string(),
                },
            },
        )?;
        self.partitioning = self.partitioning.with_adaptive(adaptive);
        Ok(())
    }

    /// `enable.idempotence` against `acks`, `max.in.flight.requests.per.connection` and
    /// `retries`, when a property named one of them.
    fn settle_idempotence(&mut self) -> Result<(), Error> {
        let conflicts = [
            ("acks", self.acks != Acks::All, "idempotence needs acks=all"),
            (
                "max.in.flight.requests.per.connection",
                self.max_in_flight > MAX_IDEMPOTENT_IN_FLIGHT,
                "idempotence allows at most 5 requests in flight",
            ),
            (
                "retries",
                self.retries == 0,
                "idempotence needs retries > 0",
            ),
        ];
        let conflict = conflicts.iter().find(|(_, conflicts, _)| *conflicts);
        match (self.explicit("enable.idempotence"), conflict) {
            (Some((_, value, origin)), Some((key, _, why))) if value == "true" => {
                let shown = |(key, value, origin): &(&str, String, String)| {
                    format!("{key}={value} ({origin})")
                };
                let second = self.explicit(key).map_or_else(|| (*key).to_owned(), shown);
                Err(Error::Conflict {
                    first: shown(&("enable.idempotence", value.clone(), origin.clone())),
                    second,
                    detail: format!("{why}; set enable.idempotence=false to allow it"),
                })
            }
            (Some((_, value, _)), _) => {
                self.idempotence = value == "true";
                Ok(())
            }
            // Left at its default, idempotence gives way to an explicit conflicting key, and
            // comes back when a later setting ends the conflict.
            (None, conflict) => {
                let keys = ["acks", "max.in.flight.requests.per.connection", "retries"];
                if keys.iter().any(|key| self.explicit(key).is_some()) {
                    self.idempotence = conflict.is_none();
                }
                Ok(())
            }
        }
    }

    /// `transactional.id` makes the producer idempotent, as in the Java client: an explicit
    /// `enable.idempotence=false` (or a default that gave way to a conflicting key) with it
    /// is an error naming both.
    fn settle_transactions(&mut self) -> Result<(), Error> {
        let Some(id) = self
            .explicit("transactional.id")
            .filter(|_| self.transactional_id.is_some())
        else {
            return Ok(());
        };
        if self.idempotence {
            return Ok(());
        }
        let first = format!("transactional.id={} ({})", id.1, id.2);
        let second = self.explicit("enable.idempotence").map_or_else(
            || {
                "enable.idempotence (off by acks, max.in.flight.requests.per.connection or retries)"
                    .to_owned()
            },
            |(key, value, origin)| format!("{key}={value} ({origin})"),
        );
        Err(Error::Conflict {
            first,
            second,
            detail: "a transactional producer is idempotent; remove transactional.id or \
                     enable idempotence"
                .to_owned(),
        })
    }

    /// `delivery.timeout.ms` >= `linger.ms` + `request.timeout.ms`.
    fn settle_delivery_timeout(&mut self) -> Result<(), Error> {
        let least = self.linger + self.connection.request_timeout;
        if self.delivery_timeout >= least {
            return Ok(());
        }
        match self.explicit("delivery.timeout.ms") {
            Some((key, value, origin)) => Err(Error::Conflict {
                first: format!("{key}={value} ({origin})"),
                second: format!("linger.ms + request.timeout.ms = {} ms", least.as_millis()),
                detail: "a record must be allowed its linger and one request".to_owned(),
            }),
            None => {
                self.delivery_timeout = least;
                Ok(())
            }
        }
    }

    /// Acknowledgements, batching, compression; whether `setting` was one of them.
    fn apply_batching(&mut self, setting: &Setting) -> Result<bool, PropertyError> {
        match setting.key() {
            "acks" | "request.required.acks" => {
                self.acks = match setting.value().trim() {
                    "all" | "-1" => Acks::All,
                    "1" => Acks::Leader,
                    "0" => Acks::None,
                    _ => return Err(setting.expected("all, -1, 0 or 1")),
                };
                self.mark("acks", setting);
            }
            "linger.ms" | "queue.buffering.max.ms" => self.linger = setting.millis()?,
            "batch.size" => self.write.batch_size = usize_of(setting.bytes(1)?),
            "batch.num.messages" => {
                let count = setting.int(1, i32::MAX, "a number of records")?;
                self.max_batch_records = u32::try_from(count).ok();
            }
            "max.request.size" | "message.max.bytes" => {
                self.write.max_record_size = usize_of(setting.bytes(1)?)
            }
            "compression.type" | "compression.codec" => {
                let name = setting.value().trim();
                let found = Compression::ALL.iter().find(|c| c.name() == name);
                let expected = "none, gzip, snappy, lz4 or zstd";
                self.retained.compression = Some(*found.ok_or_else(|| setting.expected(expected))?);
            }
            "compression.gzip.level" => self.retained.levels.gzip = level(setting, Codec::gzip)?,
            "compression.lz4.level" => self.retained.levels.lz4 = level(setting, Codec::lz4)?,
            "compression.zstd.level" => self.retained.levels.zstd = level(setting, Codec::zstd)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Delivery: idempotence, requests in flight, timeouts, retries, memory, partitioning.
    fn apply_delivery(&mut self, setting: &Setting) -> Result<bool, PropertyError> {
        match setting.key() {
            "enable.idempotence" => {
                self.idempotence = setting.flag()?;
                self.mark("enable.idempotence", setting);
            }
            "max.in.flight.requests.per.connection" | "max.in.flight" => {
                self.max_in_flight = setting.int(1, i32::MAX, "a number of requests")? as u32;
                self.mark("max.in.flight.requests.per.connection", setting);
            }
            "delivery.timeout.ms" | "message.timeout.ms" => {
                self.delivery_timeout = setting.positive_millis()?;
                self.mark("delivery.timeout.ms", setting);
            }
            "retries" | "message.send.max.retries" => {
                self.retries = setting.int(0, i32::MAX, "a number of retries")?;
                self.mark("retries", setting);
            }
            "transactional.id" => {
                self.transactional_id = setting.optional();
                self.mark("transactional.id", setting);
            }
            "transaction.timeout.ms" => self.transaction_timeout = setting.positive_millis()?,
            "retry.backoff.ms" => self.retry_backoff = setting.millis()?,
            "buffer.memory" => self.buffer_memory = setting.bytes(1)? as u64,
            "queue.buffering.max.kbytes" => {
                self.buffer_memory = setting.int(1, i32::MAX, "a number of KiB")? as u64 * 1024
            }
            "max.block.ms" => self.max_block = setting.millis()?,
            "partitioner" | "partitioner.class" | "partitioner.ignore.keys" => {
                let index = match setting.key() {
                    "partitioner" => 0,
                    "partitioner.class" => 1,
                    _ => 2,
                };
                let given = (setting.value().to_owned(), setting.0.origin.clone());
                self.retained.partitioner[index] = Some(given);
            }
            "partitioner.adaptive.partitioning.enable" => {
                self.retained.adaptive = Some(setting.flag()?);
            }
            "partitioner.availability.timeout.ms" => {
                if !setting.millis()?.is_zero() {
                    return Err(setting.bad(
                        "not supported: 0 (the default) only; the adaptive draw \
                         (partitioner.adaptive.partitioning.enable) already sends fewer records \
                         to partitions whose broker falls behind"
                            .to_owned(),
                    ));
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// A byte count already checked to be positive.
fn usize_of(bytes: i32) -> usize {
    usize::try_from(bytes).unwrap_or(usize::MAX)
}

/// A `compression.<codec>.level`, checked in Kafka's range for the codec.
fn level(
    setting: &Setting,
    codec: fn(i32) -> Result<Codec, krec_batch::Error>,
) -> Result<i32, PropertyError> {
    let level = setting.int(i32::MIN, i32::MAX, "a compression level")?;
    codec(level).map_err(|error| setting.bad(error.to_string()))?;
    Ok(level)
}

/// A [`ProducerConfig`] being loaded by the shared loader.
struct Loading<'a>(&'a mut ProducerConfig);

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
        if CONSUMER_KEYS.contains(&setting.key()) {
            return Err(setting.bad(
                "a consumer's property, not a producer's: give the producer a file without it"
                    .to_owned(),
            ));
        }
        Ok(self.0.apply_batching(setting)? || self.0.apply_delivery(setting)?)
    }
}
