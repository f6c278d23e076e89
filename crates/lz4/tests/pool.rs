//! Pool hygiene (no stale bytes leak from a reused buffer) and pool bounds.

mod common;

use common::{compressible, incompressible};
use krec_lz4::{
    decode_frame, decode_frame_into, encode_frame, encode_frame_with_mode, set_thread_pool_config,
    thread_pool_config, thread_pool_stats, BlockMode, BlockSize, DecodeOptions, EncodeOptions,
    PoolConfig, PooledBuf,
};

/// Overwrites every initialized byte the buffer's allocation holds with 0xFF, then empties it.
fn dirty(buf: &mut PooledBuf) {
    buf.clear();
    let capacity = buf.capacity();
    buf.writable(capacity).fill(0xFF);
    buf.clear();
}

fn frames() -> Vec<(&'static str, Vec<u8>, Vec<u8>)> {
    let big = compressible(300_000);
    let small = compressible(120);
    let random = incompressible(70_000, 9);
    let linked_options = EncodeOptions {
        block_size: BlockSize::Max64KiB,
        ..EncodeOptions::default()
    };
    vec![
        (
            "big independent",
            encode_frame(&big, &EncodeOptions::default()),
            big.clone(),
        ),
        (
            "big linked",
            encode_frame_with_mode(&big, &linked_options, BlockMode::Linked),
            big,
        ),
        (
            "small",
            encode_frame(&small, &EncodeOptions::default()),
            small,
        ),
        (
            "stored",
            encode_frame(&random, &EncodeOptions::default()),
            random,
        ),
        (
            "zeros",
            encode_frame(&[0u8; 5000], &EncodeOptions::default()),
            vec![0u8; 5000],
        ),
    ]
}

#[test]
fn decoding_twice_into_a_dirtied_buffer_gives_identical_output() {
    let mut out = PooledBuf::take();
    for (name, frame, data) in frames() {
        dirty(&mut out);
        decode_frame_into(&frame, &DecodeOptions::default(), &mut out).unwrap();
        let first = out.to_vec();
        assert!(first == data, "{name}");
        dirty(&mut out);
        assert!(out.is_empty());
        decode_frame_into(&frame, &DecodeOptions::default(), &mut out).unwrap();
        assert!(out[..] == first[..], "{name}: stale bytes leaked");
    }
}

#[test]
fn buffers_reused_through_the_pool_never_show_stale_bytes() {
    // Each frame is decoded into whatever allocation the previous one left in the pool, after
    // that allocation was filled with 0xFF.
    let warm_up = encode_frame(&compressible(1000), &EncodeOptions::default());
    drop(decode_frame(&warm_up, &DecodeOptions::default()).unwrap());
    for (name, frame, data) in frames().into_iter().chain(frames().into_iter().rev()) {
        let mut previous = PooledBuf::take();
        dirty(&mut previous);
        drop(previous);
        let reused_before = thread_pool_stats().reused;
        let decoded = decode_frame(&frame, &DecodeOptions::default()).unwrap();
        assert_eq!(thread_pool_stats().reused, reused_before + 1, "{name}");
        assert!(decoded[..] == data[..], "{name}");
    }
}

#[test]
fn steady_state_keeps_reusing_one_allocation() {
    let data = compressible(50_000);
    let frame = encode_frame(&data, &EncodeOptions::default());
    let first = decode_frame(&frame, &DecodeOptions::default()).unwrap();
    let address = first.as_ptr();
    drop(first);
    for _ in 0..10 {
        let again = decode_frame(&frame, &DecodeOptions::default()).unwrap();
        assert_eq!(again.as_ptr(), address);
        assert!(again[..] == data[..]);
    }
    let stats = thread_pool_stats();
    assert_eq!(stats.buffers_kept, 1);
    assert_eq!(stats.reused, 10);
}

#[test]
fn pool_keeps_at_most_max_buffers() {
    set_thread_pool_config(PoolConfig {
        max_buffers: 2,
        max_retained_capacity: 1 << 20,
    });
    let buffers: Vec<PooledBuf> = (0..3)
        .map(|i| {
            let mut buf = PooledBuf::take();
            buf.extend_from_slice(&vec![i as u8; 1000]);
            buf
        })
        .collect();
    drop(buffers);
    let stats = thread_pool_stats();
    assert_eq!(stats.buffers_kept, 2);
    assert_eq!(stats.returned, 2);
    assert_eq!(stats.freed, 1);
    assert!(stats.retained_capacity >= 2000);
}

#[test]
fn a_huge_frames_buffer_is_freed_not_kept() {
    set_thread_pool_config(PoolConfig {
        max_buffers: 8,
        max_retained_capacity: 1 << 20,
    });
    let data = compressible(4 << 20);
    let frame = encode_frame(&data, &EncodeOptions::default());
    let decoded = decode_frame(&frame, &DecodeOptions::default()).unwrap();
    assert!(decoded.capacity() > 1 << 20);
    let before = thread_pool_stats();
    drop(decoded);
    let after = thread_pool_stats();
    assert_eq!(after.buffers_kept, before.buffers_kept);
    assert_eq!(after.freed, before.freed + 1);
    assert!(after.retained_capacity <= 1 << 20);

    // A small one is still kept.
    let small = decode_frame(
        &encode_frame(b"abc", &EncodeOptions::default()),
        &DecodeOptions::default(),
    )
    .unwrap();
    drop(small);
    assert_eq!(thread_pool_stats().buffers_kept, after.buffers_kept + 1);
}

#[test]
fn lowering_the_bounds_frees_kept_buffers_now() {
    let mut held = Vec::new();
    for size in [100usize, 10_000, 2_000_000] {
        let mut buf = PooledBuf::take();
        buf.extend_from_slice(&vec![1u8; size]);
        held.push(buf);
    }
    drop(held);
    assert_eq!(thread_pool_stats().buffers_kept, 3);
    let config = PoolConfig {
        max_buffers: 1,
        max_retained_capacity: 50_000,
    };
    set_thread_pool_config(config);
    assert_eq!(thread_pool_config(), config);
    let stats = thread_pool_stats();
    assert_eq!(stats.buffers_kept, 1);
    assert!(
        stats.retained_capacity <= 50_000,
        "{}",
        stats.retained_capacity
    );
}

#[test]
fn zero_max_buffers_disables_pooling() {
    set_thread_pool_config(PoolConfig {
        max_buffers: 0,
        ..PoolConfig::default()
    });
    let frame = encode_frame(&compressible(1000), &EncodeOptions::default());
    drop(decode_frame(&frame, &DecodeOptions::default()).unwrap());
    drop(decode_frame(&frame, &DecodeOptions::default()).unwrap());
    let stats = thread_pool_stats();
    assert_eq!((stats.buffers_kept, stats.reused, stats.freed), (0, 0, 2));
}

#[test]
fn into_bytes_is_zero_copy_and_returns_the_allocation_on_last_drop() {
    let data = compressible(10_000);
    let decoded = decode_frame(
        &encode_frame(&data, &EncodeOptions::default()),
        &DecodeOptions::default(),
    )
    .unwrap();
    let address = decoded.as_ptr();
    let bytes = decoded.into_bytes();
    assert_eq!(bytes.as_ptr(), address);
    assert!(bytes[..] == data[..]);
    let clone = bytes.slice(100..200);
    let kept = thread_pool_stats().buffers_kept;
    drop(bytes);
    assert_eq!(
        thread_pool_stats().buffers_kept,
        kept,
        "a clone still holds it"
    );
    assert!(clone[..] == data[100..200]);
    drop(clone);
    assert_eq!(thread_pool_stats().buffers_kept, kept + 1);
    assert_eq!(PooledBuf::take().as_ptr(), address);
}

#[test]
fn bytes_dropped_on_another_thread_go_to_that_threads_pool() {
    let decoded = decode_frame(
        &encode_frame(&compressible(5000), &EncodeOptions::default()),
        &DecodeOptions::default(),
    )
    .unwrap();
    let bytes = decoded.into_bytes();
    let kept_here = thread_pool_stats().buffers_kept;
    let kept_there = std::thread::spawn(move || {
        drop(bytes);
        thread_pool_stats().buffers_kept
    })
    .join()
    .unwrap();
    assert_eq!(kept_there, 1);
    assert_eq!(thread_pool_stats().buffers_kept, kept_here);
}

#[test]
fn empty_buffers_convert_to_empty_bytes() {
    let buf = PooledBuf::take();
    assert!(buf.into_bytes().is_empty());
}
