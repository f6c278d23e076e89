//! A share group's chunk: the records of one acquired range of one partition, with their
//! delivery count. Records the leader returned in the same batches but did not acquire for
//! this member are not delivered.

use std::ops::Deref;
use std::sync::Arc;

use bytes::Bytes;
use krec_batch::layout::{self, EntryHeader};
use krec_batch::DecodeConfig;
use krec_client::share::AcquiredRange;
use uuid::Uuid;

use tokio::sync::OwnedSemaphorePermit;

use super::acks::PartitionKey;
use crate::chunk::PartitionChunk;
use crate::cursor::ChunkData;
use crate::fetch_loop::take_budget;

/// The records of one range acquired for this member: a [`PartitionChunk`] (read it with
/// [`PartitionChunk::records`] or [`PartitionChunk::batches`]) that delivers offsets
/// [`PartitionChunk::fetch_offset`]`..`[`PartitionChunk::until_offset`] only.
///
/// Acknowledge it with [`ShareConsumer::ack`](super::ShareConsumer::ack) or its records one
/// by one with [`ShareConsumer::ack_record`](super::ShareConsumer::ack_record); what is not
/// acknowledged is released at [`ShareConsumer::close`](super::ShareConsumer::close), or
/// comes back to the group when its acquisition lock runs out. While the chunk is alive it
/// counts against the consumer's buffer budget: a member holding chunks up to the budget
/// acquires no more records until one is dropped.
#[derive(Debug)]
pub struct ShareChunk {
    chunk: PartitionChunk,
    topic_id: Uuid,
    delivery_count: i16,
    /// The generation of the share session the records were acquired in (acknowledgements
    /// for an older one are dropped: the leader released those records when it ended).
    pub(super) generation: u64,
}

impl ShareChunk {
    /// How many times these records have been delivered, this time included (1 the first
    /// time; more after a release, a lock that ran out, or a member that died holding them).
    pub fn delivery_count(&self) -> i16 {
        self.delivery_count
    }

    /// The chunk's topic id (the key of its acknowledgements).
    pub(crate) fn topic_id(&self) -> Uuid {
        self.topic_id
    }

    /// The first offset of the acquired range.
    pub fn first_offset(&self) -> i64 {
        self.chunk.fetch_offset()
    }

    /// The last offset of the acquired range (inclusive).
    pub fn last_offset(&self) -> i64 {
        self.chunk.until_offset() - 1
    }

    /// Counts the corrupt batches skipped in this chunk into `metrics`.
    pub(super) fn with_metrics(mut self, metrics: Arc<crate::metrics::Metrics>) -> Self {
        self.chunk = self.chunk.with_metrics(metrics);
        self
    }

    /// The chunk as the consumer's chunk type.
    pub fn chunk(&self) -> &PartitionChunk {
        &self.chunk
    }
}

impl Deref for ShareChunk {
    type Target = PartitionChunk;

    fn deref(&self) -> &PartitionChunk {
        &self.chunk
    }
}

/// Where the batches overlapping `first..=last` lie in `records`: their byte span, the offset
/// after the last of them, and the last offset they cover (at most `last`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct RangeSpan {
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// Where the last of the batches starts: the next (higher) range can begin in it.
    pub(crate) last_batch: usize,
    pub(crate) next_offset: i64,
    pub(crate) last_covered: i64,
}

/// Finds the complete batches of `records` that overlap `first..=last`, by entry headers only,
/// looking from byte `from` on (where an earlier, lower range's last batch starts).
pub(crate) fn range_span(records: &[u8], from: usize, first: i64, last: i64) -> Option<RangeSpan> {
    let mut position = from;
    let mut span: Option<RangeSpan> = None;
    while position < records.len() {
        let rest = &records[position..];
        let (Some(entry), Some(magic)) = (EntryHeader::peek(rest), EntryHeader::peek_magic(rest))
        else {
            break;
        };
        let size = layout::ENTRY_HEADER_SIZE.saturating_add(entry.length.max(0) as usize);
        if entry.length < 0 || rest.len() < size {
            break;
        }
        let (base, next) = if magic == layout::magic::V2 {
            let delta = EntryHeader::peek_last_offset_delta(rest).unwrap_or(0);
            let next = entry
                .base_offset
                .saturating_add(i64::from(delta))
                .saturating_add(1);
            (entry.base_offset, next)
        } else {
            (entry.base_offset, entry.base_offset.saturating_add(1))
        };
        if base > last {
            break;
        }
        if next > first {
            let found = span.get_or_insert(RangeSpan {
                start: position,
                end: position,
                last_batch: position,
                next_offset: next,
                last_covered: last,
            });
            found.end = position + size;
            found.last_batch = position;
            found.next_offset = next;
            found.last_covered = (next - 1).min(last);
        }
        position += size;
    }
    span
}

/// Where the chunks of one partition's answer belong.
#[derive(Debug)]
pub(crate) struct ChunkPlace<'a> {
    pub(crate) topic: &'a Arc<str>,
    pub(crate) key: PartitionKey,
    pub(crate) decode: &'a Arc<DecodeConfig>,
    /// The share session the records were acquired in.
    pub(crate) generation: u64,
}

/// The chunks of one partition's acquired ranges, each cut to the batches it overlaps and
/// holding its bytes' share of `budget`; the ranges (or their tails) that no returned batch
/// covers come back in the second list, to be released unseen.
pub(crate) fn share_chunks(
    place: &ChunkPlace<'_>,
    records: &Bytes,
    acquired: &[AcquiredRange],
    budget: &mut Option<OwnedSemaphorePermit>,
) -> (Vec<ShareChunk>, Vec<(i64, i64)>) {
    let ChunkPlace {
        topic,
        key: (topic_id, partition),
        decode,
        generation,
    } = *place;
    let mut chunks = Vec::with_capacity(acquired.len());
    let mut uncovered = Vec::new();
    // The ranges are ordered and disjoint (checked with the response): each scan goes on from
    // the last batch of the one before, so the record bytes are walked once.
    let mut from = 0;
    for range in acquired {
        let Some(span) = range_span(records, from, range.first_offset, range.last_offset) else {
            uncovered.push((range.first_offset, range.last_offset));
            continue;
        };
        from = span.last_batch;
        if span.last_covered < range.last_offset {
            uncovered.push((span.last_covered + 1, range.last_offset));
        }
        let data = ChunkData {
            fetch_offset: range.first_offset,
            next_offset: span.next_offset,
            high_watermark: -1,
            last_stable_offset: -1,
            aborted: Vec::new(),
            records: records.slice(span.start..span.end),
        };
        let permit = take_budget(budget, data.records.len());
        let chunk = PartitionChunk::new(topic.clone(), partition, 0, data, false, permit)
            .with_decode(decode.clone())
            .with_until(span.last_covered + 1);
        chunks.push(ShareChunk {
            chunk,
            topic_id,
            delivery_count: range.delivery_count,
            generation,
        });
    }
    (chunks, uncovered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use krec_batch::encode::BatchBuilder;

    fn batches(starts: &[(i64, u8)]) -> Bytes {
        let mut bytes = Vec::new();
        for &(base, count) in starts {
            let mut builder = BatchBuilder::new(base);
            for i in 0..count {
                builder = builder.record(None, Some(&[i]), &[]);
            }
            bytes.extend(builder.build());
        }
        Bytes::from(bytes)
    }

    fn chunks_of(
        topic: &Arc<str>,
        records: &Bytes,
        acquired: &[AcquiredRange],
        decode: &Arc<DecodeConfig>,
    ) -> (Vec<ShareChunk>, Vec<(i64, i64)>) {
        let place = ChunkPlace {
            topic,
            key: (Uuid::nil(), 0),
            decode,
            generation: 1,
        };
        share_chunks(&place, records, acquired, &mut None)
    }

    fn offsets(chunk: &ShareChunk) -> Vec<i64> {
        chunk.records().map(|r| r.unwrap().offset()).collect()
    }

    #[test]
    fn only_the_acquired_offsets_are_delivered() {
        // Batches 0..=4, 5..=9, 10..=14; this member acquired 3..=6 and 12..=12.
        let records = batches(&[(0, 5), (5, 5), (10, 5)]);
        let acquired = [
            AcquiredRange {
                first_offset: 3,
                last_offset: 6,
                delivery_count: 1,
            },
            AcquiredRange {
                first_offset: 12,
                last_offset: 12,
                delivery_count: 2,
            },
        ];
        let topic: Arc<str> = Arc::from("t");
        let config = Arc::new(DecodeConfig::default());
        let (chunks, uncovered) = chunks_of(&topic, &records, &acquired, &config);
        assert!(uncovered.is_empty());
        assert_eq!(offsets(&chunks[0]), [3, 4, 5, 6]);
        assert_eq!((chunks[0].first_offset(), chunks[0].last_offset()), (3, 6));
        assert_eq!(chunks[0].count_records().unwrap(), 4);
        assert_eq!(offsets(&chunks[1]), [12]);
        assert_eq!(chunks[1].delivery_count(), 2);
        assert_eq!(chunks[1].count_records().unwrap(), 1);
        let mut in_place = Vec::new();
        chunks[0]
            .batches()
            .try_for_each_ref(|batch| {
                let mut records = batch.records_in_place();
                while let Some(record) = records.next_ref() {
                    in_place.push(record?.offset());
                }
                Ok::<_, crate::Error>(std::ops::ControlFlow::Continue(()))
            })
            .unwrap();
        assert_eq!(in_place, [3, 4, 5, 6]);
    }

    #[test]
    fn offsets_no_batch_covers_are_handed_back() {
        let records = batches(&[(0, 5)]);
        let acquired = [
            AcquiredRange {
                first_offset: 2,
                last_offset: 9,
                delivery_count: 1,
            },
            AcquiredRange {
                first_offset: 20,
                last_offset: 29,
                delivery_count: 1,
            },
        ];
        let topic: Arc<str> = Arc::from("t");
        let config = Arc::new(DecodeConfig::default());
        let (chunks, uncovered) = chunks_of(&topic, &records, &acquired, &config);
        assert_eq!(chunks.len(), 1);
        assert_eq!(offsets(&chunks[0]), [2, 3, 4]);
        assert_eq!(uncovered, [(5, 9), (20, 29)]);
    }

    #[test]
    fn ranges_sharing_a_batch_each_get_their_records() {
        // Batches 0..=4 and 5..=9; 3..=6 and 7..=8 both lie in the second batch.
        let records = batches(&[(0, 5), (5, 5)]);
        let range = |first_offset, last_offset| AcquiredRange {
            first_offset,
            last_offset,
            delivery_count: 1,
        };
        let acquired = [range(3, 6), range(7, 8)];
        let topic: Arc<str> = Arc::from("t");
        let config = Arc::new(DecodeConfig::default());
        let (chunks, uncovered) = chunks_of(&topic, &records, &acquired, &config);
        assert!(uncovered.is_empty());
        assert_eq!(offsets(&chunks[0]), [3, 4, 5, 6]);
        assert_eq!(offsets(&chunks[1]), [7, 8]);
    }

    #[test]
    fn a_cut_or_hostile_batch_ends_the_span() {
        let records = batches(&[(0, 3), (3, 3)]);
        let cut = records.slice(..records.len() - 1);
        let span = range_span(&cut, 0, 0, 5).unwrap();
        assert_eq!((span.next_offset, span.last_covered), (3, 2));
        let mut hostile = records.to_vec();
        hostile[8..12].copy_from_slice(&(-5i32).to_be_bytes());
        assert_eq!(range_span(&hostile, 0, 0, 5), None);
    }
}
