//! Where a copy stands lives in the target cluster, with the data: each target partition's
//! committed offset in the mirror's group is the next SOURCE offset to copy, written by
//! TxnOffsetCommit in the transaction that carries the batches up to it. Its metadata, a
//! small JSON object, names the source topic and the target offset reached, the pair from
//! which a consumer group's source offsets can be translated for a failover.

use std::collections::BTreeMap;
use std::time::Duration;

use krec_client::connection::Connection;
use krec_client::group::{fetch_committed, find_coordinator};
use krec_client::metadata::MetadataClient;
use krec_client::offsets::{list_offsets, OffsetQuery};
use krec_client::{ConnectionSettings, TopicPartition};
use serde_json::{json, Value};

use crate::Error;

/// What the copy writes beside each committed position.
pub(crate) fn metadata(source_topic: &str, target_next: Option<i64>) -> String {
    json!({"krec_mirror": 1, "source_topic": source_topic, "target_offset": target_next})
        .to_string()
}

/// The target offset a committed position's metadata names, if it is the copy's.
pub(crate) fn target_offset(metadata: &str) -> Option<i64> {
    let value: Value = serde_json::from_str(metadata).ok()?;
    value.get("krec_mirror")?;
    value.get("target_offset")?.as_i64()
}

/// A committed position: the next source offset, and the target offset it was reached at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Committed {
    pub(crate) source_next: i64,
    pub(crate) target_next: Option<i64>,
}

/// The positions `group` committed for the target `partitions`, waiting (within `patience`)
/// while a transaction that commits them is still open: a restart reads only what was
/// committed or aborted for good.
pub(crate) async fn committed(
    bootstrap: &mut Connection,
    settings: &ConnectionSettings,
    group: &str,
    partitions: &BTreeMap<String, Vec<i32>>,
    patience: Duration,
) -> Result<BTreeMap<TopicPartition, Committed>, Error> {
    let deadline = tokio::time::Instant::now() + patience;
    let (_, address) = match find_coordinator(bootstrap, group).await {
        Ok(Ok(found)) => found,
        Ok(Err(code)) => return Err(refused(group, "FindCoordinator", code)),
        Err(error) => return Err(Error::target_client(error)),
    };
    let mut coordinator = Connection::connect(&address, settings)
        .await
        .map_err(Error::target_client)?;
    loop {
        let answer = fetch_committed(&mut coordinator, group, partitions, true).await;
        let positions = match answer {
            Ok(positions) => positions,
            Err(krec_client::Error::UnstableOffsetCommit { .. })
                if tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            Err(error) => return Err(Error::target_client(error)),
        };
        let found = positions
            .into_iter()
            .map(|(partition, position)| {
                let target_next = position.metadata.as_deref().and_then(target_offset);
                let source_next = position.offset;
                (
                    partition,
                    Committed {
                        source_next,
                        target_next,
                    },
                )
            })
            .collect();
        return Ok(found);
    }
}

fn refused(group: &str, what: &str, code: i16) -> Error {
    Error::Refused {
        cluster: "target",
        what: format!("{what} for group {group:?}"),
        detail: format!("error {code} ({})", krec_client::error_name(code)),
    }
}

/// Each partition's (log start, end) offsets in the target.
pub(crate) async fn target_extent(
    metadata: &mut MetadataClient,
    settings: &ConnectionSettings,
    topic: &str,
) -> Result<BTreeMap<i32, (i64, i64)>, Error> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    // A topic just created has no leaders in every broker's metadata yet.
    let cluster = loop {
        let cluster = metadata.fetch(&[topic.to_owned()]).await;
        let cluster = cluster.map_err(Error::target_client)?;
        let led = (cluster.topic(topic).ok()).is_some_and(|t| {
            !t.partitions.is_empty() && t.partitions.iter().all(|p| p.leader >= 0)
        });
        if led || tokio::time::Instant::now() >= deadline {
            break cluster;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let found = cluster.topic(topic).map_err(Error::target_client)?;
    let mut by_leader: BTreeMap<i32, Vec<(i32, i32)>> = BTreeMap::new();
    for p in &found.partitions {
        by_leader
            .entry(p.leader)
            .or_default()
            .push((p.partition, p.leader_epoch));
    }
    let mut extent = BTreeMap::new();
    for (leader, partitions) in by_leader {
        let Some(address) = cluster.brokers.get(&leader) else {
            return Err(Error::Refused {
                cluster: "target",
                what: format!("the leaders of {topic}"),
                detail: format!("partitions {partitions:?} have no leader (node {leader})"),
            });
        };
        let mut connection = Connection::connect(address, settings)
            .await
            .map_err(Error::target_client)?;
        let ask = |query: OffsetQuery| {
            let queries: Vec<(i32, i32, OffsetQuery)> = partitions
                .iter()
                .map(|&(p, epoch)| (p, epoch, query))
                .collect();
            (topic, queries)
        };
        let (name, earliest) = ask(OffsetQuery::Earliest);
        let first = list_offsets(&mut connection, name, &earliest, false).await;
        let (name, latest) = ask(OffsetQuery::Latest);
        let end = list_offsets(&mut connection, name, &latest, false).await;
        let (first, end) = (
            first.map_err(Error::target_client)?,
            end.map_err(Error::target_client)?,
        );
        for (start, end) in first.iter().zip(&end) {
            extent.insert(start.partition, (start.offset, end.offset));
        }
    }
    Ok(extent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trips_the_target_offset() {
        let text = metadata("orders", Some(42));
        assert_eq!(target_offset(&text), Some(42));
        assert_eq!(target_offset(&metadata("orders", None)), None);
        assert_eq!(target_offset("someone else's"), None);
        assert_eq!(
            target_offset(r#"{"target_offset": 7}"#),
            None,
            "not the copy's"
        );
    }
}
