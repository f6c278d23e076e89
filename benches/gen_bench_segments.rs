//! ```text
//! cargo build --release --bench gen_bench_segments     # or: scripts/bench-decode.sh
//! target/release/deps/gen_bench_segments-<hash> [--out DIR] [--target-bytes N] [--max-records N]
//! ```
//!
//! Writes the inputs of the krec-vs-Java decode benchmark (`scripts/bench-decode.sh`): per
//! shape, one segment-like file of concatenated RecordBatch v2 batches, and `manifest.tsv`
//! naming each file with its batch and record counts, so both decoders can check they read
//! every record.
//!
//! Shapes are the krec-batch benches' ones: 1 x 100 B, 10 x 100 B, 100 x 1 KiB and
//! 1000 x 100 B records per batch; 0 or 4 headers; no compression, LZ4 (framed like the Java
//! client: independent blocks, no checksums) or zstd (a streamed frame, like the Java client).
//! A file holds enough batches for `--target-bytes` of uncompressed batch bytes (default
//! 2 MiB) or `--max-records` records (default 100 000), whichever comes first; the same batch
//! count for every codec of a shape, so codecs are compared on the same records.
//!
//! Values are pseudo-random printable text drawn from a small vocabulary, so LZ4 and zstd
//! compress them about as much as real JSON-ish payloads (2-4x on large batches).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use krec::batch::encode::{BatchBuilder, Lz4Style, RecordSpec, ZstdStyle};
use krec::batch::Compression;

/// 2025-12-01T00:00:00Z, in Kafka's milliseconds.
const BASE_TIMESTAMP_MS: i64 = 1_764_547_200_000;
/// Words the values are made of; fewer words means more repetition for the codecs to find.
const VOCABULARY_WORDS: usize = 400;

/// One benchmark shape: what every batch of its file looks like.
#[derive(Clone, Copy)]
struct Shape {
    records_per_batch: usize,
    value_size: usize,
    headers: usize,
    codec: Compression,
}

impl Shape {
    /// The name both benches and the report use, e.g. `10x100B-4h-lz4`.
    fn name(&self) -> String {
        let codec = match self.codec {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
            other => unreachable!("no benchmark shape uses {other:?}"),
        };
        format!(
            "{}x{}B-{}h-{codec}",
            self.records_per_batch, self.value_size, self.headers
        )
    }
}

/// The krec-batch benches' shapes (crates/batch/benches/decode.rs).
fn shapes() -> Vec<Shape> {
    let mut out = Vec::new();
    for (records_per_batch, value_size) in [(1, 100), (10, 100), (100, 1024), (1000, 100)] {
        for headers in [0, 4] {
            for codec in [Compression::None, Compression::Lz4, Compression::Zstd] {
                out.push(Shape {
                    records_per_batch,
                    value_size,
                    headers,
                    codec,
                });
            }
        }
    }
    out
}

/// xorshift64*: deterministic, so every run writes the same files.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Record contents: keys, values and headers as a producer of JSON-ish events would write them.
struct Payloads {
    rng: Rng,
    vocabulary: Vec<String>,
}

impl Payloads {
    fn new(seed: u64) -> Self {
        let mut rng = Rng(seed | 1);
        let vocabulary = (0..VOCABULARY_WORDS)
            .map(|_| {
                let len = 3 + rng.below(8);
                (0..len)
                    .map(|_| (b'a' + rng.below(26) as u8) as char)
                    .collect()
            })
            .collect();
        Payloads { rng, vocabulary }
    }

    /// `size` bytes of `"word": "word", "word": 12345, ...`-like printable text.
    fn value(&mut self, size: usize) -> Vec<u8> {
        let mut text = String::with_capacity(size + 32);
        text.push('{');
        while text.len() < size {
            let field = &self.vocabulary[self.rng.below(VOCABULARY_WORDS)];
            match self.rng.below(3) {
                0 => {
                    let number = self.rng.next() % 1_000_000;
                    let _ = write!(text, "\"{field}\": {number}, ");
                }
                _ => {
                    let word = &self.vocabulary[self.rng.below(VOCABULARY_WORDS)];
                    let _ = write!(text, "\"{field}\": \"{word}\", ");
                }
            }
        }
        let mut bytes = text.into_bytes();
        bytes.truncate(size);
        bytes
    }

    /// The four headers of the krec-batch benches: the decode benches look up `trace-id` and
    /// `content-type`.
    fn headers(&mut self, offset: i64, count: usize) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        let trace = format!("{:016x}", self.rng.next());
        let all = [
            (b"trace-id".to_vec(), Some(trace.into_bytes())),
            (b"source".to_vec(), Some(b"svc-orders".to_vec())),
            (b"content-type".to_vec(), Some(b"application/json".to_vec())),
            (
                b"seq".to_vec(),
                Some((offset as u32).to_be_bytes().to_vec()),
            ),
        ];
        all.into_iter().take(count).collect()
    }
}

/// One batch of `shape` starting at `base_offset`; records 1 ms apart.
fn batch(shape: &Shape, base_offset: i64, payloads: &mut Payloads) -> Vec<u8> {
    let mut builder = BatchBuilder::new(base_offset)
        .compression(shape.codec)
        .lz4_style(Lz4Style::Java)
        .zstd_style(ZstdStyle::Streamed)
        .base_timestamp(BASE_TIMESTAMP_MS + base_offset);
    for i in 0..shape.records_per_batch {
        let offset = base_offset + i as i64;
        builder = builder.record_spec(RecordSpec {
            offset_delta: i as i32,
            timestamp_delta: i as i64,
            key: Some(format!("key-{offset:08}").into_bytes()),
            value: Some(payloads.value(shape.value_size)),
            headers: payloads.headers(offset, shape.headers),
        });
    }
    builder.build()
}

/// What was written for one shape: a manifest line.
struct Written {
    name: String,
    file: String,
    batches: usize,
    records: usize,
    bytes: usize,
    uncompressed_bytes: usize,
    shape: Shape,
}

fn write_shape(shape: &Shape, options: &Options) -> std::io::Result<Written> {
    // Batch count from the uncompressed size of one batch, so all codecs of a shape hold the
    // same records; at least one batch even when the target is tiny.
    let uncompressed = Shape {
        codec: Compression::None,
        ..*shape
    };
    let probe = batch(&uncompressed, 0, &mut Payloads::new(1)).len();
    let by_bytes = options.target_bytes.div_ceil(probe);
    let by_records = options.max_records.div_ceil(shape.records_per_batch);
    let batches = by_bytes.min(by_records).max(1);

    // The same seed for every codec of a shape: identical records, only the framing differs.
    let seed = (shape.records_per_batch * 1_000_003 + shape.value_size * 31 + shape.headers) as u64;
    let mut payloads = Payloads::new(seed);
    let mut plain_payloads = Payloads::new(seed);
    let mut file = Vec::new();
    let mut uncompressed_bytes = 0;
    for b in 0..batches {
        let base_offset = (b * shape.records_per_batch) as i64;
        file.extend_from_slice(&batch(shape, base_offset, &mut payloads));
        if shape.codec != Compression::None {
            uncompressed_bytes += batch(&uncompressed, base_offset, &mut plain_payloads).len();
        }
    }
    if shape.codec == Compression::None {
        uncompressed_bytes = file.len();
    }
    let name = shape.name();
    let file_name = format!("{name}.seg");
    std::fs::write(options.out.join(&file_name), &file)?;
    Ok(Written {
        name,
        file: file_name,
        batches,
        records: batches * shape.records_per_batch,
        bytes: file.len(),
        uncompressed_bytes,
        shape: *shape,
    })
}

struct Options {
    out: PathBuf,
    target_bytes: usize,
    max_records: usize,
}

fn parse_args() -> Result<Options, String> {
    let mut options = Options {
        out: PathBuf::from("target/bench-segments"),
        target_bytes: 2 << 20,
        max_records: 100_000,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--out" => options.out = PathBuf::from(value()?),
            "--target-bytes" => {
                options.target_bytes = value()?.parse().map_err(|e| format!("{arg}: {e}"))?
            }
            "--max-records" => {
                options.max_records = value()?.parse().map_err(|e| format!("{arg}: {e}"))?
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if options.target_bytes == 0 || options.max_records == 0 {
        return Err("--target-bytes and --max-records must be positive".into());
    }
    Ok(options)
}

fn run(options: &Options) -> std::io::Result<()> {
    std::fs::create_dir_all(&options.out)?;
    let manifest_path = options.out.join("manifest.tsv");
    // A manifest from an earlier run must not describe files this run is rewriting.
    if manifest_path.exists() {
        std::fs::remove_file(&manifest_path)?;
    }
    let mut manifest = String::from(
        "# shape\tfile\tbatches\trecords\tbytes\theaders\trecords_per_batch\tvalue_size\tcodec\tuncompressed_bytes\n",
    );
    for shape in shapes() {
        let w = write_shape(&shape, options)?;
        let codec = w.name.rsplit('-').next().unwrap_or_default();
        let _ = writeln!(
            manifest,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{codec}\t{}",
            w.name,
            w.file,
            w.batches,
            w.records,
            w.bytes,
            w.shape.headers,
            w.shape.records_per_batch,
            w.shape.value_size,
            w.uncompressed_bytes
        );
        println!(
            "{:<22} {:>7} batches {:>7} records {:>9} bytes (compression {:.2}x)",
            w.name,
            w.batches,
            w.records,
            w.bytes,
            w.uncompressed_bytes as f64 / w.bytes as f64
        );
    }
    // Written last, so a manifest only exists next to a complete set of files.
    let mut file = std::fs::File::create(manifest_path)?;
    file.write_all(manifest.as_bytes())?;
    Ok(())
}

fn main() -> ExitCode {
    let options = match parse_args() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("gen_bench_segments: {message}");
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("gen_bench_segments: {}: {error}", options.out.display());
            ExitCode::FAILURE
        }
    }
}
