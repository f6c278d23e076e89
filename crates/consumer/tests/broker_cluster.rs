//! A leader change on a three-node cluster in the middle of a consume: the consumer follows
//! the new leaders and delivers every record exactly once, in order per partition.
//! Run through `bash scripts/test.sh` (it starts the cluster and enables `cluster-tests`).
#![cfg(feature = "cluster-tests")]

mod broker_support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use broker_support::{
    assert_same_records, cluster, krec_consume_command, parse_json_lines, simple_records,
    unique_topic, wait_with_timeout, ProducePlan,
};

#[test]
fn leader_change_loses_and_duplicates_nothing() {
    let cluster = cluster();
    let topic = unique_topic("leaders");
    cluster.create_topic(&topic, 3, 3);
    let plan = |from, count| ProducePlan {
        topic: topic.clone(),
        compression: "zstd".into(),
        steps: vec![(None, simple_records(from, count, 3))],
        ..ProducePlan::default()
    };
    let half = 15_000;
    let mut expected = cluster.produce_python(&plan(0, half));
    let total = 2 * half;

    let err_path = std::env::temp_dir().join(format!("krec-leaders-{}.err", std::process::id()));
    let mut child = krec_consume_command(
        &cluster.bootstrap,
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
    // Leaders are spread over the three nodes, so node 1 leads some partition.
    cluster.kafka_sh("stop-node", &["--node", "1"]);
    expected.extend(cluster.produce_python(&plan(half, half)));
    expected.sort_by_key(|r| (r.partition, r.offset));
    loop {
        line.clear();
        if stdout.read_line(&mut line).unwrap() == 0 {
            break;
        }
        lines.push(line.clone());
    }
    let status = wait_with_timeout(&mut child, Duration::from_secs(120));
    cluster.kafka_sh("start-node", &["--node", "1"]);
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&err_path);
    assert!(
        status.is_some_and(|s| s.success()),
        "krec consume did not finish: {status:?}\n{stderr}"
    );
    assert!(
        stderr.contains("partition leader changed"),
        "the consumer should have followed a new leader:\n{stderr}"
    );
    let printed = parse_json_lines(lines.concat().as_bytes());
    assert_same_records(&printed, &expected);
}
