//! Arbitrary bytes as the records section of a valid v2 batch header (CRC made right, so the
//! fuzzer spends its time in the record parser). The first two bytes pick the record count.
#![no_main]

use krec_batch::{BatchWalk, DecodeConfig, Error};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let count = u16::from_be_bytes([data[0], data[1]]) as i32 % 64;
    let records = &data[2..];
    let mut batch = Vec::with_capacity(61 + records.len());
    batch.extend_from_slice(&0i64.to_be_bytes());
    batch.extend_from_slice(&((49 + records.len()) as i32).to_be_bytes());
    batch.extend_from_slice(&0i32.to_be_bytes());
    batch.push(2);
    batch.extend_from_slice(&[0; 4]);
    batch.extend_from_slice(&0i16.to_be_bytes());
    batch.extend_from_slice(&i32::MAX.to_be_bytes()); // any offset delta is in range
    batch.extend_from_slice(&[0; 16]);
    batch.extend_from_slice(&(-1i64).to_be_bytes());
    batch.extend_from_slice(&(-1i16).to_be_bytes());
    batch.extend_from_slice(&(-1i32).to_be_bytes());
    batch.extend_from_slice(&count.to_be_bytes());
    batch.extend_from_slice(records);
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());

    let config = DecodeConfig::default();
    let batch = match BatchWalk::new(&batch, &config).next() {
        Some(Ok(batch)) => batch,
        // The CRC was made right by the crc32c crate: krec's own CRC (serial, three-stream
        // or the crate, by length) must agree on every length.
        Some(Err(Error::ChecksumMismatch { .. })) => panic!("a right CRC was rejected"),
        _ => return,
    };
    let mut ok = 0;
    for record in batch.records() {
        let Ok(record) = record else { return };
        ok += 1;
        let headers = record.headers();
        assert_eq!(headers.iter().count(), headers.len());
        for h in headers.iter() {
            let first = headers.get(h.key).expect("every key is found");
            assert_eq!(first.key, h.key);
        }
    }
    // A batch that yields no error holds exactly its declared count.
    assert_eq!(ok, count);
});
