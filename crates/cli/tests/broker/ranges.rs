//! `-o` ranges (kcat's `s@`/`e@`, rpk's `START:END`) and `--idle-timeout` against records
//! librdkafka wrote with chosen timestamps, one of them out of time order inside its batch.
//! Every bounded read must exit by itself, with exactly the records of the range.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use krec_testkit::live::LiveBroker;

use crate::support::broker::{
    broker, krec_consume_command, parse_json_lines, unique_topic, Broker, PlannedRecord,
    ProducePlan, Produced,
};

/// 2023-11-14T22:13:20Z.
const BASE: i64 = 1_700_000_000_000;
const PER_PARTITION: [usize; 2] = [20, 10];

/// Partition p's record i is stamped BASE + i s (+ 100 ms on partition 1); partition 0's
/// record 12 is stamped 5.5 s, earlier than the records before it.
fn stamp(partition: i32, i: usize) -> i64 {
    match (partition, i) {
        (0, 12) => BASE + 5_500,
        _ => BASE + i as i64 * 1_000 + i64::from(partition) * 100,
    }
}

fn fill(broker: &Broker) -> (String, Vec<Produced>) {
    let topic = unique_topic("ranges");
    // Partition 2 stays empty.
    broker.create_topic(&topic, 3, 1);
    let records = (0..2)
        .flat_map(|partition: i32| {
            (0..PER_PARTITION[partition as usize]).map(move |i| PlannedRecord {
                partition,
                key: Some(format!("k{i}").into_bytes()),
                value: Some(format!("p{partition}-{i}").into_bytes()),
                headers: Vec::new(),
                timestamp: Some(stamp(partition, i)),
            })
        })
        .collect();
    let acked = broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "lz4".to_owned(),
        transactional_id: None,
        steps: vec![(None, records)],
    });
    (topic, acked)
}

/// Runs krec consume -J with `args`; fails the test if it does not exit within 60 s.
fn consume(broker: &Broker, topic: &str, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = krec_consume_command(&broker.bootstrap, topic, &[&["-J"], args].concat())
        .env("RUST_LOG", "krec=info,krec_cli=info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run krec");
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "krec consume {args:?} did not exit by itself: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (child.wait_with_output().unwrap(), started.elapsed())
}

fn records_of(broker: &Broker, topic: &str, args: &[&str]) -> Vec<Produced> {
    let (output, _) = consume(broker, topic, args);
    assert!(
        output.status.success(),
        "krec consume {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    sorted(parse_json_lines(&output.stdout))
}

fn sorted(mut records: Vec<Produced>) -> Vec<Produced> {
    records.sort_by_key(|r| (r.partition, r.offset));
    records.iter().map(Produced::content).collect()
}

/// The first offset of `partition`, in offset order, stamped at or after `time`.
fn first_at(acked: &[Produced], partition: i32, time: i64) -> i64 {
    acked
        .iter()
        .filter(|r| r.partition == partition)
        .find(|r| r.timestamp.unwrap() >= time)
        .map_or(i64::MAX, |r| r.offset)
}

/// The acknowledged records for which `keep(partition, offset)` holds.
fn expected(acked: &[Produced], keep: impl Fn(i32, i64) -> bool) -> Vec<Produced> {
    sorted(
        acked
            .iter()
            .filter(|r| keep(r.partition, r.offset))
            .cloned()
            .collect(),
    )
}

#[test]
fn time_and_offset_ranges_hold_exactly_their_records_and_exit() {
    let broker = broker();
    let (topic, acked) = fill(&broker);
    let (from, to) = (BASE + 5_200, BASE + 10_000);
    let in_times = |p: i32, o: i64| first_at(&acked, p, from) <= o && o < first_at(&acked, p, to);
    // kcat's form; the out-of-order record (5.5 s, after 11 s) is past the end.
    let got = records_of(
        &broker,
        &topic,
        &["-o", &format!("s@{from}"), "-o", &format!("e@{to}")],
    );
    assert_eq!(got, expected(&acked, in_times));
    assert!(!got.is_empty());
    // rpk's form with RFC 3339 times: the same range.
    let rfc = records_of(
        &broker,
        &topic,
        &["-o", "@2023-11-14T22:13:25.200Z:@2023-11-14T22:13:30Z"],
    );
    assert_eq!(rfc, got);
    // Offsets, END exclusive (the empty partition 2 would wait for its records 3 to 7); and an
    // open start.
    let offsets = records_of(&broker, &topic, &["-o", "3:8", "-p", "0,1"]);
    assert_eq!(offsets, expected(&acked, |_, o| (3..8).contains(&o)));
    let head = records_of(&broker, &topic, &["-o", ":4", "-p", "1"]);
    assert_eq!(head, expected(&acked, |p, o| p == 1 && o < 4));
}

#[test]
fn end_times_no_record_reaches_end_at_the_log_end() {
    let broker = broker();
    let (topic, acked) = fill(&broker);
    let all = expected(&acked, |_, _| true);
    // In the past, later than every record: the end is the log's end now.
    assert_eq!(records_of(&broker, &topic, &["-o", "e@-1s"]), all);
    // In the future: each record is checked until the time passes, then the end is fixed.
    let soon = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 3_000)
        .to_string();
    let (output, took) = consume(&broker, &topic, &["-o", &format!("e@{soon}")]);
    assert!(output.status.success());
    assert_eq!(sorted(parse_json_lines(&output.stdout)), all);
    assert!(
        took >= Duration::from_secs(2),
        "exited before the end time: {took:?}"
    );
}

#[test]
fn a_range_past_the_log_end_waits_for_its_records_and_only_those() {
    let broker = broker();
    let (topic, _) = fill(&broker);
    let reader = {
        let (bootstrap, name, kafka_sh) = (
            broker.bootstrap.clone(),
            broker.name.clone(),
            broker.kafka_sh.clone(),
        );
        let topic = topic.clone();
        std::thread::spawn(move || {
            let broker = Broker(LiveBroker {
                bootstrap,
                kafka_sh,
                name,
            });
            records_of(&broker, &topic, &["-o", "3:5", "-p", "2"])
        })
    };
    std::thread::sleep(Duration::from_secs(2));
    let later: Vec<PlannedRecord> = (0..6)
        .map(|i| PlannedRecord {
            partition: 2,
            key: None,
            value: Some(format!("later-{i}").into_bytes()),
            headers: Vec::new(),
            timestamp: None,
        })
        .collect();
    let acked = broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "none".to_owned(),
        transactional_id: None,
        steps: vec![(None, later)],
    });
    let got = reader.join().expect("the reader exits by itself");
    assert_eq!(got, expected(&acked, |_, o| (3..5).contains(&o)));
}

#[test]
fn log_append_time_topics_compare_the_broker_s_append_time() {
    let broker = broker();
    let topic = unique_topic("ranges-append");
    broker.kafka_sh(
        "topic",
        &[
            "create",
            &topic,
            "--partitions",
            "1",
            "--config",
            "message.timestamp.type=LogAppendTime",
        ],
    );
    broker.wait_for_leaders(&topic, 1);
    // Create times in 2030: only the broker's append time can place a bound between the two.
    let produce = |from: usize| {
        let records = (from..from + 5)
            .map(|i| PlannedRecord {
                partition: 0,
                key: None,
                value: Some(format!("append-{i}").into_bytes()),
                headers: Vec::new(),
                timestamp: Some(1_900_000_000_000),
            })
            .collect();
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: "zstd".to_owned(),
            transactional_id: None,
            steps: vec![(None, records)],
        })
    };
    let first = produce(0);
    std::thread::sleep(Duration::from_millis(1500));
    let between = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        .to_string();
    std::thread::sleep(Duration::from_millis(1500));
    let second = produce(5);
    let before = records_of(&broker, &topic, &["-o", &format!("e@{between}")]);
    assert_eq!(before, sorted(first));
    let after = records_of(&broker, &topic, &["-o", &format!("s@{between}"), "-e"]);
    assert_eq!(after, sorted(second));
}

#[test]
fn an_empty_range_is_not_fetched_and_exits_at_once() {
    let broker = broker();
    let (topic, _) = fill(&broker);
    let (output, _) = consume(&broker, &topic, &["-o", "5:5"]);
    assert!(output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Every partition, the empty one (2) too, is left unread.
    for partition in 0..3 {
        assert!(
            stderr.contains(&format!("partition={partition} first=")),
            "{stderr}"
        );
    }
    assert_eq!(stderr.matches("empty range").count(), 3, "{stderr}");
}

#[test]
fn idle_timeout_exits_once_nothing_arrives() {
    let broker = broker();
    let (topic, acked) = fill(&broker);
    let (output, took) = consume(&broker, &topic, &["--idle-timeout", "2s"]);
    assert!(output.status.success());
    assert_eq!(
        sorted(parse_json_lines(&output.stdout)),
        expected(&acked, |_, _| true)
    );
    assert!(took >= Duration::from_secs(2), "{took:?}");
    let (bad, _) = consume(&broker, &topic, &["--idle-timeout", "soon"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_bounded_range_refuses_groups() {
    let broker = broker();
    let (topic, _) = fill(&broker);
    let (output, _) = consume(&broker, &topic, &["-o", "0:5", "-G", "g"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("without a group"), "{stderr}");
}
