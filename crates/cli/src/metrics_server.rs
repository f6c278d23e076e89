//! `--metrics HOST:PORT`: Prometheus text exposition at `/metrics` and liveness at `/health`,
//! served by axum on the consume command's own tokio runtime.
//!
//! Nothing is counted for the endpoint: each scrape takes the consumer's snapshot
//! ([`krec_consumer::MetricsSnapshot`]) and the written-out counts ([`Progress`]) and encodes
//! them with the official client's text encoder. A scrape holds each lock only to copy
//! numbers, so it never holds up a fetch loop or a decode thread; and a fetch loop gives the
//! runtime back at every request it awaits, so scrapes are answered while fetching runs flat
//! out (BENCHMARKS.md, "Metrics endpoint").

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use krec_consumer::metrics::{CommitResult, GroupMetrics, MetricsSnapshot};
use krec_consumer::share::ShareCounters;
use krec_consumer::MetricsSource;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::progress::{Lag, PartitionWritten, Progress};
use crate::Error;

/// The bound `--metrics` socket, not yet serving (bound before anything connects, so a busy
/// address fails the command at once).
#[derive(Debug)]
pub struct MetricsEndpoint {
    listener: tokio::net::TcpListener,
}

/// Binds `address` (`HOST:PORT`) for `--metrics`.
pub async fn bind(address: &str) -> Result<MetricsEndpoint, Error> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| Error::Listen {
            option: "--metrics",
            address: address.to_owned(),
            source,
        })?;
    Ok(MetricsEndpoint { listener })
}

impl MetricsEndpoint {
    /// Where it listens.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Serves `/metrics` and `/health` from `exporter` on a task of the current runtime, until
    /// the runtime ends.
    pub fn serve(self, exporter: Exporter) {
        let source = exporter.source.clone();
        let health: HealthCheck = Arc::new(move || health_answer(&source.snapshot()));
        self.serve_collector(Box::new(exporter), health);
    }

    /// Serves `/metrics` from `collector` and `/health` from `health` (another command's
    /// series) on a task of the current runtime, until the runtime ends.
    pub fn serve_collector(self, collector: Box<dyn Collector>, health: HealthCheck) {
        if let Some(address) = self.local_addr() {
            tracing::info!(%address, "serving /metrics and /health");
        }
        let mut registry = Registry::default();
        registry.register_collector(collector);
        let endpoint = Arc::new(Endpoint { registry, health });
        let app = Router::new()
            .route("/metrics", get(metrics))
            .route("/health", get(health_page))
            .with_state(endpoint);
        tokio::spawn(async move {
            if let Err(error) = axum::serve(self.listener, app).await {
                tracing::warn!(%error, "the metrics endpoint stopped");
            }
        });
    }
}

/// The `/health` answer now: a status and a line of text.
pub type HealthCheck = Arc<dyn Fn() -> (StatusCode, String) + Send + Sync>;

/// What a scrape reads: the consumer's counters and what has been written out.
#[derive(Clone, Debug)]
pub struct Exporter {
    source: MetricsSource,
    progress: Arc<Progress>,
    read_committed: bool,
    /// A share-group member's acknowledgement counters (`--share-group`).
    share: Option<Arc<ShareCounters>>,
}

impl Exporter {
    /// An exporter of `source` (a consumer or group member) and `progress` (its output);
    /// `read_committed` picks the end the lag counts to.
    pub fn new(source: MetricsSource, progress: Arc<Progress>, read_committed: bool) -> Self {
        Self {
            source,
            progress,
            read_committed,
            share: None,
        }
    }

    /// Exports a share-group member's counters too.
    pub fn with_share(mut self, counters: Arc<ShareCounters>) -> Self {
        self.share = Some(counters);
        self
    }
}

struct Endpoint {
    registry: Registry,
    health: HealthCheck,
}

async fn metrics(State(endpoint): State<Arc<Endpoint>>) -> impl IntoResponse {
    let mut text = String::new();
    match prometheus_client::encoding::prometheus_text::encode(&mut text, &endpoint.registry) {
        Ok(()) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            )],
            text,
        ),
        Err(fmt::Error) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "encoding the metrics failed\n".to_owned(),
        ),
    }
}

/// 200 while the command works; 503 once it gave up (until krec exits).
async fn health_page(State(endpoint): State<Arc<Endpoint>>) -> impl IntoResponse {
    let (status, text) = (endpoint.health)();
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
}

/// The `/health` answer for a snapshot.
pub fn health_answer(snapshot: &MetricsSnapshot) -> (StatusCode, String) {
    if snapshot.stopped_on_error {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "stopped on an error\n".to_owned(),
        );
    }
    match snapshot.failing_for {
        Some(failing) if snapshot.gave_up() => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "failing for {:.1} s; the give-up time is {:.1} s\n",
                failing.as_secs_f64(),
                snapshot.give_up_after.as_secs_f64()
            ),
        ),
        _ => (StatusCode::OK, "ok\n".to_owned()),
    }
}

impl Collector for Exporter {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let snapshot = self.source.snapshot();
        let written = self.progress.partitions();
        let lags = self
            .progress
            .lags(&snapshot.partitions, self.read_committed);
        encode_series(&mut encoder, &snapshot, &written, &lags)?;
        match &self.share {
            Some(share) => share_series(&mut encoder, share),
            None => Ok(()),
        }
    }
}

/// The series of a share-group member.
pub fn share_series(
    encoder: &mut DescriptorEncoder,
    share: &ShareCounters,
) -> Result<(), fmt::Error> {
    use krec_consumer::AcknowledgeType;
    let kinds = [
        AcknowledgeType::Accept,
        AcknowledgeType::Release,
        AcknowledgeType::Reject,
    ];
    counters(
        encoder,
        "krec_share_acknowledgements",
        "Records acknowledged to the share group, by type",
        kinds.iter().map(|&kind| {
            (
                vec![("type", kind.name().to_owned())],
                share.acknowledged(kind),
            )
        }),
    )?;
    gauges(
        encoder,
        "krec_share_records_in_flight",
        "Records acquired for this member and not acknowledged yet",
        [(Labels::new(), share.in_flight() as i64)],
    )?;
    counters(
        encoder,
        "krec_share_acknowledgement_errors",
        "Acknowledgements a leader refused (those records are delivered again)",
        [(Labels::new(), share.acknowledge_errors())],
    )
}

pub(crate) type Labels = Vec<(&'static str, String)>;

pub(crate) fn topic_partition(topic: &str, partition: i32) -> Labels {
    vec![
        ("topic", topic.to_owned()),
        ("partition", partition.to_string()),
    ]
}

/// Every series of `krec consume --metrics` (the README lists them).
pub fn encode_series(
    encoder: &mut DescriptorEncoder,
    snapshot: &MetricsSnapshot,
    written: &[PartitionWritten],
    lags: &[Lag],
) -> Result<(), fmt::Error> {
    written_series(encoder, written)?;
    counters(
        encoder,
        "krec_bytes",
        "Record bytes fetched (complete batches, as on the wire)",
        snapshot
            .bytes_fetched
            .iter()
            .map(|(topic, &bytes)| (vec![("topic", topic.to_string())], bytes)),
    )?;
    gauges(
        encoder,
        "krec_consumer_lag",
        "Records between the next offset to write out and the partition's end (high watermark, or last stable offset under read_committed)",
        lags.iter()
            .map(|l| (topic_partition(&l.topic, l.partition), l.lag)),
    )?;
    counters(
        encoder,
        "krec_fetch_requests",
        "Fetch requests sent, by broker node id",
        snapshot
            .brokers
            .iter()
            .map(|(node, b)| (vec![("broker", node.to_string())], b.fetch_requests)),
    )?;
    fetch_latency(encoder, snapshot)?;
    error_series(encoder, snapshot)?;
    if let Some(group) = &snapshot.group {
        group_series(encoder, group)?;
    }
    Ok(())
}

/// Records written out and scanned, by partition.
fn written_series(
    encoder: &mut DescriptorEncoder,
    written: &[PartitionWritten],
) -> Result<(), fmt::Error> {
    counters(
        encoder,
        "krec_records",
        "Records written out",
        written
            .iter()
            .map(|w| (topic_partition(&w.topic, w.partition), w.records)),
    )?;
    counters(
        encoder,
        "krec_records_scanned",
        "Data records decoded, matching the filters or not",
        written
            .iter()
            .map(|w| (topic_partition(&w.topic, w.partition), w.scanned)),
    )
}

/// Errors by kind and corrupt batches skipped, by partition.
fn error_series(
    encoder: &mut DescriptorEncoder,
    snapshot: &MetricsSnapshot,
) -> Result<(), fmt::Error> {
    counters(
        encoder,
        "krec_errors",
        "Errors by kind (retried ones included)",
        snapshot
            .errors
            .iter()
            .map(|(kind, &count)| (vec![("kind", kind.name().to_owned())], count)),
    )?;
    counters(
        encoder,
        "krec_batches_skipped",
        "Corrupt batches skipped under --on-corrupt skip",
        snapshot
            .batches_skipped
            .iter()
            .map(|(key, &count)| (topic_partition(&key.topic, key.partition), count)),
    )
}

/// A group member's rebalances, commits and assigned partitions.
fn group_series(encoder: &mut DescriptorEncoder, group: &GroupMetrics) -> Result<(), fmt::Error> {
    counters(
        encoder,
        "krec_rebalances",
        "Assignments received from the group",
        [(Labels::new(), group.rebalances)],
    )?;
    counters(
        encoder,
        "krec_commits",
        "OffsetCommit requests by result",
        CommitResult::ALL.iter().map(|result| {
            let count = group.commits.get(result).copied().unwrap_or(0);
            (vec![("result", result.name().to_owned())], count)
        }),
    )?;
    gauges(
        encoder,
        "krec_assigned_partitions",
        "Partitions assigned to this member now",
        [(Labels::new(), group.assigned_partitions as i64)],
    )
}

fn fetch_latency(
    encoder: &mut DescriptorEncoder,
    snapshot: &MetricsSnapshot,
) -> Result<(), fmt::Error> {
    let mut family = encoder.encode_descriptor(
        "krec_fetch_latency_seconds",
        "Time from sending a fetch request to its answer, by broker node id",
        None,
        MetricType::Histogram,
    )?;
    for (node, broker) in &snapshot.brokers {
        let labels: Labels = vec![("broker", node.to_string())];
        let histogram = &broker.fetch_latency;
        family
            .encode_family(&labels)?
            .encode_histogram::<NoLabelSet>(
                histogram.sum.as_secs_f64(),
                histogram.count(),
                &histogram.buckets().collect::<Vec<_>>(),
                None,
            )?;
    }
    Ok(())
}

pub(crate) fn counters(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (Labels, u64)>,
) -> Result<(), fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in series {
        encode_one(&mut family, &labels, |metric| {
            metric.encode_counter::<NoLabelSet, _, u64>(&value, None)
        })?;
    }
    Ok(())
}

pub(crate) fn gauges(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (Labels, i64)>,
) -> Result<(), fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in series {
        encode_one(&mut family, &labels, |metric| metric.encode_gauge(&value))?;
    }
    Ok(())
}

/// One sample: with its labels, or bare when there are none.
fn encode_one(
    family: &mut MetricEncoder,
    labels: &Labels,
    encode: impl FnOnce(&mut MetricEncoder) -> Result<(), fmt::Error>,
) -> Result<(), fmt::Error> {
    if labels.is_empty() {
        encode(family)
    } else {
        encode(&mut family.encode_family(labels)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use krec_consumer::metrics::{BrokerMetrics, ErrorKind, GroupMetrics, LatencyHistogram};
    use std::time::Duration;

    /// A collector of fixed numbers, to see exactly what a scrape shows.
    #[derive(Debug)]
    struct Fixed {
        snapshot: MetricsSnapshot,
        written: Vec<PartitionWritten>,
        lags: Vec<Lag>,
    }

    impl Collector for Fixed {
        fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
            encode_series(&mut encoder, &self.snapshot, &self.written, &self.lags)
        }
    }

    fn snapshot(group: Option<GroupMetrics>) -> MetricsSnapshot {
        let mut counts = [0; 14];
        counts[0] = 2;
        counts[8] = 1;
        counts[13] = 1;
        MetricsSnapshot {
            brokers: [(
                2,
                BrokerMetrics {
                    fetch_requests: 5,
                    fetch_latency: LatencyHistogram {
                        counts,
                        sum: Duration::from_millis(12_500),
                    },
                },
            )]
            .into(),
            bytes_fetched: [(Arc::from("t"), 4096)].into(),
            errors: ErrorKind::ALL
                .iter()
                .map(|&kind| (kind, u64::from(kind == ErrorKind::Connection)))
                .collect(),
            partitions: Vec::new(),
            group,
            failing_for: None,
            stopped_on_error: false,
            give_up_after: Duration::from_secs(300),
            batches_skipped: [(krec_consumer::TopicPartition::new("t", 1), 2)].into(),
        }
    }

    fn exposition(snapshot: MetricsSnapshot) -> String {
        let fixed = Fixed {
            snapshot,
            written: vec![PartitionWritten {
                topic: Arc::from("t"),
                partition: 1,
                records: 70,
                scanned: 90,
                next_to_write: None,
            }],
            lags: vec![Lag {
                topic: Arc::from("t"),
                partition: 1,
                lag: 30,
            }],
        };
        let mut registry = Registry::default();
        registry.register_collector(Box::new(fixed));
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &registry).unwrap();
        text
    }

    fn samples(text: &str) -> Vec<&str> {
        text.lines().filter(|l| !l.starts_with('#')).collect()
    }

    #[test]
    fn a_scrape_shows_every_series_under_its_documented_name() {
        let text = exposition(snapshot(None));
        assert_eq!(
            samples(&text),
            [
                r#"krec_records_total{topic="t",partition="1"} 70"#,
                r#"krec_records_scanned_total{topic="t",partition="1"} 90"#,
                r#"krec_bytes_total{topic="t"} 4096"#,
                r#"krec_consumer_lag{topic="t",partition="1"} 30"#,
                r#"krec_fetch_requests_total{broker="2"} 5"#,
                r#"krec_fetch_latency_seconds_bucket{broker="2",le="0.001"} 2"#,
                r#"krec_fetch_latency_seconds_bucket{broker="2",le="0.0025"} 2"#,
                r#"krec_fetch_latency_seconds_bucket{broker="2",le="0.005"} 2"#,
                r#"krec_fetch_latency_seconds_bucket{broker="2",le="0.01"} 2"#,
                r#"krec_fetch_latency_seconds_bucket{broker="2",le="0.025"} 2"#,
                r#"krec_fetch_latency_seconds_bucket{broker="2",le="0.05"} 2"#,
                r#"krec_fetch_latency_seconds_bucket{broker="2",le="0.1"} 2"#,
                r#"krec_fetch_latency_seconds_bucket{broker="2",le="0.25"} 2"#,
                r#"krec_fetch_latency_seconds_bucket{broker="2",le="0.5"} 3"#,
                r#"krec_fetch_latency_seconds_bucket{broker="2",le="1"} 3"#,
                r#"krec_fetch_latency_seconds_bucket{broker="2",le="2.5"} 3"#,
                r#"krec_fetch_latency_seconds_bucket{broker="2",le="5"} 3"#,
                r#"krec_fetch_latency_seconds_bucket{broker="2",le="10"} 3"#,
                r#"krec_fetch_latency_seconds_bucket{broker="2",le="+Inf"} 4"#,
                r#"krec_fetch_latency_seconds_sum{broker="2"} 12.5"#,
                r#"krec_fetch_latency_seconds_count{broker="2"} 4"#,
                r#"krec_errors_total{kind="connection"} 1"#,
                r#"krec_errors_total{kind="fetch"} 0"#,
                r#"krec_errors_total{kind="offset_reset"} 0"#,
                r#"krec_errors_total{kind="lookup"} 0"#,
                r#"krec_errors_total{kind="group"} 0"#,
                r#"krec_errors_total{kind="fatal"} 0"#,
                r#"krec_batches_skipped_total{topic="t",partition="1"} 2"#,
            ]
        );
        assert!(text.contains("# TYPE krec_consumer_lag gauge\n"));
        assert!(text.contains("# TYPE krec_fetch_latency_seconds histogram\n"));
        assert!(text.contains("# TYPE krec_records_total counter\n"));
    }

    #[test]
    fn a_group_member_also_shows_rebalances_commits_and_its_assignment() {
        let group = GroupMetrics {
            rebalances: 2,
            commits: [(CommitResult::Ok, 9), (CommitResult::Failed, 1)].into(),
            assigned_partitions: 3,
        };
        let text = exposition(snapshot(Some(group)));
        let group_samples: Vec<&str> = samples(&text)
            .into_iter()
            .skip_while(|l| !l.starts_with("krec_rebalances"))
            .collect();
        assert_eq!(
            group_samples,
            [
                "krec_rebalances_total 2",
                r#"krec_commits_total{result="ok"} 9"#,
                r#"krec_commits_total{result="refused"} 0"#,
                r#"krec_commits_total{result="failed"} 1"#,
                "krec_assigned_partitions 3",
            ]
        );
        assert!(text.contains("# TYPE krec_assigned_partitions gauge\n"));
    }

    #[tokio::test]
    async fn a_busy_address_is_an_invalid_option_naming_it() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = taken.local_addr().unwrap().to_string();
        let error = bind(&address).await.unwrap_err();
        assert_eq!(error.exit_code(), 2);
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("--metrics {address}: cannot listen there: ")),
            "{message}"
        );
        assert!(bind("no-port").await.is_err());
    }

    #[test]
    fn health_is_503_once_the_give_up_condition_is_reached() {
        let mut state = snapshot(None);
        assert_eq!(health_answer(&state), (StatusCode::OK, "ok\n".to_owned()));
        state.failing_for = Some(Duration::from_secs(299));
        assert_eq!(health_answer(&state).0, StatusCode::OK);
        state.failing_for = Some(Duration::from_secs(300));
        let (status, text) = health_answer(&state);
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(text, "failing for 300.0 s; the give-up time is 300.0 s\n");
        state.failing_for = None;
        state.stopped_on_error = true;
        assert_eq!(health_answer(&state).0, StatusCode::SERVICE_UNAVAILABLE);
    }
}
