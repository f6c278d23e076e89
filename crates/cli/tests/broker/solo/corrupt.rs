//! `krec consume --on-corrupt` against a real broker serving corrupt batches: records are
//! produced, the broker is stopped cleanly, bytes of its segment file are patched on disk, and
//! it is started again. A clean shutdown skips log recovery, and a fetch serves the file's bytes
//! as they are, so krec receives exactly the patched batches.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::support::broker::{
    assert_same_records, broker, parse_json_lines, simple_records, unique_topic, Broker,
    ProducePlan, Produced,
};
use crate::support::decode::{batch_spans, resign_v2};
use crate::support::group::MEMBER_LOG;
use crate::support::metrics::{free_port, get, samples};
use krec_batch::layout::v2::{attributes, ATTRIBUTES_AT, RECORD_COUNT_AT};
use krec_batch::layout::LENGTH_AT;

/// A corrupt batch as the report must name it.
struct Bad {
    offsets: (i64, i64),
    position: usize,
    size: usize,
    reason: &'static str,
}

/// Produces five batches of five records (one producer each, so one batch each), and patches
/// the segment: batch 1 gets a flipped payload byte (CRC), batch 2 a record count that lies
/// with its CRC recomputed, batch 3 its LZ4 data cut short (length and CRC made to agree).
/// Beside it, topic `TOPIC-txn` gets a corrupt ABORT marker. Returns the good records, the
/// bad batches, and the `-txn` topic's committed records.
fn corrupt_topic(broker: &Broker, topic: &str) -> (Vec<Produced>, Vec<Bad>, Vec<Produced>) {
    let txn_topic = format!("{topic}-txn");
    let committed = aborted_then_committed(broker, &txn_topic);
    broker.create_topic(topic, 1, 1);
    let mut produced = Vec::new();
    for batch in 0..5 {
        let plan = ProducePlan {
            topic: topic.to_owned(),
            compression: if matches!(batch, 2 | 3) {
                "lz4"
            } else {
                "none"
            }
            .into(),
            steps: vec![(None, simple_records(batch * 5, 5, 1))],
            ..ProducePlan::default()
        };
        produced.extend(broker.produce_python(&plan));
    }
    broker.kafka_sh("stop-node", &["--node", "1"]);
    let segment = PathBuf::from(broker.kafka_sh("datadir", &["--node", "1"]).trim())
        .join(format!("{topic}-0"))
        .join("00000000000000000000.log");
    let mut data = std::fs::read(&segment).expect("the partition's first segment");
    let spans = batch_spans(&data);
    assert_eq!(spans.len(), 5, "one batch per producer");
    let last = spans[1].end - 1;
    data[last] ^= 0x55;
    let count_lie = spans[2].clone();
    data[count_lie.start + RECORD_COUNT_AT..][..4].copy_from_slice(&6i32.to_be_bytes());
    resign_v2(&mut data[count_lie]);
    // Cut 16 bytes off batch 3's LZ4 frame; the batches after it move up (the segment is too
    // small to have offset-index entries that would point past the cut).
    let cut = spans[3].clone();
    let kept = cut.len() - 16;
    data.drain(cut.start + kept..cut.end);
    let length = (kept - 12) as i32;
    data[cut.start + LENGTH_AT..][..4].copy_from_slice(&length.to_be_bytes());
    resign_v2(&mut data[cut.start..cut.start + kept]);
    std::fs::write(&segment, &data).expect("patch the segment");
    corrupt_the_abort_marker(broker, &txn_topic);
    broker.kafka_sh("start-node", &["--node", "1"]);
    broker.wait_for_leaders(topic, 1);
    broker.wait_for_leaders(&txn_topic, 1);

    let bad = |index: usize, offsets, reason| Bad {
        offsets,
        position: spans[index].start,
        size: spans[index].len(),
        reason,
    };
    let good = produced
        .into_iter()
        .filter(|r| r.offset < 5 || r.offset >= 20)
        .collect();
    let mut bad = vec![
        bad(1, (5, 9), "checksum mismatch"),
        bad(2, (10, 14), "declares 6 records but holds 5"),
        bad(3, (15, 19), "Lz4"),
    ];
    bad[2].size -= 16;
    (good, bad, committed)
}

/// One transactional producer aborts ten records, then commits ten: data, ABORT marker, data,
/// COMMIT marker. Returns the committed records.
fn aborted_then_committed(broker: &Broker, topic: &str) -> Vec<Produced> {
    broker.create_topic(topic, 1, 1);
    let plan = ProducePlan {
        topic: topic.to_owned(),
        compression: "none".into(),
        transactional_id: Some(unique_topic("corrupt-txn")),
        steps: vec![
            (Some(false), simple_records(0, 10, 1)),
            (Some(true), simple_records(10, 10, 1)),
        ],
    };
    let produced = broker.produce_python(&plan);
    produced.into_iter().filter(|r| r.committed).collect()
}

/// Flips the last byte of the first control batch (the ABORT marker) of `topic`'s segment.
fn corrupt_the_abort_marker(broker: &Broker, topic: &str) {
    let segment = PathBuf::from(broker.kafka_sh("datadir", &["--node", "1"]).trim())
        .join(format!("{topic}-0"))
        .join("00000000000000000000.log");
    let mut data = std::fs::read(&segment).expect("the partition's first segment");
    let control = |span: &std::ops::Range<usize>| {
        let attributes = &data[span.start + ATTRIBUTES_AT..][..2];
        i16::from_be_bytes([attributes[0], attributes[1]]) & attributes::CONTROL != 0
    };
    let marker = batch_spans(&data)
        .into_iter()
        .find(control)
        .expect("an ABORT marker");
    data[marker.end - 1] ^= 0x55;
    std::fs::write(&segment, &data).expect("patch the segment");
}

/// Under read_committed, the ABORT marker skipped as corrupt leaves the producer's later
/// committed records delivered, and is reported.
fn a_corrupt_abort_marker_hides_no_committed_record(
    broker: &Broker,
    topic: &str,
    committed: &[Produced],
) {
    let txn_topic = format!("{topic}-txn");
    let args = ["--on-corrupt", "skip", "--isolation", "read_committed"];
    let (code, printed, stderr) = run(&mut consume(broker, &txn_topic, &args));
    assert_eq!(code, Some(3), "{stderr}");
    assert_same_records(&printed, committed);
    assert!(stderr.contains("skipped corrupt batch"), "{stderr}");
    assert!(stderr.contains("transaction marker"), "{stderr}");
}

fn report_prefix(topic: &str, bad: &Bad) -> String {
    format!(
        "krec consume: skipped corrupt batch: topic={topic} partition=0 offsets={}..{} \
         position={} bytes={} fetch_offset=0: ",
        bad.offsets.0, bad.offsets.1, bad.position, bad.size
    )
}

/// The index in `lines` of the report of each of `bad`, checking the report in full.
fn reports(lines: &[&str], topic: &str, bad: &[Bad]) -> Vec<usize> {
    bad.iter()
        .map(|bad| {
            let prefix = report_prefix(topic, bad);
            let at = lines
                .iter()
                .position(|l| l.starts_with(&prefix))
                .unwrap_or_else(|| panic!("no report {prefix}\n{}", lines.join("\n")));
            assert!(lines[at].contains(bad.reason), "{}", lines[at]);
            at
        })
        .collect()
}

fn run(command: &mut Command) -> (Option<i32>, Vec<Produced>, String) {
    let output = command
        .stdin(Stdio::null())
        .output()
        .expect("run krec consume");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (
        output.status.code(),
        parse_json_lines(&output.stdout),
        stderr,
    )
}

fn consume(broker: &Broker, topic: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
    command
        .args([
            "consume",
            "-b",
            &broker.bootstrap,
            "-t",
            topic,
            "-e",
            "-f",
            "json",
        ])
        .args(args);
    command
}

/// One test, so the broker restart that plants the corrupt batches happens once and no other
/// test of this binary runs while the broker is down.
#[test]
fn corrupt_batches_served_by_a_broker_are_skipped_and_reported_or_stop_the_consumer() {
    let broker = broker();
    let topic = unique_topic("corrupt");
    let (good, bad, txn_committed) = corrupt_topic(&broker, &topic);

    // Assign mode, skip: the good batches exactly once, each bad one reported, exit 3.
    let (code, printed, stderr) = run(&mut consume(&broker, &topic, &["--on-corrupt", "skip"]));
    assert_eq!(code, Some(3), "{stderr}");
    assert_same_records(&printed, &good);
    let lines: Vec<&str> = stderr.lines().collect();
    let at = reports(&lines, &topic, &bad);
    assert!(at.is_sorted(), "reports in offset order:\n{stderr}");
    assert!(
        stderr.contains("krec consume: 3 corrupt batches skipped"),
        "{stderr}"
    );

    skipped_batches_are_counted_in_the_metrics_and_the_stats(&broker, &topic);
    a_corrupt_abort_marker_hides_no_committed_record(&broker, &topic, &txn_committed);

    // The default stops at the first bad batch, naming where it is.
    let (code, printed, stderr) = run(&mut consume(&broker, &topic, &[]));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("checksum mismatch"), "{stderr}");
    assert!(stderr.contains(&topic), "{stderr}");
    assert!(
        printed.iter().all(|r| r.offset < 5),
        "nothing past the bad batch"
    );

    // A group member reports each bad batch before any offset past it is committed, and ends
    // committed past both.
    let group = unique_topic("corrupt-group");
    let mut member = consume(&broker, &topic, &["--on-corrupt", "skip", "-G", &group]);
    member
        .args(["--commit-interval-ms", "100", "--threads", "1"])
        .env("RUST_LOG", MEMBER_LOG);
    let (code, printed, stderr) = run(&mut member);
    assert_eq!(code, Some(3), "{stderr}");
    assert_same_records(&printed, &good);
    let lines: Vec<&str> = stderr.lines().collect();
    let at = reports(&lines, &topic, &bad);
    let commits: Vec<(usize, i64)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("krec::commit"))
        .filter_map(|(i, l)| {
            let offset = l.split("offset=").nth(1)?.split_whitespace().next()?;
            Some((i, offset.parse().ok()?))
        })
        .collect();
    assert_eq!(commits.last().map(|c| c.1), Some(25), "{stderr}");
    for (report, bad) in at.iter().zip(&bad) {
        let first_past = commits.iter().find(|(_, offset)| *offset > bad.offsets.0);
        assert!(
            first_past.is_some_and(|(line, _)| line > report),
            "offsets past {} committed before the report:\n{stderr}",
            bad.offsets.0
        );
    }
}

/// `--metrics` serves `krec_batches_skipped_total` while krec runs, and the JSON `--stats`
/// total line counts the skipped batches.
fn skipped_batches_are_counted_in_the_metrics_and_the_stats(broker: &Broker, topic: &str) {
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
    command
        .args([
            "consume",
            "-b",
            &broker.bootstrap,
            "-t",
            topic,
            "-f",
            "json",
        ])
        .args([
            "--on-corrupt",
            "skip",
            "--metrics",
            &address,
            "--idle-timeout",
            "5s",
        ])
        .args(["--stats", "60", "--stats-format", "json"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = command.spawn().expect("start krec consume --metrics");
    let url = format!("http://{address}/metrics");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut skipped = Vec::new();
    while skipped.iter().map(|(_, count)| count).sum::<f64>() < 3.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no skips in the metrics: {skipped:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
        if let Some((200, text)) = get(&url, &[]) {
            skipped = samples(&text, "krec_batches_skipped_total")
                .into_iter()
                .map(|(labels, count)| (labels.to_owned(), count))
                .collect();
        }
    }
    let labels = format!(r#"topic="{topic}",partition="0""#);
    assert_eq!(skipped, [(labels, 3.0)]);
    let output = child
        .wait_with_output()
        .expect("krec consume ends on --idle-timeout");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let total: serde_json::Value = stderr
        .lines()
        .find(|l| l.contains(r#""type":"total""#))
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON total line:\n{stderr}"));
    assert_eq!(total["batches_skipped"], 3, "{stderr}");
    assert_eq!(total["records"], 10, "{stderr}");
}
