//! Kafka LZ4 frame decoding, side by side on the same frames:
//! krec-lz4 with the thread pool, krec-lz4 with a fresh buffer per frame, lz4_flex's
//! `FrameDecoder`, the lz4 C library's frame decoder (`lz4` crate), and, as the floor, raw
//! `lz4_flex::block::decompress_into` over the frame's blocks.
//!
//! A counting global allocator reports heap allocations per frame for each decoder.
//! `python3 crates/lz4/benches/report.py` runs this bench and prints the BENCHMARKS.md table.

use std::hint::black_box;
use std::io::{Read, Write};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use krec_lz4::{
    decode_frame, set_thread_pool_config, BlockSize, DecodeOptions, EncodeOptions, PoolConfig,
};
use krec_testkit::CountingAllocator;

mod support;
use support::paired_ratio;

// Counts on this thread only (no atomics on the allocation path): the decoders and their
// buffer pools run on the bench's thread.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator::new();

/// Record-like JSON lines: compresses about as well as typical Kafka values.
fn compressible(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 128);
    let mut i = 0u64;
    while out.len() < len {
        let line = format!(
            "{{\"id\":{},\"user\":\"user-{}\",\"event\":\"page_view\",\"path\":\"/items/{}\",\"ms\":{}}}\n",
            1_000_000 + i,
            i * 7919 % 10_007,
            i * 31 % 997,
            i * 13 % 1000
        );
        out.extend_from_slice(line.as_bytes());
        i += 1;
    }
    out.truncate(len);
    out
}

fn incompressible(len: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..len)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// One frame under test.
struct Case {
    name: String,
    frame: Vec<u8>,
    content_len: usize,
    /// Present for frames with no block checksums: (offset, size, stored) of each block.
    blocks: Option<Vec<(usize, usize, bool)>>,
}

fn blocks_of(frame: &[u8]) -> Vec<(usize, usize, bool)> {
    // Java-client frames: 7-byte header, 4-byte sizes, no checksums.
    let mut blocks = Vec::new();
    let mut at = 7;
    loop {
        let raw = u32::from_le_bytes(frame[at..at + 4].try_into().unwrap());
        at += 4;
        if raw == 0 {
            return blocks;
        }
        let size = (raw & 0x7FFF_FFFF) as usize;
        blocks.push((at, size, raw & 0x8000_0000 != 0));
        at += size;
    }
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for (checksums, row) in [(false, "java"), (true, "checksums")] {
        let options = EncodeOptions {
            block_size: BlockSize::Max64KiB,
            block_checksums: checksums,
            content_checksum: checksums,
            content_size: false,
        };
        for (size, size_name) in [
            (100, "100B"),
            (1024, "1KiB"),
            (65_536, "64KiB"),
            (1 << 20, "1MiB"),
        ] {
            for (data, kind) in [
                (compressible(size), "text"),
                (incompressible(size), "random"),
            ] {
                let frame = krec_lz4::encode_frame(&data, &options);
                // The check that the bench measures real work: every decoder must agree.
                assert!(decode_frame(&frame, &DecodeOptions::default()).unwrap()[..] == data[..]);
                cases.push(Case {
                    name: format!("{row}/{kind}/{size_name}"),
                    blocks: (!checksums).then(|| blocks_of(&frame)),
                    frame,
                    content_len: size,
                });
            }
        }
    }
    cases
}

fn allocations_per_frame(mut decode_once: impl FnMut()) -> f64 {
    for _ in 0..5 {
        decode_once();
    }
    const RUNS: u64 = 200;
    let (_, counts) = ALLOCATOR.during(|| {
        for _ in 0..RUNS {
            decode_once();
        }
    });
    counts.allocations as f64 / RUNS as f64
}

fn record_allocations(case: &Case, decoder: &str, per_frame: f64) {
    let line = format!("{}\t{}\t{}\n", case.name, decoder, per_frame);
    eprint!("allocations per frame: {line}");
    if let Ok(path) = std::env::var("KREC_BENCH_ALLOCS") {
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

fn krec_pooled(frame: &[u8]) {
    let decoded = decode_frame(black_box(frame), &DecodeOptions::default()).unwrap();
    black_box(&decoded[..]);
}

fn lz4_flex_frame(frame: &[u8], out: &mut Vec<u8>) {
    out.clear();
    lz4_flex::frame::FrameDecoder::new(black_box(frame))
        .read_to_end(out)
        .unwrap();
    black_box(&out[..]);
}

fn lz4_c_frame(frame: &[u8], out: &mut Vec<u8>) {
    out.clear();
    lz4::Decoder::new(black_box(frame))
        .unwrap()
        .read_to_end(out)
        .unwrap();
    black_box(&out[..]);
}

fn raw_blocks(frame: &[u8], blocks: &[(usize, usize, bool)], out: &mut [u8]) {
    let mut at = 0;
    for &(offset, size, stored) in blocks {
        let data = &frame[offset..offset + size];
        at += if stored {
            out[at..at + size].copy_from_slice(data);
            size
        } else {
            let end = out.len().min(at + 65_536);
            lz4_flex::block::decompress_into(black_box(data), &mut out[at..end]).unwrap()
        };
    }
    black_box(&out[..at]);
}

fn frame_decode(c: &mut Criterion) {
    for case in cases() {
        let mut group = c.benchmark_group(format!("lz4_frame/{}", case.name));
        group.throughput(Throughput::Bytes(case.content_len as u64));
        let frame = &case.frame[..];

        set_thread_pool_config(PoolConfig::default());
        record_allocations(
            &case,
            "krec_pooled",
            allocations_per_frame(|| krec_pooled(frame)),
        );
        group.bench_function("krec_pooled", |b| b.iter(|| krec_pooled(frame)));

        set_thread_pool_config(PoolConfig {
            max_buffers: 0,
            ..PoolConfig::default()
        });
        record_allocations(
            &case,
            "krec_fresh",
            allocations_per_frame(|| krec_pooled(frame)),
        );
        group.bench_function("krec_fresh", |b| b.iter(|| krec_pooled(frame)));
        set_thread_pool_config(PoolConfig::default());

        let mut out = Vec::with_capacity(case.content_len);
        record_allocations(
            &case,
            "lz4_flex_frame",
            allocations_per_frame(|| lz4_flex_frame(frame, &mut out)),
        );
        group.bench_function("lz4_flex_frame", |b| {
            b.iter(|| lz4_flex_frame(frame, &mut out))
        });

        record_allocations(
            &case,
            "lz4_c_frame",
            allocations_per_frame(|| lz4_c_frame(frame, &mut out)),
        );
        group.bench_function("lz4_c_frame", |b| b.iter(|| lz4_c_frame(frame, &mut out)));

        if let Some(blocks) = &case.blocks {
            let mut raw_out = vec![0u8; case.content_len];
            record_allocations(
                &case,
                "raw_block",
                allocations_per_frame(|| raw_blocks(frame, blocks, &mut raw_out)),
            );
            group.bench_function("raw_block", |b| {
                b.iter(|| raw_blocks(frame, blocks, &mut raw_out))
            });
        }
        group.finish();
    }
}

fn record_ratio(case: &Case, comparison: &str, ratio: f64) {
    let line = format!("{}\t{}\t{:.3}\n", case.name, comparison, ratio);
    eprint!("paired ratio: {line}");
    if let Ok(path) = std::env::var("KREC_BENCH_RATIOS") {
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

/// The targets' ratios, measured pairwise (not through criterion).
fn paired_ratios(_: &mut Criterion) {
    if std::env::var_os("KREC_BENCH_SKIP_PAIRED").is_some() {
        return;
    }
    set_thread_pool_config(PoolConfig::default());
    for case in cases() {
        let frame = &case.frame[..];
        let mut out = Vec::with_capacity(case.content_len);
        let ratio = paired_ratio(|| lz4_c_frame(frame, &mut out), || krec_pooled(frame));
        record_ratio(&case, "lz4_c/krec_pooled", ratio);
        let ratio = paired_ratio(|| lz4_flex_frame(frame, &mut out), || krec_pooled(frame));
        record_ratio(&case, "lz4_flex/krec_pooled", ratio);
        if let Some(blocks) = &case.blocks {
            let mut raw_out = vec![0u8; case.content_len];
            let ratio = paired_ratio(
                || krec_pooled(frame),
                || raw_blocks(frame, blocks, &mut raw_out),
            );
            record_ratio(&case, "krec_pooled/raw", ratio);
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .without_plots();
    targets = paired_ratios, frame_decode
}
criterion_main!(benches);
