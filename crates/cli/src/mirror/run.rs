//! Running the mirror: one async runtime, the pipeline until it ends or SIGTERM / Ctrl-C
//! (which commit the open transaction first), `--stats` lines, the summary.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use krec_copy::{CopySnapshot, CopyStats};

use super::metrics::MirrorExporter;
use super::MirrorArgs;
use crate::Error;

/// Runs `krec mirror`: exit 0 when it stopped as asked (`-e`, `--idle-timeout`, SIGTERM)
/// with everything copied committed, 1 on a failure, 2 for bad arguments.
pub fn run(args: MirrorArgs) -> ExitCode {
    let mirror = async { mirror(args).await.map(|()| 0) };
    crate::copy_run::run_copy("mirror", mirror, Error::to_string)
}

async fn mirror(args: MirrorArgs) -> Result<(), Error> {
    let config = args.config()?;
    let started = Instant::now();
    let terminate = crate::copy_run::terminate_signal()?;
    let endpoint = match &args.metrics {
        Some(address) => Some(crate::metrics_server::bind(address).await?),
        None => None,
    };
    let mirror = config.connect().await?;
    let stats = mirror.stats();
    if let Some(endpoint) = endpoint {
        let exporter = MirrorExporter {
            stats: stats.clone(),
        };
        endpoint.serve_collector(Box::new(exporter), MirrorExporter::health());
    }
    if let Some(seconds) = args.stats {
        let every = Duration::from_secs_f64(seconds.max(0.1));
        tokio::spawn(print_stats(stats.clone(), every, started));
    }
    let copied = mirror.run(terminate).await?;
    eprintln!("krec mirror: {}", summary(&copied, started.elapsed()));
    Ok(())
}

async fn print_stats(stats: Arc<CopyStats>, every: Duration, started: Instant) {
    loop {
        tokio::time::sleep(every).await;
        eprintln!(
            "krec mirror: {}",
            summary(&stats.snapshot(), started.elapsed())
        );
    }
}

/// One line: what is copied and committed, and what is left.
fn summary(copied: &CopySnapshot, elapsed: Duration) -> String {
    let lag: i64 = copied.lag.iter().map(|(_, lag)| lag.max(&0)).sum();
    let seconds = elapsed.as_secs_f64().max(1e-9);
    format!(
        "{} records, {:.1} MB copied in {} transactions ({:.0} records/s); {} batches, {} \
         re-encoded, {} skipped; {} aborted; {} lost; lag {} records",
        copied.records,
        copied.bytes as f64 / 1e6,
        copied.transactions,
        copied.records as f64 / seconds,
        copied.batches,
        copied.reencoded,
        copied.skipped,
        copied.aborted,
        copied.lost_records,
        lag
    )
}
