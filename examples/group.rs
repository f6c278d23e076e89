//! Embedding a consumer group member: join, print the records of the partitions the group
//! assigns (assignment changes are reported by a listener), mark what was printed as written
//! so it gets committed, and on Ctrl-C commit and leave the group.
//!
//! ```text
//! cargo run --example group -- 127.0.0.1:9092 my-group my-topic[,other-topic]
//! ```
//!
//! Start it twice with the same group: the partitions are split between the two.

use std::io::Write;

use krec::consumer::group::{GroupConfig, GroupConsumer, RebalanceListener, TopicPartition};
use krec::consumer::{ConsumerConfig, Fetched};

/// Reports assignment changes on stderr.
struct Report;

impl RebalanceListener for Report {
    fn on_assigned(&mut self, partitions: &[TopicPartition]) {
        eprintln!("assigned: {partitions:?}");
    }

    fn on_revoked(&mut self, partitions: &[TopicPartition]) {
        eprintln!("revoked: {partitions:?}");
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(brokers), Some(group), Some(topics)) = (args.next(), args.next(), args.next()) else {
        eprintln!("usage: group HOST:PORT[,HOST:PORT] GROUP TOPIC[,TOPIC...]");
        std::process::exit(2);
    };
    let config = ConsumerConfig::new(ConsumerConfig::parse_bootstrap(&brokers)?);
    let topics = topics.split(',').map(str::to_owned).collect();
    let group = GroupConfig::new(group, topics);
    let mut consumer = GroupConsumer::join(config.clone(), group, Report).await?;
    let mut out = std::io::stdout().lock();
    loop {
        let fetched = tokio::select! {
            fetched = consumer.poll() => fetched?,
            _ = tokio::signal::ctrl_c() => break,
        };
        let Fetched::Chunk(chunk) = fetched else {
            continue;
        };
        for batch in chunk.batches(&config.decode) {
            let batch = batch?;
            if batch.batch().is_control() {
                continue;
            }
            for record in batch.records() {
                let record = record?;
                let value = record.value().map(String::from_utf8_lossy);
                writeln!(
                    out,
                    "{}/{} {}: {:?}",
                    chunk.topic(),
                    chunk.partition(),
                    record.offset(),
                    value
                )?;
            }
        }
        // Written out: everything of this chunk may now be committed.
        out.flush()?;
        consumer.mark_written(chunk.topic(), chunk.partition(), chunk.next_offset());
    }
    consumer.close().await?;
    Ok(())
}
