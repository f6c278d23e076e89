//! Running the restore: one async runtime, the pipeline until the backup is restored or
//! SIGTERM / Ctrl-C (which commit the open transaction first), `--stats` lines, the summary.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use krec_copy::{CopySnapshot, CopyStats};

use super::RestoreArgs;
use crate::Error;

/// Runs `krec restore`: exit 0 once everything asked for is restored and committed (or it was
/// stopped by SIGTERM), 3 when corrupt batches were skipped, 1 on a failure, 2 for bad
/// arguments.
pub fn run(args: RestoreArgs) -> ExitCode {
    crate::copy_run::run_copy("restore", restore(args), with_flags)
}

/// Restores; the number of corrupt batches skipped.
async fn restore(args: RestoreArgs) -> Result<u64, Error> {
    let config = args.config()?;
    let started = Instant::now();
    let terminate = crate::copy_run::terminate_signal()?;
    let restore = config.connect().await?;
    let stats = restore.stats();
    let warnings = restore.source().warnings();
    let skipped = restore.source().corrupt_skipped();
    if let Some(seconds) = args.stats {
        let every = Duration::from_secs_f64(seconds.max(0.1));
        let (stats, warnings) = (stats.clone(), warnings.clone());
        tokio::spawn(print_stats(stats, warnings, every, started));
    }
    let copied = restore.run(terminate).await?;
    let warned = warnings.load(Ordering::Relaxed);
    eprintln!(
        "krec restore: {}",
        summary(&copied, warned, started.elapsed())
    );
    Ok(skipped.load(Ordering::Relaxed))
}

/// The library's advice names configuration, not flags: here, the flag.
fn with_flags(error: &Error) -> String {
    let text = error.with_flags();
    text.replace(
        "skip corrupt batches",
        "skip corrupt batches (--on-corrupt skip)",
    )
}

async fn print_stats(
    stats: Arc<CopyStats>,
    warnings: Arc<AtomicU64>,
    every: Duration,
    started: Instant,
) {
    loop {
        tokio::time::sleep(every).await;
        let warned = warnings.load(Ordering::Relaxed);
        eprintln!(
            "krec restore: {}",
            summary(&stats.snapshot(), warned, started.elapsed())
        );
    }
}

/// One line: what is restored and committed, what is left, and the warnings given.
fn summary(copied: &CopySnapshot, warnings: u64, elapsed: Duration) -> String {
    let left: i64 = copied.lag.iter().map(|(_, lag)| lag.max(&0)).sum();
    let seconds = elapsed.as_secs_f64().max(1e-9);
    format!(
        "{} records, {:.1} MB restored in {} transactions ({:.0} records/s); {} batches, {} \
         re-encoded, {} skipped; {} aborted; {} records left; {} warnings",
        copied.records,
        copied.bytes as f64 / 1e6,
        copied.transactions,
        copied.records as f64 / seconds,
        copied.batches,
        copied.reencoded,
        copied.skipped,
        copied.aborted,
        left,
        warnings
    )
}
