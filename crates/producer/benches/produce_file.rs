//! The producer on scripts/bench-produce.sh's input, for profiling and A/B runs of CPU per
//! record: each KEY<TAB>VALUE line of FILE is one record with the benchmark's two headers,
//! sent with its settings (linger.ms=5, batch.size=1048576, acks=all, idempotent) and
//! `compression.type` CODEC; exits 1 unless every record is acknowledged.
//!
//! ```text
//! cargo bench -p krec-producer --bench produce_file -- BROKERS TOPIC FILE CODEC
//! ```
//!
//! FILE is what scripts/bench-produce.sh writes (target/bench-produce/records-small-N.txt).
//! For an A/B, copy the binary `cargo bench --no-run` names for each version and run them
//! alternately under `/usr/bin/time -f "%U %S"`, comparing medians. Every run appends all of
//! FILE to TOPIC: on a shared broker give the topic a `retention.bytes`, or delete it after.

use std::io::BufRead;

use krec_producer::{Producer, ProducerConfig, ProducerRecord};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `cargo bench` passes `--bench` first.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let [brokers, topic, file, codec] = args.as_slice() else {
        eprintln!("usage: produce_file BROKERS TOPIC FILE CODEC");
        std::process::exit(2);
    };
    let config = ProducerConfig::from_properties([
        ("linger.ms", "5"),
        ("batch.size", "1048576"),
        ("acks", "all"),
        ("enable.idempotence", "true"),
    ])?
    .with("bootstrap.servers", brokers)?
    .with("compression.type", codec)?;
    let mut input = std::io::BufReader::with_capacity(1 << 16, std::fs::File::open(file)?);
    let producer = Producer::connect(config).await?;
    // One line buffer, reused: `send` copies the record into its batch before it returns.
    let mut line = Vec::new();
    let mut sent = 0_u64;
    while input.read_until(b'\n', &mut line)? > 0 {
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let (key, value) = match text.iter().position(|&b| b == b'\t') {
            Some(tab) => (&text[..tab], &text[tab + 1..]),
            None => (&text[..0], text),
        };
        let record = ProducerRecord::new(topic.as_str())
            .key(key)
            .value(value)
            .header("trace-id", "5f0c2d4e-9a51-4f7b-8c1e-3b2a6d7e8f90")
            .header("source", "bench-produce");
        // The outcome is read from the stats after `close`, not from each `Delivery`.
        drop(producer.send(record).await?);
        sent += 1;
        line.clear();
    }
    producer.close().await?;
    let stats = producer.stats();
    println!(
        "{} of {sent} records acknowledged in {} batches, {} failed",
        stats.records_acknowledged, stats.batches_acknowledged, stats.records_failed
    );
    if stats.records_acknowledged != sent || stats.records_failed > 0 {
        std::process::exit(1);
    }
    Ok(())
}
