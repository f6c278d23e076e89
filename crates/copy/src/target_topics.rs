//! The target's copies of the source topics: created with the source's partition count and
//! the settings that describe the data (cleanup.policy, retention, max.message.bytes, ...),
//! never those that belong to the source cluster's brokers or to how it stamps times.

use krec_client::admin::{
    create_partitions, create_topics, describe_topic_configs, CreationOutcome, NewTopic,
};
use krec_client::connection::Connection;
use std::time::Duration;

use crate::ends::SourceTopic;
use crate::Error;

/// Topic settings a copy never carries over: the target's brokers decide them, or carrying
/// them would make the target refuse or re-stamp the copied batches.
const NOT_COPIED: &[&str] = &[
    // The copy writes the source's times as CreateTime; LogAppendTime would replace them.
    "message.timestamp.type",
    "message.timestamp.difference.max.ms",
    "message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms",
    // Depend on the target's brokers and replication.
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
    "remote.storage.enable",
    "local.retention.ms",
    "local.retention.bytes",
    // Gone in Kafka 4.0: a 4.x target refuses them.
    "message.format.version",
    "message.downconversion.enable",
];

/// The broker's default batch limit (`message.max.bytes`) when a topic does not say.
const DEFAULT_MAX_MESSAGE_BYTES: usize = 1_048_588;

/// The settings of `topic` the copy takes along.
pub(crate) fn copied_configs(topic: &SourceTopic) -> Vec<(String, String)> {
    (topic.configs.iter())
        .filter(|(name, _)| !NOT_COPIED.contains(&name.as_str()))
        .cloned()
        .collect()
}

/// Creates the target topic `target` for `source` (or adds the partitions it lacks) and
/// returns its `max.message.bytes`.
pub(crate) async fn ensure(
    connection: &mut Connection,
    source: &SourceTopic,
    target: &str,
    timeout: Duration,
) -> Result<usize, Error> {
    let wanted = NewTopic {
        name: target.to_owned(),
        partitions: source.partitions,
        replication_factor: None,
        configs: copied_configs(source),
    };
    let created = create_topics(connection, std::slice::from_ref(&wanted), timeout).await;
    let outcome = created
        .map_err(Error::target_client)?
        .pop()
        .map(|c| c.outcome);
    match outcome {
        Some(CreationOutcome::Created) => {
            tracing::info!(topic = target, partitions = source.partitions, "created");
        }
        Some(CreationOutcome::AlreadyExists) => grow(connection, source, target, timeout).await?,
        Some(CreationOutcome::Refused { name, message, .. }) => {
            return Err(Error::Refused {
                cluster: "target",
                what: format!("to create topic {target}"),
                detail: format!("{name}: {}", message.unwrap_or_default()),
            })
        }
        _ => {
            return Err(Error::Refused {
                cluster: "target",
                what: format!("to create topic {target}"),
                detail: "no answer for it".to_owned(),
            })
        }
    }
    max_message_bytes(connection, target).await
}

/// Adds partitions to an existing target topic that has fewer than the source.
async fn grow(
    connection: &mut Connection,
    source: &SourceTopic,
    target: &str,
    timeout: Duration,
) -> Result<(), Error> {
    let answer = create_partitions(connection, target, source.partitions, timeout).await;
    match answer {
        Ok(()) => Ok(()),
        // Already as many or more (INVALID_PARTITIONS): partition p still goes to p.
        Err(krec_client::Error::TopicRefused { code: 37, .. }) => Ok(()),
        Err(error) => Err(Error::target_client(error)),
    }
}

/// A topic just created reaches the brokers' metadata a moment later (KRaft brokers learn of
/// it asynchronously): until then it is unknown to them, for this long at most.
const NEW_TOPIC_PATIENCE: Duration = Duration::from_secs(15);

async fn max_message_bytes(connection: &mut Connection, target: &str) -> Result<usize, Error> {
    let deadline = tokio::time::Instant::now() + NEW_TOPIC_PATIENCE;
    let described = loop {
        match describe_topic_configs(connection, &[target]).await {
            Err(krec_client::Error::TopicRefused {
                code: UNKNOWN_TOPIC,
                ..
            }) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            answer => break answer.map_err(Error::target_client)?,
        }
    };
    let limit = (described.first().into_iter())
        .flat_map(|topic| topic.entries.iter())
        .find(|entry| entry.name == "max.message.bytes")
        .and_then(|entry| entry.value.as_deref()?.parse().ok());
    Ok(limit.unwrap_or(DEFAULT_MAX_MESSAGE_BYTES))
}

/// UNKNOWN_TOPIC_OR_PARTITION.
const UNKNOWN_TOPIC: i16 = 3;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_broker_settings_stay_behind() {
        let topic = SourceTopic {
            name: "orders".into(),
            id: None,
            partitions: 3,
            configs: vec![
                ("cleanup.policy".into(), "compact".into()),
                ("message.timestamp.type".into(), "LogAppendTime".into()),
                ("min.insync.replicas".into(), "2".into()),
                ("retention.ms".into(), "1000".into()),
            ],
        };
        let copied = copied_configs(&topic);
        assert_eq!(
            copied,
            vec![
                ("cleanup.policy".to_owned(), "compact".to_owned()),
                ("retention.ms".to_owned(), "1000".to_owned())
            ]
        );
    }
}
