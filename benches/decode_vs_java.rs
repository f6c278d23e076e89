//! krec's decode of whole segment files, the Rust half of the krec-vs-Java benchmark.
//!
//! ```text
//! scripts/bench-decode.sh               # writes target/bench-segments/, runs both sides
//! cargo bench --bench decode_vs_java    # this side alone, once the files exist
//! ```
//!
//! `KREC_BENCH_SEGMENTS` names another input directory. One iteration decodes one whole file
//! (every shape in `manifest.tsv`): `BatchWalk` with CRC32C checks, every record's offset,
//! timestamp, key and value size and first byte, and two header lookups (`trace-id`,
//! `content-type`): the same work as `DecodeBench` in benches/java. Throughput is records.
//! Before measuring, each file is decoded once and its batch, record and found-header counts
//! are checked against the manifest. Each file is also timed through the floor
//! (`crates/batch/benches/support/floor.rs`: CRC32C, raw block decompression and a bare walk,
//! no checks), the most any decoder could do.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::exit;

use criterion::{Criterion, Throughput};
use krec::batch::{BatchWalk, DecodeConfig};

use floor::{LOOKUP_A, LOOKUP_B};

/// One line of manifest.tsv (written by benches/gen_bench_segments.rs).
struct Entry {
    shape: String,
    file: String,
    batches: u64,
    records: u64,
    headers: u64,
}

fn read_manifest(dir: &Path) -> Result<Vec<Entry>, String> {
    let path = dir.join("manifest.tsv");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (run scripts/bench-decode.sh first: it writes the files)",
            path.display()
        )
    })?;
    let mut entries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let number = |i: usize| -> Result<u64, String> {
            fields
                .get(i)
                .ok_or(format!("{}:{}: missing column {i}", path.display(), n + 1))?
                .parse()
                .map_err(|e| format!("{}:{}: column {i}: {e}", path.display(), n + 1))
        };
        entries.push(Entry {
            shape: fields[0].to_string(),
            file: fields
                .get(1)
                .ok_or(format!("{}:{}: missing file", path.display(), n + 1))?
                .to_string(),
            batches: number(2)?,
            records: number(3)?,
            headers: number(5)?,
        });
    }
    Ok(entries)
}

/// What one decode read; the checksum keeps every field read alive.
#[derive(Default)]
struct Tally {
    checksum: u64,
    batches: u64,
    records: u64,
    headers_found: u64,
}

#[inline(always)]
fn touch(bytes: Option<&[u8]>) -> u64 {
    match bytes {
        Some(all @ [first, ..]) => all.len() as u64 + *first as u64,
        _ => 0,
    }
}

fn decode(segment: &[u8], config: &DecodeConfig) -> Result<Tally, krec::batch::Error> {
    let mut tally = Tally::default();
    let mut walk = BatchWalk::new(segment, config);
    while let Some(batch) = walk.next_ref() {
        let batch = batch?;
        tally.batches += 1;
        let mut records = batch.records();
        while let Some(record) = records.next_ref() {
            let record = record?;
            tally.records += 1;
            tally.checksum = tally
                .checksum
                .wrapping_add(record.offset() as u64)
                .wrapping_add(record.timestamp() as u64)
                .wrapping_add(touch(record.key()))
                .wrapping_add(touch(record.value()));
            let headers = record.headers();
            for key in [LOOKUP_A, LOOKUP_B] {
                if let Some(value) = headers.get(key).and_then(|h| h.value) {
                    tally.checksum = tally.checksum.wrapping_add(value.len() as u64);
                    tally.headers_found += 1;
                }
            }
        }
    }
    walk.end_of_file()?;
    Ok(tally)
}

/// The floor of the same work, shared with krec-batch's bench: what any decoder must do.
#[path = "../crates/batch/benches/support/floor.rs"]
mod floor;

/// Every batch of a file through the floor; the batch count and the floor's checksum.
fn floor_file(segment: &[u8]) -> (u64, usize) {
    let (mut position, mut batches, mut sum) = (0, 0, 0);
    while position + 12 <= segment.len() {
        let entry = krec_batch::EntryHeader::peek(&segment[position..]).unwrap();
        let end = position + entry.size().unwrap();
        sum += floor::decode(&segment[position..end]);
        batches += 1;
        position = end;
    }
    (batches, sum)
}

fn main() {
    let dir = std::env::var_os("KREC_BENCH_SEGMENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/bench-segments"));
    let entries = read_manifest(&dir).unwrap_or_else(|message| {
        eprintln!("decode_vs_java: {message}");
        exit(1)
    });
    let config = DecodeConfig::default();
    let mut criterion = Criterion::default().configure_from_args();
    for entry in &entries {
        let path = dir.join(&entry.file);
        let segment = std::fs::read(&path).unwrap_or_else(|e| {
            eprintln!("decode_vs_java: {}: {e}", path.display());
            exit(1)
        });
        // Fail loudly rather than time a decode that skipped or lost records.
        let tally = decode(&segment, &config).unwrap_or_else(|e| {
            eprintln!("decode_vs_java: {}: {e}", path.display());
            exit(1)
        });
        let expected_headers = if entry.headers >= 4 {
            2 * entry.records
        } else {
            0
        };
        if (tally.batches, tally.records, tally.headers_found)
            != (entry.batches, entry.records, expected_headers)
        {
            eprintln!(
                "decode_vs_java: {}: krec decoded {} batches / {} records / {} looked-up headers, \
                 the manifest says {} / {} / {expected_headers}",
                entry.shape,
                tally.batches,
                tally.records,
                tally.headers_found,
                entry.batches,
                entry.records
            );
            exit(1);
        }
        let (floor_batches, _) = floor_file(&segment);
        if floor_batches != entry.batches {
            eprintln!(
                "decode_vs_java: {}: the floor walked {floor_batches} batches, the manifest says {}",
                entry.shape, entry.batches
            );
            exit(1);
        }
        let mut group = criterion.benchmark_group(&entry.shape);
        group.throughput(Throughput::Elements(entry.records));
        group.bench_function("floor", |b| b.iter(|| floor_file(black_box(&segment)).1));
        group.bench_function("krec", |b| {
            b.iter(|| {
                decode(black_box(&segment), &config)
                    .expect("decoded once already")
                    .checksum
            })
        });
        group.finish();
    }
    criterion.final_summary();
}
