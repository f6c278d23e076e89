//! Helpers of the fault tests: the proxied lanes of `kafka.sh start --proxies K` (read from
//! its proxy.env), a small client of Toxiproxy's HTTP API, a producer that keeps writing
//! numbered records and reports each acknowledgement as it comes, and the checks on what krec
//! printed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use super::broker::Broker;
use super::group::Position;

/// One lane: a bootstrap string whose advertised addresses are Toxiproxy proxies.
#[derive(Clone, Debug)]
pub struct Lane {
    /// Bootstrap string through the proxies.
    pub bootstrap: String,
    /// The lane's proxy names, one per node.
    pub proxies: Vec<String>,
}

/// An instance started with `--proxies K`.
pub struct ProxiedBroker {
    /// Its PLAINTEXT listener (topics, producers, the broker's pid), never proxied.
    pub admin: Broker,
    /// Toxiproxy's API address.
    pub api: String,
    lanes: Vec<Lane>,
    free: Mutex<Vec<usize>>,
    freed: Condvar,
}

/// Reads the proxy.env named by environment variable `var` for instance `admin`.
pub fn proxied_broker(var: &str, admin: Broker) -> ProxiedBroker {
    let path = std::env::var(var).unwrap_or_else(|_| {
        panic!(
            "{var} is not set: the fault tests need the proxied broker that `bash \
             scripts/test.sh` starts (scripts/kafka.sh start --proxies K)"
        )
    });
    let text = std::fs::read_to_string(&path).expect("read proxy.env");
    let env: HashMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
    let count: usize = env["LANES"].parse().expect("LANES");
    let lanes: Vec<Lane> = (1..=count)
        .map(|i| Lane {
            bootstrap: env[format!("LANE{i}").as_str()].to_owned(),
            proxies: env[format!("LANE{i}_PROXIES").as_str()]
                .split(',')
                .map(str::to_owned)
                .collect(),
        })
        .collect();
    let broker = ProxiedBroker {
        admin,
        api: env["TOXIPROXY_API"].to_owned(),
        free: Mutex::new((0..lanes.len()).collect()),
        lanes,
        freed: Condvar::new(),
    };
    // A lane left with a toxic by an earlier, killed run must start clean.
    broker.toxiproxy("POST", "/reset", None);
    broker
}

/// A lane taken from the pool; cleared of toxics and re-enabled when given back.
pub struct LaneGuard<'a> {
    broker: &'a ProxiedBroker,
    index: usize,
}

impl ProxiedBroker {
    /// Waits for a free lane: one test per lane, so a fault hits only its own test.
    pub fn take_lane(&self) -> LaneGuard<'_> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(index) = free.pop() {
                return LaneGuard {
                    broker: self,
                    index,
                };
            }
            free = self.freed.wait(free).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// One call of Toxiproxy's API; panics unless it answers 2xx.
    pub fn toxiproxy(&self, method: &str, path: &str, body: Option<serde_json::Value>) -> String {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(10)))
            .build()
            .into();
        let url = format!("http://{}{path}", self.api);
        let answer = match (method, body) {
            ("POST", Some(body)) => agent
                .post(&url)
                .header("Content-Type", "application/json")
                .send(body.to_string()),
            ("POST", None) => agent.post(&url).send_empty(),
            ("DELETE", _) => agent.delete(&url).call(),
            _ => agent.get(&url).call(),
        };
        let mut answer = answer.unwrap_or_else(|e| panic!("toxiproxy {method} {path}: {e}"));
        let status = answer.status().as_u16();
        let text = answer.body_mut().read_to_string().unwrap_or_default();
        assert!(
            (200..300).contains(&status),
            "toxiproxy {method} {path}: HTTP {status} {text}"
        );
        text
    }
}

impl LaneGuard<'_> {
    /// The lane.
    pub fn lane(&self) -> &Lane {
        &self.broker.lanes[self.index]
    }

    /// Adds toxic `name` of `kind` on `stream` (`downstream`: broker to krec) to every proxy.
    pub fn add_toxic(&self, name: &str, kind: &str, stream: &str, attributes: serde_json::Value) {
        for proxy in &self.lane().proxies {
            let toxic = serde_json::json!({
                "name": name, "type": kind, "stream": stream, "toxicity": 1.0,
                "attributes": attributes,
            });
            self.broker
                .toxiproxy("POST", &format!("/proxies/{proxy}/toxics"), Some(toxic));
        }
    }

    /// Removes toxic `name` from every proxy.
    pub fn remove_toxic(&self, name: &str) {
        for proxy in &self.lane().proxies {
            self.broker
                .toxiproxy("DELETE", &format!("/proxies/{proxy}/toxics/{name}"), None);
        }
    }

    /// Enables or disables every proxy (disabled: connections closed, new ones refused).
    pub fn set_enabled(&self, enabled: bool) {
        for proxy in &self.lane().proxies {
            self.broker.toxiproxy(
                "POST",
                &format!("/proxies/{proxy}"),
                Some(serde_json::json!({ "enabled": enabled })),
            );
        }
    }

    fn clear(&self) {
        self.set_enabled(true);
        for proxy in &self.lane().proxies {
            let listed = self
                .broker
                .toxiproxy("GET", &format!("/proxies/{proxy}/toxics"), None);
            let toxics: serde_json::Value = serde_json::from_str(&listed).unwrap_or_default();
            // Last added first (see broker_faults.rs: Toxiproxy can hang otherwise).
            for toxic in toxics.as_array().into_iter().flatten().rev() {
                if let Some(name) = toxic["name"].as_str() {
                    self.broker.toxiproxy(
                        "DELETE",
                        &format!("/proxies/{proxy}/toxics/{name}"),
                        None,
                    );
                }
            }
        }
    }
}

impl Drop for LaneGuard<'_> {
    fn drop(&mut self) {
        self.clear();
        let mut free = self.broker.free.lock().unwrap_or_else(|p| p.into_inner());
        free.push(self.index);
        self.broker.freed.notify_one();
    }
}

/// Keeps producing numbered records (`seq-<i>` then padding) to a topic's partitions in turn
/// with confluent-kafka until told to stop, writing `partition offset seq` for each record as
/// the broker acknowledges it.
pub struct SequenceProducer {
    child: Child,
    acks: PathBuf,
}

const SEQUENCE_PRODUCER: &str = r#"
import sys, time, threading
from confluent_kafka import Producer
bootstrap, topic, partitions, rate, pad = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True, "acks": "all"})
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
def report(err, msg):
    if err is not None:
        sys.exit("delivery failed: %s" % err)
    sys.stdout.write("%d %d %s\n" % (msg.partition(), msg.offset(), msg.value()[:msg.value().index(b" ")].decode()))
    sys.stdout.flush()
start, i = time.time(), 0
while not stop.is_set():
    p.produce(topic, value=b"seq-%d %s" % (i, b"x" * pad), partition=i % partitions, on_delivery=report)
    p.poll(0)
    i += 1
    ahead = start + i / rate - time.time()
    if ahead > 0:
        time.sleep(ahead)
if p.flush(120) != 0:
    sys.exit("records left unacknowledged")
"#;

impl SequenceProducer {
    /// Starts producing `per_second` records of about `pad` bytes; acks go to `dir`.
    pub fn start(
        bootstrap: &str,
        topic: &str,
        partitions: i32,
        per_second: f64,
        pad: usize,
        dir: &Path,
    ) -> Self {
        let acks = dir.join("acks");
        let child = Command::new("/usr/bin/python3")
            .args(["-c", SEQUENCE_PRODUCER, bootstrap, topic])
            .args([
                partitions.to_string(),
                per_second.to_string(),
                pad.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(File::create(&acks).expect("acks file"))
            .stderr(File::create(dir.join("producer.err")).expect("producer stderr"))
            .spawn()
            .expect("run /usr/bin/python3 (python3-confluent-kafka, scripts/install-deps.sh)");
        SequenceProducer { child, acks }
    }

    /// Every record acknowledged so far: position to sequence number.
    pub fn acked(&self) -> BTreeMap<Position, u64> {
        read_sequenced(&self.acks)
            .into_iter()
            .map(|(p, o, s)| ((p, o), s))
            .collect()
    }

    /// Stops producing, waits for the last acknowledgements and returns them all.
    pub fn finish(mut self) -> BTreeMap<Position, u64> {
        drop(self.child.stdin.take());
        let status = self.child.wait().expect("producer");
        let stderr =
            std::fs::read_to_string(self.acks.with_file_name("producer.err")).unwrap_or_default();
        assert!(status.success(), "producer failed: {stderr}");
        self.acked()
    }
}

impl Drop for SequenceProducer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `partition offset seq-N` lines of a file (complete lines only).
pub fn read_sequenced(path: &Path) -> Vec<(i32, i64, u64)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|line| {
            let mut fields = line.split(' ');
            let mut next = || {
                fields
                    .next()
                    .unwrap_or_else(|| panic!("short line {line:?}"))
            };
            let partition = next().parse().expect("partition");
            let offset = next().parse().expect("offset");
            let seq = next()
                .strip_prefix("seq-")
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("no sequence number in {line:?}"));
            (partition, offset, seq)
        })
        .collect()
}

/// Waits until `printed()` holds every position of `wanted`; returns how long that took.
pub fn wait_printed(
    what: &str,
    wanted: &BTreeSet<Position>,
    timeout: Duration,
    mut printed: impl FnMut() -> BTreeSet<Position>,
    log: impl Fn() -> String,
) -> Duration {
    let started = Instant::now();
    loop {
        let seen = printed();
        let missing = wanted.difference(&seen).count();
        if missing == 0 {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < timeout,
            "{what}: {missing} of {} records not printed after {timeout:?}\n{}",
            wanted.len(),
            log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Assign mode: `printed` holds each acknowledged record exactly once, in offset order per
/// partition, each with the sequence number the producer gave it.
pub fn assert_exactly_once_in_order(printed: &[(i32, i64, u64)], acked: &BTreeMap<Position, u64>) {
    let partitions: BTreeSet<i32> = acked.keys().map(|(p, _)| *p).collect();
    for &partition in &partitions {
        let got: Vec<(i64, u64)> = printed
            .iter()
            .filter(|r| r.0 == partition)
            .map(|r| (r.1, r.2))
            .collect();
        let want: Vec<(i64, u64)> = acked
            .iter()
            .filter(|((p, _), _)| *p == partition)
            .map(|((_, o), s)| (*o, *s))
            .collect();
        if let Some(index) = (0..got.len().min(want.len())).find(|&i| got[i] != want[i]) {
            panic!(
                "partition {partition}, record #{index}: printed (offset, seq) {:?}, expected {:?}",
                got[index], want[index]
            );
        }
        assert_eq!(
            got.len(),
            want.len(),
            "partition {partition}: printed {} records, the broker acknowledged {}",
            got.len(),
            want.len()
        );
    }
    let unknown = printed
        .iter()
        .filter(|r| !partitions.contains(&r.0))
        .count();
    assert_eq!(unknown, 0, "records of partitions never produced to");
}

/// Writes a line to `dir/NOTE` (kept by the test's temp dir only while it runs).
pub fn note(dir: &Path, text: &str) {
    if let Ok(mut file) = File::options()
        .create(true)
        .append(true)
        .open(dir.join("NOTE"))
    {
        let _ = writeln!(file, "{text}");
    }
}
