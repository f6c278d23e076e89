//! A backup location as the sink: each source partition's batches, bytes as fetched, go into
//! Kafka's log layout (`<topic>-<partition>/<20-digit base offset>.log`); a commit publishes
//! the segments written since the last one, whole, then rewrites the manifest with the
//! positions they reach. The manifest is the backup's positions, written last: a crash leaves
//! at worst segments it does not list, written again under the same names by the next run.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use krec_batch::layout::{self, magic, v2};
use krec_batch::{BatchWalk, DecodeConfig};
use krec_client::TopicPartition;
use tokio::task::JoinSet;

use crate::backup::{GroupOffsets, GroupOffsetsReader};
use crate::ends::{BatchSink, Ownership, Positions, SourceTopic};
use crate::manifest::{
    segment_name, LostRange, Manifest, PartitionManifest, SegmentManifest, MANIFEST,
};
use crate::store::{ManifestVersion, Store};
use crate::Error;

/// Segments published at once at a commit.
const PARALLEL_PUBLISHES: usize = 8;

/// The consumer groups' offsets are read again at a commit at most this often (and always
/// when the backup ends).
const GROUPS_EVERY: Duration = Duration::from_secs(60);

/// Writes batches into a backup location: a directory or an object store.
pub struct BackupSink {
    store: Store,
    manifest: Manifest,
    /// The manifest's version as read or last written: the next write must still find it.
    version: Option<ManifestVersion>,
    segment_bytes: u64,
    follow: bool,
    /// Partition counts of the topics prepared, and the partitions not yet handed out.
    prepared: BTreeMap<String, i32>,
    unassigned: Vec<TopicPartition>,
    /// What the open transaction wrote: segments per partition, ranges found lost.
    segments: BTreeMap<TopicPartition, Vec<Staged>>,
    lost: Vec<(TopicPartition, LostRange)>,
    groups: GroupOffsetsReader,
    groups_read: Instant,
    published: Arc<AtomicU64>,
}

/// A segment being written in the staging directory, published at the next commit.
struct Staged {
    path: PathBuf,
    /// Open while it takes batches; closed once full.
    file: Option<File>,
    meta: SegmentManifest,
}

impl BackupSink {
    /// Opens the backup in `store`: its manifest as it is, or a new one.
    pub(crate) async fn open(
        store: Store,
        bootstrap: Vec<String>,
        segment_bytes: u64,
        follow: bool,
        groups: GroupOffsetsReader,
    ) -> Result<Self, Error> {
        let (manifest, version) = match store.read_manifest().await? {
            Some((bytes, version)) => (Manifest::parse(&bytes, store.location())?, Some(version)),
            None => (Manifest::new(now_ms(), bootstrap), None),
        };
        Ok(BackupSink {
            store,
            manifest,
            version,
            segment_bytes,
            follow,
            prepared: BTreeMap::new(),
            unassigned: Vec::new(),
            segments: BTreeMap::new(),
            lost: Vec::new(),
            groups,
            groups_read: Instant::now(),
            published: Arc::default(),
        })
    }

    /// The backup's id (its manifest's `backup_id`): it names the group of its restores.
    pub fn backup_id(&self) -> &str {
        &self.manifest.backup_id
    }

    /// Segments this run has published so far, readable while the backup runs.
    pub fn segments_published(&self) -> Arc<AtomicU64> {
        self.published.clone()
    }

    fn partition_manifest(&mut self, partition: &TopicPartition) -> &mut PartitionManifest {
        let topic = self.manifest.topics.entry(partition.topic.to_string());
        let topic = topic.or_default();
        topic.partition.entry(partition.partition).or_default()
    }

    /// Records a topic's id, settings and partition count; a topic deleted and created again
    /// under the same name (a new id) cannot continue the backup of the old one.
    fn record_topic(&mut self, topic: &SourceTopic, id: Option<&str>) -> Result<(), Error> {
        let kept = self.manifest.topics.entry(topic.name.clone()).or_default();
        if let (Some(was), Some(now)) = (kept.topic_id.as_deref(), id) {
            if was != now && kept.partition.values().any(|p| p.next_offset.is_some()) {
                return Err(Error::Backup {
                    file: self.store.describe(MANIFEST),
                    position: None,
                    detail: format!(
                        "topic {} was deleted and created again (its id was {was}, now {now}): \
                         its offsets start again, so back it up into a new location",
                        topic.name
                    ),
                });
            }
        }
        kept.topic_id = id.map(str::to_owned).or(kept.topic_id.take());
        kept.partitions = topic.partitions;
        kept.configs = topic.configs.iter().cloned().collect();
        Ok(())
    }

    /// The segment `batch` goes into: the open one if it has room, else a new one named by
    /// the batch's base offset.
    fn segment_for(
        &mut self,
        partition: &TopicPartition,
        facts: &BatchFacts,
        size: u64,
    ) -> Result<&mut Staged, Error> {
        let kept_last = (self.manifest.topics.get(&*partition.topic))
            .and_then(|t| t.partition.get(&partition.partition))
            .and_then(PartitionManifest::last_offset);
        let staging = self.store.staging_dir().to_owned();
        let segments = self.segments.entry(partition.clone()).or_default();
        let full = (segments.last()).is_none_or(|s| {
            s.file.is_none() || (s.meta.bytes > 0 && s.meta.bytes + size > self.segment_bytes)
        });
        if full {
            if let Some(last) = segments.last_mut() {
                last.finish()?;
            }
            // A batch that starts inside what is kept already (the source served it whole)
            // must not take the name of a segment the manifest lists.
            let after = (segments.last().map(|s| s.meta.last_offset)).or(kept_last);
            let base = after.map_or(facts.base_offset, |a| facts.base_offset.max(a + 1));
            let name = segment_name(&partition.topic, partition.partition, base);
            segments.push(Staged::create(staging.join(&name), name, base)?);
        }
        Ok(segments.last_mut().expect("pushed above"))
    }

    /// Publishes every segment of the open transaction, several at once (an object store's
    /// uploads each wait a round trip), then enters them in the manifest in offset order.
    async fn publish(&mut self) -> Result<(), Error> {
        let mut finished = Vec::new();
        for (partition, staged) in std::mem::take(&mut self.segments) {
            for mut segment in staged {
                segment.finish()?;
                finished.push((partition.clone(), segment.meta, segment.path));
            }
        }
        let mut waiting = finished.iter();
        let mut uploads = JoinSet::new();
        loop {
            while uploads.len() < PARALLEL_PUBLISHES {
                let Some((_, meta, path)) = waiting.next() else {
                    break;
                };
                let (store, name, path) = (self.store.clone(), meta.file.clone(), path.clone());
                uploads.spawn(async move { store.publish(&name, &path).await });
            }
            let Some(published) = uploads.join_next().await else {
                break;
            };
            published.map_err(|error| Error::Backup {
                file: self.store.location().to_owned(),
                position: None,
                detail: format!("publishing a segment stopped: {error}"),
            })??;
            self.published.fetch_add(1, Relaxed);
        }
        for (partition, meta, _) in finished {
            self.partition_manifest(&partition).segments.push(meta);
        }
        for (partition, range) in std::mem::take(&mut self.lost) {
            self.partition_manifest(&partition).lost.push(range);
        }
        Ok(())
    }

    /// Reads the groups' committed offsets into the manifest; a failure leaves the last ones
    /// read, with a warning (they are the source's state at one moment, not data).
    async fn read_groups(&mut self) {
        self.groups_read = Instant::now();
        let partitions: BTreeMap<String, Vec<i32>> = (self.manifest.topics.iter())
            .map(|(name, topic)| (name.clone(), topic.partition.keys().copied().collect()))
            .filter(|(_, partitions): &(String, Vec<i32>)| !partitions.is_empty())
            .collect();
        let mut read: GroupOffsets = match self.groups.read(&partitions).await {
            Ok(read) => read,
            Err(error) => {
                tracing::warn!(%error, "consumer groups' committed offsets not read");
                return;
            }
        };
        for name in partitions.keys() {
            if let Some(topic) = self.manifest.topics.get_mut(name) {
                topic.groups = read.remove(name).unwrap_or_default();
            }
        }
    }

    async fn write_manifest(&mut self) -> Result<(), Error> {
        self.manifest.updated_ms = now_ms();
        let json = self.manifest.to_json();
        let version = self
            .store
            .write_manifest(json, self.version.as_ref())
            .await?;
        self.version = Some(version);
        Ok(())
    }

    /// Drops the open transaction's segments.
    fn drop_staged(&mut self) {
        for staged in std::mem::take(&mut self.segments).into_values().flatten() {
            drop(staged.file);
            // A staging file left behind is removed with the staging directory at the end.
            let _ = std::fs::remove_file(&staged.path);
        }
        self.lost.clear();
    }
}

impl Staged {
    fn create(path: PathBuf, name: String, base_offset: i64) -> Result<Self, Error> {
        let created = match path.parent() {
            Some(parent) => std::fs::create_dir_all(parent).and_then(|()| File::create(&path)),
            None => File::create(&path),
        };
        let file = created.map_err(|error| staging_error(&path, &error))?;
        Ok(Staged {
            path,
            file: Some(file),
            meta: SegmentManifest {
                file: name,
                base_offset,
                last_offset: base_offset,
                bytes: 0,
                records: 0,
                first_timestamp: -1,
                max_timestamp: -1,
            },
        })
    }

    /// Appends one batch. The staging file is written with std::fs: a backup's writes are
    /// sequential appends to a local file, which a blocking write serves without a thread hop.
    fn append(&mut self, batch: &[u8], facts: &BatchFacts, records: u32) -> Result<(), Error> {
        let Some(file) = self.file.as_mut() else {
            return Err(staging_error(
                &self.path,
                &std::io::ErrorKind::NotFound.into(),
            ));
        };
        file.write_all(batch)
            .map_err(|error| staging_error(&self.path, &error))?;
        let meta = &mut self.meta;
        if meta.bytes == 0 {
            meta.first_timestamp = facts.first_timestamp;
        }
        meta.bytes += batch.len() as u64;
        meta.last_offset = facts.last_offset;
        meta.records += u64::from(records);
        meta.max_timestamp = meta.max_timestamp.max(facts.max_timestamp);
        Ok(())
    }

    /// Closes the file, its bytes on disk before it is published.
    fn finish(&mut self) -> Result<(), Error> {
        if let Some(file) = self.file.take() {
            file.sync_data()
                .map_err(|error| staging_error(&self.path, &error))?;
        }
        Ok(())
    }
}

impl BatchSink for BackupSink {
    async fn prepare(&mut self, topics: &[SourceTopic]) -> Result<(), Error> {
        for topic in topics {
            self.record_topic(topic, topic.id.as_deref())?;
            let known = self.prepared.get(&topic.name).copied().unwrap_or(0);
            let new = (known..topic.partitions).map(|p| TopicPartition::new(&*topic.name, p));
            self.unassigned.extend(new);
            self.prepared.insert(topic.name.clone(), topic.partitions);
        }
        Ok(())
    }

    async fn next_change(&mut self) -> Result<Option<Ownership>, Error> {
        if !self.unassigned.is_empty() {
            let partitions = std::mem::take(&mut self.unassigned);
            return Ok(Some(Ownership::Assigned(partitions)));
        }
        if self.prepared.is_empty() && !self.follow {
            // No topic to back up: done.
            return Ok(None);
        }
        // A backup owns every partition it prepared, for good.
        std::future::pending().await
    }

    async fn resume(
        &mut self,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<i64>)>, Error> {
        Ok((partitions.iter())
            .map(|p| {
                let kept = (self.manifest.topics.get(&*p.topic))
                    .and_then(|t| t.partition.get(&p.partition))
                    .and_then(|p| p.next_offset);
                (p.clone(), kept)
            })
            .collect())
    }

    fn max_batch_bytes(&self, _partition: &TopicPartition) -> usize {
        // A segment takes a batch of any size whole.
        usize::MAX
    }

    fn takes_batches_as_stored(&self) -> bool {
        true
    }

    fn lost(&mut self, partition: &TopicPartition, range: Range<i64>) {
        let range = LostRange {
            from: range.start,
            to: range.end,
            noticed_ms: now_ms(),
        };
        self.lost.push((partition.clone(), range));
    }

    async fn begin(&mut self) -> Result<(), Error> {
        Ok(())
    }

    async fn write(
        &mut self,
        partition: &TopicPartition,
        batch: Bytes,
        records: u32,
    ) -> Result<(), Error> {
        let facts = batch_facts(&batch).map_err(|source| Error::Batch {
            partition: partition.clone(),
            offset: layout::EntryHeader::peek_base_offset(&batch).unwrap_or(-1),
            source: Box::new(source),
        })?;
        let segment = self.segment_for(partition, &facts, batch.len() as u64)?;
        segment.append(&batch, &facts, records)
    }

    async fn commit(&mut self, positions: &Positions) -> Result<bool, Error> {
        self.publish().await?;
        for (partition, &at) in positions {
            self.partition_manifest(partition).next_offset = Some(at);
        }
        if self.groups_read.elapsed() >= GROUPS_EVERY {
            self.read_groups().await;
        }
        self.write_manifest().await?;
        Ok(true)
    }

    async fn abort(&mut self) -> Result<(), Error> {
        self.drop_staged();
        Ok(())
    }

    async fn close(mut self) -> Result<(), Error> {
        self.drop_staged();
        self.read_groups().await;
        self.write_manifest().await?;
        let staging = self.store.staging_dir();
        match std::fs::remove_dir_all(staging) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                Err(staging_error(staging, &error))
            }
            _ => Ok(()),
        }
    }
}

/// What the manifest says of one batch, read from its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BatchFacts {
    pub(crate) base_offset: i64,
    pub(crate) last_offset: i64,
    /// The first record's timestamp; -1 when none is known (magic 0).
    pub(crate) first_timestamp: i64,
    pub(crate) max_timestamp: i64,
}

/// Reads a batch's offsets and timestamps: a v2 header directly, unless the log cleaner put
/// a delete horizon where the base timestamp was; a legacy message set through the walk.
pub(crate) fn batch_facts(batch: &[u8]) -> Result<BatchFacts, krec_batch::Error> {
    let be_i64 = |at: usize| {
        batch
            .get(at..at + 8)
            .map(|b| i64::from_be_bytes(b.try_into().expect("8 bytes")))
    };
    let be_i16 = |at: usize| {
        batch
            .get(at..at + 2)
            .map(|b| i16::from_be_bytes([b[0], b[1]]))
    };
    let v2_header = (layout::EntryHeader::peek_magic(batch) == Some(magic::V2)).then(|| {
        (
            be_i64(v2::BASE_TIMESTAMP_AT),
            be_i64(v2::MAX_TIMESTAMP_AT),
            be_i16(v2::ATTRIBUTES_AT),
        )
    });
    if let Some((Some(first), Some(max), Some(attributes))) = v2_header {
        let header = layout::EntryHeader::peek(batch);
        let delta = layout::EntryHeader::peek_last_offset_delta(batch);
        if let (Some(header), Some(delta)) = (header, delta) {
            let whole = header.size() == Some(batch.len());
            if whole && attributes & v2::attributes::DELETE_HORIZON == 0 {
                return Ok(BatchFacts {
                    base_offset: header.base_offset,
                    last_offset: header.base_offset.saturating_add(i64::from(delta)),
                    first_timestamp: first,
                    max_timestamp: max,
                });
            }
        }
    }
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(batch, &config);
    let Some(parsed) = walk.next_ref() else {
        walk.end_of_file()?;
        return Err(krec_batch::Error::Truncated {
            position: 0,
            offset: None,
            available: batch.len(),
            needed: None,
        });
    };
    let parsed = parsed?;
    let first = parsed.records().next().transpose()?;
    Ok(BatchFacts {
        base_offset: parsed.base_offset(),
        last_offset: parsed.last_offset(),
        first_timestamp: first.map_or(parsed.base_timestamp(), |r| r.timestamp()),
        max_timestamp: parsed.max_timestamp(),
    })
}

fn staging_error(path: &std::path::Path, error: &std::io::Error) -> Error {
    Error::Backup {
        file: path.display().to_string(),
        position: None,
        detail: format!("staging file: {error}"),
    }
}

fn now_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    since.map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
#[path = "backup_sink_tests.rs"]
mod tests;
