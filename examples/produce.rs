//! Embedding the producer: send each line of standard input as one record (the line number as
//! its key), wait until every one is acknowledged, print where the last one went and a
//! summary, and exit with status 1 if any record failed. More client properties may follow
//! the topic (`compression.type=lz4 linger.ms=5`).
//!
//! ```text
//! cargo run --example produce -- 127.0.0.1:9092 my-topic [KEY=VALUE...] < lines.txt
//! ```

use std::io::BufRead;

use krec::producer::{Producer, ProducerConfig, ProducerRecord};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(brokers), Some(topic)) = (args.next(), args.next()) else {
        eprintln!("usage: produce HOST:PORT[,HOST:PORT] TOPIC [KEY=VALUE...] < LINES");
        std::process::exit(2);
    };
    let mut config = ProducerConfig::from_properties([("linger.ms", "10")])?
        .with("bootstrap.servers", &brokers)?;
    for property in args {
        let Some((key, value)) = property.split_once('=') else {
            eprintln!("not KEY=VALUE: {property}");
            std::process::exit(2);
        };
        config = config.with(key, value)?;
    }
    let producer = Producer::connect(config).await?;

    let mut deliveries = Vec::new();
    for (number, line) in std::io::stdin().lock().lines().enumerate() {
        let record = ProducerRecord::new(topic.as_str())
            .key(number.to_string())
            .value(line?);
        // Waits only while buffer.memory is full; the record is in its batch after this.
        deliveries.push(producer.send(record).await?);
    }
    producer.flush().await?;

    let mut first_error = None;
    let mut last = None;
    for delivery in deliveries {
        match delivery.await {
            Ok(delivered) => last = Some(delivered),
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    producer.close().await?;
    if let Some(last) = last {
        println!(
            "last: partition {} offset {}",
            last.partition(),
            last.offset()
        );
    }
    let stats = producer.stats();
    println!(
        "{} records acknowledged in {} batches ({} bytes), {} failed, {} retries",
        stats.records_acknowledged,
        stats.batches_acknowledged,
        stats.bytes_acknowledged,
        stats.records_failed,
        stats.retries
    );
    if let Some(error) = first_error {
        eprintln!("first error: {error}");
        std::process::exit(1);
    }
    Ok(())
}
