//! A backup's manifest: `manifest.json` at the root of its location, written last, after the
//! segments it lists. It says what the backup holds (topics, their ids, settings and partition
//! counts; per partition the segments, the offsets and timestamps kept, what the source no
//! longer had) and where the next backup run resumes. Restore reads only what it lists, so a
//! segment a crashed run left behind is never read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Error;

/// The manifest's name in the backup's location.
pub(crate) const MANIFEST: &str = "manifest.json";

/// The format this krec writes; a manifest of a newer format is refused, not misread.
pub(crate) const FORMAT: u32 = 1;

/// The whole backup.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    /// [`FORMAT`] when written.
    pub(crate) format: u32,
    /// Random, set by the first run: names the group and `transactional.id` of restores.
    pub(crate) backup_id: String,
    /// When the first run started and the last one committed (ms since the epoch).
    pub(crate) created_ms: i64,
    pub(crate) updated_ms: i64,
    /// The source cluster, as far as known.
    #[serde(default)]
    pub(crate) source: SourceCluster,
    /// Every topic backed up, by name.
    pub(crate) topics: BTreeMap<String, TopicManifest>,
}

/// The cluster a backup reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SourceCluster {
    /// `bootstrap.servers` as given (never credentials).
    pub(crate) bootstrap: Vec<String>,
}

/// One topic: enough to create it again, and its partitions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TopicManifest {
    /// The topic id at the source (UUID text), if the broker said.
    pub(crate) topic_id: Option<String>,
    /// Partitions at the source when last seen.
    pub(crate) partitions: i32,
    /// The settings set on the topic (not the broker's defaults).
    pub(crate) configs: BTreeMap<String, String>,
    /// Each partition backed up, by number.
    pub(crate) partition: BTreeMap<i32, PartitionManifest>,
    /// Consumer groups' committed offsets on this topic at the source, by group then
    /// partition: a restore with `--groups` sets them again, translated.
    #[serde(default)]
    pub(crate) groups: BTreeMap<String, BTreeMap<i32, i64>>,
}

/// One partition: its segments in offset order, and where the next run resumes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PartitionManifest {
    /// The next source offset to back up (past any aborted or control batches left out).
    pub(crate) next_offset: Option<i64>,
    /// The segments, each complete, in offset order.
    pub(crate) segments: Vec<SegmentManifest>,
    /// Ranges the source no longer had when the backup came to read them (retention ran
    /// ahead): records lost to the backup, never skipped silently.
    #[serde(default)]
    pub(crate) lost: Vec<LostRange>,
}

/// One segment file: `<topic>-<partition>/<20-digit base offset>.log`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SegmentManifest {
    /// Its name in the backup's location.
    pub(crate) file: String,
    /// The first batch's base offset (the file's name).
    pub(crate) base_offset: i64,
    /// The last batch's last offset.
    pub(crate) last_offset: i64,
    /// Its size: a file of another size is truncated or not this backup's.
    pub(crate) bytes: u64,
    /// Data records in it.
    pub(crate) records: u64,
    /// The first batch's first timestamp and the largest timestamp in it (ms; -1: none).
    pub(crate) first_timestamp: i64,
    pub(crate) max_timestamp: i64,
}

/// Offsets `from..to` the source had deleted before the backup read them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LostRange {
    pub(crate) from: i64,
    pub(crate) to: i64,
    /// When the backup noticed (ms since the epoch).
    pub(crate) noticed_ms: i64,
}

impl Manifest {
    /// A new, empty backup.
    pub(crate) fn new(now_ms: i64, bootstrap: Vec<String>) -> Self {
        Manifest {
            format: FORMAT,
            backup_id: uuid::Uuid::new_v4().simple().to_string(),
            created_ms: now_ms,
            updated_ms: now_ms,
            source: SourceCluster { bootstrap },
            topics: BTreeMap::new(),
        }
    }

    /// Reads a manifest; `location` names it in errors.
    pub(crate) fn parse(bytes: &[u8], location: &str) -> Result<Self, Error> {
        let manifest: Manifest = serde_json::from_slice(bytes).map_err(|error| Error::Backup {
            file: format!("{location}/{MANIFEST}"),
            position: None,
            detail: format!("not a krec backup manifest: {error}"),
        })?;
        if manifest.format != FORMAT {
            return Err(Error::Backup {
                file: format!("{location}/{MANIFEST}"),
                position: None,
                detail: format!(
                    "format {} (this krec reads format {FORMAT}): written by a newer krec?",
                    manifest.format
                ),
            });
        }
        Ok(manifest)
    }

    /// The manifest as written: pretty JSON, readable in an editor and by `jq`.
    pub(crate) fn to_json(&self) -> Vec<u8> {
        let mut json = serde_json::to_vec_pretty(self).expect("a manifest is plain data");
        json.push(b'\n');
        json
    }
}

impl PartitionManifest {
    /// The first offset kept, if any segment is.
    pub(crate) fn first_offset(&self) -> Option<i64> {
        self.segments.first().map(|s| s.base_offset)
    }

    /// The last offset kept, if any segment is.
    pub(crate) fn last_offset(&self) -> Option<i64> {
        self.segments.last().map(|s| s.last_offset)
    }
}

/// A segment's name: Kafka's log layout, so `kafka-dump-log` and `krec decode` read it as is.
pub(crate) fn segment_name(topic: &str, partition: i32, base_offset: i64) -> String {
    format!("{topic}-{partition}/{base_offset:020}.log")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_reads_back_as_written() {
        let mut manifest = Manifest::new(1_700_000_000_000, vec!["b:9092".to_owned()]);
        let mut topic = TopicManifest {
            topic_id: Some("1f0e0a7c-2f3b-4a8e-9b1c-0d2e3f4a5b6c".to_owned()),
            partitions: 2,
            ..TopicManifest::default()
        };
        topic
            .configs
            .insert("cleanup.policy".to_owned(), "compact".to_owned());
        topic.partition.insert(
            1,
            PartitionManifest {
                next_offset: Some(42),
                segments: vec![SegmentManifest {
                    file: segment_name("orders", 1, 7),
                    base_offset: 7,
                    last_offset: 41,
                    bytes: 1234,
                    records: 30,
                    first_timestamp: 5,
                    max_timestamp: 9,
                }],
                lost: vec![LostRange {
                    from: 0,
                    to: 7,
                    noticed_ms: 3,
                }],
            },
        );
        topic.groups.insert("billing".to_owned(), [(1, 40)].into());
        manifest.topics.insert("orders".to_owned(), topic);
        let json = manifest.to_json();
        assert_eq!(Manifest::parse(&json, "dir").unwrap(), manifest);
        assert_eq!(
            manifest.topics["orders"].partition[&1].first_offset(),
            Some(7)
        );
        assert_eq!(manifest.backup_id.len(), 32);
    }

    #[test]
    fn a_segment_is_named_as_kafka_names_it() {
        assert_eq!(
            segment_name("orders", 3, 1234),
            "orders-3/00000000000000001234.log"
        );
    }

    #[test]
    fn a_foreign_or_newer_manifest_is_refused_by_name() {
        let error = Manifest::parse(b"{\"format\": 1}", "s3://b/p").unwrap_err();
        assert!(
            error.to_string().contains("s3://b/p/manifest.json"),
            "{error}"
        );
        let mut newer = Manifest::new(0, Vec::new());
        newer.format = FORMAT + 1;
        let error = Manifest::parse(&newer.to_json(), "dir").unwrap_err();
        assert!(error.to_string().contains("newer krec"), "{error}");
    }
}
