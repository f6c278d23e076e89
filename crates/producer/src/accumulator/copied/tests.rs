//! A copied batch in the accumulator, without a network: it goes behind the records sent
//! before it, takes the next sequences, keeps its records' bytes, counts in the stats and
//! `buffer.memory`, and fails whole on MESSAGE_TOO_LARGE.

use krec_batch::encode::BatchBuilder;
use krec_batch::layout::v2::HEADER_SIZE;
use krec_batch::{BatchWalk, Compression, DecodeConfig};
use krec_client::produce::ProduceErrorKind;

use super::super::tests::{bench, outcome, Bench, MEMORY};
use super::super::Request;
use crate::copied::check;
use crate::{Error, ProducerConfig};

/// Three records, lz4, stamped by another producer in a transaction at another offset.
fn stored_batch() -> Vec<u8> {
    let header: &[(&[u8], Option<&[u8]>)] = &[(b"trace", Some(b"00-1"))];
    BatchBuilder::new(1234)
        .compression(Compression::Lz4)
        .producer(99, 1, 50)
        .transactional(true)
        .partition_leader_epoch(5)
        .base_timestamp(1_700_000_000_000)
        .record(Some(b"k1"), Some(b"v1"), header)
        .record(Some(b"k2"), Some(b"v2"), &[])
        .record(None, Some(b"v3"), header)
        .build()
}

impl Bench {
    /// Queues `batch` on partition 0 of `t` as `send_batch` does, taking its memory.
    fn send_batch(&mut self, batch: &[u8]) -> crate::Delivery {
        let config = ProducerConfig::new(vec!["b:9092".to_owned()]);
        let checked = check("t", 0, batch, &config).expect("a batch to send");
        let held = batch.len() as u64;
        self.accumulator
            .memory
            .try_acquire_many(held as u32)
            .expect("memory")
            .forget();
        self.accumulator
            .append_copied(&checked, held, self.now)
            .expect("append_copied")
            .expect("a known topic")
            .delivery
    }
}

/// The drained batch's bytes, checked whole (CRC included).
fn drained_bytes(request: &Request) -> bytes::Bytes {
    let bytes = request.topics[0].partitions[0].batch.clone();
    let config = DecodeConfig::default();
    let batch = BatchWalk::new(&bytes, &config).next().expect("a batch");
    batch.expect("a batch whose CRC holds");
    bytes
}

#[tokio::test]
async fn a_copied_batch_goes_behind_the_open_one_with_the_next_sequences_and_its_records() {
    let mut bench = bench();
    let before = bench.send("a");
    let stored = stored_batch();
    let copied = bench.send_batch(&stored);
    let after = bench.send("d");

    let request = bench.drain().expect("the open batch, closed first");
    assert_eq!(Bench::only_batch(&request), (3, 0, "a".to_owned()));
    bench.answer(request, Ok(0));
    let request = bench.drain().expect("the copied batch");
    let sent = drained_bytes(&request);
    assert_eq!(
        &sent[HEADER_SIZE..],
        &stored[HEADER_SIZE..],
        "records untouched"
    );
    let config = DecodeConfig::default();
    let batch = BatchWalk::new(&sent, &config).next().unwrap().unwrap();
    assert_eq!(
        (
            batch.base_offset(),
            batch.producer_id(),
            batch.producer_epoch()
        ),
        (0, 7, 3)
    );
    assert_eq!(
        (batch.base_sequence(), batch.is_transactional()),
        (1, false)
    );
    assert_eq!(
        (batch.compression(), batch.record_count()),
        (Compression::Lz4, 3)
    );
    bench.answer(request, Ok(1));
    let request = bench.drain().expect("the record sent after it");
    assert_eq!(Bench::only_batch(&request), (3, 4, "d".to_owned()));
    bench.answer(request, Ok(4));

    assert_eq!(outcome(before).await.unwrap(), 0);
    let delivered = copied.await.expect("delivered");
    assert_eq!(
        (delivered.offset(), delivered.timestamp()),
        (1, 1_700_000_000_000)
    );
    assert_eq!(outcome(after).await.unwrap(), 4);
    let stats = bench.accumulator.counters.snapshot();
    assert_eq!(
        (stats.records_acknowledged, stats.batches_acknowledged),
        (5, 3)
    );
    assert_eq!(bench.free_memory(), MEMORY, "every byte given back");
}

#[tokio::test]
async fn message_too_large_fails_a_copied_batch_whole_and_the_next_gets_a_new_epoch() {
    let mut bench = bench();
    let copied = bench.send_batch(&stored_batch());
    let after = bench.send("d");
    let request = bench.drain().expect("the copied batch");
    bench.answer(request, Err(ProduceErrorKind::MessageTooLarge));
    let error = outcome(copied).await.unwrap_err();
    assert!(
        matches!(&error, Error::MessageTooLarge { records: 3, detail, .. }
            if detail.contains("send_batch goes whole")),
        "{error:?}"
    );
    let request = bench
        .drain()
        .expect("the next batch, not a part of the copied one");
    assert_eq!(Bench::only_batch(&request), (4, 0, "d".to_owned()));
    bench.answer(request, Ok(7));
    assert_eq!(outcome(after).await.unwrap(), 7);
    let stats = bench.accumulator.counters.snapshot();
    assert_eq!((stats.records_failed, stats.batches_split), (3, 0));
    assert_eq!(bench.free_memory(), MEMORY);
}

#[tokio::test]
async fn an_epoch_bump_restamps_a_waiting_copied_batch_and_keeps_its_records() {
    let mut bench = bench();
    let first = bench.send("a");
    let stored = stored_batch();
    let copied = bench.send_batch(&stored);
    let request = bench.drain().expect("a ready batch");
    bench.answer(request, Err(ProduceErrorKind::UnknownProducerId));
    let request = bench
        .drain()
        .expect("the first batch again, after the bump");
    assert_eq!(Bench::only_batch(&request), (4, 0, "a".to_owned()));
    bench.answer(request, Ok(20));
    let request = bench.drain().expect("the copied batch, re-stamped");
    let sent = drained_bytes(&request);
    assert_eq!(&sent[HEADER_SIZE..], &stored[HEADER_SIZE..]);
    let config = DecodeConfig::default();
    let batch = BatchWalk::new(&sent, &config).next().unwrap().unwrap();
    assert_eq!((batch.producer_epoch(), batch.base_sequence()), (4, 1));
    bench.answer(request, Ok(21));
    assert_eq!(outcome(first).await.unwrap(), 20);
    assert_eq!(outcome(copied).await.unwrap(), 21);
}

#[tokio::test]
async fn a_copied_batch_for_a_partition_the_topic_lacks_is_refused() {
    let mut bench = bench();
    let stored = stored_batch();
    let config = ProducerConfig::new(vec!["b:9092".to_owned()]);
    let checked = check("t", 1, &stored, &config).expect("a batch to send");
    let Err(error) = bench.accumulator.append_copied(&checked, 0, bench.now) else {
        panic!("a partition the topic lacks is queued");
    };
    assert!(
        matches!(
            &error,
            Error::UnknownPartition {
                partition: 1,
                count: 1,
                ..
            }
        ),
        "{error:?}"
    );
    let unknown = check("other", 0, &stored, &config).expect("a batch to send");
    let queued = bench.accumulator.append_copied(&unknown, 0, bench.now);
    assert!(
        matches!(queued, Ok(None)),
        "an unknown topic waits for metadata"
    );
}
