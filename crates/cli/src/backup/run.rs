//! Running the backup: one async runtime, the pipeline until every partition is backed up
//! to its end (or, with `--follow`, until SIGTERM / Ctrl-C, which commit first), `--stats`
//! lines, the summary.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use krec_copy::{CopySnapshot, CopyStats};

use super::BackupArgs;
use crate::Error;

/// Runs `krec backup`: exit 0 when everything read is backed up and in the manifest, 3 when
/// it is but the source had deleted records before the backup read them (lost: the manifest
/// lists the ranges), 1 on a failure, 2 for bad arguments.
pub fn run(args: BackupArgs) -> ExitCode {
    crate::copy_run::run_copy("backup", backup(args), Error::to_string)
}

/// Backs up; the records lost to it.
async fn backup(args: BackupArgs) -> Result<u64, Error> {
    let config = args.config()?;
    let started = Instant::now();
    let terminate = crate::copy_run::terminate_signal()?;
    let backup = config.connect().await?;
    let stats = backup.stats();
    let segments = backup.sink().segments_published();
    if let Some(seconds) = args.stats {
        let every = Duration::from_secs_f64(seconds.max(0.1));
        let (stats, segments) = (stats.clone(), segments.clone());
        tokio::spawn(print_stats(stats, segments, every, started));
    }
    let copied = backup.run(terminate).await?;
    let line = summary(&copied, segments.load(Relaxed), started.elapsed());
    eprintln!("krec backup: {line} into {}", args.location);
    if copied.lost_records > 0 {
        eprintln!(
            "krec backup: warning: {} records lost: the source deleted them (retention) before \
             they were backed up; the manifest lists the ranges",
            copied.lost_records
        );
    }
    Ok(copied.lost_records)
}

async fn print_stats(
    stats: Arc<CopyStats>,
    segments: Arc<AtomicU64>,
    every: Duration,
    started: Instant,
) {
    loop {
        tokio::time::sleep(every).await;
        let line = summary(&stats.snapshot(), segments.load(Relaxed), started.elapsed());
        eprintln!("krec backup: {line}");
    }
}

/// One line: what is backed up and committed, and what is left.
fn summary(copied: &CopySnapshot, segments: u64, elapsed: Duration) -> String {
    let lag: i64 = copied.lag.iter().map(|(_, lag)| lag.max(&0)).sum();
    let seconds = elapsed.as_secs_f64().max(1e-9);
    format!(
        "{} records, {:.1} MB backed up in {} segments ({:.0} records/s); {} batches; {} \
         records lost; lag {} records",
        copied.records,
        copied.bytes as f64 / 1e6,
        segments,
        copied.records as f64 / seconds,
        copied.batches,
        copied.lost_records,
        lag
    )
}
