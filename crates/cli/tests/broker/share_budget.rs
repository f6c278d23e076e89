//! A share-group member whose output nobody reads holds no more than its byte budget
//! (`--buffer-bytes`): it stops acquiring records instead of piling them up, and the pause is
//! not idle time (`--idle-timeout`). Stopped while its output is gone, it releases what it
//! had not written, which another member then reads at once: every record exactly once
//! between the two.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::share::{member, set_group_config, spawn};
use crate::support::broker::{broker, unique_topic, wait_with_timeout, Broker};
use crate::support::process::peak_rss;

/// Records of the topic, each about 1 MiB: together eight times the budget.
const RECORDS: usize = 64;
const VALUE_BYTES: usize = 1_000_000;
/// The member's byte budget.
const BUDGET: u64 = 8 << 20;
/// What a member (a debug build) holds besides the records under its budget: the program and
/// its threads, connection buffers, the output buffer of the record being written, memory
/// the allocator keeps (BENCHMARKS.md, share groups).
const BESIDES_BUDGET: u64 = 40 << 20;
/// How long nobody reads the member's output: longer than its idle timeout.
const BLOCKED: Duration = Duration::from_secs(10);
const IDLE_TIMEOUT: &str = "3s";
/// Records read from the member before it is stopped: more than its budget holds, so it
/// went on fetching after the pause.
const READ_BEFORE_STOP: usize = 24;

/// Produces `RECORDS` values `value-N` padded with dots to `VALUE_BYTES`, one per batch.
const PRODUCE_PY: &str = r#"
import sys
from confluent_kafka import Producer
bootstrap, topic, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
p = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 2 * size, "linger.ms": 0})
failed = []
def report(err, msg):
    if err is not None:
        failed.append(err)
for i in range(count):
    value = b"value-%d" % i
    p.produce(topic, value=value + b"." * (size - len(value)), on_delivery=report)
    p.poll(0)
p.flush(60)
sys.exit("delivery failed: %s" % failed[0] if failed else 0)
"#;

fn produce_large(broker: &Broker, topic: &str) {
    let output = Command::new("/usr/bin/python3")
        .args(["-c", PRODUCE_PY, &broker.bootstrap, topic])
        .args([RECORDS.to_string(), VALUE_BYTES.to_string()])
        .stdin(Stdio::null())
        .output()
        .expect("run /usr/bin/python3 (python3-confluent-kafka, scripts/install-deps.sh)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `offset -> delivery count` of a member's output lines (`offset count value`), each checked
/// against its value and seen once.
fn deliveries(output: &[u8]) -> BTreeMap<i64, i64> {
    let mut seen = BTreeMap::new();
    for line in output.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let line = String::from_utf8_lossy(line);
        let mut fields = line.splitn(3, ' ');
        let offset: i64 = fields.next().and_then(|f| f.parse().ok()).expect("offset");
        let count: i64 = fields.next().and_then(|f| f.parse().ok()).expect("count");
        let value = fields.next().expect("value");
        assert!(
            value.starts_with(&format!("value-{offset}.")),
            "offset {offset}"
        );
        assert_eq!(value.len(), VALUE_BYTES, "offset {offset}");
        assert!(
            seen.insert(offset, count).is_none(),
            "offset {offset} printed twice"
        );
    }
    seen
}

#[test]
fn a_member_with_blocked_output_holds_its_budget_and_its_unwritten_records_reach_another() {
    let broker = broker();
    let topic = unique_topic("share-budget");
    broker.create_topic(&topic, 1, 1);
    let group = format!("{topic}-sg");
    // A lock longer than the member is blocked: only its release hands records on.
    set_group_config(&broker, &group, 60_000);
    produce_large(&broker, &topic);

    let budget = BUDGET.to_string();
    let args = ["--buffer-bytes", &budget, "--idle-timeout", IDLE_TIMEOUT];
    let mut blocked = spawn(member(&broker, &topic, &group, &args));
    std::thread::sleep(BLOCKED);
    let peak = peak_rss(blocked.id());
    // Read now: it goes on fetching, the pause not counted as idle.
    let mut stdout = BufReader::new(blocked.stdout.take().expect("stdout"));
    let mut written = Vec::new();
    for _ in 0..READ_BEFORE_STOP {
        stdout.read_until(b'\n', &mut written).expect("its output");
    }
    // Unread again for a moment: it fills its budget again, so it holds records when stopped.
    std::thread::sleep(Duration::from_secs(2));
    let stopped = Command::new("kill")
        .args(["-TERM", &blocked.id().to_string()])
        .status()
        .expect("kill");
    assert!(stopped.success());
    // Its reader goes away: what it holds is not written, and is released at its exit.
    drop(stdout);
    let status = wait_with_timeout(&mut blocked, Duration::from_secs(60));
    let mut stderr = String::new();
    let _ = blocked
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr);
    assert!(status.is_some_and(|s| s.success()), "{stderr}");
    assert!(
        peak < BUDGET + BESIDES_BUDGET,
        "peak RSS {} MiB with a budget of {} MiB",
        peak >> 20,
        BUDGET >> 20
    );
    let first = deliveries(&written);
    assert_eq!(
        first.len(),
        READ_BEFORE_STOP,
        "written before its reader went away"
    );

    let output = member(&broker, &topic, &group, &["--idle-timeout", "4s"])
        .output()
        .expect("run krec");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let second = deliveries(&output.stdout);
    let both: Vec<&i64> = first.keys().filter(|o| second.contains_key(o)).collect();
    assert!(both.is_empty(), "read by both members: {both:?}");
    let all: BTreeSet<i64> = first.keys().chain(second.keys()).copied().collect();
    assert_eq!(all, (0..RECORDS as i64).collect(), "every record, once");
    let released = second.values().filter(|&&count| count == 2).count();
    assert!(
        released > 0,
        "the first member held records when it stopped: {second:?}"
    );
    eprintln!(
        "peak RSS {} MiB, budget {} MiB; {} records written by the first member, {} released \
         by it, {} read by the second",
        peak >> 20,
        BUDGET >> 20,
        first.len(),
        released,
        second.len()
    );
}
