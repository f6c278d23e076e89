//! Embedding the consumer: read every partition of a topic from the beginning to its end and
//! print each record with its `trace` header, then exit. With PARTITION:OFFSET, that partition
//! starts there instead.
//!
//! ```text
//! cargo run --example consume -- 127.0.0.1:9092 my-topic [PARTITION:OFFSET]
//! ```

use krec::consumer::{Consumer, ConsumerConfig, StartOffset, TopicPartition};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(brokers), Some(topic)) = (args.next(), args.next()) else {
        eprintln!("usage: consume HOST:PORT[,HOST:PORT] TOPIC [PARTITION:OFFSET]");
        std::process::exit(2);
    };
    let seek = args.next();

    let config = ConsumerConfig::from_properties([("bootstrap.servers", brokers.as_str())])?;
    let mut consumer = Consumer::connect(config).await?;
    consumer
        .assign_topic(&topic, StartOffset::Beginning)
        .await?;
    if let Some(seek) = seek {
        // `seek` drops whatever was already fetched for the partition's old position.
        let (partition, offset) = seek.split_once(':').ok_or("expected PARTITION:OFFSET")?;
        let partition = TopicPartition::new(topic.as_str(), partition.parse()?);
        consumer.seek(&partition, StartOffset::Offset(offset.parse()?))?;
    }
    // Like `krec consume -e`: `next_chunk` gives `None` once every partition is at its end.
    consumer.stop_at_end(true);

    let mut records = 0u64;
    while let Some(chunk) = consumer.next_chunk().await? {
        // Data records only, each lent to the closure: decoded here, into one reused buffer.
        chunk.for_each_record(|record| {
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
        })?;
    }
    eprintln!("{records} records");
    Ok(())
}
