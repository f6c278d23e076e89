//! `reencode_range` on arbitrary bytes, from an offset and at times up to an end. Two ways in, by the first byte's top bit: the bytes as they
//! are (legacy messages, hostile headers; the CRC is always checked), or the bytes as the
//! records section of a v2 batch whose header the next bytes pick (codec, LogAppendTime, count,
//! last offset delta) and whose CRC is made right, compressed with the codec first, so the
//! fuzzer reaches the record parser and the writer. Nothing may panic; what comes out must be
//! v2 batches a producer may send (count = last offset delta + 1, no LogAppendTime bit, within
//! the size limit, the source's codec) holding the records a reader sees from the offset on.
#![no_main]

use krec_batch::encode::{compress, Lz4Style, SnappyStyle, ZstdStyle};
use krec_batch::{reencode_range, BatchWalk, Compression, DecodeConfig, Error, Record};
use libfuzzer_sys::fuzz_target;

/// A record's fields, owned.
type Fields = (
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(Vec<u8>, Option<Vec<u8>>)>,
);

fn fields(record: &Record<'_>) -> Fields {
    (
        record.timestamp(),
        record.key().map(<[u8]>::to_vec),
        record.value().map(<[u8]>::to_vec),
        (record.headers().iter())
            .map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec)))
            .collect(),
    )
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Some((head, rest)) = rest.split_first_chunk::<4>() else {
        return;
    };
    let max_batch_bytes = 61 + usize::from(u16::from_be_bytes([head[0], head[1]]));
    let from_offset = i64::from(head[2]);
    // An end bound too, at times (a restore's --until cut): records from it on stay out.
    let until = if first & 0x40 != 0 {
        from_offset + i64::from((first >> 4) & 0x03) * 4
    } else {
        i64::MAX
    };
    let input = if first & 0x80 != 0 {
        rest.to_vec()
    } else {
        let Some((shape, records)) = rest.split_first_chunk::<2>() else {
            return;
        };
        let codec = Compression::ALL[usize::from(first & 0x07) % Compression::ALL.len()];
        v2_batch(
            codec,
            first & 0x08 != 0,
            i32::from(shape[0] % 64),
            i32::from(shape[1]),
            records,
            head[3],
        )
    };
    let config = DecodeConfig {
        verify_crc: true,
        max_batch_bytes: 1 << 20,
        max_decompressed_bytes: 1 << 20,
        max_records_per_batch: 1 << 16,
    };
    let mut written = Vec::new();
    let mut codecs = Vec::new();
    let offsets = from_offset..until;
    let result = reencode_range(&input, offsets, max_batch_bytes, &config, |batch| {
        assert!(batch.batch.len() <= max_batch_bytes);
        assert!(batch.first_offset >= from_offset);
        assert!(batch.last_offset < until);
        assert!(batch.first_offset <= batch.last_offset);
        let mut walk = BatchWalk::new(&batch.batch, &config);
        let out = walk
            .next()
            .expect("one batch")
            .expect("a re-encoded batch decodes");
        assert!(walk.next().is_none());
        assert_eq!(out.magic(), 2);
        assert_eq!(out.attributes() & 0x08, 0, "no LogAppendTime bit");
        assert_eq!(out.record_count(), batch.record_count);
        assert_eq!(out.last_offset() + 1, i64::from(out.record_count()));
        codecs.push(out.compression());
        for record in out.records() {
            written.push(fields(&record.expect("a re-encoded record decodes")));
        }
        Ok::<_, Error>(())
    });
    match result {
        Err(error) => assert!(!error.to_string().contains("Some("), "{error}"),
        Ok(()) => {
            // Whatever reencode took, a reader takes too, and finds the same records.
            let mut read = Vec::new();
            let mut read_codecs = Vec::new();
            for batch in BatchWalk::new(&input, &config) {
                let batch = batch.expect("reencode decoded it");
                if batch.is_control() {
                    continue;
                }
                for record in batch.records().from_offset(from_offset) {
                    let record = record.expect("reencode decoded it");
                    if record.offset() >= until {
                        break;
                    }
                    read.push(fields(&record));
                    read_codecs.push(batch.compression());
                }
            }
            assert_eq!(written, read);
            read_codecs.dedup();
            codecs.dedup();
            assert_eq!(codecs, read_codecs);
        }
    }
});

/// A v2 batch of `records` (compressed with `codec`) declaring `count` records up to
/// `last_offset_delta`, its CRC made right.
fn v2_batch(
    codec: Compression,
    log_append_time: bool,
    count: i32,
    last_offset_delta: i32,
    records: &[u8],
    timestamp_byte: u8,
) -> Vec<u8> {
    let payload = compress(
        codec,
        records,
        Lz4Style::Java,
        SnappyStyle::Xerial,
        ZstdStyle::WithContentSize,
    );
    let mut attributes = i16::from(codec.id());
    if log_append_time {
        attributes |= 0x08;
    }
    let mut batch = Vec::with_capacity(61 + payload.len());
    batch.extend_from_slice(&0i64.to_be_bytes());
    batch.extend_from_slice(&((49 + payload.len()) as i32).to_be_bytes());
    batch.extend_from_slice(&0i32.to_be_bytes());
    batch.push(2);
    batch.extend_from_slice(&[0; 4]);
    batch.extend_from_slice(&attributes.to_be_bytes());
    batch.extend_from_slice(&last_offset_delta.to_be_bytes());
    let base_timestamp = i64::from(timestamp_byte) << 32;
    batch.extend_from_slice(&base_timestamp.to_be_bytes());
    batch.extend_from_slice(&(base_timestamp + 7).to_be_bytes());
    batch.extend_from_slice(&(-1i64).to_be_bytes());
    batch.extend_from_slice(&(-1i16).to_be_bytes());
    batch.extend_from_slice(&(-1i32).to_be_bytes());
    batch.extend_from_slice(&count.to_be_bytes());
    batch.extend_from_slice(&payload);
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    batch
}
