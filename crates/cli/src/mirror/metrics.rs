//! `krec mirror --metrics HOST:PORT`: the copy's counters in Prometheus text at `/metrics`,
//! read from krec-copy's stats at each scrape, and `/health`.

use std::fmt;
use std::sync::Arc;

use axum::http::StatusCode;
use krec_copy::CopyStats;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

use crate::metrics_server::{counters, gauges, topic_partition, HealthCheck, Labels};

/// What a scrape reads.
#[derive(Debug)]
pub(super) struct MirrorExporter {
    pub(super) stats: Arc<CopyStats>,
}

impl MirrorExporter {
    /// `/health`: 200 while the mirror runs (a failure ends the process).
    pub(super) fn health() -> HealthCheck {
        Arc::new(|| (StatusCode::OK, "ok\n".to_owned()))
    }
}

impl Collector for MirrorExporter {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let copied = self.stats.snapshot();
        let total = |value: u64| [(Labels::new(), value)];
        let encoder = &mut encoder;
        counters(
            encoder,
            "krec_mirror_records",
            "Records copied and committed",
            total(copied.records),
        )?;
        counters(
            encoder,
            "krec_mirror_bytes",
            "Batch bytes copied and committed",
            total(copied.bytes),
        )?;
        counters(
            encoder,
            "krec_mirror_batches",
            "Batches written to the target",
            total(copied.batches),
        )?;
        counters(
            encoder,
            "krec_mirror_batches_reencoded",
            "Source batches written again record by record (legacy, LogAppendTime, offset gaps, too large)",
            total(copied.reencoded),
        )?;
        counters(
            encoder,
            "krec_mirror_batches_skipped",
            "Source batches left empty by compaction, not written",
            total(copied.skipped),
        )?;
        counters(
            encoder,
            "krec_mirror_records_lost",
            "Records the source deleted (retention) before they were copied",
            total(copied.lost_records),
        )?;
        counters(
            encoder,
            "krec_mirror_transactions",
            "Target transactions by result",
            [
                (
                    vec![("result", "committed".to_owned())],
                    copied.transactions,
                ),
                (vec![("result", "aborted".to_owned())], copied.aborted),
            ],
        )?;
        gauges(
            encoder,
            "krec_mirror_lag",
            "Records of the source partition not copied yet",
            (copied.lag.iter()).map(|(p, lag)| (topic_partition(&p.topic, p.partition), *lag)),
        )
    }
}
