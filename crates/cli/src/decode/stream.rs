//! `krec decode --threads 1`: the input read run by run into one reused buffer and decoded on
//! the calling thread, so memory is bounded by the run size (plus one entry larger than a run),
//! whatever the size of the file, and standard input streams as a file does.

use std::io::{Read, Write};

use krec_batch::{BatchWalk, DecodeConfig, Skipped};

use super::runs::RunReader;
use super::{decode_walk, DecodeFailure, DecodeSummary, Skips};
use crate::format::{FormatArgs, RecordContext};

/// Decodes every run `runs` reads into `buffer` (reused across inputs), in order, writing
/// records to `out` as [`decode_bytes`](super::decode_bytes) does for the whole input: the
/// same output, and an error at the same byte position of the input. The batches `skips`' policy
/// skips go to `report` (input positions) once the records of their run are written.
pub(super) fn decode_runs<R: Read, W: Write>(
    runs: &mut RunReader<R>,
    config: &DecodeConfig,
    context: &RecordContext<'_>,
    format: &FormatArgs,
    buffer: &mut Vec<u8>,
    out: &mut W,
    (skips, report): (&mut Skips, &mut dyn FnMut(Skipped)),
) -> Result<DecodeSummary, DecodeFailure> {
    let mut writer = format
        .writer(out)
        .map_err(|error| DecodeFailure::Output(std::io::Error::other(error)))?;
    let mut summary = DecodeSummary::default();
    let result = loop {
        let run = match runs.next_run(std::mem::take(buffer)) {
            Ok(Some(run)) => run,
            Ok(None) => break Ok(()),
            Err(error) => break Err(DecodeFailure::Read(error)),
        };
        // A run starts on an entry boundary and holds whole entries, but for a cut or refused
        // one that ends the input: its walk meets what a walk of the whole input would.
        let walk = BatchWalk::new(run.bytes(), config);
        let decoded = decode_walk(walk, context, &mut writer, skips);
        // Reported once the records before them are flushed, so a reader of both streams
        // never sees a report ahead of records that came before the batch.
        if !skips.skipped.is_empty() {
            writer.flush().map_err(DecodeFailure::Output)?;
            skips.drain_from(run.start).for_each(&mut *report);
        }
        match decoded {
            Ok(run_summary) => summary.add(run_summary),
            Err(failure) => {
                break Err(failure.with_input_start(run.start));
            }
        }
        *buffer = run.into_buffer();
    };
    // The records before a failure are written before it is reported.
    writer.flush().map_err(DecodeFailure::Output)?;
    result.map(|()| summary)
}
