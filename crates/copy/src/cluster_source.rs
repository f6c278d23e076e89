//! A cluster as the source: a krec-consumer [`Consumer`] reading committed data only, its
//! chunks handed on as runs of whole batches.

use krec_client::admin::describe_topic_configs;
use krec_client::connection::Connection;
use krec_client::metadata::MetadataClient;
use krec_client::{ConnectionSettings, TopicPartition};
use krec_consumer::{Consumer, ConsumerConfig, StartOffset, TopicSubscription};

use crate::connect::connect_any;
use crate::ends::{BatchSource, Positions, SourceBatch, SourceRun, SourceTopic};
use crate::Error;

/// The topics of a cluster that a subscription takes, read committed.
pub struct ClusterSource {
    consumer: Consumer,
    subscription: TopicSubscription,
    metadata: MetadataClient,
    bootstrap: Vec<String>,
    connection: ConnectionSettings,
    /// For DescribeConfigs, opened on first use.
    admin: Option<Connection>,
}

impl ClusterSource {
    /// Connects to the cluster `config` names; with `stop_at_end`, [`BatchSource::next_run`]
    /// ends once every partition reached the end it had when its fetch got there. Unless
    /// `config` sets [`ConsumerConfig::max_held_responses`], it is
    /// [`ConsumerConfig::HELD_RESPONSES_FOR_REUSE`].
    pub async fn connect(
        mut config: ConsumerConfig,
        subscription: TopicSubscription,
        stop_at_end: bool,
    ) -> Result<Self, Error> {
        // Aborted transactions and control batches never reach the target.
        config.read_committed = true;
        // The pipeline drops each chunk before it asks for the next: fetching just ahead of it
        // lets the connection read responses into reused buffers (BENCHMARKS.md, "Mirror").
        (config.max_held_responses).get_or_insert(ConsumerConfig::HELD_RESPONSES_FOR_REUSE);
        let bootstrap = config.bootstrap.clone();
        let connection = config.connection.clone();
        let metadata = MetadataClient::new(bootstrap.clone(), connection.clone());
        let mut consumer = Consumer::connect(config).await?;
        consumer.stop_at_end(stop_at_end);
        Ok(ClusterSource {
            consumer,
            subscription,
            metadata,
            bootstrap,
            connection,
            admin: None,
        })
    }

    async fn admin(&mut self) -> Result<&mut Connection, Error> {
        if self.admin.is_none() {
            let connection = connect_any(&self.bootstrap, &self.connection).await;
            self.admin = Some(connection.map_err(Error::source_client)?);
        }
        Ok(self.admin.as_mut().expect("connected above"))
    }

    /// The configs set on each topic (not the broker's defaults).
    async fn own_configs(&mut self, names: &[&str]) -> Result<Vec<Vec<(String, String)>>, Error> {
        let answer = describe_topic_configs(self.admin().await?, names).await;
        let described = match answer {
            Ok(described) => described,
            Err(error) => {
                self.admin = None;
                return Err(Error::source_client(error));
            }
        };
        Ok(described
            .into_iter()
            .map(|topic| {
                let overrides = topic.overrides();
                overrides
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect()
            })
            .collect())
    }
}

impl BatchSource for ClusterSource {
    async fn topics(&mut self) -> Result<Vec<SourceTopic>, Error> {
        let metadata = self
            .metadata
            .fetch_all()
            .await
            .map_err(Error::source_client)?;
        for name in self.subscription.names() {
            if !metadata.topics.contains_key(name) {
                return Err(Error::Refused {
                    cluster: "source",
                    what: format!("topic {name}"),
                    detail: "it does not exist".to_owned(),
                });
            }
        }
        let mut matched: Vec<SourceTopic> = (metadata.topics.values())
            .filter(|t| t.error_code == 0 && !t.partitions.is_empty())
            .filter(|t| self.subscription.matches(&t.name, t.is_internal))
            .map(|t| SourceTopic {
                name: t.name.clone(),
                // A nil id: the broker predates topic ids.
                id: (!t.topic_id.is_nil()).then(|| t.topic_id.to_string()),
                partitions: t.partitions.len() as i32,
                configs: Vec::new(),
            })
            .collect();
        matched.sort_by(|a, b| a.name.cmp(&b.name));
        if matched.is_empty() {
            return Ok(Vec::new());
        }
        let names: Vec<&str> = matched.iter().map(|t| t.name.as_str()).collect();
        let configs = self.own_configs(&names).await?;
        for (topic, configs) in matched.iter_mut().zip(configs) {
            topic.configs = configs;
        }
        Ok(matched)
    }

    async fn assign(&mut self, partitions: &[(TopicPartition, Option<i64>)]) -> Result<(), Error> {
        let starts: Vec<(TopicPartition, StartOffset)> = partitions
            .iter()
            .map(|(p, at)| {
                (
                    p.clone(),
                    at.map_or(StartOffset::Beginning, StartOffset::Offset),
                )
            })
            .collect();
        Ok(self.consumer.assign_at(&starts).await?)
    }

    fn unassign(&mut self, partitions: &[TopicPartition]) {
        self.consumer.unassign(partitions);
    }

    fn rewind(&mut self, positions: &Positions) -> Result<(), Error> {
        for (partition, &at) in positions {
            self.consumer.seek(partition, StartOffset::Offset(at))?;
        }
        Ok(())
    }

    async fn next_run(&mut self) -> Result<Option<SourceRun>, Error> {
        let Some(chunk) = self.consumer.next_chunk().await? else {
            return Ok(None);
        };
        let mut batches = Vec::new();
        for batch in chunk.data_batches() {
            let batch = batch?;
            batches.push(SourceBatch {
                summary: batch.summary,
                bytes: batch.bytes,
            });
        }
        let partition = TopicPartition::new(chunk.topic(), chunk.partition());
        Ok(Some(SourceRun {
            partition,
            from_offset: chunk.fetch_offset(),
            batches,
            next_offset: chunk.next_offset(),
        }))
    }

    fn lag(&self) -> Vec<(TopicPartition, i64)> {
        (self.consumer.positions().into_iter())
            .map(|p| {
                let lag = p.lag(true);
                (p.topic_partition, lag)
            })
            .collect()
    }
}
