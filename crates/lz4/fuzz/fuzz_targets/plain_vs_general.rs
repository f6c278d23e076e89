//! Arbitrary bytes through `decode_frame_into` (fast path for Kafka's plain frame first) and
//! through the general decoder alone: same result, same content, same error.
#![no_main]

use krec_lz4::frame::decode_frame_into_general;
use krec_lz4::{decode_frame_into, DecodeOptions, PooledBuf};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, frame)) = data.split_first() else {
        return;
    };
    let options = DecodeOptions {
        max_decompressed_size: if mode & 1 != 0 { 1 << 20 } else { 300 },
        ..DecodeOptions::default()
    };
    let (mut with_fast_path, mut general) = (PooledBuf::take(), PooledBuf::take());
    let a = decode_frame_into(frame, &options, &mut with_fast_path).map_err(|e| e.to_string());
    let b = decode_frame_into_general(frame, &options, &mut general).map_err(|e| e.to_string());
    assert_eq!(a, b);
    assert_eq!(&with_fast_path[..], &general[..]);
});
