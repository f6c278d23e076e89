//! `krec restore`: the pipeline from a backup (its segments, [`BackupSource`]) to a cluster
//! ([`ClusterSink`]), exactly once as the mirror is: the positions live in the target, in the
//! group `krec-restore-<backup_id>`, keyed by target partition, so a restore cut short and
//! run again, or run again after a later backup (or with other topics), sends only what the
//! target lacks. The restore owns every partition alone, without joining that group: a
//! second restore of the backup under the same prefix fences the first through their shared
//! `transactional.id`.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use krec_batch::OnCorrupt;
use krec_client::admin::describe_topic_configs;
use krec_client::TopicPartition;
use krec_consumer::TopicSubscription;
use krec_producer::ProducerConfig;

use crate::backup_source::BackupSource;
use crate::cluster_sink::ClusterSink;
use crate::connect::connect_any;
use crate::ends::{BatchSink, BatchSource, SourceTopic};
use crate::manifest::{Manifest, TopicManifest, MANIFEST};
use crate::pipeline::{Pipeline, PipelineSettings};
use crate::store::Store;
use crate::Error;

/// A copy from a backup into a cluster.
pub type Restore = Pipeline<BackupSource, ClusterSink>;

/// What a restore copies, from which backup into which cluster.
#[derive(Clone, Debug)]
pub struct RestoreConfig {
    /// The target cluster (transactional whatever it says: its `transactional.id` is the
    /// restore's group, `krec-restore-<backup_id>`).
    pub target: ProducerConfig,
    /// The backup: a directory, or an `s3://`, `gs://` or `az://` URL.
    pub location: String,
    /// The backed-up topics to restore (names and patterns); all when `None`.
    pub topics: Option<TopicSubscription>,
    /// Put before each topic's name to name its copy.
    pub topic_prefix: String,
    /// Each partition stops at its first record stamped at or after this time (ms since the
    /// epoch).
    pub until: Option<i64>,
    /// Sets the consumer groups' offsets the backup kept, translated to the target's offsets.
    pub groups: bool,
    /// A corrupt batch in the backup stops the restore ([`OnCorrupt::Stop`]) or is skipped,
    /// counted and warned about.
    pub on_corrupt: OnCorrupt,
    /// Pacing and limits.
    pub settings: PipelineSettings,
}

impl RestoreConfig {
    /// Reads the backup's manifest, connects to the target, creates the topics it lacks and
    /// warns about records its retention would delete at once; [`Pipeline::run`] then copies.
    pub async fn connect(self) -> Result<Restore, Error> {
        let store = Store::open(&self.location).await?;
        let Some((bytes, _)) = store.read_manifest().await? else {
            return Err(Error::Backup {
                file: store.describe(MANIFEST),
                position: None,
                detail: "no manifest: not a krec backup, or one whose first run never \
                         committed"
                    .to_owned(),
            });
        };
        let manifest = Manifest::parse(&bytes, store.location())?;
        let decode = self.settings.decode.clone();
        let (topics, until) = (self.topics.as_ref(), self.until);
        let mut source =
            BackupSource::new(store, manifest, topics, until, self.on_corrupt, decode)?;
        if source.topic_names().is_empty() {
            return Err(Error::InvalidConfig {
                what: "topics",
                detail: "the backup holds none of the topics asked for".to_owned(),
            });
        }
        let group = format!("krec-restore-{}", source.manifest().backup_id);
        let mut target = self.target;
        target.transactional_id = Some(transactional_id(&group, &self.topic_prefix));
        let prefix = self.topic_prefix;
        let (bootstrap, connection) = (target.bootstrap.clone(), target.connection.clone());
        let mut sink = ClusterSink::connect_alone(target, group, &prefix).await?;
        let topics = source.topics().await?;
        sink.prepare(&topics).await?;
        let old = too_old(&mut sink, &source, &topics, &prefix, now_ms()).await?;
        if !old.is_empty() {
            let mut admin = connect_any(&bootstrap, &connection)
                .await
                .map_err(Error::target_client)?;
            let warned = warn_retention(&mut admin, &old).await?;
            source.warnings().fetch_add(warned, Ordering::Relaxed);
        }
        if self.groups {
            sink.watch_group_offsets(group_offsets(source.manifest(), source.topic_names()));
        }
        Ok(Pipeline::new(source, sink, self.settings))
    }
}

/// The consumer groups' offsets the backup kept on `topics`: (group, source partition,
/// offset).
fn group_offsets(manifest: &Manifest, topics: &[String]) -> Vec<(String, TopicPartition, i64)> {
    let mut offsets = Vec::new();
    for name in topics {
        let Some(kept) = manifest.topics.get(name) else {
            continue;
        };
        for (group, partitions) in &kept.groups {
            for (&partition, &offset) in partitions {
                let source = TopicPartition::new(name.as_str(), partition);
                offsets.push((group.clone(), source, offset));
            }
        }
    }
    offsets
}

/// The restore's `transactional.id`: its group's name, and for a restore under a prefix a
/// hash of it, so that restores of one backup under different prefixes run side by side
/// while a second restore into the same topics fences the first.
fn transactional_id(group: &str, prefix: &str) -> String {
    if prefix.is_empty() {
        return group.to_owned();
    }
    // FNV-1a: stable across builds, unlike the standard library's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in prefix.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{group}-{:08x}", hash as u32)
}

fn now_ms() -> i64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
}

/// A target topic and how old (ms) the oldest record still to restore into it is.
#[derive(Debug, PartialEq, Eq)]
struct OldRecords {
    target: String,
    age_ms: i64,
}

/// Per target topic, the age of the oldest record still to restore: the largest timestamps
/// of the segments not restored yet, where the target says the restore stands.
async fn too_old(
    sink: &mut ClusterSink,
    source: &BackupSource,
    topics: &[SourceTopic],
    prefix: &str,
    now: i64,
) -> Result<Vec<OldRecords>, Error> {
    let mut old = Vec::new();
    for topic in topics {
        let Some(kept) = source.manifest().topics.get(&topic.name) else {
            continue;
        };
        let partitions: Vec<TopicPartition> = (kept.partition.keys())
            .map(|&p| TopicPartition::new(topic.name.as_str(), p))
            .collect();
        let resume: BTreeMap<i32, Option<i64>> = (sink.resume(&partitions).await?.into_iter())
            .map(|(p, at)| (p.partition, at))
            .collect();
        if let Some(oldest) = oldest_left(kept, &resume) {
            let target = format!("{prefix}{}", topic.name);
            old.push(OldRecords {
                target,
                age_ms: now.saturating_sub(oldest),
            });
        }
    }
    Ok(old)
}

/// The smallest of the largest timestamps of the segments not restored yet (from `resume`,
/// each partition's position), if any is stamped.
fn oldest_left(kept: &TopicManifest, resume: &BTreeMap<i32, Option<i64>>) -> Option<i64> {
    let left = kept.partition.iter().flat_map(|(p, partition)| {
        let at = resume.get(p).copied().flatten();
        (partition.segments.iter())
            .filter(move |s| at.is_none_or(|at| s.last_offset >= at))
            .map(|s| s.max_timestamp)
    });
    left.filter(|&ts| ts >= 0).min()
}

/// Warns, per target topic, when its `retention.ms` is shorter than the age of the records
/// still to restore into it; how many it warned about.
async fn warn_retention(
    admin: &mut krec_client::connection::Connection,
    old: &[OldRecords],
) -> Result<u64, Error> {
    let names: Vec<&str> = old.iter().map(|o| o.target.as_str()).collect();
    let described = describe_topic_configs(admin, &names).await;
    let described = described.map_err(Error::target_client)?;
    let mut warned = 0;
    for (old, configs) in old.iter().zip(&described) {
        let retention = (configs.entries.iter())
            .find(|entry| entry.name == "retention.ms")
            .and_then(|entry| entry.value.as_deref()?.parse::<i64>().ok());
        if let Some(retention) = retention.filter(|&r| r >= 0 && old.age_ms > r) {
            warned += 1;
            tracing::warn!(
                topic = %old.target,
                "{}",
                retention_warning(&old.target, old.age_ms, retention)
            );
        }
    }
    Ok(warned)
}

/// What the retention warning says: why, and how to keep the records.
fn retention_warning(topic: &str, age_ms: i64, retention_ms: i64) -> String {
    format!(
        "topic {topic}: records to restore are up to {age_ms} ms old, older than its \
         retention.ms ({retention_ms} ms): the broker will delete them soon after they are \
         written. To keep them, create the topic with a longer retention.ms (or -1) before \
         restoring, or raise it (kafka-configs --alter --entity-type topics --entity-name \
         {topic} --add-config retention.ms=-1) and restore again"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{PartitionManifest, SegmentManifest};

    fn segment(last_offset: i64, max_timestamp: i64) -> SegmentManifest {
        SegmentManifest {
            file: String::new(),
            base_offset: 0,
            last_offset,
            bytes: 0,
            records: 0,
            first_timestamp: -1,
            max_timestamp,
        }
    }

    #[test]
    fn only_segments_still_to_restore_count_for_the_retention_warning() {
        let mut topic = TopicManifest::default();
        let old_then_new = PartitionManifest {
            segments: vec![segment(9, 1_000), segment(19, 5_000)],
            ..PartitionManifest::default()
        };
        topic.partition.insert(0, old_then_new);
        let unstamped = PartitionManifest {
            segments: vec![segment(4, -1)],
            ..PartitionManifest::default()
        };
        topic.partition.insert(1, unstamped);
        let fresh: BTreeMap<i32, Option<i64>> = [(0, None), (1, None)].into();
        assert_eq!(oldest_left(&topic, &fresh), Some(1_000));
        let past_first: BTreeMap<i32, Option<i64>> = [(0, Some(10)), (1, None)].into();
        assert_eq!(oldest_left(&topic, &past_first), Some(5_000));
        let done: BTreeMap<i32, Option<i64>> = [(0, Some(20)), (1, Some(5))].into();
        assert_eq!(oldest_left(&topic, &done), None);
    }

    #[test]
    fn the_groups_offsets_come_from_the_topics_restored_only() {
        let mut manifest = Manifest::new(0, Vec::new());
        for name in ["orders", "logs"] {
            let mut topic = TopicManifest::default();
            topic
                .groups
                .insert("billing".to_owned(), [(0, 7), (1, 9)].into());
            manifest.topics.insert(name.to_owned(), topic);
        }
        let offsets = group_offsets(&manifest, &["orders".to_owned()]);
        assert_eq!(
            offsets,
            [
                ("billing".to_owned(), TopicPartition::new("orders", 0), 7),
                ("billing".to_owned(), TopicPartition::new("orders", 1), 9),
            ]
        );
    }

    #[test]
    fn each_prefix_of_a_backup_has_a_transactional_id_of_its_own() {
        let group = "krec-restore-b1";
        assert_eq!(transactional_id(group, ""), group);
        let (r, s) = (transactional_id(group, "r."), transactional_id(group, "s."));
        assert!(r.starts_with("krec-restore-b1-") && s.starts_with("krec-restore-b1-"));
        assert_ne!(r, s);
        assert_eq!(r, transactional_id(group, "r."), "stable");
    }

    #[test]
    fn the_retention_warning_says_how_to_keep_the_records() {
        let text = retention_warning("orders", 90_000, 60_000);
        assert!(text.contains("retention.ms (60000 ms)"), "{text}");
        assert!(text.contains("retention.ms=-1"), "{text}");
        assert!(!text.contains("--topic-prefix"), "{text}");
    }
}
