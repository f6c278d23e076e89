//! DescribeConfigs of topics: each config's value and where it comes from, so a copy can
//! tell a topic's own settings (to give its copy) from the broker's defaults (to leave out).

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::DescribeConfigsRequest;
use kafka_protocol::protocol::StrBytes;

use crate::{error_name, Connection, Error};

/// DescribeConfigs' resource type of a topic.
const TOPIC_RESOURCE: i8 = 2;

/// One topic's configs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicConfigs {
    /// Topic name.
    pub topic: String,
    /// Every config the broker reported, in its order.
    pub entries: Vec<ConfigEntry>,
}

impl TopicConfigs {
    /// The configs set on the topic itself (its dynamic topic configs), as `(name, value)`.
    pub fn overrides(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().filter_map(|entry| {
            let value = entry.value.as_deref()?;
            (entry.source == ConfigSource::DynamicTopic).then_some((entry.name.as_str(), value))
        })
    }
}

/// One config of a topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigEntry {
    /// Config name (`retention.ms`).
    pub name: String,
    /// Its value; None when the broker withholds it (a sensitive config) or it has none.
    pub value: Option<String>,
    /// Where the value comes from.
    pub source: ConfigSource,
    /// The config cannot be changed on this topic.
    pub read_only: bool,
    /// The config is sensitive (its value is never sent).
    pub sensitive: bool,
}

/// Where a config's value comes from (Kafka's `ConfigSource`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigSource {
    /// Set on the topic itself (a dynamic topic config): what a copy of the topic repeats.
    DynamicTopic,
    /// A dynamic config of this broker.
    DynamicBroker,
    /// A dynamic config of every broker (the cluster's default).
    DynamicDefaultBroker,
    /// The broker's `server.properties`.
    StaticBroker,
    /// Kafka's built-in default.
    Default,
    /// Another source (unknown, a logger, client metrics, a group), by its number.
    Other(i8),
}

impl ConfigSource {
    fn from_wire(source: i8) -> Self {
        match source {
            1 => Self::DynamicTopic,
            2 => Self::DynamicBroker,
            3 => Self::DynamicDefaultBroker,
            4 => Self::StaticBroker,
            5 => Self::Default,
            other => Self::Other(other),
        }
    }
}

/// DescribeConfigs of `topics` (every config of each), in the order asked. A topic the broker
/// refuses (UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED, ...) fails the call with
/// [`Error::TopicRefused`] naming it.
pub async fn describe_topic_configs(
    connection: &mut Connection,
    topics: &[&str],
) -> Result<Vec<TopicConfigs>, Error> {
    let request = DescribeConfigsRequest::default().with_resources(
        topics
            .iter()
            .map(|topic| {
                DescribeConfigsResource::default()
                    .with_resource_type(TOPIC_RESOURCE)
                    .with_resource_name(StrBytes::from_string((*topic).to_owned()))
                    .with_configuration_keys(None)
            })
            .collect(),
    );
    let (_, response) = connection.request(&request).await?;
    let mut results: Vec<DescribeConfigsResult> = response
        .results
        .into_iter()
        .filter(|result| result.resource_type == TOPIC_RESOURCE)
        .collect();
    topics
        .iter()
        .map(|&topic| {
            let at = results
                .iter()
                .position(|r| r.resource_name.as_str() == topic);
            let Some(result) = at.map(|at| results.swap_remove(at)) else {
                return Err(Error::Protocol {
                    broker: connection.address().to_owned(),
                    api: "DescribeConfigs",
                    detail: format!("no answer for topic {topic:?}"),
                });
            };
            topic_configs(connection, topic, result)
        })
        .collect()
}

fn topic_configs(
    connection: &Connection,
    topic: &str,
    result: DescribeConfigsResult,
) -> Result<TopicConfigs, Error> {
    if result.error_code != 0 {
        return Err(Error::TopicRefused {
            broker: connection.address().to_owned(),
            api: "DescribeConfigs",
            topic: topic.to_owned(),
            code: result.error_code,
            name: error_name(result.error_code),
            message: result.error_message.map(|m| m.as_str().to_owned()),
        });
    }
    Ok(TopicConfigs {
        topic: topic.to_owned(),
        entries: result.configs.into_iter().map(config_entry).collect(),
    })
}

fn config_entry(config: DescribeConfigsResourceResult) -> ConfigEntry {
    // A sensitive value is never kept, whatever the broker sent.
    let value = (!config.is_sensitive)
        .then_some(config.value)
        .flatten()
        .map(|value| value.as_str().to_owned());
    ConfigEntry {
        name: config.name.as_str().to_owned(),
        value,
        source: ConfigSource::from_wire(config.config_source),
        read_only: config.read_only,
        sensitive: config.is_sensitive,
    }
}
