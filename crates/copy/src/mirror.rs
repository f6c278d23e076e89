//! `krec mirror`: the pipeline with a cluster at each end.

use krec_consumer::{ConsumerConfig, GroupConfig, TopicSubscription};
use krec_producer::ProducerConfig;

use crate::cluster_sink::ClusterSink;
use crate::cluster_source::ClusterSource;
use crate::pipeline::{Pipeline, PipelineSettings};
use crate::Error;

/// A copy from one cluster to another.
pub type Mirror = Pipeline<ClusterSource, ClusterSink>;

/// What a mirror copies, from where to where.
#[derive(Clone, Debug)]
pub struct MirrorConfig {
    /// The source cluster (read committed whatever it says).
    pub source: ConsumerConfig,
    /// The target cluster (transactional whatever it says).
    pub target: ProducerConfig,
    /// The source topics: names and patterns.
    pub topics: TopicSubscription,
    /// The mirror's name: its group in the target, where its positions are committed and
    /// its processes share the partitions.
    pub name: String,
    /// This process's name in that group (`group.instance.id`), stable across its restarts
    /// and unique among the mirror's processes: a restart takes its partitions back at once
    /// and fences its predecessor through the `transactional.id` `krec-mirror-NAME-MEMBER`.
    pub member: String,
    /// The group's protocol and timeouts (`group.protocol`, `session.timeout.ms`, ...).
    pub group: GroupConfig,
    /// Put before each source topic's name to name its copy.
    pub topic_prefix: String,
    /// Stop once every partition is copied to the end it had (`-e`).
    pub stop_at_end: bool,
    /// Pacing and limits.
    pub settings: PipelineSettings,
}

impl MirrorConfig {
    /// Connects to both clusters; [`Pipeline::run`] then copies.
    pub async fn connect(self) -> Result<Mirror, Error> {
        if self.name.is_empty() {
            return Err(Error::InvalidConfig {
                what: "name",
                detail: "a mirror needs a name: its group and transactional.id".to_owned(),
            });
        }
        if self.member.is_empty() {
            return Err(Error::InvalidConfig {
                what: "member",
                detail: "each mirror process needs a member name, unique in the mirror".to_owned(),
            });
        }
        let mut member = ConsumerConfig::new(self.target.bootstrap.clone());
        member.connection = self.target.connection.clone();
        member.metadata_refresh = self.settings.refresh;
        member.group = GroupConfig {
            group_id: self.name.clone(),
            instance_id: Some(self.member.clone()),
            ..self.group
        };
        let prefix = &self.topic_prefix;
        let sink = ClusterSink::connect(self.target, member, &self.topics, prefix).await?;
        let source = ClusterSource::connect(self.source, self.topics, self.stop_at_end).await?;
        Ok(Pipeline::new(source, sink, self.settings))
    }
}
