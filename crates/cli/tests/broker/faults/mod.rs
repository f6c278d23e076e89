//! Network faults between krec and a real broker, made by a real Toxiproxy in front of the
//! broker's proxied listeners (`kafka.sh start --proxies K`): metadata, fetches and the group
//! coordinator all pass through the fault, the producer (on the broker's PLAINTEXT listener)
//! does not. In each test a producer keeps writing numbered records while the fault is on;
//! after it is lifted krec must catch up within a bound (the time is printed), and then
//! - assign mode: have printed every acknowledged record exactly once, in order per partition;
//! - group mode: have lost nothing, repeating only records after its last commit before the
//!   fault (the number of repeats is printed), and of the records first written after the
//!   fault began, repeating at most what it had fetched before it (a member cut off past its
//!   session timeout stops writing: issue 34).
//!
//! `produce` turns it around: `krec produce` itself goes through the lane, and its exit
//! status, summary and what reached the topic must agree.

mod produce;
mod scenarios;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::support::broker::{broker, unique_topic, wait_with_timeout};
use crate::support::faults::{
    assert_exactly_once_in_order, note, proxied_broker, read_sequenced, wait_printed, LaneGuard,
    ProxiedBroker, SequenceProducer,
};
use crate::support::group::{print_counts, wait_stable, wait_until, Member, Position};
use crate::support::secure::{secure_broker, SecureBroker};
use scenarios::*;
use serde_json::json;

/// How long krec may take to catch up once a fault is over: bounded, not timed for speed.
const RECOVERY_BOUND: Duration = Duration::from_secs(30);
/// krec's request timeout in these tests, so a black hole is noticed within the test.
const REQUEST_TIMEOUT_MS: &str = "2000";
const PARTITIONS: i32 = 2;
/// Producer pace and record size: a few tens of KB/s, enough for a bandwidth limit to bite.
const RECORDS_PER_SECOND: f64 = 300.0;
const PADDING: usize = 200;
/// Fetch responses `krec consume` holds per broker ahead of its writers
/// (`ConsumerConfig::HELD_RESPONSES_FOR_REUSE`).
const HELD_RESPONSES: usize = 3;

pub(crate) fn plain() -> &'static ProxiedBroker {
    static PLAIN: OnceLock<ProxiedBroker> = OnceLock::new();
    PLAIN.get_or_init(|| proxied_broker("KREC_TEST_PROXY_ENV", broker()))
}

fn secured() -> &'static (ProxiedBroker, SecureBroker) {
    static SECURED: OnceLock<(ProxiedBroker, SecureBroker)> = OnceLock::new();
    SECURED.get_or_init(|| {
        let secure = secure_broker();
        let admin = crate::support::broker::Broker(secure.admin.0.clone());
        (proxied_broker("KREC_TEST_SECURE_PROXY_ENV", admin), secure)
    })
}

/// What goes wrong, and for how long.
enum Fault {
    /// Toxics `(type, stream, attributes)` on every proxy of the lane.
    Toxics(Vec<Toxic>),
    /// These toxics, and a `reset_peer` added and removed again and again on top of them.
    RepeatedResets(Vec<Toxic>),
    /// The lane's proxies disabled: connections closed, new ones refused.
    Disabled,
    /// The broker process stopped with SIGSTOP, then continued.
    Frozen,
}

type Toxic = (&'static str, &'static str, serde_json::Value);

struct Scenario {
    name: &'static str,
    fault: Fault,
    hold: Duration,
    /// A line krec's log must hold afterwards (the fault was felt, e.g. a reconnect).
    expect_log: Option<&'static str>,
    /// The fault slows krec down but must not stop it: records are printed while it lasts.
    progress_during: bool,
    /// More `krec consume` arguments.
    krec_args: &'static [&'static str],
}

impl Scenario {
    /// The most records a member can have fetched but not yet written when the fault begins:
    /// per partition, each held response carries at most `--partition-max-bytes` of records
    /// (the producer's batches, a few records each, are smaller), each record at least its
    /// padding. Those may be written before the session times out, uncommitted, and so be
    /// written again after the member rejoins; nothing fetched after the fault began may.
    fn fetched_ahead_bound(&self) -> usize {
        let partition_max_bytes = self
            .krec_args
            .windows(2)
            .find(|pair| pair[0] == "--partition-max-bytes")
            .map_or(1 << 20, |pair| {
                pair[1].parse().expect("--partition-max-bytes")
            });
        PARTITIONS as usize * HELD_RESPONSES * (partition_max_bytes / PADDING)
    }
}

/// Undoes a fault when dropped, so a failing test leaves neither a toxic nor a frozen broker.
struct Applied<'a> {
    lane: &'a LaneGuard<'a>,
    fault: &'a Fault,
    frozen_pid: Option<String>,
}

fn apply<'a>(broker: &ProxiedBroker, lane: &'a LaneGuard<'a>, fault: &'a Fault) -> Applied<'a> {
    let mut frozen_pid = None;
    match fault {
        Fault::Toxics(toxics) | Fault::RepeatedResets(toxics) => {
            for (index, (kind, stream, attributes)) in toxics.iter().enumerate() {
                lane.add_toxic(&format!("t{index}"), kind, stream, attributes.clone());
            }
        }
        Fault::Disabled => lane.set_enabled(false),
        Fault::Frozen => {
            let pid = broker.admin.kafka_sh("pid", &["--node", "1"]);
            signal(pid.trim(), "STOP");
            frozen_pid = Some(pid.trim().to_owned());
        }
    }
    Applied {
        lane,
        fault,
        frozen_pid,
    }
}

impl Applied<'_> {
    /// Lets the fault last `hold`.
    fn hold(&self, hold: Duration) {
        let Fault::RepeatedResets(_) = self.fault else {
            std::thread::sleep(hold);
            return;
        };
        // Timeout 0: the connection is reset at the next segment, in the middle of whatever
        // response is streaming (the toxics below keep one streaming).
        let until = std::time::Instant::now() + hold;
        while std::time::Instant::now() < until {
            self.lane
                .add_toxic("reset", "reset_peer", "downstream", json!({"timeout": 0}));
            std::thread::sleep(Duration::from_millis(300));
            self.lane.remove_toxic("reset");
            std::thread::sleep(Duration::from_millis(900));
        }
    }

    fn lift(mut self) {
        self.undo();
    }

    fn undo(&mut self) {
        match self.fault {
            Fault::Toxics(toxics) | Fault::RepeatedResets(toxics) => {
                // Last added first: Toxiproxy 2.5 can hang removing a toxic whose successor in
                // the chain has stopped reading (issue 558 of Shopify/toxiproxy).
                for index in (0..toxics.len()).rev() {
                    self.lane.remove_toxic(&format!("t{index}"));
                }
            }
            Fault::Disabled => self.lane.set_enabled(true),
            Fault::Frozen => {
                if let Some(pid) = self.frozen_pid.take() {
                    signal(&pid, "CONT");
                }
            }
        }
    }
}

impl Drop for Applied<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.undo();
        }
    }
}

fn signal(pid: &str, name: &str) {
    let status = Command::new("kill")
        .args([format!("-{name}"), pid.to_owned()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{name} {pid}");
}

/// `krec consume` in assign mode through a lane, printing `partition offset seq-N`.
struct Consume {
    child: Child,
}

impl Consume {
    fn start(
        bootstrap: &str,
        topic: &str,
        properties: &[String],
        extra: &[&str],
        dir: &Path,
    ) -> Consume {
        let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
        command
            .args(["consume", "-b", bootstrap, "-t", topic, "-o", "beginning"])
            .args(["-f", "%p %o %s\\n", "--threads", "1"])
            .args(["-X", &format!("request.timeout.ms={REQUEST_TIMEOUT_MS}")])
            .args(extra);
        for property in properties {
            command.args(["-X", property]);
        }
        let child = command
            .env("RUST_LOG", "krec_client=info,krec_consumer=info")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join("krec.out")).expect("krec stdout"))
            .stderr(std::fs::File::create(dir.join("krec.err")).expect("krec stderr"))
            .spawn()
            .expect("start krec consume");
        Consume { child }
    }

    fn stop(mut self, dir: &Path) {
        signal(&self.child.id().to_string(), "TERM");
        let status = wait_with_timeout(&mut self.child, Duration::from_secs(30));
        assert!(
            status.is_some_and(|s| s.success()),
            "krec consume did not exit cleanly on SIGTERM: {status:?}\n{}",
            log_tail(&dir.join("krec.err"))
        );
    }
}

impl Drop for Consume {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn log_tail(path: &Path) -> String {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

fn positions(path: &Path) -> BTreeSet<Position> {
    read_sequenced(path)
        .into_iter()
        .map(|(p, o, _)| (p, o))
        .collect()
}

/// Runs `scenario` with one krec in assign mode on a lane of `broker`.
fn assign_mode(broker: &ProxiedBroker, properties: &[String], scenario: Scenario) {
    let lane = broker.take_lane();
    let prefix = if properties.is_empty() {
        "fault"
    } else {
        "sec-fault"
    };
    let topic = unique_topic(&format!("{prefix}-{}", scenario.name));
    broker.admin.create_topic(&topic, PARTITIONS as u32, 1);
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, err) = (dir.path().join("krec.out"), dir.path().join("krec.err"));
    note(dir.path(), &format!("lane {:?}", lane.lane()));
    let producer = SequenceProducer::start(
        &broker.admin.bootstrap,
        &topic,
        PARTITIONS,
        RECORDS_PER_SECOND,
        PADDING,
        dir.path(),
    );
    let consume = Consume::start(
        &lane.lane().bootstrap,
        &topic,
        properties,
        scenario.krec_args,
        dir.path(),
    );
    wait_until(Duration::from_secs(60), "records before the fault", || {
        positions(&out).len() >= 300
    });

    let applied = apply(broker, &lane, &scenario.fault);
    let before = positions(&out).len();
    applied.hold(scenario.hold);
    let during = positions(&out).len() - before;
    applied.lift();
    let recovery = wait_printed(
        scenario.name,
        &producer.acked().into_keys().collect(),
        RECOVERY_BOUND,
        || positions(&out),
        || log_tail(&err),
    );
    std::thread::sleep(Duration::from_secs(1));
    let acked = producer.finish();
    wait_printed(
        scenario.name,
        &acked.keys().copied().collect(),
        RECOVERY_BOUND,
        || positions(&out),
        || log_tail(&err),
    );
    consume.stop(dir.path());

    assert_exactly_once_in_order(&read_sequenced(&out), &acked);
    let log = std::fs::read_to_string(&err).unwrap_or_default();
    expect_log(&scenario, &log);
    expect_progress(&scenario, during);
    let over = if properties.is_empty() {
        ""
    } else {
        " over SASL_SSL"
    };
    eprintln!(
        "fault {} (assign mode{over}): {} records exactly once, {during} printed during the \
         fault, {} reconnects; caught up {} ms after the fault ended",
        scenario.name,
        acked.len(),
        log.matches("reconnecting").count(),
        recovery.as_millis()
    );
}

fn expect_progress(scenario: &Scenario, during: usize) {
    assert!(
        !scenario.progress_during || during > 0,
        "{}: nothing printed while the fault lasted",
        scenario.name
    );
}

fn expect_log(scenario: &Scenario, log: &str) {
    if let Some(line) = scenario.expect_log {
        assert!(
            log.contains(line),
            "{}: krec's log has no {line:?}, the fault was not felt:\n{log}",
            scenario.name
        );
    }
}

/// Runs `scenario` with one `krec consume -G` member on a lane of `broker`.
fn group_mode(broker: &ProxiedBroker, properties: &[String], scenario: Scenario) {
    let lane = broker.take_lane();
    let prefix = if properties.is_empty() {
        "fault-group"
    } else {
        "sec-fault-group"
    };
    let topic = unique_topic(&format!("{prefix}-{}", scenario.name));
    broker.admin.create_topic(&topic, PARTITIONS as u32, 1);
    let dir = tempfile::tempdir().expect("tempdir");
    let producer = SequenceProducer::start(
        &broker.admin.bootstrap,
        &topic,
        PARTITIONS,
        RECORDS_PER_SECOND,
        PADDING,
        dir.path(),
    );
    let timeout = format!("request.timeout.ms={REQUEST_TIMEOUT_MS}");
    let mut args = vec!["-X", timeout.as_str()];
    for property in properties {
        args.extend(["-X", property.as_str()]);
    }
    args.extend_from_slice(scenario.krec_args);
    let mut member = Member::start(
        &lane.lane().bootstrap,
        &topic,
        &format!("{topic}-g"),
        dir.path(),
        "m0",
        &args,
    );
    wait_stable(&[&member], PARTITIONS, Duration::from_secs(60));
    let printed =
        |member: &Member| -> BTreeSet<Position> { print_counts(&[member]).into_keys().collect() };
    let settled =
        || printed(&member).len() >= 300 && member.last_commits().len() == PARTITIONS as usize;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !settled() {
        assert!(
            std::time::Instant::now() < deadline,
            "no 300 records and a commit of each partition within 60 s: {} printed, commits {:?}\n{}",
            printed(&member).len(),
            member.last_commits(),
            member.log_tail()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let committed_before = member.last_commits();
    let changes_before = member.assignment_changes();

    let applied = apply(broker, &lane, &scenario.fault);
    let printed_before = printed(&member);
    let before = printed_before.len();
    applied.hold(scenario.hold);
    let during = printed(&member).len() - before;
    applied.lift();
    let recovery = wait_printed(
        scenario.name,
        &producer.acked().into_keys().collect(),
        RECOVERY_BOUND,
        || printed(&member),
        || member.log_tail(),
    );
    std::thread::sleep(Duration::from_secs(1));
    let acked = producer.finish();
    let acked: BTreeSet<Position> = acked.into_keys().collect();
    wait_printed(
        scenario.name,
        &acked,
        RECOVERY_BOUND,
        || printed(&member),
        || member.log_tail(),
    );
    member.stop();

    let counts = print_counts(&[&member]);
    let unknown: Vec<&Position> = counts.keys().filter(|p| !acked.contains(p)).collect();
    assert!(
        unknown.is_empty(),
        "printed records never acknowledged: {unknown:?}"
    );
    let duplicates: BTreeMap<Position, usize> = counts
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(p, n)| (*p, *n))
        .collect();
    for (partition, offset) in duplicates.keys() {
        let committed = committed_before.get(partition).copied().unwrap_or(0);
        assert!(
            *offset >= committed,
            "{}: record {partition}/{offset} printed again, though offset {committed} was \
             committed before the fault",
            scenario.name
        );
    }
    // Repeats of records first written after the fault began: written while the member could
    // not know it still owned the partition. Before issue 34 a member cut off past its session
    // timeout wrote everything fetched after the fault until a heartbeat learnt of the fence.
    let late_repeats = duplicates
        .keys()
        .filter(|p| !printed_before.contains(p))
        .count();
    assert!(
        late_repeats <= scenario.fetched_ahead_bound(),
        "{}: {late_repeats} records first written after the fault began were written again \
         (at most {} were fetched before it):\n{}",
        scenario.name,
        scenario.fetched_ahead_bound(),
        member.log_tail()
    );
    let log = std::fs::read_to_string(&member.stderr).unwrap_or_default();
    expect_log(&scenario, &log);
    expect_progress(&scenario, during);
    let rejoined = member.assignment_changes() > changes_before;
    if matches!(scenario.fault, Fault::Disabled) {
        assert!(
            rejoined,
            "{}: the member was cut off past its session timeout but never rejoined:\n{}",
            scenario.name,
            member.log_tail()
        );
    }
    let over = if properties.is_empty() {
        ""
    } else {
        " over SASL_SSL"
    };
    eprintln!(
        "fault {} (group mode{over}): {} records, none lost, {} printed twice (after the last \
         commit before the fault), {late_repeats} of them first printed after the fault began; \
         rejoined: {rejoined}; caught up {} ms after the fault ended",
        scenario.name,
        acked.len(),
        duplicates.len(),
        recovery.as_millis()
    );
}

fn sasl_ssl() -> (&'static ProxiedBroker, Vec<String>) {
    let (broker, secure) = secured();
    (
        broker,
        secure.alice_properties("SASL_SSL", Some("SCRAM-SHA-512")),
    )
}

// Every fault in assign mode and with a group, on plaintext and on SASL_SSL.

#[test]
fn assign_mode_through_latency_with_jitter() {
    assign_mode(plain(), &[], latency());
}

#[test]
fn assign_mode_through_a_bandwidth_limit() {
    assign_mode(plain(), &[], bandwidth());
}

#[test]
fn assign_mode_through_a_slicer() {
    assign_mode(plain(), &[], slicer());
}

#[test]
fn assign_mode_through_resets_mid_response() {
    assign_mode(plain(), &[], reset_peer());
}

#[test]
fn assign_mode_through_a_black_hole() {
    assign_mode(plain(), &[], black_hole());
}

#[test]
fn assign_mode_through_limit_data() {
    assign_mode(plain(), &[], limit_data());
}

#[test]
fn assign_mode_through_a_disabled_proxy() {
    assign_mode(plain(), &[], disabled());
}

#[test]
fn group_mode_through_latency_with_jitter() {
    group_mode(plain(), &[], latency());
}

#[test]
fn group_mode_through_a_bandwidth_limit() {
    group_mode(plain(), &[], bandwidth());
}

#[test]
fn group_mode_through_a_slicer() {
    group_mode(plain(), &[], slicer());
}

#[test]
fn group_mode_through_resets_mid_response() {
    group_mode(plain(), &[], reset_peer());
}

#[test]
fn group_mode_through_a_black_hole() {
    group_mode(plain(), &[], black_hole());
}

#[test]
fn group_mode_through_limit_data() {
    group_mode(plain(), &[], limit_data());
}

#[test]
fn group_mode_through_a_disabled_proxy() {
    group_mode(plain(), &[], disabled());
}

#[test]
fn kip848_group_mode_through_a_disabled_proxy() {
    group_mode(plain(), &[], disabled_kip848());
}

#[test]
fn sasl_ssl_assign_through_latency_with_jitter() {
    let (broker, properties) = sasl_ssl();
    assign_mode(broker, &properties, latency());
}

#[test]
fn sasl_ssl_assign_through_a_bandwidth_limit() {
    let (broker, properties) = sasl_ssl();
    assign_mode(broker, &properties, bandwidth());
}

#[test]
fn sasl_ssl_assign_through_a_slicer() {
    let (broker, properties) = sasl_ssl();
    assign_mode(broker, &properties, slicer());
}

#[test]
fn sasl_ssl_assign_through_resets_mid_response() {
    let (broker, properties) = sasl_ssl();
    assign_mode(broker, &properties, reset_peer());
}

#[test]
fn sasl_ssl_assign_through_a_black_hole() {
    let (broker, properties) = sasl_ssl();
    assign_mode(broker, &properties, black_hole());
}

#[test]
fn sasl_ssl_assign_through_limit_data() {
    let (broker, properties) = sasl_ssl();
    assign_mode(broker, &properties, limit_data());
}

#[test]
fn sasl_ssl_assign_through_a_disabled_proxy() {
    let (broker, properties) = sasl_ssl();
    assign_mode(broker, &properties, disabled());
}

#[test]
fn sasl_ssl_group_through_latency_with_jitter() {
    let (broker, properties) = sasl_ssl();
    group_mode(broker, &properties, latency());
}

#[test]
fn sasl_ssl_group_through_a_bandwidth_limit() {
    let (broker, properties) = sasl_ssl();
    group_mode(broker, &properties, bandwidth());
}

#[test]
fn sasl_ssl_group_through_a_slicer() {
    let (broker, properties) = sasl_ssl();
    group_mode(broker, &properties, slicer());
}

#[test]
fn sasl_ssl_group_through_resets_mid_response() {
    let (broker, properties) = sasl_ssl();
    group_mode(broker, &properties, reset_peer());
}

#[test]
fn sasl_ssl_group_through_a_black_hole() {
    let (broker, properties) = sasl_ssl();
    group_mode(broker, &properties, black_hole());
}

#[test]
fn sasl_ssl_group_through_limit_data() {
    let (broker, properties) = sasl_ssl();
    group_mode(broker, &properties, limit_data());
}

#[test]
fn sasl_ssl_group_through_a_disabled_proxy() {
    let (broker, properties) = sasl_ssl();
    group_mode(broker, &properties, disabled());
}

/// A frozen broker stalls every test on it: these run alone (see `crate::solo`).
mod solo {
    use super::*;

    #[test]
    fn assign_mode_through_a_frozen_broker() {
        assign_mode(plain(), &[], frozen());
    }

    #[test]
    fn group_mode_through_a_frozen_broker() {
        group_mode(plain(), &[], frozen());
    }

    #[test]
    fn sasl_ssl_assign_through_a_frozen_broker() {
        let (broker, properties) = sasl_ssl();
        assign_mode(broker, &properties, frozen());
    }

    #[test]
    fn sasl_ssl_group_through_a_frozen_broker() {
        let (broker, properties) = sasl_ssl();
        group_mode(broker, &properties, frozen());
    }
}
