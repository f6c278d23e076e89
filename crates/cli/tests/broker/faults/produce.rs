//! `krec produce` through a Toxiproxy lane: connections cut while a file of keyed, numbered
//! lines is sent (all delivered, each once, in order, exit 0), and a black hole longer than
//! `delivery.timeout.ms` (exit 1, the failures counted and the first named, nothing
//! acknowledged lost, nothing twice).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::sync::mpsc;

use super::*;
use crate::support::broker::Produced;

const RECORDS: u64 = 200_000;
const PRODUCE_PARTITIONS: u32 = 4;
/// Distinct keys: every partition gets records, each key stays on one partition.
const KEYS: u64 = 64;
/// The cut lane's pace from krec to the broker: the input takes a few seconds to cross.
const UPSTREAM_KB_PER_SECOND: u64 = 2000;

/// Writes `key-K\tseq-N` lines, N from 0 to `RECORDS`, into `dir/input`.
fn keyed_lines(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("input");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).expect("input file"));
    for seq in 0..RECORDS {
        writeln!(file, "key-{}\tseq-{seq}", seq % KEYS).expect("write input");
    }
    file.flush().expect("flush input");
    path
}

/// `krec produce -K '\t' -l FILE` through `bootstrap` with `--stats`, so the test sees
/// acknowledgements while it runs.
fn spawn_produce(bootstrap: &str, topic: &str, input: &Path, properties: &[&str]) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
    command
        .args(["produce", "-b", bootstrap, "-t", topic, "-K", "\\t", "-l"])
        .args(["--stats", "0.05"]);
    for property in properties {
        command.args(["-X", property]);
    }
    command
        .arg(input)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run krec produce")
}

/// Forwards krec's stderr lines; the receiver sees them as they come, the handle returns all.
fn follow_stderr(stderr: ChildStderr) -> (mpsc::Receiver<String>, std::thread::JoinHandle<String>) {
    let (lines, received) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            all.push_str(&line);
            all.push('\n');
            let _ = lines.send(line);
        }
        all
    });
    (received, reader)
}

/// Waits until a `--stats` line reports a record acknowledged: the fault then lands mid-run.
fn wait_acknowledging(lines: &mpsc::Receiver<String>) {
    loop {
        let line = lines
            .recv_timeout(RECOVERY_BOUND)
            .expect("krec produce acknowledged nothing");
        let acknowledged = line
            .strip_suffix(" records acknowledged")
            .and_then(|head| head.rsplit(' ').next())
            .and_then(|count| count.parse::<u64>().ok());
        if acknowledged.is_some_and(|count| count > 0) {
            return;
        }
    }
}

/// The fault must land while krec still sends, or the test shows nothing.
fn assert_running(child: &mut Child) {
    let finished = child.try_wait().expect("krec produce's status");
    assert!(
        finished.is_none(),
        "krec produce ended ({finished:?}) before the fault was over: the input is too small"
    );
}

/// Waits for krec (bounded) and returns its exit status and stderr, but for `--stats`.
fn finish(mut child: Child, reader: std::thread::JoinHandle<String>) -> (ExitStatus, String) {
    let Some(status) = wait_with_timeout(&mut child, RECOVERY_BOUND) else {
        let _ = child.kill();
        panic!("krec produce still running after {RECOVERY_BOUND:?}");
    };
    let stderr = reader.join().expect("stderr reader");
    // Without the `--stats` lines, which only served to time the fault.
    let outcome: Vec<&str> = stderr
        .lines()
        .filter(|line| !line.contains(": stats: "))
        .collect();
    let outcome = outcome.join("\n");
    println!("exit {status}\n{outcome}");
    (status, outcome)
}

/// The summary's `(acknowledged, retries)`.
fn summary(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .rev()
        .find(|line| line.contains(" records acknowledged, "))
        .unwrap_or_else(|| panic!("no summary:\n{stderr}"));
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|word| word.parse().ok())
        .collect();
    // acknowledged, bytes, batches, retries
    assert_eq!(numbers.len(), 4, "summary {line:?}");
    (numbers[0], numbers[3])
}

/// Reads the topic back; asserts each sequence number at most once, each partition in send
/// order and each key on one partition; returns the sequence numbers found.
fn read_back_once_in_order(broker: &ProxiedBroker, topic: &str) -> Vec<u64> {
    let mut records: Vec<Produced> = broker.admin.consume_records(topic, &["-e"]);
    records.sort_by_key(|record| (record.partition, record.offset));
    let mut last_per_partition: BTreeMap<i32, u64> = BTreeMap::new();
    let mut partition_of_key: BTreeMap<Vec<u8>, i32> = BTreeMap::new();
    let mut seqs = Vec::with_capacity(records.len());
    for record in &records {
        let value = record.value.as_deref().expect("a value");
        let seq: u64 = std::str::from_utf8(value)
            .ok()
            .and_then(|text| text.strip_prefix("seq-"))
            .and_then(|number| number.parse().ok())
            .unwrap_or_else(|| panic!("no sequence number in {record:?}"));
        let key = record.key.clone().expect("a key");
        assert_eq!(
            key,
            format!("key-{}", seq % KEYS).into_bytes(),
            "{record:?}"
        );
        let partition = *partition_of_key.entry(key).or_insert(record.partition);
        assert_eq!(partition, record.partition, "a key on two partitions");
        if let Some(last) = last_per_partition.insert(record.partition, seq) {
            assert!(
                last < seq,
                "partition {}: seq-{seq} at offset {} after seq-{last}",
                record.partition,
                record.offset
            );
        }
        seqs.push(seq);
    }
    seqs.sort_unstable();
    let twice = seqs.windows(2).find(|pair| pair[0] == pair[1]);
    assert!(
        twice.is_none(),
        "seq-{} twice in the topic",
        twice.unwrap()[0]
    );
    seqs
}

#[test]
fn a_file_through_cut_connections_is_delivered_once_in_order_exit_0() {
    let broker = plain();
    let lane = broker.take_lane();
    let topic = unique_topic("clifault-cut");
    broker.admin.create_topic(&topic, PRODUCE_PARTITIONS, 1);
    let dir = tempfile::tempdir().expect("temp dir");
    let input = keyed_lines(dir.path());

    // KB/s: krec sends for a few seconds whatever the machine's speed, and each reset lands
    // in the middle of a request.
    lane.add_toxic(
        "slow",
        "bandwidth",
        "upstream",
        json!({"rate": UPSTREAM_KB_PER_SECOND}),
    );
    let properties = ["request.timeout.ms=3000", "linger.ms=5"];
    let mut child = spawn_produce(&lane.lane().bootstrap, &topic, &input, &properties);
    let (lines, reader) = follow_stderr(child.stderr.take().expect("piped stderr"));
    wait_acknowledging(&lines);
    for _cut in 0..2 {
        // Timeout 0: every connection of the lane is reset at its next segment.
        lane.add_toxic("cut", "reset_peer", "downstream", json!({"timeout": 0}));
        std::thread::sleep(Duration::from_millis(100));
        lane.remove_toxic("cut");
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_running(&mut child);
    let (status, stderr) = finish(child, reader);
    assert!(status.success(), "exit {status}:\n{stderr}");
    let (acknowledged, retries) = summary(&stderr);
    assert_eq!(acknowledged, RECORDS, "{stderr}");
    assert!(retries > 0, "no connection was cut:\n{stderr}");

    let seqs = read_back_once_in_order(broker, &topic);
    assert_eq!(seqs.len() as u64, RECORDS, "records in the topic");
    assert!(seqs.iter().copied().eq(0..RECORDS), "a record missing");
}

#[test]
fn a_black_hole_past_the_delivery_timeout_fails_with_exit_1() {
    let broker = plain();
    let lane = broker.take_lane();
    let topic = unique_topic("clifault-hole");
    broker.admin.create_topic(&topic, PRODUCE_PARTITIONS, 1);
    let dir = tempfile::tempdir().expect("temp dir");
    let input = keyed_lines(dir.path());

    let properties = [
        "delivery.timeout.ms=2000",
        "request.timeout.ms=1000",
        "linger.ms=5",
    ];
    let mut child = spawn_produce(&lane.lane().bootstrap, &topic, &input, &properties);
    let (lines, reader) = follow_stderr(child.stderr.take().expect("piped stderr"));
    wait_acknowledging(&lines);
    // Timeout 0: answers stop, nothing closes, until the toxic goes.
    lane.add_toxic("hole", "timeout", "downstream", json!({"timeout": 0}));
    std::thread::sleep(Duration::from_millis(3500));
    assert_running(&mut child);
    lane.remove_toxic("hole");
    let (status, stderr) = finish(child, reader);
    assert_eq!(status.code(), Some(1), "{stderr}");

    let failure = stderr
        .lines()
        .find(|line| line.contains(" records failed; the first, "))
        .unwrap_or_else(|| panic!("no failure line:\n{stderr}"));
    let failed: u64 = failure
        .strip_prefix("krec produce: ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no count in {failure:?}"));
    assert!(
        failure.contains(&format!(" of {RECORDS} records failed")),
        "{failure}"
    );
    assert!(
        failure.contains(&format!("topic {topic} partition "))
            && failure.contains("delivery.timeout.ms (2000 ms) passed"),
        "{failure}"
    );
    assert!(
        failure.matches("broker ").count() <= 1,
        "the broker named once: {failure}"
    );
    // Line N holds seq-(N-1); deliveries resolve in input order, so every line before the
    // first failure was acknowledged.
    let first_failed_line: u64 = failure
        .split(" the first, ")
        .nth(1)
        .and_then(|rest| rest.split(": ").next())
        .and_then(|origin| origin.rsplit(':').next())
        .and_then(|line| line.parse().ok())
        .unwrap_or_else(|| panic!("no input line in {failure:?}"));
    let (acknowledged, _) = summary(&stderr);
    assert!(failed > 0, "{stderr}");
    assert_eq!(acknowledged + failed, RECORDS, "{stderr}");

    // A record whose delivery timed out may be in the topic (its answer was lost), once.
    let seqs = read_back_once_in_order(broker, &topic);
    let found = seqs.len() as u64;
    let before_failure = first_failed_line.saturating_sub(1);
    assert!(
        seqs.iter()
            .copied()
            .take(before_failure as usize)
            .eq(0..before_failure),
        "a record acknowledged before seq-{before_failure} missing from the topic"
    );
    assert!(
        (acknowledged..=RECORDS).contains(&found),
        "{found} records in the topic, {acknowledged} acknowledged"
    );
}
