//! Which partition a producer sends a record to, as the producers krec sits beside do it, so a
//! key lands where a Java or librdkafka service would put it and a reader looking for one key
//! reads one partition.
//!
//! - [`Partitioner`]: the hash of a key. [`Partitioner::Murmur2`] is the Java client's
//!   (`BuiltInPartitioner.partitionForKey`, also librdkafka's `murmur2` and `murmur2_random`);
//!   [`Partitioner::Crc32`] is librdkafka's default `consistent_random` (and `consistent`).
//! - [`StickyPartitioner`] (in [`sticky`]): the Java client's partitioning of records without a
//!   key since Kafka 3.3 (KIP-794's uniform sticky partitioner), one per topic.
//! - [`Partitioning`] (in [`choice`]): the `partitioner.class` / `partitioner.ignore.keys`
//!   (Java) or `partitioner` (librdkafka) settings read into one typed choice.

pub mod choice;
pub mod sticky;

use std::str::FromStr;

use crate::Error;

pub use choice::{Partitioning, Unkeyed};
pub use sticky::{RandomSource, SeededRandom, StickyPartitioner};

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

    /// Kafka's own murmur2 vectors (`UtilsTest.testMurmur2`), as Java's signed ints.
    const KAFKA_MURMUR2: [(&[u8], i32); 6] = [
        (b"21", -973_932_308),
        (b"foobar", -790_332_482),
        (b"a-little-bit-long-string", -985_981_536),
        (b"a-little-bit-longer-string", -1_486_304_829),
        (
            b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
            -58_897_971,
        ),
        (b"abc", 479_470_107),
    ];

    #[test]
    fn murmur2_matches_kafkas_vectors_and_partitions_as_java_does() {
        for (key, hash) in KAFKA_MURMUR2 {
            assert_eq!(
                murmur2::murmur2(key, murmur2::KAFKA_SEED) as i32,
                hash,
                "{key:?}"
            );
            // Java: Utils.toPositive(hash) % partitions.
            for partitions in [1, 3, 7, 16, 100, 1000] {
                assert_eq!(
                    Partitioner::Murmur2.partition(key, partitions),
                    (hash & 0x7fff_ffff) % partitions,
                    "{key:?} over {partitions}"
                );
            }
        }
        // A negative hash: clearing the sign bit and taking the absolute value differ here.
        assert_eq!(Partitioner::Murmur2.partition(b"21", 1000), 340);
        assert_eq!(Partitioner::Murmur2.partition(b"foobar", 50), 16);
    }

    #[test]
    fn crc32_is_the_ieee_checksum_modulo_the_count() {
        assert_eq!(crc32fast::hash(b"123456789"), 0xcbf4_3926);
        assert_eq!(
            Partitioner::Crc32.partition(b"123456789", 1000),
            (0xcbf4_3926_u32 % 1000) as i32
        );
        for key in [&b""[..], b"a", b"key-17", &[0xff; 33]] {
            for partitions in [1, 3, 1000] {
                for partitioner in [Partitioner::Murmur2, Partitioner::Crc32] {
                    let p = partitioner.partition(key, partitions);
                    assert!((0..partitions).contains(&p), "{partitioner:?} {key:?}");
                }
            }
        }
    }

    #[test]
    fn names_of_both_clients_parse() {
        assert_eq!("murmur2_random".parse().ok(), Some(Partitioner::Murmur2));
        assert_eq!("consistent_random".parse().ok(), Some(Partitioner::Crc32));
        let error = "sticky".parse::<Partitioner>().unwrap_err().to_string();
        assert!(error.contains("partitioner"), "{error}");
    }
}
