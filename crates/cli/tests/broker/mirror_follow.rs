//! `krec mirror` following its source while it runs: a topic created that matches its pattern
//! is copied, and partitions added to a source topic are created in the target and copied.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::mirror::{assert_copied, committed, mirror_command, summary_count};
use crate::support::broker::{broker, simple_records, unique_topic, Broker, ProducePlan};

/// Waits until `krec consume` reads `want` committed records of `topic`; returns how long.
fn wait_for_copy(broker: &Broker, topic: &str, want: usize, mirror: &mut Child) -> Duration {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(60);
    loop {
        let exists = broker.consume(topic, &["-e", "-J", "--isolation", "read_committed"]);
        let got = exists.status.success().then(|| {
            let records = crate::support::broker::parse_json_lines(&exists.stdout);
            records.len()
        });
        if got == Some(want) {
            return started.elapsed();
        }
        if let Some(status) = mirror.try_wait().expect("poll krec mirror") {
            let mut stderr = String::new();
            if let Some(mut pipe) = mirror.stderr.take() {
                std::io::Read::read_to_string(&mut pipe, &mut stderr).expect("read stderr");
            }
            panic!("krec mirror ended early ({status}): {stderr}");
        }
        assert!(
            Instant::now() < deadline,
            "{topic}: {got:?} records after 60 s, want {want}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The running mirror, killed when a failed assertion leaves it running (it would hold the
/// test's output open).
struct Running(Option<Child>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn produce(broker: &Broker, topic: &str, from: usize, partitions: &[i32]) {
    let mut records = simple_records(from, 10 * partitions.len(), partitions.len() as i32);
    for record in &mut records {
        record.partition = partitions[record.partition as usize];
    }
    broker.produce_python(&ProducePlan {
        topic: topic.to_owned(),
        compression: "lz4".to_owned(),
        steps: vec![(None, records)],
        ..ProducePlan::default()
    });
}

#[test]
fn new_topics_and_partitions_at_the_source_are_copied_while_running() {
    let broker = broker();
    let prefix = unique_topic("mirror-follow");
    let (first, second) = (format!("{prefix}-a"), format!("{prefix}-b"));
    broker.create_topic(&first, 2, 1);
    produce(&broker, &first, 0, &[0, 1]);
    let name = unique_topic("mirror-follow");
    let pattern = format!("^{prefix}");
    let often = ["-X", "topic.metadata.refresh.interval.ms=1000"];
    let mut running = Running(Some(
        mirror_command(&broker, &pattern, &name, &often)
            .stderr(Stdio::piped())
            .spawn()
            .expect("start krec mirror"),
    ));
    let mirror = running.0.as_mut().expect("running");
    let copy = |topic: &str| format!("copy-{topic}");
    wait_for_copy(&broker, &copy(&first), 20, mirror);

    broker.create_topic(&second, 2, 1);
    produce(&broker, &second, 100, &[0, 1]);
    let new_topic = wait_for_copy(&broker, &copy(&second), 20, mirror);

    broker.kafka_sh(
        "tool",
        &[
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            "{bootstrap}",
            "--alter",
            "--topic",
            &first,
            "--partitions",
            "4",
        ],
    );
    broker.wait_for_leaders(&first, 4);
    produce(&broker, &first, 200, &[2, 3]);
    let new_partitions = wait_for_copy(&broker, &copy(&first), 40, mirror);
    eprintln!("picked up a new topic in {new_topic:?}, new partitions in {new_partitions:?}");

    let pid = mirror.id().to_string();
    let term = Command::new("kill").args(["-TERM", &pid]).status();
    assert!(term.expect("kill").success());
    let mirror = running.0.take().expect("running");
    let output = mirror.wait_with_output().expect("wait for krec mirror");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(summary_count(&stderr, "records, "), 60, "{stderr}");
    for topic in [&first, &second] {
        let source = committed(&broker, topic);
        let copied = committed(&broker, &copy(topic));
        assert!(copied.iter().all(|r| r.partition < 4));
        assert_copied(&source, &copied);
    }
}
