//! Rack-aware fetching (KIP-392) on the three-node cluster, where node K sits in rack `rack-K`
//! and the brokers run the rack-aware replica selector: with `client.rack`, krec reads from
//! the follower in its rack (the brokers' own per-topic byte counters say so), falls back to
//! the leaders when that follower stops, and without a rack reads from the leaders.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::Mutex;

use crate::support::broker::{
    assert_same_records, cluster, simple_records, unique_topic, Broker, HeldConsume, ProducePlan,
    Produced,
};

/// One test at a time: one of them stops a node the others read from.
static CLUSTER: Mutex<()> = Mutex::new(());

/// Replicas of the two partitions, leader first: nodes 1 and 3 lead, node 2 only follows.
const ASSIGNMENT: [[i32; 3]; 2] = [[1, 3, 2], [3, 1, 2]];

/// The follower every test reads from when it gives a rack: it leads nothing.
const FOLLOWER: i32 = 2;

/// A two-partition topic laid out as [`ASSIGNMENT`], with `count` records produced into it.
fn topic_with_records(cluster: &Broker, prefix: &str, count: usize) -> (String, Vec<Produced>) {
    let topic = unique_topic(prefix);
    create_topic(cluster, &topic);
    wait_for_layout(cluster, &topic);
    let produced = cluster.produce_python(&plan(&topic, 0, count));
    (topic, produced)
}

fn plan(topic: &str, from: usize, count: usize) -> ProducePlan {
    ProducePlan {
        topic: topic.to_owned(),
        compression: "lz4".into(),
        steps: vec![(None, simple_records(from, count, ASSIGNMENT.len() as i32))],
        ..ProducePlan::default()
    }
}

/// Produces `tail-<i>` values to one partition with kcat (acks=all), the partition holding
/// `next` records before; returns them as the broker stores them.
fn produce_with_kcat(
    cluster: &Broker,
    topic: &str,
    partition: i32,
    next: i64,
    count: usize,
) -> Vec<Produced> {
    use std::io::Write;
    let values: Vec<String> = (0..count).map(|i| format!("tail-{i}")).collect();
    let mut kcat = Command::new("kcat")
        .args(["-P", "-b", &cluster.bootstrap, "-t", topic])
        .args([
            "-p",
            &partition.to_string(),
            "-X",
            "acks=all",
            "-X",
            "linger.ms=5",
        ])
        .stdin(Stdio::piped())
        .spawn()
        .expect("run kcat");
    let mut input = kcat.stdin.take().unwrap();
    input.write_all(values.join("\n").as_bytes()).unwrap();
    drop(input);
    assert!(kcat.wait().unwrap().success(), "kcat -P failed");
    values
        .into_iter()
        .zip(next..)
        .map(|(value, offset)| Produced {
            partition,
            offset,
            key: None,
            value: Some(value.into_bytes()),
            headers: Vec::new(),
            timestamp: None,
            committed: true,
        })
        .collect()
}

/// Creates the topic with confluent-kafka's admin client (no JVM to start).
fn create_topic(cluster: &Broker, topic: &str) {
    let assignment = format!("{ASSIGNMENT:?}");
    let script = format!(
        "from confluent_kafka.admin import AdminClient, NewTopic\n\
         admin = AdminClient({{'bootstrap.servers': '{}'}})\n\
         for f in admin.create_topics([NewTopic('{topic}', {partitions}, replica_assignment={assignment})]).values():\n    \
         f.result(30)\n",
        cluster.bootstrap,
        partitions = ASSIGNMENT.len(),
    );
    let output = Command::new("/usr/bin/python3")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .output()
        .expect("run /usr/bin/python3");
    assert!(
        output.status.success(),
        "creating {topic}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Waits until metadata shows the topic led as assigned with every replica in sync, so that a
/// leader can name the follower.
fn wait_for_layout(cluster: &Broker, topic: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut listing = String::new();
    while std::time::Instant::now() < deadline {
        let output = Command::new("kcat")
            .args(["-L", "-b", &cluster.bootstrap, "-t", topic])
            .stdin(Stdio::null())
            .output()
            .expect("run kcat");
        listing = String::from_utf8_lossy(&output.stdout).into_owned();
        let laid_out = ASSIGNMENT.iter().enumerate().all(|(partition, replicas)| {
            let leader = format!("partition {partition}, leader {},", replicas[0]);
            listing
                .lines()
                .find(|line| line.contains(&leader))
                .is_some_and(|line| line.rsplit("isrs: ").next().unwrap().split(',').count() == 3)
        });
        if laid_out {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    panic!("{topic} is not led as assigned with all replicas in sync:\n{listing}");
}

/// Record bytes each of `nodes` has sent to consumers for `topic` (BytesOutPerSec's count:
/// consumer fetches only, replication is counted apart), read over JMX with Kafka's JmxTool.
fn bytes_out_by_node(cluster: &Broker, topic: &str, nodes: &[i32]) -> BTreeMap<i32, u64> {
    std::thread::scope(|scope| {
        let readers: Vec<_> = nodes
            .iter()
            .map(|&node| scope.spawn(move || (node, bytes_out(cluster, topic, node))))
            .collect();
        readers.into_iter().map(|r| r.join().unwrap()).collect()
    })
}

const ALL_NODES: [i32; 3] = [1, 2, 3];
const LEADERS: [i32; 2] = [ASSIGNMENT[0][0], ASSIGNMENT[1][0]];

fn bytes_out(cluster: &Broker, topic: &str, node: i32) -> u64 {
    let url = cluster.kafka_sh("jmx-url", &["--node", &node.to_string()]);
    // The wildcard also matches the all-topics meter, which always exists: a topic never read
    // from this node has no meter of its own, which counts as zero.
    let csv = cluster.kafka_sh(
        "tool",
        &[
            "org.apache.kafka.tools.JmxTool",
            "--jmx-url",
            url.trim(),
            "--object-name",
            "kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec,*",
            "--attributes",
            "Count",
            "--one-time",
            "true",
        ],
    );
    let mut lines = csv
        .lines()
        .filter(|line| line.starts_with('"') || line.starts_with(char::is_numeric));
    let header = lines
        .next()
        .unwrap_or_else(|| panic!("no JmxTool header:\n{csv}"));
    let values = lines
        .next()
        .unwrap_or_else(|| panic!("no JmxTool values:\n{csv}"));
    // The header quotes each column's name (the names hold commas); the values are bare.
    let column =
        format!("kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec,topic={topic}:Count");
    let names: Vec<&str> = header.trim_matches('"').split("\",\"").collect();
    match names.iter().position(|name| *name == column) {
        Some(index) => values.split(',').nth(index).unwrap().parse().unwrap(),
        None => 0,
    }
}

fn rack_property() -> String {
    format!("client.rack=rack-{FOLLOWER}")
}

#[test]
fn client_rack_reads_every_record_once_from_the_follower_in_its_rack() {
    let _one = CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    let cluster = cluster();
    let (topic, mut expected) = topic_with_records(&cluster, "rack", 6_000);
    // `-e` right after the last records are acknowledged: a follower learns the new high
    // watermark only with its next replica fetch, and krec must still read to the end the
    // leader reported. kcat starts and exits fast, which keeps that window open.
    for partition in 0..ASSIGNMENT.len() as i32 {
        let next = expected.iter().filter(|r| r.partition == partition).count() as i64;
        expected.extend(produce_with_kcat(&cluster, &topic, partition, next, 200));
    }
    let printed = cluster.consume_records(&topic, &["-e", "-X", &rack_property()]);
    expected.sort_by_key(|r| (r.partition, r.offset));
    assert_same_records(&printed, &expected);

    let bytes = bytes_out_by_node(&cluster, &topic, &ALL_NODES);
    assert!(
        bytes[&FOLLOWER] > 0,
        "nothing read from the follower: {bytes:?}"
    );
    for leader in LEADERS {
        assert_eq!(
            bytes[&leader], 0,
            "records read from leader {leader}: {bytes:?}"
        );
    }
}

#[test]
fn without_client_rack_the_leaders_serve_the_records() {
    let _one = CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    let cluster = cluster();
    let (topic, expected) = topic_with_records(&cluster, "norack", 2_000);
    let printed = cluster.consume_records(&topic, &["-e"]);
    assert_same_records(&printed, &expected);

    let bytes = bytes_out_by_node(&cluster, &topic, &ALL_NODES);
    assert_eq!(
        bytes[&FOLLOWER], 0,
        "the follower served records: {bytes:?}"
    );
    for leader in LEADERS {
        assert!(
            bytes[&leader] > 0,
            "leader {leader} served nothing: {bytes:?}"
        );
    }
}

#[test]
fn a_stopped_follower_hands_its_partitions_back_to_the_leaders() {
    let _one = CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    let cluster = cluster();
    let half = 8_000;
    let (topic, mut expected) = topic_with_records(&cluster, "rackstop", half);
    let rack = rack_property();
    let consume =
        HeldConsume::start_with(&cluster.bootstrap, &topic, 2 * half, 1000, &["-X", &rack]);
    let before = bytes_out_by_node(&cluster, &topic, &ALL_NODES);
    let follower = FOLLOWER.to_string();
    cluster.kafka_sh("stop-node", &["--node", &follower]);
    expected.extend(cluster.produce_python(&plan(&topic, half, half)));
    expected.sort_by_key(|r| (r.partition, r.offset));
    let finished = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| consume.finish()));
    let bytes = bytes_out_by_node(&cluster, &topic, &LEADERS);
    // Bring the node back whatever happened, so the cluster stays whole for other tests.
    cluster.kafka_sh("start-node", &["--node", &follower]);
    let (printed, stderr) = finished.unwrap_or_else(|panic| std::panic::resume_unwind(panic));

    assert_same_records(&printed, &expected);
    let from_leaders_before: u64 = LEADERS.iter().map(|leader| before[leader]).sum();
    assert!(
        before[&FOLLOWER] > 0 && from_leaders_before == 0,
        "before the stop, the follower should have served everything: {before:?}"
    );
    assert!(
        stderr.contains("follower unreachable: reading from the leaders"),
        "krec should have left the stopped follower:\n{stderr}"
    );
    // The second half was produced while the follower was down: the leaders served it.
    for leader in LEADERS {
        assert!(
            bytes[&leader] > 0,
            "leader {leader} served nothing: {bytes:?}"
        );
    }
}
