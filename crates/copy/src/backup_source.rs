//! A backup as the source of a restore: the segments its manifest lists (never a file it does
//! not, so a crashed backup's leftovers are never read), each read in ranges so that no whole
//! segment is ever in memory, its batches walked with their CRCs checked and handed on as
//! they are. A segment that is not what the manifest says stops the restore at the byte where
//! it goes wrong, naming the file, unless corrupt batches are to be skipped.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use krec_batch::layout::{self, magic, EntryHeader, ENTRY_HEADER_SIZE, MAGIC_AT};
use krec_batch::{reencode_range, BatchSummary, BatchWalk, DecodeConfig, OnCorrupt, WalkEnd};
use krec_client::TopicPartition;
use krec_consumer::TopicSubscription;

use crate::ends::{BatchSource, Positions, SourceBatch, SourceRun, SourceTopic};
use crate::manifest::{Manifest, PartitionManifest, SegmentManifest, MANIFEST};
use crate::store::Store;
use crate::Error;

/// Bytes of a segment read at once; a batch larger than this is read whole.
const RANGE_BYTES: u64 = 1 << 20;

/// The batches a backup holds, partition by partition.
pub struct BackupSource {
    store: Store,
    manifest: Manifest,
    /// The backed-up topics this restore takes.
    topics: Vec<String>,
    /// Each partition stops at its first record stamped at or after this time (ms).
    until: Option<i64>,
    on_corrupt: OnCorrupt,
    decode: DecodeConfig,
    range_bytes: u64,
    cursors: BTreeMap<TopicPartition, Cursor>,
    /// The partition read last: the next read takes the one after it.
    last_read: Option<TopicPartition>,
    /// Warnings given: corrupt batches skipped, records older than the target's retention.
    warnings: Arc<AtomicU64>,
    /// Corrupt batches skipped.
    skipped: Arc<AtomicU64>,
    /// The error met after the batches of the last run: the next read gives it.
    pending: Option<Error>,
}

/// Where a partition's reading stands.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Cursor {
    /// The next source offset to hand on.
    position: i64,
    /// The segment being read (an index into the partition's segments) and the byte in it.
    segment: usize,
    byte: u64,
    /// Whether that segment's size was found to be the manifest's.
    checked: bool,
    ended: bool,
}

impl Cursor {
    fn ended(position: i64) -> Self {
        Cursor {
            position,
            segment: 0,
            byte: 0,
            checked: false,
            ended: true,
        }
    }
}

/// What one range's walk yields.
#[derive(Default)]
struct Walked {
    batches: Vec<SourceBatch>,
    /// Bytes of the range walked (whole batches).
    walked: usize,
    /// The last offset of the last batch walked, if any.
    last_offset: Option<i64>,
    /// Where the partition stops (`until`), if it does in this range.
    cut: Option<i64>,
    /// What stopped the walk at the byte after the batches walked: given once they are.
    error: Option<Error>,
}

impl BackupSource {
    /// A source over the backup in `store` whose manifest is `manifest`, taking the topics
    /// `topics` selects (all when `None`); a topic it names that the backup lacks is an error.
    pub(crate) fn new(
        store: Store,
        manifest: Manifest,
        topics: Option<&TopicSubscription>,
        until: Option<i64>,
        on_corrupt: OnCorrupt,
        decode: DecodeConfig,
    ) -> Result<Self, Error> {
        if let Some(subscription) = topics {
            let missing = (subscription.names().iter()).find(|n| !manifest.topics.contains_key(*n));
            if let Some(name) = missing {
                return Err(Error::Backup {
                    file: store.describe(MANIFEST),
                    position: None,
                    detail: format!("topic {name} is not in this backup"),
                });
            }
        }
        let topics = (manifest.topics.keys())
            .filter(|name| topics.is_none_or(|s| s.matches(name, false)))
            .cloned()
            .collect();
        Ok(BackupSource {
            store,
            manifest,
            topics,
            until,
            on_corrupt,
            decode,
            range_bytes: RANGE_BYTES,
            cursors: BTreeMap::new(),
            last_read: None,
            warnings: Arc::new(AtomicU64::new(0)),
            skipped: Arc::new(AtomicU64::new(0)),
            pending: None,
        })
    }

    /// The backed-up topics this source gives.
    pub(crate) fn topic_names(&self) -> &[String] {
        &self.topics
    }

    /// The backup's manifest.
    pub(crate) fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Counts the warnings given (corrupt batches skipped, records older than a target
    /// topic's retention), readable while the restore runs and after it.
    pub fn warnings(&self) -> Arc<AtomicU64> {
        self.warnings.clone()
    }

    /// Counts the corrupt batches skipped (when asked to skip them).
    pub fn corrupt_skipped(&self) -> Arc<AtomicU64> {
        self.skipped.clone()
    }

    #[cfg(test)]
    fn set_range_bytes(&mut self, bytes: u64) {
        self.range_bytes = bytes;
    }

    fn partition(&self, partition: &TopicPartition) -> Option<&PartitionManifest> {
        let topic = self.manifest.topics.get(&*partition.topic)?;
        topic.partition.get(&partition.partition)
    }

    /// A cursor at `at` (`None`: the first offset kept).
    fn cursor_at(&self, partition: &TopicPartition, at: Option<i64>) -> Cursor {
        let Some(kept) = self.partition(partition) else {
            return Cursor::ended(at.unwrap_or(0));
        };
        let end = end_offset(kept);
        let position = at.or(kept.first_offset()).unwrap_or(end);
        match kept.segments.iter().position(|s| s.last_offset >= position) {
            Some(segment) if position < end => Cursor {
                position,
                segment,
                byte: 0,
                checked: false,
                ended: false,
            },
            _ => Cursor::ended(position),
        }
    }

    /// The next partition with something left to read, after the one read last.
    fn next_partition(&self) -> Option<TopicPartition> {
        let open = || self.cursors.iter().filter(|(_, c)| !c.ended);
        let after = self
            .last_read
            .as_ref()
            .and_then(|last| open().find(|(p, _)| *p > last).map(|(p, _)| p.clone()));
        after.or_else(|| open().next().map(|(p, _)| p.clone()))
    }

    /// Reads the next range of `partition`: a run if it moved the partition on.
    async fn read_partition(
        &mut self,
        partition: &TopicPartition,
    ) -> Result<Option<SourceRun>, Error> {
        let cursor = self.cursors[partition].clone();
        let Some(kept) = self.partition(partition) else {
            return Ok(None);
        };
        let (segment, end) = (kept.segments[cursor.segment].clone(), end_offset(kept));
        let segments = kept.segments.len();
        if !cursor.checked {
            self.check_size(&segment).await?;
            if let Some(open) = self.cursors.get_mut(partition) {
                open.checked = true;
            }
        }
        let (start, chunk) = (cursor.byte, self.read_chunk(&segment, cursor.byte).await?);
        let mut walked = self.walk(partition, &segment, start, &chunk, cursor.position);
        let mut next = Cursor {
            byte: start + walked.walked as u64,
            checked: true,
            ..cursor.clone()
        };
        if let Some(last) = walked.last_offset {
            next.position = next.position.max(last + 1);
        }
        if let Some(cut) = walked.cut {
            next = Cursor::ended(cut);
        } else if next.byte >= segment.bytes {
            (next.segment, next.byte, next.checked) = (next.segment + 1, 0, false);
            if next.segment == segments {
                next = Cursor::ended(next.position.max(end));
            }
        }
        let moved = next.position != cursor.position;
        self.cursors.insert(partition.clone(), next.clone());
        if let Some(error) = walked.error.take() {
            // The batches before the error go on first (and commit): nothing after them.
            if walked.batches.is_empty() && !moved {
                return Err(error);
            }
            self.pending = Some(error);
        }
        if walked.batches.is_empty() && !moved {
            return Ok(None);
        }
        Ok(Some(SourceRun {
            partition: partition.clone(),
            from_offset: cursor.position,
            batches: walked.batches,
            next_offset: next.position,
        }))
    }

    /// A segment of another size than the manifest's is cut short or not this backup's.
    async fn check_size(&self, segment: &SegmentManifest) -> Result<(), Error> {
        let size = self.store.size(&segment.file).await?;
        if size == Some(segment.bytes) {
            return Ok(());
        }
        let (position, found) = match size {
            Some(size) => (size.min(segment.bytes), format!("is {size} bytes")),
            None => (0, "is missing".to_owned()),
        };
        Err(Error::Backup {
            file: self.store.describe(&segment.file),
            position: Some(position),
            detail: format!(
                "the file {found}, the manifest says {} bytes: truncated, or not this \
                 backup's; nothing of it was restored",
                segment.bytes
            ),
        })
    }

    /// Bytes of `segment` from `start`: a range, or the whole first batch if it is larger.
    async fn read_chunk(&self, segment: &SegmentManifest, start: u64) -> Result<Bytes, Error> {
        let end = segment.bytes.min(start + self.range_bytes);
        let chunk = self.store.read_range(&segment.file, start..end).await?;
        let first = chunk
            .first_chunk::<ENTRY_HEADER_SIZE>()
            .map(EntryHeader::read);
        let whole = first.and_then(|head| head.size()).map(|size| size as u64);
        match whole {
            Some(size)
                if size > chunk.len() as u64
                    && size <= self.decode.max_batch_bytes as u64
                    && start + size <= segment.bytes =>
            {
                self.store
                    .read_range(&segment.file, start..start + size)
                    .await
            }
            _ => Ok(chunk),
        }
    }

    /// Walks the whole batches of `chunk` (read from byte `start` of `segment`), keeping
    /// those that reach `position`, up to the first that is not sound.
    fn walk(
        &self,
        partition: &TopicPartition,
        segment: &SegmentManifest,
        start: u64,
        chunk: &Bytes,
        position: i64,
    ) -> Walked {
        let file = || self.store.describe(&segment.file);
        let mut walk = BatchWalk::new(chunk, &self.decode);
        let mut walked = Walked::default();
        loop {
            let summary = match walk.next_summary() {
                None => break,
                Some(Ok(summary)) => summary,
                Some(Err(error)) => {
                    let at = start + walk.position() as u64;
                    let error = error.with_input_start(start as usize);
                    let skipped = match walk.skip_failed(self.on_corrupt, error) {
                        Ok(skipped) => skipped,
                        Err(error) => {
                            walked.error = Some(corrupt(file(), at, &error));
                            return walked;
                        }
                    };
                    self.warnings.fetch_add(1, Ordering::Relaxed);
                    self.skipped.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        file = %file(), position = at, %partition,
                        offsets = %format!("{}..{}", skipped.span.base_offset, skipped.span.last_offset),
                        error = %skipped.error, "skipped a corrupt batch"
                    );
                    walked.walked = walk.position();
                    walked.last_offset = Some(skipped.span.last_offset);
                    continue;
                }
            };
            walked.walked = walk.position();
            walked.last_offset = Some(summary.last_offset);
            if summary.last_offset < position {
                continue;
            }
            let bytes = chunk.slice(summary.position..summary.position + summary.size);
            let batch = SourceBatch { summary, bytes };
            if let Some(until) = self.until {
                let at = start + summary.position as u64;
                match cut_at(&batch, position, until, &self.decode) {
                    Ok(None) => {}
                    Ok(Some((cut, before))) => {
                        walked.batches.extend(before);
                        walked.cut = Some(cut);
                        return walked;
                    }
                    Err(error) => {
                        let error = error.with_input_start(at as usize);
                        walked.walked = summary.position;
                        walked.last_offset = walked.batches.last().map(|b| b.summary.last_offset);
                        walked.error = Some(corrupt(file(), at, &error));
                        return walked;
                    }
                }
            }
            walked.batches.push(batch);
        }
        walked.error = self.check_end(&walk, segment, start, chunk.len()).err();
        walked
    }

    /// A batch cut off by the end of the file is a truncated segment.
    fn check_end(
        &self,
        walk: &BatchWalk<'_>,
        segment: &SegmentManifest,
        start: u64,
        len: usize,
    ) -> Result<(), Error> {
        let Some(WalkEnd::Partial {
            position, needed, ..
        }) = walk.end()
        else {
            return Ok(());
        };
        let at_end = start + len as u64 >= segment.bytes;
        if !at_end && position > 0 {
            return Ok(());
        }
        let needed = needed.map_or_else(|| "a header".to_owned(), |n| format!("{n} bytes"));
        Err(Error::Backup {
            file: self.store.describe(&segment.file),
            position: Some(start + position as u64),
            detail: format!(
                "a batch is cut off: it needs {needed}, the file ends {} bytes after its start \
                 (a truncated or corrupt segment)",
                segment.bytes - (start + position as u64)
            ),
        })
    }
}

/// The offset after a partition's last kept record (past markers left out).
fn end_offset(kept: &PartitionManifest) -> i64 {
    let after_last = kept.last_offset().map_or(0, |last| last + 1);
    kept.next_offset.unwrap_or(after_last).max(after_last)
}

fn corrupt(file: String, position: u64, error: &krec_batch::Error) -> Error {
    Error::Backup {
        file,
        position: Some(position),
        detail: format!(
            "corrupt batch, nothing from it on was restored ({error}); to restore past it, skip \
             corrupt batches"
        ),
    }
}

/// Where `batch` stops a restore to `until` (its first record at or after `position` stamped
/// at or after `until`), and its records before that, re-encoded; `None` when it goes whole.
fn cut_at(
    batch: &SourceBatch,
    position: i64,
    until: i64,
    decode: &DecodeConfig,
) -> Result<Option<(i64, Vec<SourceBatch>)>, krec_batch::Error> {
    let summary = &batch.summary;
    if summary.control || max_timestamp(summary, &batch.bytes).is_some_and(|max| max < until) {
        return Ok(None);
    }
    let Some(decoded) = BatchWalk::new(&batch.bytes, decode).next().transpose()? else {
        return Ok(None);
    };
    let mut cut = None;
    for record in decoded.records() {
        let record = record?;
        if record.offset() >= position && record.timestamp() >= until {
            cut = Some(record.offset());
            break;
        }
    }
    let Some(cut) = cut else {
        return Ok(None);
    };
    let mut before = Vec::new();
    let max_batch_bytes = decode.max_batch_bytes;
    reencode_range(
        &batch.bytes,
        position..cut,
        max_batch_bytes,
        decode,
        |written| {
            let mut bytes = written.batch;
            // The base offset is outside the CRC: the copy goes on from the record's own offset.
            bytes[..8].copy_from_slice(&written.first_offset.to_be_bytes());
            let bytes = Bytes::from_owner(bytes);
            let summary = BatchWalk::new(&bytes, decode).next_summary().transpose()?;
            if let Some(summary) = summary {
                before.push(SourceBatch { summary, bytes });
            }
            Ok::<(), krec_batch::Error>(())
        },
    )?;
    Ok(Some((cut, before)))
}

/// A v2 batch's largest timestamp, read from its header.
fn max_timestamp(summary: &BatchSummary, bytes: &[u8]) -> Option<i64> {
    let at = layout::v2::MAX_TIMESTAMP_AT;
    let field = bytes.get(at..at + 8)?;
    (bytes.get(MAGIC_AT) == Some(&magic::V2) && summary.magic == magic::V2)
        .then(|| i64::from_be_bytes(field.try_into().expect("8 bytes")))
}

impl BatchSource for BackupSource {
    async fn topics(&mut self) -> Result<Vec<SourceTopic>, Error> {
        let topics = (self.topics.iter()).map(|name| {
            let kept = &self.manifest.topics[name];
            SourceTopic {
                name: name.clone(),
                id: kept.topic_id.clone(),
                partitions: kept.partitions,
                configs: (kept.configs.iter())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            }
        });
        Ok(topics.collect())
    }

    async fn assign(&mut self, partitions: &[(TopicPartition, Option<i64>)]) -> Result<(), Error> {
        for (partition, at) in partitions {
            let cursor = self.cursor_at(partition, *at);
            self.cursors.insert(partition.clone(), cursor);
        }
        Ok(())
    }

    fn unassign(&mut self, partitions: &[TopicPartition]) {
        for partition in partitions {
            self.cursors.remove(partition);
        }
    }

    fn rewind(&mut self, positions: &Positions) -> Result<(), Error> {
        for (partition, &at) in positions {
            if self.cursors.contains_key(partition) {
                let cursor = self.cursor_at(partition, Some(at));
                self.cursors.insert(partition.clone(), cursor);
            }
        }
        Ok(())
    }

    async fn next_run(&mut self) -> Result<Option<SourceRun>, Error> {
        if let Some(error) = self.pending.take() {
            return Err(error);
        }
        loop {
            let Some(partition) = self.next_partition() else {
                return Ok(None);
            };
            self.last_read = Some(partition.clone());
            if let Some(run) = self.read_partition(&partition).await? {
                return Ok(Some(run));
            }
        }
    }

    fn lag(&self) -> Vec<(TopicPartition, i64)> {
        (self.cursors.iter())
            .map(|(partition, cursor)| {
                let left = match (cursor.ended, self.partition(partition)) {
                    (false, Some(kept)) => (end_offset(kept) - cursor.position).max(0),
                    _ => 0,
                };
                (partition.clone(), left)
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "backup_source_tests.rs"]
mod tests;
