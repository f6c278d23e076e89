//! A broker restarted in the middle of a consume: the consumer reconnects with backoff and
//! resumes at the next offset, with no gap and no duplicate.
#![cfg(feature = "broker-tests")]

mod broker_support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use broker_support::{
    assert_same_records, broker, krec_consume_command, parse_json_lines, simple_records,
    unique_topic, wait_with_timeout, ProducePlan,
};

#[test]
fn restarted_broker_loses_and_duplicates_nothing() {
    let broker = broker();
    let topic = unique_topic("restart");
    broker.create_topic(&topic, 2, 1);
    let plan = |from, count| ProducePlan {
        topic: topic.clone(),
        compression: "lz4".into(),
        steps: vec![(None, simple_records(from, count, 2))],
        ..ProducePlan::default()
    };
    let first_half = 20_000;
    let mut expected = broker.produce_python(&plan(0, first_half));
    let total = 2 * first_half;

    let err_path = std::env::temp_dir().join(format!("krec-restart-{}.err", std::process::id()));
    // A small buffer and a stdout pipe the test stops reading: back-pressure holds the consumer
    // in the middle of the partition while the broker goes down and comes back.
    let mut child = krec_consume_command(
        &broker.bootstrap,
        &topic,
        &[
            "-c",
            &total.to_string(),
            "--buffer-bytes",
            "65536",
            "--partition-max-bytes",
            "16384",
            "--max-wait-ms",
            "100",
        ],
    )
    .env("RUST_LOG", "krec_consumer=info")
    .stdout(Stdio::piped())
    .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()))
    .spawn()
    .expect("start krec consume");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    let mut line = String::new();
    while lines.len() < 1000 {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "krec stopped early"
        );
        lines.push(line.clone());
    }
    broker.kafka_sh("stop-node", &["--node", "1"]);
    std::thread::sleep(Duration::from_secs(1));
    broker.kafka_sh("start-node", &["--node", "1"]);
    expected.extend(broker.produce_python(&plan(first_half, first_half)));
    expected.sort_by_key(|r| (r.partition, r.offset));
    loop {
        line.clear();
        if stdout.read_line(&mut line).unwrap() == 0 {
            break;
        }
        lines.push(line.clone());
    }
    let status = wait_with_timeout(&mut child, Duration::from_secs(120));
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&err_path);
    assert!(
        status.is_some_and(|s| s.success()),
        "krec consume did not finish: {status:?}\n{stderr}"
    );
    assert!(
        stderr.contains("reconnecting"),
        "the consumer should have seen the broker go away:\n{stderr}"
    );
    let printed = parse_json_lines(lines.concat().as_bytes());
    assert_same_records(&printed, &expected);
}
