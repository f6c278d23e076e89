//! [`PartitionChunk::data_batches`]: the chunk's data batches as the bytes the broker sent, for
//! a copy that forwards them (or re-encodes the few it cannot forward) without decoding them.

use bytes::Bytes;
use krec_batch::{BatchSummary, BatchWalk, DecodeConfig};

use super::{ChunkBatches, PartitionChunk};
use crate::Error;

/// One data batch of a chunk as the broker sent it ([`PartitionChunk::data_batches`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataBatch {
    /// What its header says (its magic, timestamp type and record count included: what
    /// [`BatchSummary::copy_shape`] decides on); `position` is its byte position in
    /// [`PartitionChunk::records_bytes`].
    pub summary: BatchSummary,
    /// The whole batch (entry header included): a slice of the fetch response, not a copy.
    pub bytes: Bytes,
}

/// The data batches of a chunk, in order ([`PartitionChunk::data_batches`]).
pub struct DataBatches<'a> {
    chunk: &'a PartitionChunk,
    summaries: ChunkBatches<'a>,
    /// The chunk's limits with the checksum check on, when the chunk's own leave it off.
    checked: Option<DecodeConfig>,
    done: bool,
}

impl PartitionChunk {
    /// The data batches the chunk delivers, in order, each as the bytes the broker sent (a
    /// slice of the fetch response, no copy) with its header's summary: control batches and,
    /// under `read_committed`, aborted transactions left out, as [`PartitionChunk::batches`]
    /// leaves them out. Batches are whole: one that starts before the fetch offset holds
    /// records the chunk does not deliver ([`BatchSummary::copy_shape`] with
    /// [`PartitionChunk::fetch_offset`] says so).
    ///
    /// Every batch's checksum is checked before it is handed out, whatever `check.crcs`
    /// says: a copy must never forward a corrupt batch. A compressed v2 batch is not
    /// decompressed; a legacy message is (no header counts its records). An error (a corrupt
    /// batch, a batch cut short, offsets that stop short of [`PartitionChunk::next_offset`])
    /// ends the iteration.
    ///
    /// ```no_run
    /// # fn copy(chunk: &krec_consumer::PartitionChunk) -> Result<(), krec_consumer::Error> {
    /// use krec_consumer::krec_batch::CopyShape;
    /// for batch in chunk.data_batches() {
    ///     let batch = batch?;
    ///     match batch.summary.copy_shape(chunk.fetch_offset()) {
    ///         CopyShape::Forward => println!("forward {} bytes", batch.bytes.len()),
    ///         CopyShape::Reencode(why) => println!("re-encode: {why:?}"),
    ///         _ => {} // nothing to copy
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn data_batches(&self) -> DataBatches<'_> {
        let config = self.decode_config();
        let checked = (!config.verify_crc).then(|| DecodeConfig {
            verify_crc: true,
            ..config.clone()
        });
        DataBatches {
            chunk: self,
            summaries: self.batches(),
            checked,
            done: false,
        }
    }
}

impl Iterator for DataBatches<'_> {
    type Item = Result<DataBatch, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let summary = match self.summaries.next_data_summary()? {
                Ok(summary) => summary,
                Err(error) => return self.fail(error),
            };
            // A share group's acquired range ends before this batch: not the chunk's.
            if summary.base_offset >= self.chunk.until {
                continue;
            }
            let range = summary.position..summary.position + summary.size;
            let bytes = self.chunk.data.records.slice(range);
            if let Some(config) = &self.checked {
                if let Err(error) = check(&bytes, config) {
                    let error = error.with_input_start(summary.position);
                    return self.fail(self.chunk.decode_error(error));
                }
            }
            return Some(Ok(DataBatch { summary, bytes }));
        }
        None
    }
}

impl DataBatches<'_> {
    fn fail(&mut self, error: Error) -> Option<Result<DataBatch, Error>> {
        self.done = true;
        Some(Err(error))
    }
}

/// Checks one whole batch's checksum (a walk of its summary with `config`, which checks it).
fn check(batch: &[u8], config: &DecodeConfig) -> Result<(), krec_batch::Error> {
    let mut walk = BatchWalk::new(batch, config);
    match walk.next_summary() {
        Some(summary) => summary.map(drop),
        None => walk.end_of_file(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use krec_batch::{ControlKind, CopyShape, DecodeConfig, ReencodeReason};

    use crate::chunk::tests::{chunk, data_batch, interleaved, marker};
    use crate::chunk::PartitionChunk;
    use crate::Error;

    /// (base offset, bytes) of every batch `data_batches` hands out; the iteration's error.
    fn handed_out(chunk: &PartitionChunk) -> (Vec<(i64, Vec<u8>)>, Option<Error>) {
        let mut out = Vec::new();
        for batch in chunk.data_batches() {
            match batch {
                Ok(batch) => {
                    let at = batch.summary.position;
                    assert_eq!(
                        &chunk.records_bytes()[at..][..batch.bytes.len()],
                        batch.bytes
                    );
                    out.push((batch.summary.base_offset, batch.bytes.to_vec()));
                }
                Err(error) => return (out, Some(error)),
            }
        }
        (out, None)
    }

    #[test]
    fn data_batches_are_the_bytes_sent_without_markers_or_aborted_transactions() {
        let batches = interleaved();
        let committed = chunk(&batches, 0, 8, &[(2, 2)], true);
        let (got, error) = handed_out(&committed);
        assert!(error.is_none(), "{error:?}");
        let expected = [0, 2, 5].map(|at| &batches[at]);
        let offsets: Vec<i64> = got.iter().map(|(offset, _)| *offset).collect();
        assert_eq!(offsets, [0, 4, 7]);
        for ((_, bytes), want) in got.iter().zip(expected) {
            assert_eq!(bytes, want, "byte for byte as fetched");
        }
        let (everything, _) = handed_out(&chunk(&batches, 0, 8, &[(2, 2)], false));
        let offsets: Vec<i64> = everything.iter().map(|(offset, _)| *offset).collect();
        assert_eq!(
            offsets,
            [0, 2, 4, 7],
            "read_uncommitted: the aborted batch too"
        );
    }

    #[test]
    fn a_batch_that_starts_before_the_fetch_offset_comes_whole() {
        let batches = [
            data_batch(10, -1, false, &["a", "b", "c"]),
            data_batch(13, -1, false, &["d"]),
        ];
        let c = chunk(&batches, 12, 14, &[], false);
        let all: Vec<_> = c.data_batches().map(Result::unwrap).collect();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].bytes, batches[0]);
        let inside = CopyShape::Reencode(ReencodeReason::StartsBeforeFrom);
        assert_eq!(all[0].summary.copy_shape(c.fetch_offset()), inside);
        assert_eq!(
            all[1].summary.copy_shape(c.fetch_offset()),
            CopyShape::Forward
        );
        // Wholly before the fetch offset: not handed out.
        let past = chunk(&batches, 13, 14, &[], false);
        assert_eq!(past.data_batches().count(), 1);
        // A share group's range that ends before the second batch.
        let bounded = chunk(&batches, 10, 14, &[], false).with_until(13);
        let offsets: Vec<i64> = (bounded.data_batches())
            .map(|batch| batch.unwrap().summary.base_offset)
            .collect();
        assert_eq!(offsets, [10]);
    }

    #[test]
    fn a_corrupt_batch_is_an_error_even_when_checksums_are_off() {
        let mut corrupt = data_batch(1, -1, false, &["b"]);
        *corrupt.last_mut().unwrap() ^= 0x21;
        let batches = [data_batch(0, -1, false, &["a"]), corrupt];
        let unchecked = DecodeConfig {
            verify_crc: false,
            ..DecodeConfig::default()
        };
        let c = chunk(&batches, 0, 2, &[], false).with_decode(Arc::new(unchecked));
        let (got, error) = handed_out(&c);
        assert_eq!(got.len(), 1, "the sound batch before it");
        let error = error.expect("the corrupt batch stops the iteration");
        assert!(
            matches!(
                &error,
                Error::Decode { topic, partition: 0, source: krec_batch::Error::ChecksumMismatch { offset: 1, position, .. }, .. }
                    if topic == "t" && *position == batches[0].len()
            ),
            "{error}"
        );
        assert!(c.data_batches().nth(1).unwrap().is_err());
    }

    #[test]
    fn a_chunk_cut_or_short_of_its_end_is_an_error() {
        let whole = data_batch(0, -1, false, &["a"]);
        let second = data_batch(1, -1, false, &["b"]);
        let cut = chunk(&[whole.clone(), second[..30].to_vec()], 0, 1, &[], false);
        let (got, error) = handed_out(&cut);
        assert_eq!(got.len(), 1);
        assert!(
            matches!(&error, Some(Error::CutBatch { position, .. }) if *position == whole.len()),
            "{error:?}"
        );
        let short = chunk(
            &[whole, marker(1, 3, ControlKind::Commit)],
            0,
            5,
            &[],
            false,
        );
        let (got, error) = handed_out(&short);
        assert_eq!(got.len(), 1, "the marker is passed, not handed out");
        assert!(
            matches!(
                error,
                Some(Error::OffsetGap {
                    expected: 5,
                    actual: 2,
                    ..
                })
            ),
            "{error:?}"
        );
    }
}
