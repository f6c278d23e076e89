//! The admin requests a copy needs on its target cluster: CreateTopics (topics created with
//! a source's partition count and configs), DescribeConfigs of topics (what a source topic
//! overrides), and CreatePartitions (partitions added at the source).
//!
//! Each is sent to any broker: KRaft brokers forward CreateTopics and CreatePartitions to the
//! active controller. NOT_CONTROLLER, the answer while the controller moves, is retried after
//! a short backoff until the call's timeout, as Java's admin client does; every other answer
//! is the caller's, per topic.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreateTopicsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::{error_name, Connection, Error};

mod configs;

pub use configs::{describe_topic_configs, ConfigEntry, ConfigSource, TopicConfigs};

/// NOT_CONTROLLER: the controller moved while the request was forwarded to it.
pub const NOT_CONTROLLER: i16 = 41;
/// TOPIC_ALREADY_EXISTS.
pub const TOPIC_ALREADY_EXISTS: i16 = 36;

/// CreateTopics takes -1 for the broker's default partition count and replication factor
/// from this version on (KIP-464).
const BROKER_DEFAULTS_VERSION: i16 = 4;
/// The first and the longest wait between attempts answered NOT_CONTROLLER (Java's admin
/// client's `retry.backoff.ms` and `retry.backoff.max.ms`).
const RETRY_BACKOFF: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(1));

/// A topic to create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewTopic {
    /// Topic name.
    pub name: String,
    /// Partition count (-1: the broker's `num.partitions`).
    pub partitions: i32,
    /// Replication factor (None: the broker's `default.replication.factor`).
    pub replication_factor: Option<i16>,
    /// Topic configs (`cleanup.policy`, `retention.ms`, ...), as `(name, value)`.
    pub configs: Vec<(String, String)>,
}

/// What became of one topic of a CreateTopics request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicCreation {
    /// Topic name.
    pub name: String,
    /// Created, already there, or refused.
    pub outcome: CreationOutcome,
}

/// The answer about one topic to create.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CreationOutcome {
    /// The topic was created.
    Created,
    /// A topic of that name exists (TOPIC_ALREADY_EXISTS): its partitions and configs are the
    /// ones it had, whatever the request said.
    AlreadyExists,
    /// The broker refused the topic (POLICY_VIOLATION, INVALID_CONFIG,
    /// INVALID_REPLICATION_FACTOR, TOPIC_AUTHORIZATION_FAILED, ...).
    Refused {
        /// Kafka's error code.
        code: i16,
        /// Kafka's name for it (`INVALID_CONFIG`).
        name: String,
        /// The broker's own words (which config, which policy), when it sent any.
        message: Option<String>,
    },
}

/// CreateTopics of `topics`, each with the outcome the broker gave it, in the order asked.
/// `timeout` is how long the controller may take (the request's `timeout_ms`), and bounds the
/// retries of topics answered NOT_CONTROLLER (those still answered so are refused with it).
pub async fn create_topics(
    connection: &mut Connection,
    topics: &[NewTopic],
    timeout: Duration,
) -> Result<Vec<TopicCreation>, Error> {
    let version = connection
        .versions()
        .negotiate::<CreateTopicsRequest>(connection.address())?;
    check_new_topics(connection, topics, version)?;
    let deadline = Instant::now() + timeout;
    let mut backoff = RETRY_BACKOFF.0;
    let mut outcomes: Vec<Option<CreationOutcome>> = vec![None; topics.len()];
    let mut pending: Vec<usize> = (0..topics.len()).collect();
    while !pending.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(millis(left))
            .with_topics(pending.iter().map(|&i| creatable(&topics[i])).collect());
        let wait = left + connection.request_timeout();
        let response = connection.request_at(&request, version, wait).await?;
        let retry_allowed = left > backoff;
        let asked: HashMap<&str, usize> = pending
            .iter()
            .map(|&i| (topics[i].name.as_str(), i))
            .collect();
        let mut retry = Vec::new();
        for result in response.topics {
            let Some(&index) = asked.get(result.name.0.as_str()) else {
                continue;
            };
            if result.error_code == NOT_CONTROLLER && retry_allowed {
                retry.push(index);
            } else {
                outcomes[index] = Some(creation_outcome(result));
            }
        }
        retry.sort_unstable();
        retry.dedup();
        retry.retain(|&i| outcomes[i].is_none());
        let unanswered = pending
            .iter()
            .find(|&&i| outcomes[i].is_none() && retry.binary_search(&i).is_err());
        if let Some(&unanswered) = unanswered {
            return Err(no_answer(
                connection,
                "CreateTopics",
                &topics[unanswered].name,
            ));
        }
        pending = retry;
        if !pending.is_empty() {
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(RETRY_BACKOFF.1);
        }
    }
    topics
        .iter()
        .zip(outcomes)
        .map(|(topic, outcome)| {
            let outcome =
                outcome.ok_or_else(|| no_answer(connection, "CreateTopics", &topic.name))?;
            Ok(TopicCreation {
                name: topic.name.clone(),
                outcome,
            })
        })
        .collect()
}

/// Refuses what the broker would answer for the whole request (a name twice) or could not
/// understand at `version` (a broker default before KIP-464).
fn check_new_topics(
    connection: &Connection,
    topics: &[NewTopic],
    version: i16,
) -> Result<(), Error> {
    for (i, topic) in topics.iter().enumerate() {
        if topics[..i].iter().any(|earlier| earlier.name == topic.name) {
            return Err(Error::InvalidArgument {
                what: "topics to create",
                detail: format!("topic {:?} is named twice", topic.name),
            });
        }
        let uses_defaults = topic.partitions == -1 || topic.replication_factor.is_none();
        if uses_defaults && version < BROKER_DEFAULTS_VERSION {
            let (broker_min, broker_max) = connection
                .versions()
                .range(<CreateTopicsRequest as crate::wire::ApiRequest>::KEY)
                .unwrap_or((-1, -1));
            return Err(Error::UnsupportedVersion {
                broker: connection.address().to_owned(),
                api: "CreateTopics with the broker's default partitions or replication factor",
                broker_min,
                broker_max,
                ours_min: BROKER_DEFAULTS_VERSION,
                ours_max: <CreateTopicsRequest as kafka_protocol::protocol::Message>::VERSIONS.max,
            });
        }
    }
    Ok(())
}

fn creatable(topic: &NewTopic) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(TopicName(StrBytes::from_string(topic.name.clone())))
        .with_num_partitions(topic.partitions)
        .with_replication_factor(topic.replication_factor.unwrap_or(-1))
        .with_configs(
            topic
                .configs
                .iter()
                .map(|(name, value)| {
                    CreatableTopicConfig::default()
                        .with_name(StrBytes::from_string(name.clone()))
                        .with_value(Some(StrBytes::from_string(value.clone())))
                })
                .collect(),
        )
}

fn creation_outcome(result: CreatableTopicResult) -> CreationOutcome {
    match result.error_code {
        0 => CreationOutcome::Created,
        TOPIC_ALREADY_EXISTS => CreationOutcome::AlreadyExists,
        code => CreationOutcome::Refused {
            code,
            name: error_name(code),
            message: result.error_message.map(|m| m.as_str().to_owned()),
        },
    }
}

/// CreatePartitions: grows `topic` to `total` partitions, the new ones placed by the
/// controller. A refusal is [`Error::TopicRefused`] with the broker's message:
/// INVALID_PARTITIONS when the topic already has `total` or more (another process may have
/// grown it first: compare with metadata), TOPIC_AUTHORIZATION_FAILED, ...
pub async fn create_partitions(
    connection: &mut Connection,
    topic: &str,
    total: i32,
    timeout: Duration,
) -> Result<(), Error> {
    let version = connection
        .versions()
        .negotiate::<CreatePartitionsRequest>(connection.address())?;
    let deadline = Instant::now() + timeout;
    let mut backoff = RETRY_BACKOFF.0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let request = CreatePartitionsRequest::default()
            .with_timeout_ms(millis(left))
            .with_topics(vec![CreatePartitionsTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                .with_count(total)
                // None: the controller places the new partitions (an empty list would place
                // none of them, and is refused).
                .with_assignments(None)]);
        let wait = left + connection.request_timeout();
        let response = connection.request_at(&request, version, wait).await?;
        let Some(result) = response
            .results
            .into_iter()
            .find(|result| result.name.0.as_str() == topic)
        else {
            return Err(no_answer(connection, "CreatePartitions", topic));
        };
        match result.error_code {
            0 => return Ok(()),
            NOT_CONTROLLER if left > backoff => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(RETRY_BACKOFF.1);
            }
            code => {
                return Err(Error::TopicRefused {
                    broker: connection.address().to_owned(),
                    api: "CreatePartitions",
                    topic: topic.to_owned(),
                    code,
                    name: error_name(code),
                    message: result.error_message.map(|m| m.as_str().to_owned()),
                })
            }
        }
    }
}

/// A response that left out a topic the request named.
fn no_answer(connection: &Connection, api: &'static str, topic: &str) -> Error {
    Error::Protocol {
        broker: connection.address().to_owned(),
        api,
        detail: format!("no answer for topic {topic:?}"),
    }
}

fn millis(duration: Duration) -> i32 {
    duration.as_millis().min(i32::MAX as u128) as i32
}

#[cfg(test)]
mod tests;
