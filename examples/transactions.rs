//! Exactly once, consume-transform-produce: a group member reads INPUT (read_committed),
//! writes each record's value in upper case to OUTPUT, and commits the input offsets in the
//! same transaction as the output records, so that a restart (or another member taking the
//! partitions) neither loses nor repeats one. Stops once every assigned partition is at its
//! end and prints how many records it copied.
//!
//! ```text
//! cargo run --example transactions -- 127.0.0.1:9092 INPUT OUTPUT GROUP TRANSACTIONAL_ID
//! ```
//!
//! A transaction the group or the coordinator dooms (a rebalance took the partitions) is
//! aborted and the program stops: started again, it resumes from the committed offsets.

use std::collections::BTreeMap;

use krec::client::TopicPartition;
use krec::consumer::{ConsumerConfig, GroupConsumer, GroupEvent, PartitionChunk};
use krec::producer::{Error, Producer, ProducerConfig, ProducerRecord};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [brokers, input, output, group_id, transactional_id] = args.as_slice() else {
        eprintln!("usage: transactions HOST:PORT INPUT OUTPUT GROUP TRANSACTIONAL_ID");
        std::process::exit(2);
    };
    let config = ConsumerConfig::from_properties([
        ("bootstrap.servers", brokers.as_str()),
        ("group.id", group_id.as_str()),
        ("isolation.level", "read_committed"),
    ])?;
    let mut group = GroupConsumer::subscribe(config, &[input.as_str()]).await?;
    group.stop_at_end(true);
    let config = ProducerConfig::from_properties([
        ("bootstrap.servers", brokers.as_str()),
        ("transactional.id", transactional_id.as_str()),
        ("linger.ms", "5"),
    ])?;
    let producer = Producer::connect(config).await?;
    // Fences an earlier instance with the same id and aborts what it left open.
    producer.init_transactions().await?;

    let progress = group.progress();
    let mut copied = 0u64;
    while let Some(event) = group.next_event().await? {
        let GroupEvent::Chunk(chunk) = event else {
            continue;
        };
        // A chunk of a partition lost meanwhile belongs to its new owner now.
        if !progress.owns(&chunk) {
            continue;
        }
        producer.begin()?;
        match copy(&producer, &group, &chunk, output).await {
            Ok(count) => copied += count,
            Err(error) if is_abortable(&*error) => {
                producer.abort().await?;
                eprintln!("aborted: {error}; start again to resume from the committed offsets");
                std::process::exit(1);
            }
            Err(error) => return Err(error),
        }
    }
    producer.close().await?;
    group.close().await?;
    println!("{copied} records copied");
    Ok(())
}

/// One transaction: the chunk's records transformed to `output`, and its partition's next
/// offset committed for the group, together.
async fn copy(
    producer: &Producer,
    group: &GroupConsumer,
    chunk: &PartitionChunk,
    output: &str,
) -> Result<u64, Box<dyn std::error::Error>> {
    let mut count = 0;
    for record in chunk.records() {
        let record = record?;
        let value = record.value().unwrap_or_default().to_ascii_uppercase();
        let mut out = ProducerRecord::new(output).value(value);
        if let Some(key) = record.key() {
            out = out.key(key);
        }
        // The Delivery need not be awaited: commit flushes, and fails if a record failed.
        let _delivery = producer.send(out).await?;
        count += 1;
    }
    let partition = TopicPartition::new(chunk.topic(), chunk.partition());
    let offsets = BTreeMap::from([(partition, chunk.next_offset())]);
    let metadata = group.group_metadata();
    producer
        .send_offsets_to_transaction(&offsets, &metadata.committer())
        .await?;
    producer.commit().await?;
    Ok(count)
}

/// The transaction cannot commit, but the producer goes on once it is aborted.
fn is_abortable(error: &(dyn std::error::Error + 'static)) -> bool {
    matches!(
        error.downcast_ref::<Error>(),
        Some(Error::TransactionAbortable { .. })
    )
}
