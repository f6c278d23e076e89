//! `krec mirror` under faults and scaled out, against the real broker (source and target are
//! the one broker, the copies behind `--topic-prefix`): Toxiproxy lanes cut and slowed
//! between the mirror and either end, two members of one mirror with one killed, a member
//! frozen past its session timeout (a zombie), a member killed and restarted at once, and a
//! throttle slower than a fetched run; records the source deleted under a stopped mirror.
//! Each ends with source and copy compared record by record: nothing lost, nothing twice.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::faults::plain;
use crate::mirror::{assert_copied, committed, mirror_to_end, summary_count};
use crate::support::broker::{broker, simple_records, unique_topic, Broker, ProducePlan};
use crate::support::faults::{LaneGuard, SequenceProducer};
use crate::support::group::wait_until;
use crate::support::metrics::{free_port, get, samples};

/// The group's session timeout in the scale-out tests: short, so a takeover is quick.
const SESSION_TIMEOUT_MS: u64 = 6000;
/// Their transaction timeout: a killed member's open transaction holds back
/// `read_committed` readers of its partitions until the coordinator aborts it.
const TRANSACTION_TIMEOUT_MS: u64 = 10_000;
const SCALE_PARTITIONS: i32 = 6;
/// What a mirror logs when the source deleted records before it copied them.
const LOST_WARNING: &str = "records deleted at the source before they were copied";

/// One `krec mirror` process, its log in a file and its metrics on a port of its own.
struct MirrorProcess {
    member: String,
    child: Child,
    log: PathBuf,
    metrics: String,
}

/// How a mirror process is started.
struct Launch<'a> {
    source: &'a str,
    target: &'a str,
    topic: &'a str,
    name: &'a str,
    /// The `--to-config` file.
    config: &'a Path,
    extra: &'a [&'a str],
}

impl Launch<'_> {
    fn spawn(&self, member: &str, dir: &Path) -> MirrorProcess {
        let log = dir.join(format!("{member}.err"));
        let stderr = File::options()
            .create(true)
            .append(true)
            .open(&log)
            .expect("mirror log");
        let metrics = format!("127.0.0.1:{}", free_port());
        let child = Command::new(env!("CARGO_BIN_EXE_krec"))
            .args(["mirror", "-b", self.source, "-t", self.topic])
            .args(["--to", self.target, "--to-config"])
            .arg(self.config)
            .args(["--name", self.name, "--member", member])
            .args(["--topic-prefix", "copy-", "--metrics", &metrics])
            .args(self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("start krec mirror");
        MirrorProcess {
            member: member.to_owned(),
            child,
            log,
            metrics,
        }
    }
}

impl MirrorProcess {
    fn scrape(&self) -> String {
        let url = format!("http://{}/metrics", self.metrics);
        get(&url, &[]).map(|(_, body)| body).unwrap_or_default()
    }

    /// Records this process has copied and committed.
    fn copied(&self) -> f64 {
        let text = self.scrape();
        samples(&text, "krec_mirror_records_total")
            .first()
            .map_or(0.0, |&(_, n)| n)
    }

    /// The partitions this process copies (its lag series, as of its last commit).
    fn owned(&self) -> usize {
        samples(&self.scrape(), "krec_mirror_lag").len()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} {}", self.member);
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("try_wait")
    }

    fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.exited() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "{} did not exit within {timeout:?}:\n{}",
                    self.member,
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM: the open transaction is committed and the process exits 0.
    fn stop(&mut self) {
        self.signal("TERM");
        let status = self.wait(Duration::from_secs(60));
        assert!(
            status.success(),
            "{} exited with {status}:\n{}",
            self.member,
            self.log()
        );
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for MirrorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn target_config(dir: &Path, lines: &[String]) -> PathBuf {
    let path = dir.join("target.properties");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write --to-config");
    path
}

/// The group and transaction settings of the scale-out tests.
fn scale_config(session_timeout_ms: u64, transaction_timeout_ms: u64) -> Vec<String> {
    vec![
        format!("session.timeout.ms={session_timeout_ms}"),
        "heartbeat.interval.ms=1000".to_owned(),
        format!("transaction.timeout.ms={transaction_timeout_ms}"),
    ]
}

/// Waits until the copy holds, read committed, as many records as `expected`.
fn wait_copied(broker: &Broker, copy: &str, expected: usize, log: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let copied = committed(broker, copy).len();
        if copied >= expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{copied} of {expected} records copied to {copy} after 90 s:\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Every record acknowledged to the source is in the copy once, in order: nothing lost,
/// no duplicates.
fn assert_mirrored(broker: &Broker, topic: &str, acknowledged: usize) {
    let source = committed(broker, topic);
    assert_eq!(source.len(), acknowledged, "records in {topic}");
    let copy = committed(broker, &format!("copy-{topic}"));
    assert_copied(&source, &copy);
}

/// `-e` after the others stopped: completes and finds nothing left to copy.
fn finish_with_exit(launch: &Launch<'_>, member: &str, dir: &Path) {
    let extra: Vec<&str> = launch.extra.iter().copied().chain(["-e"]).collect();
    let mut last = Launch {
        extra: &extra,
        ..*launch
    }
    .spawn(member, dir);
    let status = last.wait(Duration::from_secs(60));
    let log = last.log();
    assert!(status.success(), "krec mirror -e: {log}");
    assert_eq!(summary_count(&log, "records, "), 0, "all copied: {log}");
}

/// A fault on one lane, held for a while, then lifted.
struct LaneFault<'a> {
    lane: &'a LaneGuard<'a>,
    toxic: Option<(&'static str, serde_json::Value)>,
    hold: Duration,
}

impl LaneFault<'_> {
    fn apply(&self) {
        match &self.toxic {
            None => self.lane.set_enabled(false),
            Some((kind, attributes)) => {
                (self.lane).add_toxic("mirror", kind, "downstream", attributes.clone())
            }
        }
        std::thread::sleep(self.hold);
        match &self.toxic {
            None => self.lane.set_enabled(true),
            Some(_) => self.lane.remove_toxic("mirror"),
        }
    }
}

#[test]
fn mirror_rides_out_cuts_and_latency_on_either_lane() {
    let proxied = plain();
    let (source_lane, target_lane) = (proxied.take_lane(), proxied.take_lane());
    let timeouts = [
        "request.timeout.ms=5000".to_owned(),
        format!("session.timeout.ms={SESSION_TIMEOUT_MS}"),
        "heartbeat.interval.ms=1000".to_owned(),
    ];
    let scaled = Scaled::start("mfaults-lanes", &timeouts);
    // Throttled above the producer's pace: both lanes carry requests all along, and
    // a transaction commits every half second, so each fault lands mid-copy.
    let extra = [
        "-X",
        "request.timeout.ms=5000",
        "--max-bytes-per-second",
        "150000",
    ];
    let launch = Launch {
        source: &source_lane.lane().bootstrap,
        target: &target_lane.lane().bootstrap,
        extra: &extra,
        ..scaled.launch()
    };
    let mut mirror = launch.spawn("m0", scaled.dir.path());
    wait_until(Duration::from_secs(60), "a first commit", || {
        mirror.copied() > 0.0
    });
    let latency = serde_json::json!({ "latency": 800, "jitter": 200 });
    let faults = [
        ("target cut", &target_lane, None, 2),
        ("target cut past the session timeout", &target_lane, None, 9),
        (
            "target latency",
            &target_lane,
            Some(("latency", latency.clone())),
            2,
        ),
        ("source cut", &source_lane, None, 2),
        (
            "source latency",
            &source_lane,
            Some(("latency", latency)),
            2,
        ),
    ];
    for (what, lane, toxic, seconds) in faults {
        let before = mirror.copied();
        let fault = LaneFault {
            lane,
            toxic,
            hold: Duration::from_secs(seconds),
        };
        fault.apply();
        // A mirror rides out short faults: copying again after each, never exiting.
        let deadline = Instant::now() + Duration::from_secs(30);
        while mirror.copied() <= before {
            let exited = mirror.exited();
            let log = mirror.log();
            assert!(
                exited.is_none(),
                "exited ({exited:?}) on the {what}:\n{log}"
            );
            assert!(
                Instant::now() < deadline,
                "not copying after the {what}:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let log = mirror.log();
    let felt = ["reconnecting", "trying again", "retrying"];
    assert!(
        felt.iter().any(|line| log.contains(line)),
        "the faults were not felt:\n{log}"
    );
    scaled.finish(mirror);
    eprintln!("mirror through cuts (one past the session timeout) and latency: no restart");
}

/// Two members copying a topic a producer keeps writing to: what survives.
struct Scaled {
    broker: Broker,
    topic: String,
    name: String,
    dir: tempfile::TempDir,
    config: PathBuf,
    producer: SequenceProducer,
}

impl Scaled {
    fn start(what: &str, config: &[String]) -> Scaled {
        let broker = broker();
        let topic = unique_topic(what);
        broker.create_topic(&topic, SCALE_PARTITIONS as u32, 1);
        let dir = tempfile::tempdir().expect("tempdir");
        let config = target_config(dir.path(), config);
        let producer = SequenceProducer::start(
            &broker.bootstrap,
            &topic,
            SCALE_PARTITIONS,
            300.0,
            100,
            dir.path(),
        );
        Scaled {
            broker,
            name: unique_topic(what),
            topic,
            dir,
            config,
            producer,
        }
    }

    fn launch(&self) -> Launch<'_> {
        Launch {
            source: &self.broker.bootstrap,
            target: &self.broker.bootstrap,
            topic: &self.topic,
            name: &self.name,
            config: &self.config,
            extra: &[],
        }
    }

    /// Stops the producer, waits for `survivor` to copy the rest, stops it, runs `-e` and
    /// compares.
    fn finish(self, mut survivor: MirrorProcess) {
        let acknowledged = self.producer.finish().len();
        let copy = format!("copy-{}", self.topic);
        wait_copied(&self.broker, &copy, acknowledged, || survivor.log());
        survivor.stop();
        // Aborts, rewinds and partitions lost and assigned again are no loss of records.
        let log = survivor.log();
        assert!(!log.contains(LOST_WARNING), "no records lost:\n{log}");
        let launch = Launch {
            source: &self.broker.bootstrap,
            target: &self.broker.bootstrap,
            topic: &self.topic,
            name: &self.name,
            config: &self.config,
            extra: &[],
        };
        finish_with_exit(&launch, &survivor.member, self.dir.path());
        assert_mirrored(&self.broker, &self.topic, acknowledged);
    }
}

/// Two members share the partitions; each has some.
fn two_members(scaled: &Scaled) -> (MirrorProcess, MirrorProcess) {
    let launch = scaled.launch();
    let a = launch.spawn("a", scaled.dir.path());
    let b = launch.spawn("b", scaled.dir.path());
    wait_until(Duration::from_secs(60), "both members copying", || {
        let (x, y) = (a.owned(), b.owned());
        x > 0 && y > 0 && x + y == SCALE_PARTITIONS as usize
    });
    (a, b)
}

#[test]
fn two_members_and_one_killed_the_other_takes_over() {
    let scaled = Scaled::start(
        "mfaults-two",
        &scale_config(SESSION_TIMEOUT_MS, TRANSACTION_TIMEOUT_MS),
    );
    let (mut a, b) = two_members(&scaled);
    a.signal("KILL");
    a.wait(Duration::from_secs(10));
    let killed = Instant::now();
    wait_until(Duration::from_secs(30), "b copying every partition", || {
        b.owned() == SCALE_PARTITIONS as usize
    });
    let taken = killed.elapsed();
    let before = b.copied();
    wait_until(Duration::from_secs(30), "b copying on", || {
        b.copied() > before
    });
    scaled.finish(b);
    eprintln!("a member killed: the other copied all its partitions after {taken:?}");
}

#[test]
fn a_zombie_member_cannot_write() {
    let scaled = Scaled::start(
        "mfaults-zombie",
        &scale_config(SESSION_TIMEOUT_MS, TRANSACTION_TIMEOUT_MS),
    );
    let (mut a, b) = two_members(&scaled);
    a.signal("STOP");
    wait_until(Duration::from_secs(45), "b copying every partition", || {
        b.owned() == SCALE_PARTITIONS as usize
    });
    let before = b.copied();
    wait_until(Duration::from_secs(30), "b copying on", || {
        b.copied() > before
    });
    a.signal("CONT");
    // Its open transaction is refused (fenced generation): it aborts, or exits.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !(a.log().contains("transaction aborted") || a.exited().is_some()) {
        if Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let exited = a.exited();
    if exited.is_none() {
        a.stop();
    }
    let refused = a.log();
    // First what reached the copy: nothing the zombie wrote after losing its partitions.
    scaled.finish(b);
    assert!(
        exited.is_some() || refused.contains("transaction aborted"),
        "the zombie neither aborted nor exited:\n{refused}"
    );
    eprintln!(
        "zombie: {}",
        (refused.lines())
            .find(|l| l.contains("transaction aborted"))
            .unwrap_or("exited")
    );
}

#[test]
fn a_member_killed_and_restarted_copies_again_at_once() {
    // Session and transaction timeouts far longer than the restart: only static membership
    // and the stable transactional.id (fencing the killed one's open transaction, which
    // holds back read_committed readers) let the restart's copies be read at once.
    let timeout = Duration::from_secs(45);
    let millis = timeout.as_millis() as u64;
    let scaled = Scaled::start("mfaults-restart", &scale_config(millis, millis));
    let copy = format!("copy-{}", scaled.topic);
    let launch = scaled.launch();
    let mut first = launch.spawn("a", scaled.dir.path());
    wait_until(Duration::from_secs(60), "a first commit", || {
        first.copied() > 0.0
    });
    first.signal("KILL");
    first.wait(Duration::from_secs(10));
    let restarted = Instant::now();
    let visible = committed(&scaled.broker, &copy).len();
    let again = launch.spawn("a", scaled.dir.path());
    wait_until(timeout / 3, "the restart's copies readable", || {
        again.copied() > 0.0 && committed(&scaled.broker, &copy).len() > visible
    });
    let took = restarted.elapsed();
    scaled.finish(again);
    eprintln!("kill -9 and restart: copies readable again after {took:?}");
}

#[test]
fn a_slow_throttle_keeps_transactions_short() {
    // A throttle far slower than a fetched run: a transaction must still end within
    // transaction.timeout.ms, or the coordinator aborts it and the copy never ends.
    let broker = broker();
    let topic = unique_topic("mfaults-throttle");
    broker.create_topic(&topic, 1, 1);
    let dir = tempfile::tempdir().expect("tempdir");
    // Batches of krec produce's default size: the throttle paces between batches.
    let lines: String = (0..4000)
        .map(|i| format!("value-{i}-{}\n", "x".repeat(90)))
        .collect();
    let input = dir.path().join("input");
    std::fs::write(&input, lines).expect("write input");
    let produced = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(["produce", "-b", &broker.bootstrap, "-t", &topic, "-l"])
        .arg(&input)
        .output()
        .expect("run krec produce");
    assert!(produced.status.success(), "{produced:?}");
    let config = target_config(dir.path(), &["transaction.timeout.ms=3000".to_owned()]);
    let name = unique_topic("mfaults-throttle");
    let launch = Launch {
        source: &broker.bootstrap,
        target: &broker.bootstrap,
        topic: &topic,
        name: &name,
        config: &config,
        extra: &["-e", "--max-bytes-per-second", "25000"],
    };
    let mut mirror = launch.spawn("a", dir.path());
    let status = mirror.wait(Duration::from_secs(60));
    let log = mirror.log();
    assert!(status.success(), "{log}");
    assert_eq!(summary_count(&log, "aborted"), 0, "{log}");
    assert_eq!(summary_count(&log, " lost;"), 0, "{log}");
    assert_eq!(summary_count(&log, "records, "), 4000, "{log}");
    assert_mirrored(&broker, &topic, 4000);
}

#[test]
fn records_deleted_under_a_stopped_mirror_are_counted_as_lost() {
    let broker = broker();
    let topic = unique_topic("hooks-mirror-retention");
    broker.create_topic(&topic, 1, 1);
    let produce = |from: usize| {
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: "none".to_owned(),
            steps: vec![(None, simple_records(from, 10, 1))],
            ..ProducePlan::default()
        })
    };
    produce(0);
    let name = unique_topic("hooks-mirror-retention");
    let first = mirror_to_end(&broker, &topic, &name);
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert_eq!(summary_count(&stderr, " lost;"), 0, "{stderr}");
    // Offsets 10..20, then the source's log start moves to 15 while the mirror is stopped.
    produce(10);
    broker.delete_records(&topic, 0, 15);
    let again = mirror_to_end(&broker, &topic, &name);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(summary_count(&stderr, " lost;"), 5, "{stderr}");
    assert_eq!(summary_count(&stderr, "records, "), 5, "{stderr}");
    let warned = format!("partition={topic}/0 from=10 to=15");
    assert!(stderr.contains(&warned), "{warned} in {stderr}");
    let values: Vec<String> = (committed(&broker, &format!("copy-{topic}")).iter())
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect();
    let expected: Vec<String> = (0..10)
        .chain(15..20)
        .map(|i| format!("value-{i}"))
        .collect();
    assert_eq!(values, expected);
}
