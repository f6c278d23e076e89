//! Inputs the fuzz targets found, kept as tests (`tests/fuzz-found/`).

use krec_batch::encode::BatchBuilder;
use krec_batch::{BatchWalk, Compression, DecodeConfig};

/// The fuzz targets' limits (`crates/batch/fuzz/fuzz_targets/batch_walk.rs`).
fn fuzz_config(input: &[u8]) -> DecodeConfig {
    DecodeConfig {
        verify_crc: input.first().is_some_and(|b| b & 1 == 1),
        max_batch_bytes: 1 << 20,
        max_decompressed_bytes: 1 << 20,
        max_records_per_batch: 1 << 16,
    }
}

/// The first error of an in-place walk of `input`.
fn first_error(input: &[u8]) -> String {
    let config = fuzz_config(input);
    let mut walk = BatchWalk::new(input, &config);
    while let Some(batch) = walk.next_ref() {
        if let Err(e) = batch {
            return e.to_string();
        }
    }
    panic!("no error")
}

/// A zstd frame without a content size whose data is corrupt was first decoded in one pass
/// into a region as large as the buffer already held. A large warm buffer gave zstd's one-pass
/// error ("Src size is incorrect"); a small or new one a region too small, so the frame was
/// streamed and failed with the streaming decoder's error ("Frame requires too much memory
/// for decoding"). The same bytes must give the same answer whatever the buffer's history.
#[test]
fn a_corrupt_zstd_frame_fails_the_same_way_whatever_buffer_it_lands_in() {
    let input = include_bytes!("fuzz-found/zstd-error-depends-on-buffer.bin");
    std::thread::spawn(move || {
        // A new thread: its buffer pool is empty.
        let cold = first_error(input);
        assert!(cold.contains("Zstd"), "{cold}");

        // Leave a 900 KB buffer in this thread's pool.
        let big = BatchBuilder::new(0)
            .compression(Compression::Zstd)
            .record(None, Some(&vec![b'z'; 900_000]), &[])
            .build();
        let config = DecodeConfig::default();
        assert!(BatchWalk::new(&big, &config).next_ref().unwrap().is_ok());
        assert!(krec_lz4::thread_pool_stats().retained_capacity >= 900_000);

        assert_eq!(first_error(input), cold, "a warm pooled buffer");
        let config = fuzz_config(input);
        let by_iterator = BatchWalk::new(input, &config)
            .find_map(Result::err)
            .unwrap()
            .to_string();
        assert_eq!(by_iterator, cold, "the iterator");
    })
    .join()
    .unwrap();
}
