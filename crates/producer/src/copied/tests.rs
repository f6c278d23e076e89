//! Every refusal of `send_batch`, decided from the batch alone: a table of batches built
//! byte by byte (krec-batch's encoder) and what each is refused for, if anything.

use krec_batch::encode::{BatchBuilder, LegacyBuilder, LegacyMessage, RecordSpec};
use krec_batch::{Compression, ControlKind};

use super::check;
use crate::error::BatchRefusal;
use crate::{Error, ProducerConfig};

fn config() -> ProducerConfig {
    ProducerConfig::new(vec!["127.0.0.1:9092".to_owned()])
}

/// Three records with keys, values and a header, compressed, as a producer writes them.
fn sound(codec: Compression) -> BatchBuilder {
    let header: &[(&[u8], Option<&[u8]>)] = &[(b"h", Some(b"1"))];
    BatchBuilder::new(4711)
        .compression(codec)
        .producer(9, 2, 30)
        .base_timestamp(1_700_000_000_000)
        .record(Some(b"k1"), Some(b"v1"), header)
        .record(Some(b"k2"), None, &[])
        .record(None, Some(b"v3"), header)
}

fn refusal(batch: &[u8], config: &ProducerConfig) -> Option<BatchRefusal> {
    match check("copies", 3, batch, config) {
        Ok(_) => None,
        Err(Error::BatchRefused {
            topic,
            partition,
            reason,
        }) => {
            assert_eq!((topic.as_str(), partition), ("copies", 3), "{reason}");
            Some(reason)
        }
        Err(other) => panic!("not a BatchRefused: {other}"),
    }
}

fn malformed(batch: &[u8]) -> String {
    match refusal(batch, &config()) {
        Some(BatchRefusal::Malformed { detail }) => detail,
        other => panic!("not Malformed: {other:?}"),
    }
}

#[test]
fn a_sound_batch_of_any_codec_passes_with_its_count_and_first_timestamp() {
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let batch = sound(codec).transactional(true).build();
        let checked = check("copies", 3, &batch, &config()).expect("sound");
        assert_eq!((checked.records, checked.timestamp), (3, 1_700_000_000_000));
        assert_eq!(checked.bytes.len(), batch.len());
    }
}

#[test]
fn a_batch_cut_short_or_followed_by_bytes_or_corrupt_is_malformed() {
    let batch = sound(Compression::Lz4).build();
    assert!(malformed(&batch[..batch.len() - 1]).contains("bytes are there"));
    assert!(malformed(&batch[..20]).contains("bytes are there"));
    assert!(malformed(&batch[..5]).contains("do not hold a batch header"));
    assert!(malformed(&[]).contains("do not hold a batch header"));
    let mut two = batch.clone();
    two.extend_from_slice(&batch);
    assert!(malformed(&two).contains(&format!("{} bytes follow", batch.len())));
    let mut corrupt = batch.clone();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0x01;
    assert!(
        malformed(&corrupt).contains("checksum mismatch"),
        "{}",
        malformed(&corrupt)
    );
    let mut unknown_magic = batch;
    unknown_magic[16] = 7;
    malformed(&unknown_magic);
}

#[test]
fn a_legacy_message_set_is_refused_by_its_magic() {
    for magic in [0u8, 1] {
        let message = LegacyMessage {
            offset: 0,
            timestamp: 1,
            key: Some(b"k".to_vec()),
            value: Some(b"v".to_vec()),
        };
        let legacy = LegacyBuilder::new(magic).message(message).build(0);
        assert_eq!(
            refusal(&legacy, &config()),
            Some(BatchRefusal::Legacy { magic })
        );
    }
}

#[test]
fn control_empty_gapped_and_log_append_time_batches_are_refused() {
    let marker = BatchBuilder::new(10)
        .producer(9, 2, -1)
        .control_marker(ControlKind::Commit, 0)
        .build();
    assert_eq!(refusal(&marker, &config()), Some(BatchRefusal::Control));
    // The log cleaner's leftover: no record, a last offset delta kept.
    let empty = BatchBuilder::new(10).last_offset_delta(4).build();
    assert_eq!(refusal(&empty, &config()), Some(BatchRefusal::Empty));
    let spec = |offset_delta: i32| RecordSpec {
        offset_delta,
        value: Some(b"v".to_vec()),
        ..RecordSpec::default()
    };
    let compacted = BatchBuilder::new(10)
        .compression(Compression::Zstd)
        .record_spec(spec(0))
        .record_spec(spec(2))
        .build();
    assert_eq!(
        refusal(&compacted, &config()),
        Some(BatchRefusal::OffsetGaps {
            records: 2,
            last_offset_delta: 2
        })
    );
    let appended = sound(Compression::None).log_append_time(true).build();
    assert_eq!(
        refusal(&appended, &config()),
        Some(BatchRefusal::LogAppendTime)
    );
}

#[test]
fn a_batch_larger_than_max_request_size_or_buffer_memory_is_refused() {
    let batch = sound(Compression::None).build();
    let size = batch.len() as u64;
    let mut small = config();
    small.write.max_record_size = batch.len() - 1;
    let too_large = |key, limit| Some(BatchRefusal::TooLarge { size, key, limit });
    assert_eq!(
        refusal(&batch, &small),
        too_large("max.request.size", size - 1)
    );
    small.write.max_record_size = batch.len();
    assert_eq!(refusal(&batch, &small), None, "exactly the limit fits");
    small.buffer_memory = size - 1;
    assert_eq!(
        refusal(&batch, &small),
        too_large("buffer.memory", size - 1)
    );
}

#[test]
fn the_timestamp_is_the_max_one_when_the_base_holds_a_delete_horizon() {
    let batch = sound(Compression::None)
        .delete_horizon(true)
        .max_timestamp(1_800_000_000_000)
        .build();
    let checked = check("copies", 3, &batch, &config()).expect("sound");
    assert_eq!(checked.timestamp, 1_800_000_000_000);
}

#[test]
fn every_refusal_names_the_topic_partition_and_reason() {
    let batch = sound(Compression::None).log_append_time(true).build();
    let error = check("copies", 3, &batch, &config()).unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with("topic copies partition 3: ") && text.contains("LogAppendTime"),
        "{text}"
    );
}
