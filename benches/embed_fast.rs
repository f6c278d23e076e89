//! The `krec-fast` side of scripts/bench-embed.sh: a program embedding krec-consumer that reads
//! a topic from the beginning to the end of every partition, decoding the fast way the crate
//! documents (`chunk.batches().try_for_each_ref` with `records_in_place`: each batch and record
//! parsed in place into one reused buffer, values borrowed from the fetched bytes), then exits.
//!
//! ```text
//! cargo build --release --bench embed_fast     # or: scripts/bench-embed.sh
//! target/release/deps/embed_fast-<hash> 127.0.0.1:9092 my-topic
//! ```
//!
//! A benchmark program, not a criterion bench (`harness = false`); it is here, not in
//! `examples/`, because it is a tool of the benchmark. Every byte of every value is read
//! (summed), so the work is real; it prints `records=N value_bytes=B value_sum=S` to stdout,
//! the line benches/rdkafka-consumer prints with `--count`, so the script can check that every
//! program read the same data. Settings: the defaults of `ConsumerConfig::new` (an embedder's
//! first program), a current-thread runtime (as `krec consume`); decoding runs on the caller's
//! thread.
//!
//! For the A/B against benches/embed_simple.rs (`krec-simple`), the two programs are the same
//! but for the decode path: the same configuration, runtime, `assign_topic` +
//! `stop_at_end(true)` + `while let Some(chunk) = consumer.next_chunk()` loop and totals; this
//! one walks `chunk.batches().try_for_each_ref` + `records_in_place`, that one
//! `chunk.for_each_record`.

use std::ops::ControlFlow;

use krec::consumer::{Consumer, ConsumerConfig, Error, StartOffset};

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
        eprintln!("usage: embed_fast HOST:PORT[,HOST:PORT] TOPIC");
        std::process::exit(2);
    };

    let config = ConsumerConfig::new(ConsumerConfig::parse_bootstrap(brokers)?);
    let mut consumer = Consumer::connect(config).await?;
    consumer.assign_topic(topic, StartOffset::Beginning).await?;
    consumer.stop_at_end(true);

    let mut totals = Totals::default();
    while let Some(chunk) = consumer.next_chunk().await? {
        // The only difference from embed_simple.rs: batches parsed in place, one at a time.
        chunk
            .batches()
            .try_for_each_ref(|batch| -> Result<_, Error> {
                let mut records = batch.records_in_place();
                while let Some(record) = records.next_ref() {
                    let value = record?.value().unwrap_or_default();
                    totals.records += 1;
                    totals.value_bytes += value.len() as u64;
                    totals.value_sum += value.iter().map(|&b| u64::from(b)).sum::<u64>();
                }
                Ok(ControlFlow::Continue(()))
            })?;
    }
    println!(
        "records={} value_bytes={} value_sum={}",
        totals.records, totals.value_bytes, totals.value_sum
    );
    Ok(())
}
