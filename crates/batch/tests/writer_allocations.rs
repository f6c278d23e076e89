//! Writing a warm batch performs zero heap allocations, for every codec (counted by the
//! testkit's counting allocator, as the decoder's allocation test counts).

use krec_batch::{BatchWriter, Codec, Compression, ProducerFields, WriteConfig};
use krec_testkit::CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator::new();

const HEADERS: [(&str, Option<&[u8]>); 2] = [("trace-id", Some(b"0123456789")), ("type", None)];

/// Appends `records` records of ~200 bytes and finishes the batch; its length.
fn one_batch(writer: &mut BatchWriter, codec: Codec, records: usize) -> usize {
    writer.reset();
    let mut value = [b'v'; 160];
    for i in 0..records {
        let key = (i as u32).to_be_bytes();
        value[..4].copy_from_slice(&key);
        let _ = writer
            .try_append(
                1_700_000_000_000 + i as i64,
                Some(&key),
                Some(&value),
                &HEADERS,
            )
            .unwrap();
    }
    let producer = ProducerFields::idempotent(1, 0, records as i32);
    writer.finish(producer, codec).unwrap().len()
}

fn every_codec() -> Vec<Codec> {
    let mut codecs: Vec<Codec> = Compression::ALL.iter().map(|&c| Codec::new(c)).collect();
    codecs.push(Codec::gzip(1).unwrap());
    codecs.push(Codec::zstd(-3).unwrap());
    codecs
}

#[test]
fn warm_batches_are_written_without_allocating() {
    let (probe, counts) = ALLOCATOR.during(|| std::hint::black_box(Vec::<u8>::with_capacity(64)));
    assert!(counts.allocations > 0, "the counting allocator counts");
    drop(probe);
    let config = WriteConfig {
        batch_size: 1 << 20,
        ..WriteConfig::default()
    };
    for codec in every_codec() {
        for records in [1, 100, 1000] {
            let mut writer = BatchWriter::new(config.clone());
            let cold = one_batch(&mut writer, codec, records);
            let (warm, counts) =
                ALLOCATOR.during(|| (0..3).map(|_| one_batch(&mut writer, codec, records)).max());
            assert_eq!(warm, Some(cold));
            assert_eq!(
                counts.allocations, 0,
                "{codec:?} x {records}: allocations on warm batches"
            );
        }
    }
}

#[test]
fn owned_batches_given_back_are_reused_without_allocating() {
    // A producer keeps a few batches in flight and drops each once acknowledged: the buffers
    // cycle through the per-thread pool.
    let mut writer = BatchWriter::new(WriteConfig::default());
    for codec in [Codec::NONE, Codec::new(Compression::Lz4)] {
        let round = |writer: &mut BatchWriter| {
            let mut in_flight = Vec::with_capacity(5);
            for _ in 0..5 {
                one_batch(writer, codec, 50);
                in_flight.push(writer.finish_owned(ProducerFields::NONE, codec).unwrap());
            }
            in_flight.iter().map(|b| b.len()).sum::<usize>()
        };
        // Two rounds to warm up: the working set is the five batches in flight and the
        // writer's own buffer, which the first round leaves empty.
        round(&mut writer);
        let cold = round(&mut writer);
        let (warm, counts) = ALLOCATOR.during(|| round(&mut writer));
        assert_eq!(warm, cold);
        // The one allocation is the round's own list of batches in flight.
        assert_eq!(
            counts.allocations, 1,
            "{codec:?}: allocations on warm rounds"
        );
    }
}
