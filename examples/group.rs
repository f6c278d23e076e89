//! Embedding a consumer group member: join, print the records of the partitions the group
//! assigns and the assignment changes, mark each chunk processed once printed so that it gets
//! committed, and on Ctrl-C (or after COUNT records) commit and leave the group.
//!
//! ```text
//! cargo run --example group -- 127.0.0.1:9092 my-group my-topic[,^other-.*] [COUNT]
//! ```
//!
//! Start it twice with the same group: the partitions are split between the two.

use std::io::Write;

use krec::consumer::{ConsumerConfig, GroupConsumer, GroupEvent};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(brokers), Some(group_id), Some(topics)) = (args.next(), args.next(), args.next())
    else {
        eprintln!("usage: group HOST:PORT[,HOST:PORT] GROUP TOPIC[,TOPIC...] [COUNT]");
        std::process::exit(2);
    };
    let limit: Option<u64> = args.next().map(|count| count.parse()).transpose()?;
    let config = ConsumerConfig::from_properties([
        ("bootstrap.servers", brokers.as_str()),
        ("group.id", group_id.as_str()),
    ])?;
    let topics: Vec<&str> = topics.split(',').collect();
    let mut group = GroupConsumer::subscribe(config, &topics).await?;
    // Where chunks are marked processed; a clone could do it from another thread.
    let progress = group.progress();
    let mut out = std::io::stdout().lock();
    let mut printed = 0u64;
    while limit.is_none_or(|limit| printed < limit) {
        let event = tokio::select! {
            event = group.next_event() => event?,
            _ = tokio::signal::ctrl_c() => break,
        };
        match event {
            Some(GroupEvent::Chunk(chunk)) => {
                // Each record lent to the closure; the closure's own error (here a write's)
                // stops the walk and comes back from `for_each_record`.
                chunk.for_each_record(|record| -> Result<(), Box<dyn std::error::Error>> {
                    let value = record.value().map(String::from_utf8_lossy);
                    let (topic, partition) = (chunk.topic(), chunk.partition());
                    writeln!(out, "{topic}/{partition} {}: {value:?}", record.offset())?;
                    printed += 1;
                    Ok(())
                })?;
                // Written out: everything of this chunk may now be committed.
                out.flush()?;
                progress.processed(&chunk);
            }
            Some(GroupEvent::Assigned(partitions)) => eprintln!("assigned: {partitions:?}"),
            Some(GroupEvent::Revoked(partitions)) => eprintln!("revoked: {partitions:?}"),
            Some(_) => {}
            None => break,
        }
    }
    // Commits what was processed, then leaves the group.
    group.close().await?;
    Ok(())
}
