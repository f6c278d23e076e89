//! Reads a topic from the beginning to the end of every partition with
//! rdkafka's `BaseConsumer` and writes each value and a newline to stdout.
//!
//!     rdkafka-consumer-bench BOOTSTRAP TOPIC
//!
//! Key, value and headers of every record are touched, so the work matches a
//! consumer that prints values. Prints the record count to stderr at the end.

use std::collections::HashSet;
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, bootstrap, topic] = args.as_slice() else {
        eprintln!("usage: rdkafka-consumer-bench BOOTSTRAP TOPIC");
        return ExitCode::from(2);
    };
    match consume(bootstrap, topic) {
        Ok(records) => {
            eprintln!("rdkafka-consumer-bench: {records} records");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("rdkafka-consumer-bench: {error}");
            ExitCode::FAILURE
        }
    }
}

fn consume(bootstrap: &str, topic: &str) -> Result<u64, Box<dyn std::error::Error>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "rdkafka-consumer-bench")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .create()?;
    let metadata = consumer.fetch_metadata(Some(topic), Duration::from_secs(10))?;
    let partitions: Vec<i32> = metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic)
        .ok_or("topic missing from metadata")?
        .partitions()
        .iter()
        .map(|p| p.id())
        .collect();
    if partitions.is_empty() {
        return Err("topic has no partitions".into());
    }
    let mut assignment = TopicPartitionList::new();
    for &partition in &partitions {
        assignment.add_partition_offset(topic, partition, Offset::Beginning)?;
    }
    consumer.assign(&assignment)?;

    let mut out = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    let mut records = 0u64;
    let mut touched = 0usize;
    // librdkafka reports EOF again after new records; a set counts each partition once.
    let mut at_end: HashSet<i32> = HashSet::new();
    while at_end.len() < partitions.len() {
        match consumer.poll(Duration::from_secs(1)) {
            None => {}
            Some(Ok(message)) => {
                records += 1;
                touched += message.key().map_or(0, <[u8]>::len);
                if let Some(headers) = message.headers() {
                    for header in headers.iter() {
                        touched += header.key.len() + header.value.map_or(0, <[u8]>::len);
                    }
                }
                if let Some(value) = message.payload() {
                    out.write_all(value)?;
                }
                out.write_all(b"\n")?;
            }
            Some(Err(KafkaError::PartitionEOF(partition))) => {
                at_end.insert(partition);
            }
            Some(Err(error)) => return Err(error.into()),
        }
    }
    out.flush()?;
    // Keeps the header and key reads from being optimised away.
    std::hint::black_box(touched);
    Ok(records)
}
