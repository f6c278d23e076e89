//! Embedding a share-group member (KIP-932): print the records acquired for this member with
//! their delivery count, accept each chunk once printed, and on Ctrl-C (or after COUNT records)
//! release what is left and leave the group.
//!
//! ```text
//! cargo run --example share -- 127.0.0.1:9092 my-share-group my-topic[,other] [COUNT]
//! ```
//!
//! Start it twice with the same group: the records of one partition are split between the two.
//! A new share group starts at the end of the log unless its `share.auto.offset.reset` group
//! config is `earliest`.

use std::io::Write;
use std::ops::ControlFlow;

use krec::consumer::{AcknowledgeType, ConsumerConfig, ShareConsumer};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(brokers), Some(group_id), Some(topics)) = (args.next(), args.next(), args.next())
    else {
        eprintln!("usage: share HOST:PORT[,HOST:PORT] GROUP TOPIC[,TOPIC...] [COUNT]");
        std::process::exit(2);
    };
    let limit: Option<u64> = args.next().map(|count| count.parse()).transpose()?;
    let config = ConsumerConfig::from_properties([
        ("bootstrap.servers", brokers.as_str()),
        ("group.id", group_id.as_str()),
    ])?;
    let topics: Vec<&str> = topics.split(',').collect();
    let mut share = ShareConsumer::subscribe(config, &topics).await?;
    // Ctrl-C stops fetching after the current fetch (next_chunk then gives None).
    let stopper = share.stopper();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stopper.stop();
    });
    let mut out = std::io::stdout().lock();
    let mut printed = 0u64;
    while limit.is_none_or(|limit| printed < limit) {
        let Some(chunk) = share.next_chunk().await? else {
            break;
        };
        let mut last_printed = None;
        chunk.for_each_record(|record| -> Result<_, Box<dyn std::error::Error>> {
            if limit.is_some_and(|limit| printed == limit) {
                return Ok(ControlFlow::Break(()));
            }
            let value = record.value().map(String::from_utf8_lossy);
            let (topic, partition) = (chunk.topic(), chunk.partition());
            let delivery = chunk.delivery_count();
            writeln!(
                out,
                "{topic}/{partition} {} (delivery {delivery}): {value:?}",
                record.offset()
            )?;
            last_printed = Some(record.offset());
            printed += 1;
            Ok(ControlFlow::Continue(()))
        })?;
        out.flush()?;
        // Written out: accepted (one range), never delivered again.
        if let Some(last) = last_printed {
            share.ack_offsets(&chunk, chunk.first_offset(), last, AcknowledgeType::Accept);
        }
    }
    // Releases the records acquired and not printed, then leaves the group.
    share.close().await?;
    Ok(())
}
