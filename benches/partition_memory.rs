//! Live heap bytes per assigned partition. A consumer assigns every partition of a topic at its
//! end and waits until each has reported its end (fetch sessions open, metadata held); the live
//! bytes a counting allocator sees then are compared between a topic of many partitions and
//! one of few. RSS keeps what was freed; this counts only what is still allocated.
//!
//! Run by scripts/bench-partitions.sh on its idle topics; by hand:
//!
//! ```text
//! cargo build --release --bench partition_memory
//! target/release/deps/partition_memory-<hash> HOST:PORT MANY_TOPIC FEW_TOPIC
//! ```

use std::collections::BTreeSet;
use std::time::Duration;

use krec::consumer::{Consumer, ConsumerConfig, Fetched, StartOffset};
use krec_testkit::CountingAllocator;

// Process-wide totals: the consumer allocates on tokio's blocking threads too (name lookups).
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator::with_totals();

/// Bytes a consumer tailing every partition of `topic` from its end holds, and the partition
/// count.
async fn live_while_tailing(
    brokers: &str,
    topic: &str,
) -> Result<(i64, usize), Box<dyn std::error::Error>> {
    let before = ALLOCATOR.totals();
    let config = ConsumerConfig::new(ConsumerConfig::parse_bootstrap(brokers)?);
    let mut consumer = Consumer::connect(config).await?;
    let partitions = consumer.assign_topic(topic, StartOffset::End).await?;
    let mut waiting: BTreeSet<i32> = partitions.iter().map(|p| p.partition).collect();
    while !waiting.is_empty() {
        if let Fetched::EndOfPartition {
            topic_partition, ..
        } = consumer.poll().await?
        {
            waiting.remove(&topic_partition.partition);
        }
    }
    // A few more idle fetches, so the session is in its steady state.
    let _ = tokio::time::timeout(Duration::from_secs(2), consumer.poll()).await;
    let live = (ALLOCATOR.totals() - before).live;
    consumer.close().await;
    Ok((live, partitions.len()))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [brokers, many, few] = args.as_slice() else {
        eprintln!("usage: partition_memory HOST:PORT MANY_TOPIC FEW_TOPIC");
        std::process::exit(2);
    };
    // A first run pays for what a process allocates once (TLS roots, the runtime's pools):
    // measured, neither topic would carry it.
    live_while_tailing(brokers, few).await?;
    let (live_few, count_few) = live_while_tailing(brokers, few).await?;
    let (live_many, count_many) = live_while_tailing(brokers, many).await?;
    if count_many <= count_few {
        eprintln!("partition_memory: MANY_TOPIC must have more partitions than FEW_TOPIC");
        std::process::exit(2);
    }
    let per_partition = (live_many - live_few) as f64 / (count_many - count_few) as f64;
    println!(
        "live bytes: {live_few} with {count_few} partitions, {live_many} with {count_many}: \
         {per_partition:.0} B per partition"
    );
    Ok(())
}
