//! The arguments of `krec decode`, and what they mean for the decoder: its limits, its
//! threads, its offset window, and byte counts with suffixes.

use std::num::NonZeroUsize;
use std::path::PathBuf;

use krec_batch::{DecodeConfig, OnCorrupt};

use super::parallel::Parallelism;
use crate::format::{FormatArgs, OffsetWindow};
use crate::range::{EndBound, OffsetRange};
use crate::Error;
use krec_consumer::StartOffset;

/// Largest file read by default: Kafka caps a segment at `log.segment.bytes`,
/// an int32, so no real segment is bigger.
pub(super) const DEFAULT_MAX_FILE_BYTES: u64 = i32::MAX as u64;

/// Arguments of `krec decode`.
#[derive(Debug, clap::Args)]
pub struct DecodeArgs {
    /// Log segment files (`.log`) to decode, in order; `-` reads standard input.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Only offsets START up to END (exclusive): `START:END`, `START:`, `:END` or `START`.
    /// Time bounds (`@T`, `s@`, `e@`) need the broker's view: use `krec consume`.
    #[arg(
        short = 'o',
        long = "offset",
        value_name = "START:END",
        allow_hyphen_values = true
    )]
    pub offset: Option<String>,

    /// Output options.
    #[command(flatten)]
    pub format: FormatArgs,

    /// Skip the CRC check of each batch (to read past a known-corrupt checksum).
    #[arg(long = "no-crc")]
    pub no_crc: bool,

    /// A batch that fails its checks (CRC, decompression, record count or framing): `stop`
    /// (default) or `skip` it whole, reported on stderr, and exit with status 3 at the end.
    #[arg(long = "on-corrupt", value_name = "POLICY", default_value = "stop", value_parser = crate::corrupt::parse_on_corrupt)]
    pub on_corrupt: OnCorrupt,

    /// Largest batch accepted, in bytes (suffixes K, M, G: powers of 1024).
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "64M")]
    pub max_batch_bytes: u64,

    /// Largest decompressed size of one batch, in bytes (suffixes K, M, G).
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "64M")]
    pub max_decompressed_bytes: u64,

    /// Largest input accepted, in bytes (suffixes K, M, G). A larger file is refused before
    /// it is read; standard input (or a file growing while read) on reaching it, after the
    /// records of the runs before. Memory is bounded by --run-bytes, not by this.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value_t = DEFAULT_MAX_FILE_BYTES)]
    pub max_file_bytes: u64,

    /// Topic name to print (default: from a `TOPIC-PARTITION` parent directory, else unknown).
    #[arg(long, value_name = "TOPIC")]
    pub topic: Option<String>,

    /// Partition to print (default: from a `TOPIC-PARTITION` parent directory, else unknown).
    #[arg(long, value_name = "N")]
    pub partition: Option<i32>,

    /// Decode threads (default: one per core; 1 decodes on the main thread).
    #[arg(long, value_name = "N")]
    pub threads: Option<NonZeroUsize>,

    /// Input bytes read and decoded at a time (whole batches, so a run can be larger, up to
    /// one batch of --max-batch-bytes); with several threads, the unit handed to a thread.
    /// Smaller means less memory, more reads and hand-overs.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "1M")]
    pub run_bytes: u64,
}

impl DecodeArgs {
    /// The krec-batch limits these arguments ask for.
    pub fn decode_config(&self) -> DecodeConfig {
        DecodeConfig {
            verify_crc: !self.no_crc,
            max_batch_bytes: usize::try_from(self.max_batch_bytes).unwrap_or(usize::MAX),
            max_decompressed_bytes: usize::try_from(self.max_decompressed_bytes)
                .unwrap_or(usize::MAX),
            ..DecodeConfig::default()
        }
    }

    /// The threads and run size these arguments ask for.
    pub fn parallelism(&self) -> Parallelism {
        let cores = std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN);
        Parallelism {
            threads: self.threads.unwrap_or(cores),
            run_bytes: usize::try_from(self.run_bytes).unwrap_or(usize::MAX),
        }
    }
}

/// `-o`: offsets only, as `krec consume` reads them (`beginning` is 0).
pub(super) fn offset_window(text: Option<&str>) -> Result<Option<OffsetWindow>, Error> {
    let Some(text) = text else {
        return Ok(None);
    };
    let range = OffsetRange::parse(&[text.to_owned()], crate::time::now_ms())?;
    let from = match range.start {
        StartOffset::Beginning => 0,
        StartOffset::Offset(offset) => offset,
        _ => return Err(offsets_only(text)),
    };
    let to = match range.end {
        None => None,
        Some(EndBound::Offset(offset)) => Some(offset),
        Some(EndBound::Time(_)) => return Err(offsets_only(text)),
    };
    Ok(Some(OffsetWindow { from, to }))
}

fn offsets_only(text: &str) -> Error {
    Error::InvalidArgument {
        what: "offset",
        detail: format!(
            "{text:?}: krec decode takes offsets (START:END, START:, :END, START); time bounds \
             are for krec consume, which asks the broker"
        ),
    }
}

/// Parses a byte count with an optional binary suffix: `4096`, `64K`, `64M`, `1G`, `64MiB`.
pub(super) fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let digits_end = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, suffix) = trimmed.split_at(digits_end);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a byte count (e.g. 4096, 64K, 64M, 1G)"))?;
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => {
            return Err(format!(
                "`{text}`: unknown size suffix `{suffix}` (K, M or G)"
            ))
        }
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("`{text}` is too large"))
}
