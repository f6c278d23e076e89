//! The `krec-simple` side of scripts/bench-embed.sh: a program embedding krec-consumer that reads
//! a topic from the beginning to the end of every partition through the front door, written as
//! the crate docs show an embedder (`Consumer::connect`, `assign_topic`, `stop_at_end(true)`,
//! `next_chunk`, `chunk.for_each_record(|record| ..)`), then exits.
//!
//! ```text
//! cargo build --release --bench embed_simple   # or: scripts/bench-embed.sh
//! target/release/deps/embed_simple-<hash> 127.0.0.1:9092 my-topic
//! ```
//!
//! A benchmark program, not a criterion bench (`harness = false`). Every byte of every value is
//! read (summed); it prints `records=N value_bytes=B value_sum=S` to stdout, as
//! benches/embed_fast.rs and benches/rdkafka-consumer (`--count`) do. Settings: the defaults of
//! `ConsumerConfig::new`, a current-thread runtime; decoding runs on the caller's thread.
//!
//! For the A/B against benches/embed_fast.rs (`krec-fast`), the two programs are the same but
//! for the decode path: the same configuration, runtime, `assign_topic` + `stop_at_end(true)` +
//! `while let Some(chunk) = consumer.next_chunk()` loop and totals; this one lends each record
//! to a closure (`chunk.for_each_record`), that one walks `chunk.batches().try_for_each_ref` +
//! `records_in_place` itself.

use krec::consumer::{Consumer, ConsumerConfig, StartOffset};

#[derive(Default)]
struct Totals {
    records: u64,
    value_bytes: u64,
    value_sum: u64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, brokers, topic] = args.as_slice() else {
        eprintln!("usage: embed_simple HOST:PORT[,HOST:PORT] TOPIC");
        std::process::exit(2);
    };

    let config = ConsumerConfig::new(ConsumerConfig::parse_bootstrap(brokers)?);
    let mut consumer = Consumer::connect(config).await?;
    consumer.assign_topic(topic, StartOffset::Beginning).await?;
    consumer.stop_at_end(true);

    let mut totals = Totals::default();
    while let Some(chunk) = consumer.next_chunk().await? {
        // The only difference from embed_fast.rs: the front door's walk over records.
        chunk.for_each_record(|record| {
            let value = record.value().unwrap_or_default();
            totals.records += 1;
            totals.value_bytes += value.len() as u64;
            totals.value_sum += value.iter().map(|&b| u64::from(b)).sum::<u64>();
        })?;
    }
    println!(
        "records={} value_bytes={} value_sum={}",
        totals.records, totals.value_bytes, totals.value_sum
    );
    Ok(())
}
