//! The partitioning settings of both client families read into one typed choice: the Java
//! client's `partitioner.class` and `partitioner.ignore.keys`, librdkafka's `partitioner`.
//!
//! | setting | keyed records | records without a key |
//! |---|---|---|
//! | none (Java's default) | murmur2 | uniform sticky (KIP-794) |
//! | `partitioner.ignore.keys=true` | uniform sticky | uniform sticky |
//! | `partitioner.class=…RoundRobinPartitioner` | round robin | round robin |
//! | `partitioner=murmur2_random` | murmur2 | random |
//! | `partitioner=murmur2` | murmur2 | murmur2 of the empty key |
//! | `partitioner=consistent_random` (librdkafka's default) | CRC32; an empty key as none | random |
//! | `partitioner=consistent` | CRC32 | CRC32 of the empty key |
//! | `partitioner=random` | random | random |
//!
//! librdkafka's "random" for records without a key is sticky for
//! `sticky.partitioning.linger.ms` there; that timing is the producer's to keep.

use super::Partitioner;
use crate::Error;

/// How records without a key (or whose key is ignored) choose a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unkeyed {
    /// The Java client's since 3.3: [`StickyPartitioner`](super::StickyPartitioner).
    UniformSticky,
    /// librdkafka's `*_random` partitioners and `random`: a random available partition.
    Random,
    /// Java's `RoundRobinPartitioner`: each record the next available partition.
    RoundRobin,
    /// librdkafka's `murmur2` and `consistent`: the partition of an empty key.
    EmptyKeyHash,
}

/// A producer's partitioning: how keyed records and records without a key choose a partition
/// (records that name their partition keep it, whatever this says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partitioning {
    /// The hash of keys; `None` when keys are ignored.
    keys: Option<Partitioner>,
    /// librdkafka's `consistent_random` treats an empty key as no key.
    empty_key_is_none: bool,
    unkeyed: Unkeyed,
    /// KIP-794's adaptive draw for [`Unkeyed::UniformSticky`] (on by default, as in Java).
    adaptive: bool,
}

const JAVA_PACKAGE: &str = "org.apache.kafka.clients.producer.";

impl Partitioning {
    /// The Java client's default (and krec's): murmur2 of keys, uniform sticky otherwise.
    pub const JAVA_DEFAULT: Partitioning = Partitioning {
        keys: Some(Partitioner::Murmur2),
        empty_key_is_none: false,
        unkeyed: Unkeyed::UniformSticky,
        adaptive: true,
    };

    /// librdkafka's default, `consistent_random`.
    pub const LIBRDKAFKA_DEFAULT: Partitioning = Partitioning {
        keys: Some(Partitioner::Crc32),
        empty_key_is_none: true,
        unkeyed: Unkeyed::Random,
        adaptive: true,
    };

    /// Reads the settings, each as its properties file gives it (`None` when unset):
    /// librdkafka's `partitioner`, or the Java client's `partitioner.class` and
    /// `partitioner.ignore.keys`. Unset, the Java client's default. The error names the key.
    pub fn from_settings(
        partitioner: Option<&str>,
        partitioner_class: Option<&str>,
        ignore_keys: Option<&str>,
    ) -> Result<Self, Error> {
        let ignore_keys = match ignore_keys.map(str::trim) {
            None => false,
            Some(text) if text.eq_ignore_ascii_case("true") => true,
            Some(text) if text.eq_ignore_ascii_case("false") => false,
            Some(text) => return Err(invalid("partitioner.ignore.keys", text, "true or false")),
        };
        let class = partitioner_class.map(str::trim).filter(|c| !c.is_empty());
        match (partitioner.map(str::trim), class) {
            (Some(_), Some(_)) => Err(Error::InvalidArgument {
                what: "partitioner",
                detail: "set either partitioner (librdkafka's names) or partitioner.class \
                         (the Java client's), not both"
                    .to_owned(),
            }),
            (Some(name), None) if ignore_keys => Err(Error::InvalidArgument {
                what: "partitioner.ignore.keys",
                detail: format!(
                    "it goes with the Java client's default partitioner, not with \
                     partitioner={name}: use partitioner=random to ignore keys"
                ),
            }),
            (Some(name), None) => Self::librdkafka(name),
            (None, Some(class)) => Self::java_class(class),
            (None, None) if ignore_keys => Ok(Partitioning {
                keys: None,
                ..Self::JAVA_DEFAULT
            }),
            (None, None) => Ok(Self::JAVA_DEFAULT),
        }
    }

    /// librdkafka's `partitioner` values.
    fn librdkafka(name: &str) -> Result<Self, Error> {
        let (keys, unkeyed) = match name {
            "murmur2_random" => (Some(Partitioner::Murmur2), Unkeyed::Random),
            "murmur2" => (Some(Partitioner::Murmur2), Unkeyed::EmptyKeyHash),
            "consistent_random" => return Ok(Self::LIBRDKAFKA_DEFAULT),
            "consistent" => (Some(Partitioner::Crc32), Unkeyed::EmptyKeyHash),
            "random" => (None, Unkeyed::Random),
            "fnv1a" | "fnv1a_random" => {
                return Err(invalid(
                    "partitioner",
                    name,
                    "murmur2_random, murmur2, consistent_random, consistent or random \
                     (fnv1a is not supported)",
                ))
            }
            _ => {
                return Err(invalid(
                    "partitioner",
                    name,
                    "murmur2_random, murmur2, consistent_random, consistent or random",
                ))
            }
        };
        Ok(Partitioning {
            keys,
            empty_key_is_none: false,
            unkeyed,
            adaptive: true,
        })
    }

    /// The Java client's `partitioner.class` values that name a built-in class.
    fn java_class(class: &str) -> Result<Self, Error> {
        let short = class.strip_prefix(JAVA_PACKAGE).unwrap_or(class);
        match short {
            "RoundRobinPartitioner" => Ok(Partitioning {
                keys: None,
                empty_key_is_none: false,
                unkeyed: Unkeyed::RoundRobin,
                adaptive: true,
            }),
            "internals.DefaultPartitioner" | "DefaultPartitioner" => Err(invalid(
                "partitioner.class",
                class,
                "unset (Kafka 4.0 removed DefaultPartitioner; the default is its successor)",
            )),
            "UniformStickyPartitioner" => Err(invalid(
                "partitioner.class",
                class,
                "unset, with partitioner.ignore.keys=true (Kafka 4.0 removed \
                 UniformStickyPartitioner)",
            )),
            _ => Err(invalid(
                "partitioner.class",
                class,
                "unset or org.apache.kafka.clients.producer.RoundRobinPartitioner (a Java \
                 class of one's own cannot run here)",
            )),
        }
    }

    /// The partition the key decides, or `None` when the rule for records without a key
    /// applies ([`unkeyed`](Self::unkeyed)): the record has no key, keys are ignored, or the
    /// rule hashes the empty key instead ([`Unkeyed::EmptyKeyHash`], answered here).
    pub fn keyed_partition(&self, key: Option<&[u8]>, partitions: i32) -> Option<i32> {
        let hash = self.keys?;
        match key {
            Some(key) if !(key.is_empty() && self.empty_key_is_none) => {
                Some(hash.partition(key, partitions))
            }
            _ if self.unkeyed == Unkeyed::EmptyKeyHash => Some(hash.partition(b"", partitions)),
            _ => None,
        }
    }

    /// The hash of keys, `None` when keys are ignored.
    pub fn keys(&self) -> Option<Partitioner> {
        self.keys
    }

    /// How records without a key choose a partition.
    pub fn unkeyed(&self) -> Unkeyed {
        self.unkeyed
    }

    /// With `adaptive` false, the uniform sticky partitioner draws uniformly instead of by
    /// how little is queued for each partition (the Java client's
    /// `partitioner.adaptive.partitioning.enable`, true by default).
    pub fn with_adaptive(self, adaptive: bool) -> Self {
        Partitioning { adaptive, ..self }
    }

    /// Whether the uniform sticky partitioner draws by queue sizes
    /// ([`StickyPartitioner::current_partition_adaptive`](super::StickyPartitioner::current_partition_adaptive)).
    pub fn is_adaptive(&self) -> bool {
        self.adaptive
    }
}

impl Default for Partitioning {
    fn default() -> Self {
        Self::JAVA_DEFAULT
    }
}

fn invalid(key: &'static str, value: &str, expected: &str) -> Error {
    Error::InvalidArgument {
        what: key,
        detail: format!("{value:?}: expected {expected}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{Partitioner, Partitioning, Unkeyed};

    fn settings(
        partitioner: Option<&str>,
        class: Option<&str>,
        ignore: Option<&str>,
    ) -> Partitioning {
        Partitioning::from_settings(partitioner, class, ignore).unwrap()
    }

    fn error(partitioner: Option<&str>, class: Option<&str>, ignore: Option<&str>) -> String {
        Partitioning::from_settings(partitioner, class, ignore)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn java_settings() {
        let default = settings(None, None, None);
        assert_eq!(default, Partitioning::JAVA_DEFAULT);
        assert_eq!(default.keys(), Some(Partitioner::Murmur2));
        assert_eq!(default.unkeyed(), Unkeyed::UniformSticky);
        assert_eq!(settings(None, Some(""), Some("FALSE")), default);
        let ignoring = settings(None, None, Some("true"));
        assert_eq!(ignoring.keys(), None);
        assert_eq!(ignoring.keyed_partition(Some(b"k"), 3), None);
        assert_eq!(ignoring.unkeyed(), Unkeyed::UniformSticky);
        for class in [
            "org.apache.kafka.clients.producer.RoundRobinPartitioner",
            "RoundRobinPartitioner",
        ] {
            let round_robin = settings(None, Some(class), None);
            assert_eq!(round_robin.unkeyed(), Unkeyed::RoundRobin);
            assert_eq!(round_robin.keyed_partition(Some(b"k"), 3), None);
        }
    }

    #[test]
    fn librdkafka_settings() {
        let key = Some(&b"user-42"[..]);
        let murmur2 = Partitioner::Murmur2.partition(b"user-42", 7);
        let crc32 = Partitioner::Crc32.partition(b"user-42", 7);
        let empty_murmur2 = Partitioner::Murmur2.partition(b"", 7);
        let cases = [
            // (name, a key's partition, no key's, whether an empty key is hashed, unkeyed)
            ("murmur2_random", Some(murmur2), None, true, Unkeyed::Random),
            (
                "murmur2",
                Some(murmur2),
                Some(empty_murmur2),
                true,
                Unkeyed::EmptyKeyHash,
            ),
            (
                "consistent_random",
                Some(crc32),
                None,
                false,
                Unkeyed::Random,
            ),
            (
                "consistent",
                Some(crc32),
                Some(0),
                true,
                Unkeyed::EmptyKeyHash,
            ),
            ("random", None, None, false, Unkeyed::Random),
        ];
        for (name, keyed, none, empty_hashed, unkeyed) in cases {
            let choice = settings(Some(name), None, None);
            assert_eq!(choice.keyed_partition(key, 7), keyed, "{name}");
            assert_eq!(
                choice.keyed_partition(None, 7),
                none,
                "{name} without a key"
            );
            let empty = empty_hashed.then(|| choice.keys().unwrap().partition(b"", 7));
            assert_eq!(
                choice.keyed_partition(Some(b""), 7),
                empty,
                "{name} empty key"
            );
            assert_eq!(choice.unkeyed(), unkeyed, "{name}");
        }
        assert_eq!(
            settings(Some("consistent_random"), None, None),
            Partitioning::LIBRDKAFKA_DEFAULT
        );
    }

    #[test]
    fn errors_name_the_key() {
        for (text, key) in [
            (error(Some("fnv1a"), None, None), "partitioner:"),
            (error(Some("sticky"), None, None), "partitioner:"),
            (
                error(Some("murmur2"), Some("RoundRobinPartitioner"), None),
                "partitioner:",
            ),
            (
                error(Some("murmur2"), None, Some("true")),
                "partitioner.ignore.keys:",
            ),
            (error(None, None, Some("yes")), "partitioner.ignore.keys:"),
            (
                error(None, Some("com.example.Mine"), None),
                "partitioner.class:",
            ),
            (
                error(
                    None,
                    Some("org.apache.kafka.clients.producer.UniformStickyPartitioner"),
                    None,
                ),
                "partitioner.class:",
            ),
            (
                error(
                    None,
                    Some("org.apache.kafka.clients.producer.internals.DefaultPartitioner"),
                    None,
                ),
                "partitioner.class:",
            ),
        ] {
            assert!(text.starts_with(&format!("invalid {key}")), "{text}");
        }
    }
}
