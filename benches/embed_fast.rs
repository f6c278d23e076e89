//! The `krec-fast` side of scripts/bench-embed.sh: a program embedding krec-consumer that reads
//! a topic from the beginning to the end of every partition, the fast way the crate documents
//! (`chunk.batches().try_for_each_ref` with `records_in_place`: each batch and record parsed
//! in place, values borrowed from the fetched bytes), then exits.
//!
//! ```text
//! cargo run --release --example embed_fast -- 127.0.0.1:9092 my-topic
//! ```
//!
//! Every byte of every value is read (summed), so the work is real; it prints
//! `records=N value_bytes=B value_sum=S` to stdout, the line benches/rdkafka-consumer prints with
//! `--count`, so the script can check that both read the same data. Settings: the defaults of
//! `ConsumerConfig::new` (an embedder's first program), a current-thread runtime (as `krec
//! consume`); decoding runs on the caller's thread. It stops when `poll` has reported
//! `Fetched::EndOfPartition` for every partition.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use krec::consumer::{Consumer, ConsumerConfig, Error, Fetched, StartOffset};

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
    let partitions = consumer.assign_topic(topic, StartOffset::Beginning).await?;

    let mut not_at_end: BTreeSet<i32> = partitions.iter().map(|p| p.partition).collect();
    let mut totals = Totals::default();
    while !not_at_end.is_empty() {
        match consumer.poll().await? {
            Fetched::Chunk(chunk) => {
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
            Fetched::EndOfPartition { partition, .. } => {
                not_at_end.remove(&partition);
            }
            // Only a `subscribe`d consumer sees its topics change.
            _ => {}
        }
    }
    println!(
        "records={} value_bytes={} value_sum={}",
        totals.records, totals.value_bytes, totals.value_sum
    );
    Ok(())
}
