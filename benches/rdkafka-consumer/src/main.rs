//! Reads a topic from the beginning to the end of every partition with
//! rdkafka's `BaseConsumer`, then exits.
//!
//!     rdkafka-consumer-bench [--count] BOOTSTRAP TOPIC [-X PROPERTY=VALUE]...
//!     rdkafka-consumer-bench --version
//!
//! By default (scripts/bench-consume.sh) it writes each value and a newline to
//! stdout; key and headers of every record are touched too, so the work
//! matches a consumer that prints values. With `--count` (scripts/bench-embed.sh)
//! it writes nothing per record: it reads every byte of every value (a sum)
//! and prints `records=N value_bytes=B value_sum=S` at the end, the line
//! benches/embed_fast.rs prints. Prints the record count to stderr at the end.
//! `--version` prints the versions of the crate and of its bundled librdkafka.
//! `-X` sets a librdkafka property, as kcat's does (after the settings below).
//!
//! Settings besides the assignment (all partitions from the beginning, no
//! group, no commits): librdkafka's fetch defaults are krec's
//! (`ConsumerConfig::new`) already, set here explicitly so they stay so:
//! fetch.wait.max.ms=500, fetch.min.bytes=1, fetch.max.bytes=50 MiB,
//! max.partition.fetch.bytes=1 MiB. What may be fetched ahead is bounded in
//! bytes only, as krec's buffer_bytes (256 MiB): queued.max.messages.kbytes
//! is raised from 64 MiB to that, and queued.min.messages from 100000 to its
//! maximum, so that a partition's fetching does not pause at 100000 queued
//! records (then for fetch.queue.backoff.ms, 1 s: reading 1M records over 4
//! partitions took 3.2 s of wall time instead of 1.1 s). check.crcs stays
//! librdkafka's default, false: krec checks every batch's CRC, so this
//! favours librdkafka. This is a `BaseConsumer` loop: a `StreamConsumer` (tokio, current
//! thread) costs librdkafka more CPU, so this side is its faster one.

use std::collections::HashSet;
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};

/// The crate version Cargo.toml pins.
const RDKAFKA_CRATE: &str = "0.39.0";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).is_some_and(|a| a == "--version") {
        let (_, librdkafka) = rdkafka::util::get_rdkafka_version();
        println!("rdkafka {RDKAFKA_CRATE}, bundled librdkafka {librdkafka}");
        return ExitCode::SUCCESS;
    }
    let count_only = args.get(1).is_some_and(|a| a == "--count");
    let rest = &args[1 + usize::from(count_only)..];
    let mut properties = Vec::new();
    let mut usage = rest.len() < 2 || rest.len() % 2 != 0;
    for pair in rest.get(2..).unwrap_or_default().chunks(2) {
        match (
            pair[0].as_str(),
            pair.get(1).and_then(|p| p.split_once('=')),
        ) {
            ("-X", Some(property)) => properties.push(property),
            _ => usage = true,
        }
    }
    if usage {
        eprintln!(
            "usage: rdkafka-consumer-bench [--count] BOOTSTRAP TOPIC [-X PROPERTY=VALUE]... | --version"
        );
        return ExitCode::from(2);
    }
    match consume(&rest[0], &rest[1], count_only, &properties) {
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

fn consume(
    bootstrap: &str,
    topic: &str,
    count_only: bool,
    properties: &[(&str, &str)],
) -> Result<u64, Box<dyn std::error::Error>> {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "rdkafka-consumer-bench")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        // krec's defaults (see the top of this file).
        .set("fetch.wait.max.ms", "500")
        .set("fetch.min.bytes", "1")
        .set("fetch.max.bytes", "52428800")
        .set("max.partition.fetch.bytes", "1048576")
        .set("queued.max.messages.kbytes", "262144")
        .set("queued.min.messages", "10000000");
    for (property, value) in properties {
        config.set(*property, *value);
    }
    let consumer: BaseConsumer = config.create()?;
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
    let (mut value_bytes, mut value_sum) = (0u64, 0u64);
    // librdkafka reports EOF again after new records; a set counts each partition once.
    let mut at_end: HashSet<i32> = HashSet::new();
    while at_end.len() < partitions.len() {
        match consumer.poll(Duration::from_secs(1)) {
            None => {}
            Some(Ok(message)) if count_only => {
                let value = message.payload().unwrap_or_default();
                records += 1;
                value_bytes += value.len() as u64;
                value_sum += value.iter().map(|&b| u64::from(b)).sum::<u64>();
            }
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
    if count_only {
        writeln!(
            out,
            "records={records} value_bytes={value_bytes} value_sum={value_sum}"
        )?;
    }
    out.flush()?;
    // Keeps the header and key reads from being optimised away.
    std::hint::black_box(touched);
    Ok(records)
}
