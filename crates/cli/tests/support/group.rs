//! Helpers of the consumer-group broker tests: krec group members as child processes, their
//! output and logs, a paced producer that reports what the broker acknowledged.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A record position: (partition, offset).
pub type Position = (i32, i64);

/// Log filter that makes a member report assignment changes and every commit on stderr.
pub const MEMBER_LOG: &str = "warn,krec_consumer::group=info,krec::commit=info";

/// One `krec consume -G` process, printing `partition offset` lines.
pub struct Member {
    pub name: String,
    pub child: Child,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

/// Starts `count` members `m0`, `m1`, ... of `group` on `topic` (output under `dir`) and waits
/// until they have settled on an assignment of all `partitions`.
pub fn start_settled_members(
    bootstrap: &str,
    topic: &str,
    group: &str,
    dir: &Path,
    count: usize,
    partitions: i32,
    extra: &[&str],
) -> Vec<Member> {
    let members: Vec<Member> = (0..count)
        .map(|i| Member::start(bootstrap, topic, group, dir, &format!("m{i}"), extra))
        .collect();
    let refs: Vec<&Member> = members.iter().collect();
    wait_stable(&refs, partitions, Duration::from_secs(60));
    members
}

impl Member {
    /// Starts a member with short group timings (6 s session, 500 ms heartbeats and commits).
    pub fn start(
        bootstrap: &str,
        topic: &str,
        group: &str,
        dir: &Path,
        name: &str,
        extra: &[&str],
    ) -> Member {
        let stdout = dir.join(format!("{name}.out"));
        let stderr = dir.join(format!("{name}.err"));
        let child = Command::new(env!("CARGO_BIN_EXE_krec"))
            .args(["consume", "-b", bootstrap, "-t", topic, "-G", group])
            .args(["-f", "%p %o\\n", "--threads", "1"])
            .args([
                "--session-timeout-ms",
                "6000",
                "--heartbeat-interval-ms",
                "500",
            ])
            .args(["--commit-interval-ms", "500"])
            .args(extra)
            .env("RUST_LOG", MEMBER_LOG)
            .stdin(Stdio::null())
            .stdout(File::create(&stdout).expect("member stdout"))
            .stderr(File::create(&stderr).expect("member stderr"))
            .spawn()
            .expect("start krec consume -G");
        Member {
            name: name.to_owned(),
            child,
            stdout,
            stderr,
        }
    }

    /// Every `partition offset` line printed so far, in order.
    pub fn printed(&self) -> Vec<Position> {
        let text = std::fs::read_to_string(&self.stdout).unwrap_or_default();
        text.lines()
            .filter(|line| line.ends_with(|c: char| c.is_ascii_digit()))
            .filter_map(|line| {
                let (p, o) = line.split_once(' ')?;
                Some((p.parse().ok()?, o.parse().ok()?))
            })
            .collect()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// The partitions assigned now, from the member's assignment log lines.
    pub fn assignment(&self) -> BTreeSet<i32> {
        let mut assigned = BTreeSet::new();
        for line in self.log().lines() {
            let assigning = line.contains("partitions assigned");
            if !assigning && !line.contains("partitions revoked") {
                continue;
            }
            let Some(list) = field(line, "partitions=") else {
                continue;
            };
            for item in list.split(',').filter(|i| !i.is_empty()) {
                let Some(partition) = item.rsplit('/').next().and_then(|p| p.parse().ok()) else {
                    continue;
                };
                if assigning {
                    assigned.insert(partition);
                } else {
                    assigned.remove(&partition);
                }
            }
        }
        assigned
    }

    /// How many assignment changes the member logged.
    pub fn assignment_changes(&self) -> usize {
        self.log()
            .lines()
            .filter(|l| l.contains("partitions assigned") || l.contains("partitions revoked"))
            .count()
    }

    /// The last committed offset of each partition, from the member's commit log lines.
    pub fn last_commits(&self) -> BTreeMap<i32, i64> {
        let mut commits = BTreeMap::new();
        for line in self.log().lines().filter(|l| l.contains("krec::commit")) {
            let partition = field(line, "partition=").and_then(|p| p.parse().ok());
            let offset = field(line, "offset=").and_then(|o| o.parse().ok());
            if let (Some(partition), Some(offset)) = (partition, offset) {
                commits.insert(partition, offset);
            }
        }
        commits
    }

    /// Sends a signal (`TERM`, `KILL`) with kill(1).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} {}", self.name);
    }

    /// Waits for the process to exit (killing it after `timeout`, which fails the test).
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "{} did not exit within {timeout:?}:\n{}",
                    self.name,
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops with SIGTERM and asserts a clean exit.
    pub fn stop(&mut self) {
        self.signal("TERM");
        let status = self.wait(Duration::from_secs(30));
        assert!(
            status.success(),
            "{} exited with {status}:\n{}",
            self.name,
            self.log()
        );
    }

    /// The member's log, for failure messages.
    pub fn log_tail(&self) -> String {
        let log = self.log();
        let start = log.len().saturating_sub(4000);
        let start = (start..log.len())
            .find(|&i| log.is_char_boundary(i))
            .unwrap_or(0);
        log[start..].to_owned()
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of `name=` in a log line, up to the next space.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = line.find(name)? + name.len();
    let rest = &line[start..];
    Some(rest.split(' ').next().unwrap_or(rest).trim_matches('"'))
}

/// Polls `check` every 100 ms until it holds, panicking with `what` after `timeout`.
pub fn wait_until(timeout: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until the members' assignments are disjoint, cover `partitions`, give every member
/// at least one partition, and have not changed for two seconds.
pub fn wait_stable(members: &[&Member], partitions: i32, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    let mut stable_since: Option<(Instant, Vec<BTreeSet<i32>>)> = None;
    loop {
        let assignments: Vec<BTreeSet<i32>> = members.iter().map(|m| m.assignment()).collect();
        let total: usize = assignments.iter().map(BTreeSet::len).sum();
        let union: BTreeSet<i32> = assignments.iter().flatten().copied().collect();
        let balanced = total == partitions as usize
            && union.len() == partitions as usize
            && assignments.iter().all(|a| !a.is_empty());
        match (&stable_since, balanced) {
            (Some((since, seen)), true) if *seen == assignments => {
                if since.elapsed() > Duration::from_secs(2) {
                    return;
                }
            }
            (_, true) => stable_since = Some((Instant::now(), assignments.clone())),
            (_, false) => stable_since = None,
        }
        if Instant::now() > deadline {
            let logs: Vec<String> = members
                .iter()
                .map(|m| format!("--- {} {:?}\n{}", m.name, m.assignment(), m.log_tail()))
                .collect();
            panic!(
                "the group did not settle: {assignments:?}\n{}",
                logs.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Produces `count` records (values `v<i>`, spread over `partitions`) at about `per_second`
/// with confluent-kafka (librdkafka), in the background; `finish` returns what the broker
/// acknowledged.
pub struct PacedProducer {
    child: Child,
}

const PACED_PRODUCER: &str = r#"
import sys, time
from confluent_kafka import Producer
bootstrap, topic, count, partitions, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True, "acks": "all"})
acked = []
def report(err, msg):
    if err is not None:
        sys.exit("delivery failed: %s" % err)
    acked.append((msg.partition(), msg.offset()))
start = time.time()
for i in range(count):
    p.produce(topic, value=b"v%d" % i, partition=i % partitions, on_delivery=report)
    p.poll(0)
    ahead = start + i / rate - time.time()
    if ahead > 0:
        time.sleep(ahead)
p.flush(60)
for partition, offset in acked:
    print(partition, offset)
"#;

impl PacedProducer {
    /// Starts producing.
    pub fn start(
        bootstrap: &str,
        topic: &str,
        count: usize,
        partitions: i32,
        per_second: f64,
    ) -> Self {
        let child = Command::new("/usr/bin/python3")
            .args(["-c", PACED_PRODUCER, bootstrap, topic])
            .args([
                count.to_string(),
                partitions.to_string(),
                per_second.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run /usr/bin/python3 (python3-confluent-kafka, scripts/install-deps.sh)");
        Self { child }
    }

    /// Waits for the producer and returns every acknowledged position.
    pub fn finish(self) -> BTreeSet<Position> {
        let output = self.child.wait_with_output().expect("producer");
        assert!(
            output.status.success(),
            "producer failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| {
                let (p, o) = line.split_once(' ').expect("partition offset");
                (p.parse().expect("partition"), o.parse().expect("offset"))
            })
            .collect()
    }
}

/// Counts how often each position was printed across members.
pub fn print_counts(members: &[&Member]) -> BTreeMap<Position, usize> {
    let mut counts = BTreeMap::new();
    for member in members {
        for position in member.printed() {
            *counts.entry(position).or_insert(0) += 1;
        }
    }
    counts
}

/// Waits until every produced position has been printed by some member.
pub fn wait_all_printed(members: &[&Member], produced: &BTreeSet<Position>, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let counts = print_counts(members);
        let missing = produced.iter().filter(|p| !counts.contains_key(p)).count();
        if missing == 0 {
            return;
        }
        if Instant::now() > deadline {
            let logs: Vec<String> = members
                .iter()
                .map(|m| format!("--- {} {:?}\n{}", m.name, m.assignment(), m.log_tail()))
                .collect();
            panic!("{missing} records never printed\n{}", logs.join("\n"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Writes a note next to the members' files (kept by `tempfile` only on failure).
pub fn note(dir: &Path, text: &str) {
    let mut file = File::create(dir.join("NOTE")).expect("note");
    let _ = file.write_all(text.as_bytes());
}
