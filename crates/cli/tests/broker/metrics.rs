//! `krec consume --metrics`, checked by Prometheus's own tools: `promtool check metrics`
//! accepts the exposition, and a real Prometheus server scraping a group member answers the
//! lag, record and assignment series with the values krec must have. `/health` is 200 while
//! fetching works and 503 once krec gives up (the broker stopped for longer than
//! `--give-up-after-ms`).

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::support::broker::{
    broker, simple_records, unique_topic, wait_with_timeout, ProducePlan,
};
use crate::support::metrics::{free_port, get, promtool_check, samples, Prometheus};

const PARTITIONS: i32 = 3;
const PER_PARTITION: usize = 10_000;

/// A `krec consume` child with `--metrics` on a free port; killed when dropped.
struct Krec {
    child: Child,
    address: String,
    stderr: tempfile::NamedTempFile,
}

impl Krec {
    fn start(topic: &str, args: &[&str], stdout: Stdio) -> Krec {
        let address = format!("127.0.0.1:{}", free_port());
        let stderr = tempfile::NamedTempFile::new().expect("stderr file");
        let child = Command::new(env!("CARGO_BIN_EXE_krec"))
            .args(["consume", "-b", &broker().bootstrap, "-t", topic])
            .args(["--metrics", &address])
            .args(args)
            .env("RUST_LOG", "warn,krec_cli=info")
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr.reopen().expect("stderr file"))
            .spawn()
            .expect("start krec consume");
        Krec {
            child,
            address,
            stderr,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// `/metrics` now (None while krec does not answer).
    fn scrape(&self) -> Option<String> {
        get(&self.url("/metrics"), &[]).map(|(_, body)| body)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.stderr.path()).unwrap_or_default()
    }

    fn wait(&mut self, timeout: Duration) -> ExitStatus {
        wait_with_timeout(&mut self.child, timeout)
            .unwrap_or_else(|| panic!("krec did not exit in time:\n{}", self.log()))
    }
}

impl Drop for Krec {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `check` every 200 ms until it gives a value, panicking with `what` after `timeout`.
fn wait_for<T>(timeout: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A Prometheus answer as `partition -> value`.
fn by_partition(series: &[(serde_json::Value, f64)]) -> BTreeMap<i32, f64> {
    series
        .iter()
        .map(|(labels, value)| {
            let partition = labels["partition"].as_str().expect("partition label");
            (partition.parse().expect("a partition id"), *value)
        })
        .collect()
}

fn total(series: &[(serde_json::Value, f64)]) -> f64 {
    series.iter().map(|(_, value)| value).sum()
}

/// The records krec has written out, per partition, from its own `/metrics`.
fn records_written(text: &str) -> BTreeMap<String, f64> {
    samples(text, "krec_records_total")
        .into_iter()
        .map(|(labels, value)| (labels.to_owned(), value))
        .collect()
}

#[test]
fn prometheus_sees_a_group_member_s_lag_records_and_assignment() {
    let broker = broker();
    let topic = unique_topic("metrics");
    broker.create_topic(&topic, PARTITIONS as u32, 1);
    let total_records = PER_PARTITION * PARTITIONS as usize;
    // Flushed every 1,000 records: batches of a few hundred, so that a fetch chunk is a few
    // batches and a few chunks fit in the pipe below.
    let steps = (0..total_records)
        .step_by(1000)
        .map(|from| (None, simple_records(from, 1000, PARTITIONS)))
        .collect();
    broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "lz4".into(),
        steps,
        ..ProducePlan::default()
    });

    // Nobody reads krec's stdout yet: once the pipe is full krec holds still, with fetched
    // chunks queued and not written, so the lag it reports must count from what it wrote.
    let group = unique_topic("metrics-group");
    let mut krec = Krec::start(
        &topic,
        &[
            "-G",
            &group,
            "--threads",
            "1",
            "--commit-interval-ms",
            "500",
            // Small chunks: some are written out before the pipe fills, some wait behind it.
            "--partition-max-bytes",
            "16384",
            "-f",
            "%p %o\\n",
        ],
        Stdio::piped(),
    );
    let still = wait_for(Duration::from_secs(60), "krec to hold still", || {
        let first = krec.scrape()?;
        samples(&first, "krec_assigned_partitions").first()?;
        std::thread::sleep(Duration::from_millis(500));
        let second = krec.scrape()?;
        let written = records_written(&second);
        let steady = !written.is_empty() && written == records_written(&first);
        steady.then_some(second)
    });

    // (a) Prometheus's own linter accepts the exposition.
    let (accepted, report) = promtool_check(&still);
    assert!(accepted, "promtool check metrics: {report}\n{still}");

    // (b) A Prometheus server scrapes krec; its HTTP API answers what krec must have.
    let prometheus = Prometheus::start(&krec.address);
    let query = |q: &str| prometheus.query(q);
    wait_for(Duration::from_secs(30), "a first scrape", || {
        (query("krec_consumer_lag").len() == PARTITIONS as usize).then_some(())
    });
    let lag = by_partition(&query("krec_consumer_lag"));
    let written = by_partition(&query("krec_records_total"));
    let end = PER_PARTITION as f64;
    for partition in 0..PARTITIONS {
        let written = written.get(&partition).copied().unwrap_or(0.0);
        assert_eq!(
            lag[&partition],
            end - written,
            "partition {partition}: lag is the high watermark minus what was written out \
             (written {written}); prometheus has {lag:?}"
        );
    }
    let written_total: f64 = written.values().sum();
    assert!(
        written_total > 0.0 && written_total < total_records as f64,
        "krec should be held mid-topic: {written:?}"
    );
    assert_eq!(total(&query("krec_assigned_partitions")), PARTITIONS as f64);
    assert_eq!(total(&query("krec_rebalances_total")), 1.0);

    // Let krec write everything: the lag drops to 0 and the records add up to the topic.
    let mut stdout = krec.child.stdout.take().expect("krec stdout");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).expect("read krec stdout");
        text.lines().count()
    });
    wait_for(
        Duration::from_secs(60),
        "everything written and committed",
        || {
            let all_written = total(&query("krec_records_total")) == total_records as f64;
            let no_lag = query("krec_consumer_lag")
                .iter()
                .all(|(_, lag)| *lag == 0.0);
            let committed = total(&query(r#"krec_commits_total{result="ok"}"#)) >= 1.0;
            (all_written && no_lag && committed).then_some(())
        },
    );
    let by_topic = query("krec_bytes_total");
    assert_eq!(by_topic.len(), 1);
    assert!(by_topic[0].1 > 0.0);
    assert!(total(&query("krec_fetch_requests_total")) > 0.0);
    assert_eq!(total(&query(r#"krec_errors_total{kind="fatal"}"#)), 0.0);
    assert_eq!(total(&query("krec_assigned_partitions")), PARTITIONS as f64);

    let status = Command::new("kill")
        .args(["-TERM", &krec.child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    let exit = krec.wait(Duration::from_secs(60));
    assert!(exit.success(), "krec exited with {exit}:\n{}", krec.log());
    assert_eq!(reader.join().expect("reader thread"), total_records);
}

/// It stops the shared broker: under `solo::`, run alone after the others (scripts/test.sh).
mod solo {
    use super::*;

    /// Restarts the broker's node when dropped, even if the test failed halfway.
    struct NodeStopped;

    impl Drop for NodeStopped {
        fn drop(&mut self) {
            broker().kafka_sh("start-node", &["--node", "1"]);
        }
    }

    #[test]
    fn health_is_200_while_fetching_and_503_once_krec_gives_up() {
        let broker = broker();
        let topic = unique_topic("health");
        broker.create_topic(&topic, 1, 1);
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: "none".into(),
            steps: vec![(None, simple_records(0, 100, 1))],
            ..ProducePlan::default()
        });
        let give_up = Duration::from_millis(1600);
        let mut krec = Krec::start(
            &topic,
            &["--give-up-after-ms", &give_up.as_millis().to_string()],
            Stdio::null(),
        );
        wait_for(Duration::from_secs(60), "all records written", || {
            let text = krec.scrape()?;
            let written: f64 = samples(&text, "krec_records_total")
                .iter()
                .map(|s| s.1)
                .sum();
            (written == 100.0).then_some(())
        });
        let health_url = krec.url("/health");
        let health = || get(&health_url, &[]);
        assert_eq!(
            health(),
            Some((200, "ok\n".to_owned())),
            "while fetching works"
        );

        // Stop the broker and watch /health until krec has exited.
        let stopped_at = Instant::now();
        let guard = NodeStopped;
        let stopping = std::thread::spawn(move || broker.kafka_sh("stop-node", &["--node", "1"]));
        let mut answers: Vec<(Duration, u16, String)> = Vec::new();
        let status = loop {
            if let Some(status) = krec.child.try_wait().expect("try_wait") {
                break status;
            }
            assert!(
                stopped_at.elapsed() < Duration::from_secs(120),
                "krec did not give up:\n{}",
                krec.log()
            );
            if let Some((code, text)) = health() {
                answers.push((stopped_at.elapsed(), code, text));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        stopping.join().expect("stop-node");
        drop(guard);

        let first_503 = answers.iter().position(|(_, code, _)| *code == 503);
        let first_503 = first_503.unwrap_or_else(|| {
            panic!(
                "never saw a 503 before krec exited: {answers:?}\n{}",
                krec.log()
            )
        });
        let (at, _, text) = &answers[first_503];
        assert!(
            *at >= give_up,
            "503 after {at:?}, before the give-up time {give_up:?}: {text}"
        );
        let reason_named =
            text.contains("the give-up time is 1.6 s") || text.contains("stopped on an error");
        assert!(reason_named, "{text}");
        assert!(
            answers[first_503..].iter().all(|(_, code, _)| *code == 503),
            "once given up, /health stays 503: {answers:?}"
        );
        assert_eq!(status.code(), Some(1), "{}", krec.log());
        assert!(krec.log().contains("gave up after"), "{}", krec.log());
    }
}
