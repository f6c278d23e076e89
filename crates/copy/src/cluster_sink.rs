//! A cluster as the sink: a transactional krec-producer [`Producer`] writes the batches; each
//! transaction commits, with TxnOffsetCommit, the source positions it reaches in the mirror's
//! group, keyed by the target partitions (see `positions`).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use bytes::Bytes;
use krec_client::connection::Connection;
use krec_client::group::Committer;
use krec_client::metadata::MetadataClient;
use krec_client::transaction::TxnOffset;
use krec_client::{ConnectionSettings, TopicPartition};
use krec_consumer::{
    Consumer, ConsumerConfig, GroupConsumer, GroupEvent, StartOffset, TopicSubscription,
};
use krec_producer::{Delivery, Error as ProducerError, Producer, ProducerConfig};

use crate::connect::connect_any;
use crate::ends::{BatchSink, Ownership, Positions, SourceTopic};
use crate::group_offsets::{self, source_offsets, GroupOffsets, Translated};
use crate::positions::{self, Committed};
use crate::target_topics;
use crate::Error;

/// How many times the admin connection is opened again before a resume gives up, and the
/// wait before the first time (growing with each).
const RECONNECTS: u32 = 5;
const RECONNECT_BACKOFF: Duration = Duration::from_millis(200);

/// A cluster that takes the copies, exactly once.
pub struct ClusterSink {
    producer: Producer,
    /// The member of the mirror's group in this cluster, once the first copies exist: the
    /// group shares the partitions among a mirror's processes.
    member: Option<GroupConsumer>,
    /// How the member joins (the group, its protocol and timeouts, this member's
    /// `group.instance.id`); `None` for a sink that owns every partition alone.
    member_config: Option<ConsumerConfig>,
    /// Alone: the source partitions prepared and not handed to the pipeline yet, and the
    /// partition count of each topic handed out so far.
    unowned: Vec<TopicPartition>,
    handed: HashMap<String, i32>,
    /// The target topics the member subscribes to: the copies of the source's names, and
    /// the source's patterns behind the prefix.
    member_topics: Vec<String>,
    /// The group whose committed offsets are the copy's positions (`--name`).
    group: String,
    /// Put before each source topic's name to name its copy.
    prefix: String,
    bootstrap: Vec<String>,
    connection: ConnectionSettings,
    /// CreateTopics, DescribeConfigs, FindCoordinator: opened on first use.
    admin: Option<Connection>,
    metadata: MetadataClient,
    /// `max.message.bytes` of each target topic, by source topic.
    limits: HashMap<String, usize>,
    /// The last batch written to each source partition in the open transaction, and its
    /// record count: its delivery says the target offset reached.
    written: HashMap<TopicPartition, (Delivery, u32)>,
    /// The target offset reached by each source partition, as last committed.
    target_next: HashMap<TopicPartition, i64>,
    /// Consumer groups' source offsets to translate, and the batches that cover them.
    group_offsets: GroupOffsets<Delivery>,
    /// How long a restart waits for a transaction left open by an earlier incarnation.
    patience: Duration,
    fenced_earlier: bool,
}

impl ClusterSink {
    /// A sink into the cluster `config` names, and a member of the mirror's group there
    /// (`member`: its group settings, with `group.id` and `group.instance.id` set). The
    /// producer is transactional: its `transactional.id` is the one given, else
    /// `krec-mirror-GROUP-INSTANCE`, stable across restarts so a restart fences its crashed
    /// predecessor and aborts what it left open.
    pub async fn connect(
        mut config: ProducerConfig,
        member: ConsumerConfig,
        subscription: &TopicSubscription,
        prefix: &str,
    ) -> Result<Self, Error> {
        let group = member.group.group_id.clone();
        let Some(instance) = member.group.instance_id.clone() else {
            return Err(Error::InvalidConfig {
                what: "group.instance.id",
                detail: "each mirror process needs a member name of its own".to_owned(),
            });
        };
        if config.transactional_id.is_none() {
            config.transactional_id = Some(format!("krec-mirror-{group}-{instance}"));
        }
        let topics = target_subscription(subscription, prefix);
        Self::new(config, Some(member), topics, group, prefix).await
    }

    /// A sink that owns every partition of the topics it prepares, with no group membership:
    /// one process at a time (a restore). Its positions are the committed offsets of `group`;
    /// `config` must name a `transactional.id`, which fences an earlier incarnation.
    pub async fn connect_alone(
        config: ProducerConfig,
        group: String,
        prefix: &str,
    ) -> Result<Self, Error> {
        if config.transactional_id.is_none() {
            return Err(Error::InvalidConfig {
                what: "transactional.id",
                detail: "a sink without a group is fenced through its transactional.id".to_owned(),
            });
        }
        Self::new(config, None, Vec::new(), group, prefix).await
    }

    async fn new(
        config: ProducerConfig,
        member: Option<ConsumerConfig>,
        member_topics: Vec<String>,
        group: String,
        prefix: &str,
    ) -> Result<Self, Error> {
        let patience = config.transaction_timeout + Duration::from_secs(5);
        let bootstrap = config.bootstrap.clone();
        let connection = config.connection.clone();
        let metadata = MetadataClient::new(bootstrap.clone(), connection.clone());
        let producer = Producer::connect(config).await?;
        Ok(ClusterSink {
            producer,
            member: None,
            member_config: member,
            unowned: Vec::new(),
            handed: HashMap::new(),
            member_topics,
            group,
            prefix: prefix.to_owned(),
            bootstrap,
            connection,
            admin: None,
            metadata,
            limits: HashMap::new(),
            written: HashMap::new(),
            target_next: HashMap::new(),
            group_offsets: GroupOffsets::default(),
            patience,
            fenced_earlier: false,
        })
    }

    /// Commits, for each `(group, source partition, source offset G)`, the target offset of
    /// the first record copied at or after G, in the transaction that copies it (or, for a G
    /// the copy passes without a record, in the one that passes it). A G at or before where
    /// its partition resumes was translated by an earlier run. Call it before the pipeline
    /// runs; each group must have no active members.
    pub fn watch_group_offsets(&mut self, offsets: Vec<(String, TopicPartition, i64)>) {
        self.group_offsets.watch(offsets);
    }

    fn target_topic(&self, source: &str) -> String {
        format!("{}{source}", self.prefix)
    }

    fn target(&self, source: &TopicPartition) -> TopicPartition {
        TopicPartition::new(self.target_topic(&source.topic), source.partition)
    }

    async fn admin(&mut self) -> Result<&mut Connection, Error> {
        if self.admin.is_none() {
            let connection = connect_any(&self.bootstrap, &self.connection).await;
            self.admin = Some(connection.map_err(Error::target_client)?);
        }
        Ok(self.admin.as_mut().expect("connected above"))
    }

    /// The positions committed for `wanted`. The admin connection may have died while the
    /// target was out of reach (a rejoin follows such a cut): it is opened again, a few times.
    async fn committed(
        &mut self,
        wanted: &BTreeMap<String, Vec<i32>>,
    ) -> Result<BTreeMap<TopicPartition, Committed>, Error> {
        let (group, patience, settings) =
            (self.group.clone(), self.patience, self.connection.clone());
        let mut attempt = 0;
        loop {
            let admin = self.admin().await;
            let answer = match admin {
                Ok(admin) => positions::committed(admin, &settings, &group, wanted, patience).await,
                Err(error) => Err(error),
            };
            match answer {
                Err(Error::Client { source, .. })
                    if source.is_connection_failure() && attempt < RECONNECTS =>
                {
                    self.admin = None;
                    attempt += 1;
                    tokio::time::sleep(RECONNECT_BACKOFF * attempt).await;
                }
                answer => return answer,
            }
        }
    }

    /// Where each of `partitions` (of one source topic) resumes; refuses a target partition
    /// that holds records without a committed position (expired, or written by someone
    /// else): copying from the start again would repeat them.
    async fn resume_topic(
        &mut self,
        topic: &str,
        partitions: &[i32],
    ) -> Result<Vec<(TopicPartition, Option<i64>)>, Error> {
        let target = self.target_topic(topic);
        let wanted: BTreeMap<String, Vec<i32>> = [(target.clone(), partitions.to_vec())].into();
        let committed = self.committed(&wanted).await?;
        let settings = self.connection.clone();
        let extent = positions::target_extent(&mut self.metadata, &settings, &target).await?;
        let mut resume = Vec::new();
        for &partition in partitions {
            let source = TopicPartition::new(topic, partition);
            let (start, end) = extent.get(&partition).copied().unwrap_or((0, 0));
            if self.group_offsets.watches(&source) {
                // A group offset passed before any record is copied lands at the end.
                self.target_next.entry(source.clone()).or_insert(end);
            }
            match committed.get(&TopicPartition::new(target.as_str(), partition)) {
                Some(&Committed {
                    source_next,
                    target_next,
                }) => {
                    if let Some(next) = target_next {
                        self.target_next.insert(source.clone(), next);
                    }
                    self.group_offsets.resumed(&source, source_next);
                    resume.push((source, Some(source_next)));
                }
                None => {
                    // Aborted records (a crashed first transaction) are not a copy's.
                    let tp = TopicPartition::new(target.as_str(), partition);
                    if end > start && self.holds_committed(&tp).await? {
                        return Err(lost_position(&self.group, &target, partition, end - start));
                    }
                    resume.push((source, None));
                }
            }
        }
        Ok(resume)
    }

    /// Whether `partition` of the target holds a committed data record.
    fn holds_committed(
        &self,
        partition: &TopicPartition,
    ) -> impl std::future::Future<Output = Result<bool, Error>> + Send + 'static {
        let mut config = ConsumerConfig::new(self.bootstrap.clone());
        config.connection = self.connection.clone();
        let partition = partition.clone();
        async move { holds_committed(config, partition).await }
    }

    /// The source partition a target partition copies, if it is one of this sink's copies.
    fn source_of(&self, target: &TopicPartition) -> Option<TopicPartition> {
        let topic = target.topic.strip_prefix(self.prefix.as_str())?;
        Some(TopicPartition::new(topic, target.partition))
    }

    fn sources(&self, targets: Vec<TopicPartition>) -> Vec<TopicPartition> {
        targets.iter().filter_map(|t| self.source_of(t)).collect()
    }

    /// Joins the group once the first copies exist (the member's named topics must); alone,
    /// takes the partitions of `topics` not handed out yet.
    async fn join(&mut self, topics: &[SourceTopic]) -> Result<(), Error> {
        let Some(config) = &self.member_config else {
            for topic in topics {
                let handed = self.handed.entry(topic.name.clone()).or_insert(0);
                let new = (*handed..topic.partitions).map(|p| TopicPartition::new(&*topic.name, p));
                self.unowned.extend(new);
                *handed = (*handed).max(topic.partitions);
            }
            return Ok(());
        };
        if self.member.is_none() {
            let topics: Vec<&str> = self.member_topics.iter().map(String::as_str).collect();
            let member = GroupConsumer::membership(config.clone(), &topics).await?;
            self.member = Some(member);
        }
        Ok(())
    }

    /// The positions to commit, with the target offsets the open transaction reached; and
    /// the group offsets it translates.
    async fn offsets(&mut self, positions: &Positions) -> Result<(TxnOffsets, Translated), Error> {
        // The batches still in `written` came after the kept ones.
        self.target_next.extend(self.group_offsets.land().await?);
        for (source, (delivery, records)) in self.written.drain() {
            let delivered = delivery.await?;
            let next = delivered.offset() + i64::from(records);
            if delivered.has_offset() {
                self.target_next.insert(source, next);
            }
        }
        let offsets = positions
            .iter()
            .map(|(source, &next)| {
                let target_next = self.target_next.get(source).copied();
                let offset = TxnOffset {
                    offset: next,
                    leader_epoch: -1,
                    metadata: Some(positions::metadata(&source.topic, target_next)),
                };
                (self.target(source), offset)
            })
            .collect();
        let translated = self.group_offsets.translate(positions, &self.target_next);
        Ok((offsets, translated))
    }

    async fn try_commit(&mut self, positions: &Positions) -> Result<(), Error> {
        self.producer.flush().await?;
        let (offsets, translated) = self.offsets(positions).await?;
        let metadata = self.member.as_ref().map(GroupConsumer::group_metadata);
        let unjoined = Committer {
            group: &self.group,
            generation: -1,
            member_id: "",
            instance_id: None,
        };
        let committer = metadata.as_ref().map_or(unjoined, |m| m.committer());
        self.producer
            .send_offsets_to_transaction(&offsets, &committer)
            .await?;
        let groups = group_offsets::Groups {
            metadata: &mut self.metadata,
            settings: &self.connection,
        };
        group_offsets::commit(&self.producer, groups, translated, &self.prefix).await?;
        Ok(self.producer.commit().await?)
    }
}

type TxnOffsets = BTreeMap<TopicPartition, TxnOffset>;

/// Whether `partition` holds a committed data record, read with `config`.
async fn holds_committed(
    mut config: ConsumerConfig,
    partition: TopicPartition,
) -> Result<bool, Error> {
    config.read_committed = true;
    let mut reader = Consumer::connect(config).await?;
    reader.assign(&[partition], StartOffset::Beginning).await?;
    reader.stop_at_end(true);
    while let Some(chunk) = reader.next_chunk().await? {
        if chunk.count_records()? > 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The error for a target partition that holds records the group has no position for.
fn lost_position(group: &str, target: &str, partition: i32, records: i64) -> Error {
    Error::Unsafe {
        partition: TopicPartition::new(target, partition),
        detail: format!(
            "holds {records} offsets of records but group {group:?} has no committed position for it (it \
             expired after the target's offsets.retention.minutes, or another writer filled \
             the topic): copying from the source's start would repeat records. Commit the \
             next source offset to copy for this partition in group {group:?} (for example \
             with kafka-consumer-groups --reset-offsets --to-offset), or delete the topic"
        ),
    }
}

/// The member's subscription: each source name's copy, and each source pattern behind the
/// prefix (a pattern matches from the start of a name, as in krec-consumer).
fn target_subscription(subscription: &TopicSubscription, prefix: &str) -> Vec<String> {
    let names = (subscription.names().iter()).map(|name| format!("{prefix}{name}"));
    let patterns = (subscription.patterns()).map(|pattern| {
        let body = pattern.strip_prefix('^').unwrap_or(pattern);
        format!("^{}(?:{body})", regex::escape(prefix))
    });
    names.chain(patterns).collect()
}

impl BatchSink for ClusterSink {
    async fn prepare(&mut self, topics: &[SourceTopic]) -> Result<(), Error> {
        if !self.fenced_earlier {
            self.producer.init_transactions().await?;
            self.fenced_earlier = true;
        }
        let timeout = Duration::from_secs(30);
        for topic in topics {
            let target = self.target_topic(&topic.name);
            let admin = self.admin().await?;
            let limit = target_topics::ensure(admin, topic, &target, timeout).await?;
            self.limits.insert(topic.name.clone(), limit);
        }
        self.join(topics).await
    }

    async fn next_change(&mut self) -> Result<Option<Ownership>, Error> {
        if !self.unowned.is_empty() {
            return Ok(Some(Ownership::Assigned(std::mem::take(&mut self.unowned))));
        }
        let Some(member) = self.member.as_mut() else {
            return std::future::pending().await;
        };
        loop {
            let change = match member.next_event().await? {
                None => return Ok(None),
                Some(GroupEvent::Assigned(targets)) => Ownership::Assigned(targets),
                Some(GroupEvent::Revoked(targets)) => Ownership::Revoked(targets),
                Some(GroupEvent::Lost(targets)) => Ownership::Lost(targets),
                Some(_) => continue,
            };
            return Ok(Some(match change {
                Ownership::Assigned(t) => Ownership::Assigned(self.sources(t)),
                Ownership::Revoked(t) => Ownership::Revoked(self.sources(t)),
                Ownership::Lost(t) => Ownership::Lost(self.sources(t)),
            }));
        }
    }

    async fn resume(
        &mut self,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<i64>)>, Error> {
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for partition in partitions {
            by_topic
                .entry(&partition.topic)
                .or_default()
                .push(partition.partition);
        }
        let mut resume = Vec::new();
        for (topic, partitions) in by_topic {
            resume.extend(self.resume_topic(topic, &partitions).await?);
        }
        Ok(resume)
    }

    fn max_batch_bytes(&self, partition: &TopicPartition) -> usize {
        (self.limits.get(&*partition.topic).copied()).unwrap_or(usize::MAX)
    }

    async fn begin(&mut self) -> Result<(), Error> {
        Ok(self.producer.begin()?)
    }

    async fn write(
        &mut self,
        partition: &TopicPartition,
        batch: Bytes,
        records: u32,
    ) -> Result<(), Error> {
        let target = self.target_topic(&partition.topic);
        let source = source_offsets(&batch);
        let delivery = self
            .producer
            .send_batch(&target, partition.partition, batch)
            .await?;
        match (self.group_offsets).written(partition, source, records, delivery) {
            Some(delivery) => self.written.insert(partition.clone(), (delivery, records)),
            // Kept to translate group offsets: it is the partition's last so far.
            None => self.written.remove(partition),
        };
        Ok(())
    }

    async fn commit(&mut self, positions: &Positions) -> Result<bool, Error> {
        match self.try_commit(positions).await {
            Ok(()) => {
                self.group_offsets.committed();
                Ok(true)
            }
            Err(Error::Target(error))
                if matches!(*error, ProducerError::TransactionAbortable { .. }) =>
            {
                tracing::warn!(%error, "transaction aborted; copying its batches again");
                self.written.clear();
                self.group_offsets.aborted();
                self.producer.abort().await?;
                Ok(false)
            }
            Err(error) => {
                self.group_offsets.aborted();
                Err(error)
            }
        }
    }

    async fn abort(&mut self) -> Result<(), Error> {
        self.written.clear();
        self.group_offsets.aborted();
        Ok(self.producer.abort().await?)
    }

    async fn close(self) -> Result<(), Error> {
        self.group_offsets.warn_untranslated();
        self.producer.close().await?;
        if let Some(member) = self.member {
            member.close().await?;
        }
        Ok(())
    }
}
