//! Which partition a producer sent a key to, so a reader looking for one key reads one
//! partition: the Java client's default (murmur2) or librdkafka's (`consistent_random`, CRC32).

use std::str::FromStr;

use crate::Error;

/// A producer's partitioner for keyed records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partitioner {
    /// The Java client's default: murmur2 of the key with Kafka's seed, made positive, modulo
    /// the partition count (also librdkafka's `murmur2_random`).
    Murmur2,
    /// librdkafka's default `consistent_random`: the CRC32 (IEEE) of the key modulo the
    /// partition count.
    Crc32,
}

impl Partitioner {
    /// The partition of `key` in a topic of `partitions` partitions (at least one).
    pub fn partition(self, key: &[u8], partitions: i32) -> i32 {
        let count = partitions.max(1) as u32;
        let hash = match self {
            // Kafka's `toPositive`: the sign bit cleared, not the absolute value.
            Partitioner::Murmur2 => murmur2::murmur2(key, murmur2::KAFKA_SEED) & 0x7fff_ffff,
            Partitioner::Crc32 => crc32fast::hash(key),
        };
        (hash % count) as i32
    }
}

impl FromStr for Partitioner {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        match text {
            "murmur2" | "murmur2_random" => Ok(Partitioner::Murmur2),
            "crc32" | "consistent" | "consistent_random" => Ok(Partitioner::Crc32),
            _ => Err(Error::InvalidArgument {
                what: "partitioner",
                detail: format!("{text:?}: expected murmur2 (Java) or crc32 (librdkafka)"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Partitioner;

    #[test]
    fn known_partitions_of_both_clients() {
        // Kafka's own murmur2 test values, and CRC32's standard check value.
        assert_eq!(
            murmur2::murmur2(b"21", murmur2::KAFKA_SEED) as i32,
            -973932308
        );
        assert_eq!(
            murmur2::murmur2(b"foobar", murmur2::KAFKA_SEED) as i32,
            -790332482
        );
        assert_eq!(crc32fast::hash(b"123456789"), 0xcbf4_3926);
        for key in [&b""[..], b"a", b"key-17", &[0xff; 33]] {
            for partitions in [1, 3, 1000] {
                for partitioner in [Partitioner::Murmur2, Partitioner::Crc32] {
                    let p = partitioner.partition(key, partitions);
                    assert!((0..partitions).contains(&p), "{partitioner:?} {key:?}");
                }
            }
        }
        assert!("sticky".parse::<Partitioner>().is_err());
    }
}
