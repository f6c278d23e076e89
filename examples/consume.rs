//! Embedding the async consumer: assign every partition of a topic, optionally seek one of
//! them, and read decoded records (borrowed from the fetched bytes) until each partition's end.
//!
//! ```text
//! cargo run --example consume -- 127.0.0.1:9092 my-topic [PARTITION:OFFSET]
//! ```

use std::collections::BTreeSet;

use krec::consumer::{Consumer, ConsumerConfig, Fetched, StartOffset};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(brokers), Some(topic)) = (args.next(), args.next()) else {
        eprintln!("usage: consume HOST:PORT[,HOST:PORT] TOPIC [PARTITION:OFFSET]");
        std::process::exit(2);
    };
    let seek = args.next();

    let config = ConsumerConfig::new(ConsumerConfig::parse_bootstrap(&brokers)?);
    let mut consumer = Consumer::connect(config.clone()).await?;
    let partitions = consumer.partitions(&topic).await?;
    consumer
        .assign(&topic, &partitions, StartOffset::Beginning)
        .await?;
    if let Some(seek) = seek {
        // `seek` drops whatever was already fetched for the partition's old position.
        let (partition, offset) = seek.split_once(':').ok_or("expected PARTITION:OFFSET")?;
        consumer.seek(
            &topic,
            partition.parse()?,
            StartOffset::Offset(offset.parse()?),
        )?;
    }

    let mut not_at_end: BTreeSet<i32> = partitions.iter().copied().collect();
    let mut records = 0u64;
    while !not_at_end.is_empty() {
        match consumer.poll().await? {
            Fetched::Chunk(chunk) => {
                // Decoding happens here, on the caller's thread; records borrow from the chunk.
                for batch in chunk.batches(&config.decode) {
                    let batch = batch?;
                    for record in batch.records() {
                        let record = record?;
                        let value = record.value().map(String::from_utf8_lossy);
                        let trace = record.headers().get(b"trace").and_then(|h| h.value);
                        println!(
                            "{}/{} offset {} value {:?} trace {:?}",
                            chunk.topic(),
                            chunk.partition(),
                            record.offset(),
                            value,
                            trace.map(String::from_utf8_lossy),
                        );
                        records += 1;
                    }
                }
            }
            Fetched::EndOfPartition { partition, .. } => {
                not_at_end.remove(&partition);
            }
            // Only a `subscribe`d consumer sees its topics change.
            Fetched::SubscriptionChanged { .. } => {}
        }
    }
    eprintln!("{records} records");
    Ok(())
}
