//! KIP-227 fetch sessions on the real broker, seen from the broker's side: while `krec
//! consume` tails a topic of a thousand partitions, Kafka's FetchSessionCache metrics (read
//! over JMX with Kafka's own JmxTool) hold one more incremental session caching every
//! partition, and after a clean stop (SIGTERM) the session is gone again, closed by krec.
//! With `-X fetch.sessions=false` the cache does not change. Either way every record,
//! those produced while krec tails included, is printed exactly once, in order.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::broker::{
    assert_same_records, broker, krec_consume_command, parse_json_lines, simple_records,
    unique_topic, wait_with_timeout, Broker, ProducePlan, Produced,
};

const PARTITIONS: i32 = 1000;
const BACKLOG: usize = 6000;
const TAILED: usize = 2000;

/// The broker's FetchSessionCache gauges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SessionCache {
    sessions: i64,
    partitions: i64,
}

fn session_cache(broker: &Broker) -> SessionCache {
    let url = broker.kafka_sh("jmx-url", &[]).trim().to_owned();
    let sessions = "kafka.server:type=FetchSessionCache,name=NumIncrementalFetchSessions";
    let partitions = "kafka.server:type=FetchSessionCache,name=NumIncrementalFetchPartitionsCached";
    let output = broker.kafka_sh(
        "tool",
        &[
            "org.apache.kafka.tools.JmxTool",
            "--jmx-url",
            &url,
            "--object-name",
            sessions,
            "--object-name",
            partitions,
            "--one-time",
            "true",
        ],
    );
    // A CSV header of quoted names (which hold commas), then one row of numbers.
    let mut lines = output
        .lines()
        .skip_while(|line| !line.starts_with("\"time\""));
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_else(|| panic!("no JmxTool header in {output}"))
        .trim_matches('"')
        .split("\",\"")
        .collect();
    let values: Vec<&str> = lines
        .next()
        .unwrap_or_else(|| panic!("no JmxTool row in {output}"))
        .split(',')
        .collect();
    let value = |name: &str| -> i64 {
        let column = header
            .iter()
            .position(|column| *column == format!("{name}:Value"))
            .unwrap_or_else(|| panic!("no {name} in {output}"));
        values[column].trim().parse().expect("a number")
    };
    SessionCache {
        sessions: value(sessions),
        partitions: value(partitions),
    }
}

/// Waits until the broker has created the log of every partition of `topic` (it does so one
/// by one after the topic exists; producing before that is slow and retried).
fn wait_for_logs(broker: &Broker, topic: &str) {
    let datadir = std::path::PathBuf::from(broker.kafka_sh("datadir", &[]).trim());
    let prefix = format!("{topic}-");
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    loop {
        let logs = std::fs::read_dir(&datadir)
            .expect("the broker's data directory")
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
            .count();
        if logs == PARTITIONS as usize {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{logs} of {PARTITIONS} logs of {topic} created"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn produce(broker: &Broker, topic: &str, from: usize, count: usize) -> Vec<Produced> {
    broker.produce_python(&ProducePlan {
        topic: topic.to_owned(),
        compression: "none".to_owned(),
        transactional_id: None,
        steps: vec![(None, simple_records(from, count, PARTITIONS))],
    })
}

/// A `krec consume` tailing a topic, its JSON lines read by a thread.
struct Tail {
    child: Child,
    lines: mpsc::Receiver<String>,
    printed: Vec<String>,
}

impl Tail {
    fn start(broker: &Broker, topic: &str, properties: &[&str]) -> Self {
        let mut child = krec_consume_command(&broker.bootstrap, topic, properties)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start krec consume");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            lines,
            printed: Vec::new(),
        }
    }

    /// Waits until `count` lines in all have been printed.
    fn wait_for(&mut self, count: usize) {
        while self.printed.len() < count {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => self.printed.push(line),
                Err(_) => panic!("krec printed {} of {count} records", self.printed.len()),
            }
        }
    }

    /// SIGTERM (a clean stop), then everything printed.
    fn stop(mut self) -> Vec<Produced> {
        let pid = self.child.id().to_string();
        let killed = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(killed.success());
        let status = wait_with_timeout(&mut self.child, Duration::from_secs(30));
        assert!(
            status.is_some_and(|s| s.success()),
            "krec did not stop cleanly: {status:?}"
        );
        self.printed.extend(self.lines.try_iter());
        parse_json_lines(self.printed.join("\n").as_bytes())
    }
}

/// Deletes the topic when dropped: a thousand partition logs would slow every later restart
/// of the suite's broker.
struct TopicGuard<'a> {
    broker: &'a Broker,
    topic: String,
}

impl Drop for TopicGuard<'_> {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(&self.broker.kafka_sh)
            .args(["tool", "--name", &self.broker.name])
            .args([
                "org.apache.kafka.tools.TopicCommand",
                "--bootstrap-server",
                "{bootstrap}",
            ])
            .args(["--delete", "--topic", &self.topic])
            .stdin(Stdio::null())
            .output();
    }
}

/// The broker's session cache is broker-wide: other tests' consumers would change its counts,
/// so this runs alone (see `crate::solo`).
mod solo {
    use super::*;

    #[test]
    fn the_broker_holds_one_incremental_session_of_every_partition_while_krec_tails() {
        let broker = broker();
        let topic = unique_topic("fetch-sessions");
        broker.create_topic(&topic, PARTITIONS as u32, 1);
        let _delete = TopicGuard {
            broker: &broker,
            topic: topic.clone(),
        };
        wait_for_logs(&broker, &topic);
        let mut produced = produce(&broker, &topic, 0, BACKLOG);
        let before = session_cache(&broker);

        let with_sessions = SessionCache {
            sessions: before.sessions + 1,
            partitions: before.partitions + i64::from(PARTITIONS),
        };
        let mut tail_and_stop = |property: &str| {
            let mut tail = Tail::start(&broker, &topic, &["-X", property]);
            tail.wait_for(produced.len());
            let during = session_cache(&broker);
            // Records arriving while krec tails go through incremental fetches.
            produced.extend(produce(&broker, &topic, produced.len(), TAILED));
            tail.wait_for(produced.len());
            let printed = tail.stop();
            assert_same_records(&printed, &produced);
            during
        };
        assert_eq!(
            tail_and_stop("fetch.sessions=true"),
            with_sessions,
            "krec's session while it runs"
        );
        assert_eq!(
            tail_and_stop("fetch.sessions=false"),
            before,
            "none with fetch.sessions=false (and the first krec closed its own when it stopped)"
        );
        assert_eq!(session_cache(&broker), before);
    }
}
