//! Keyed records land where the Java producer puts them: Kafka's console producer writes
//! thousands of keys to topics of several partition counts, `krec consume` reads them back,
//! and krec's murmur2 partitioner (the producer's and the consumer's, in krec-client) must
//! name the partition of every one.

use std::collections::BTreeSet;

use krec_client::partitioner::Partitioner;

use crate::support::broker::{broker, unique_topic};

const PARTITION_COUNTS: [u32; 5] = [1, 3, 7, 16, 100];
const KEYS: usize = 2000;

/// Keys of every length up to 40 bytes (murmur2 treats the last 0 to 3 bytes apart), with
/// UTF-8 beyond ASCII and the empty key; none holds the separator `:`.
fn key(i: usize) -> String {
    const ALPHABET: [&str; 8] = ["a", "Z", "7", "-", "é", "日", " ", "~"];
    if i == 0 {
        return String::new();
    }
    let mut key = format!("k{i}");
    let mut state = i;
    while key.len() < i % 41 {
        state = state.wrapping_mul(2_654_435_761).wrapping_add(17);
        key.push_str(ALPHABET[(state >> 7) % ALPHABET.len()]);
    }
    key
}

#[test]
fn murmur2_puts_every_key_where_the_java_producer_did() {
    let broker = broker();
    let keys: Vec<String> = (0..KEYS).map(key).collect();
    assert_eq!(keys.iter().collect::<BTreeSet<_>>().len(), KEYS);
    let input: String = keys
        .iter()
        .enumerate()
        .map(|(i, key)| format!("{key}:value-{i}\n"))
        .collect();
    for partitions in PARTITION_COUNTS {
        let topic = unique_topic(&format!("parts-java-{partitions}"));
        broker.create_topic(&topic, partitions, 1);
        broker.tool_with_input(
            &[
                "org.apache.kafka.tools.ConsoleProducer",
                "--bootstrap-server",
                "{bootstrap}",
                "--topic",
                &topic,
                "--property",
                "parse.key=true",
                "--property",
                "key.separator=:",
            ],
            input.as_bytes(),
        );
        let records = broker.consume_records(&topic, &["-e"]);
        assert_eq!(records.len(), KEYS, "{topic}");
        let mut used = BTreeSet::new();
        for record in &records {
            let key = record.key.as_deref().expect("the Java producer sent a key");
            assert_eq!(
                Partitioner::Murmur2.partition(key, partitions as i32),
                record.partition,
                "key {:?} over {partitions} partitions",
                String::from_utf8_lossy(key)
            );
            used.insert(record.partition);
        }
        assert_eq!(used.len(), partitions as usize, "every partition got keys");
    }
}
