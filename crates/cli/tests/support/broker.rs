//! Shared helpers of the broker tests: the broker from `scripts/test.sh`, unique topics,
//! producing with real clients, running `krec`, and reading its JSON lines back.

use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use base64::Engine;
use krec_testkit::live::{self, LiveBroker};

/// The suite's broker (testkit's [`LiveBroker`]: its bootstrap, `kafka.sh` and name, with
/// `kafka_sh`, `tool`, `produce`...) and the CLI tests' own helpers on top: topics with a
/// replication factor, `krec consume`, the python producer of exact bytes.
pub struct Broker(pub LiveBroker);

impl Deref for Broker {
    type Target = LiveBroker;
    fn deref(&self) -> &LiveBroker {
        &self.0
    }
}

impl DerefMut for Broker {
    fn deref_mut(&mut self) -> &mut LiveBroker {
        &mut self.0
    }
}

/// The single-node broker.
pub fn broker() -> Broker {
    Broker(live::broker())
}

/// The three-node cluster.
pub fn cluster() -> Broker {
    Broker(live::cluster())
}

/// A topic name no other test (or earlier run) uses.
pub use krec_testkit::live::unique_name as unique_topic;

impl Broker {
    /// Deletes the records of `topic`'s `partition` before `offset` (Kafka's
    /// DeleteRecordsCommand), so its log start moves there.
    pub fn delete_records(&self, topic: &str, partition: i32, offset: i64) {
        let offsets = tempfile::NamedTempFile::new().expect("temp file");
        let json = format!(
            r#"{{"partitions":[{{"topic":"{topic}","partition":{partition},"offset":{offset}}}],"version":1}}"#
        );
        std::fs::write(offsets.path(), json).expect("write the offsets file");
        self.kafka_sh(
            "tool",
            &[
                "org.apache.kafka.tools.DeleteRecordsCommand",
                "--bootstrap-server",
                "{bootstrap}",
                "--offset-json-file",
                offsets.path().to_str().expect("UTF-8 path"),
            ],
        );
    }

    /// Creates a topic and waits until the bootstrap broker's metadata shows a leader for every
    /// partition: TopicCommand returns when the controller has it, before brokers learn of it.
    pub fn create_topic(&self, topic: &str, partitions: u32, replication: u32) {
        self.kafka_sh(
            "topic",
            &[
                "create",
                topic,
                "--partitions",
                &partitions.to_string(),
                "--replication-factor",
                &replication.to_string(),
            ],
        );
        self.wait_for_leaders(topic, partitions as usize);
    }

    /// Waits until the bootstrap broker's metadata shows a leader for each of `partitions`.
    pub fn wait_for_leaders(&self, topic: &str, partitions: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let output = Command::new(env!("CARGO_BIN_EXE_krec"))
                .args(["metadata", "-b", &self.bootstrap, "-J", "-t", topic])
                .stdin(Stdio::null())
                .output()
                .expect("run krec metadata");
            let led = serde_json::from_slice::<serde_json::Value>(&output.stdout)
                .ok()
                .and_then(|doc| doc["topics"][0]["partitions"].as_array().cloned())
                .is_some_and(|list| {
                    list.len() == partitions && list.iter().all(|p| p["leader"].as_i64() >= Some(0))
                });
            if output.status.success() && led {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "topic {topic} has no leaders after 30 s: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// Runs `krec consume -b BOOTSTRAP -t TOPIC <args>`.
    pub fn consume(&self, topic: &str, args: &[&str]) -> Output {
        krec_consume_command(&self.bootstrap, topic, args)
            .output()
            .expect("run krec consume")
    }

    /// Like [`Broker::consume`], asserting success and returning the parsed JSON records.
    pub fn consume_records(&self, topic: &str, args: &[&str]) -> Vec<Produced> {
        let output = self.consume(topic, args);
        assert!(
            output.status.success(),
            "krec consume {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        parse_json_lines(&output.stdout)
    }

    /// Produces with confluent-kafka (librdkafka) following `plan`, returning what the broker
    /// acknowledged, with offsets.
    pub fn produce_python(&self, plan: &ProducePlan) -> Vec<Produced> {
        let report = live::run_python(PYTHON_PRODUCER, &plan.to_json(&self.bootstrap));
        parse_produced_lines(&report)
    }
}

/// Parses the producer's report: one JSON object per record, bytes in hex, sorted by
/// partition and offset.
pub fn parse_produced_lines(text: &str) -> Vec<Produced> {
    let mut produced: Vec<Produced> = text
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("producer JSON");
            Produced {
                partition: v["partition"].as_i64().expect("partition") as i32,
                offset: v["offset"].as_i64().expect("offset"),
                key: hex_field(&v["key"]),
                value: hex_field(&v["value"]),
                headers: v["headers"]
                    .as_array()
                    .expect("headers")
                    .iter()
                    .map(|h| (hex_field(&h[0]).expect("header key"), hex_field(&h[1])))
                    .collect(),
                timestamp: v["timestamp"].as_i64(),
                committed: v["committed"].as_bool().unwrap_or(true),
            }
        })
        .collect();
    produced.sort_by_key(|r| (r.partition, r.offset));
    produced
}

/// `krec consume -b BOOTSTRAP -t TOPIC <args>` as a command.
pub fn krec_consume_command(bootstrap: &str, topic: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
    command
        .args(["consume", "-b", bootstrap, "-t", topic])
        .args(args)
        .stdin(Stdio::null());
    command
}

/// One record as a producer wrote it or as krec printed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Produced {
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// Key bytes.
    pub key: Option<Vec<u8>>,
    /// Value bytes.
    pub value: Option<Vec<u8>>,
    /// Headers in order.
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// Timestamp, when known.
    pub timestamp: Option<i64>,
    /// False for records of an aborted transaction.
    pub committed: bool,
}

impl Produced {
    /// The fields krec must reproduce exactly (timestamp and commit state left out).
    pub fn content(&self) -> Produced {
        Produced {
            timestamp: None,
            committed: true,
            ..self.clone()
        }
    }
}

fn hex_field(value: &serde_json::Value) -> Option<Vec<u8>> {
    let text = value.as_str()?;
    Some(
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
            .collect(),
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes in krec's JSON scheme: null, a UTF-8 string, or `{"base64": ...}`.
fn json_bytes(value: &serde_json::Value) -> Option<Vec<u8>> {
    match value {
        serde_json::Value::Null => None,
        serde_json::Value::String(text) => Some(text.as_bytes().to_vec()),
        serde_json::Value::Object(object) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(object["base64"].as_str().expect("base64 string"))
                .expect("valid base64"),
        ),
        other => panic!("not a bytes value: {other}"),
    }
}

/// Parses krec's JSON lines (data records only).
pub fn parse_json_lines(stdout: &[u8]) -> Vec<Produced> {
    String::from_utf8(stdout.to_vec())
        .expect("krec writes UTF-8 JSON")
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("a JSON line"))
        .filter(|v| v.get("control").is_none())
        .map(|v| Produced {
            partition: v["partition"].as_i64().expect("partition") as i32,
            offset: v["offset"].as_i64().expect("offset"),
            key: json_bytes(&v["key"]),
            value: json_bytes(&v["value"]),
            headers: v["headers"]
                .as_array()
                .expect("headers")
                .iter()
                .map(|h| (json_bytes(&h[0]).expect("header key"), json_bytes(&h[1])))
                .collect(),
            timestamp: v["timestamp"].as_i64(),
            committed: true,
        })
        .collect()
}

/// Checks that `printed` holds exactly `expected`, with each partition in offset order.
pub fn assert_same_records(printed: &[Produced], expected: &[Produced]) {
    let mut partitions: Vec<i32> = expected.iter().map(|r| r.partition).collect();
    partitions.extend(printed.iter().map(|r| r.partition));
    partitions.sort_unstable();
    partitions.dedup();
    for partition in partitions {
        let got: Vec<_> = printed
            .iter()
            .filter(|r| r.partition == partition)
            .map(Produced::content)
            .collect();
        let want: Vec<_> = expected
            .iter()
            .filter(|r| r.partition == partition)
            .map(Produced::content)
            .collect();
        assert_eq!(
            got.len(),
            want.len(),
            "record count of partition {partition}"
        );
        for (index, (got, want)) in got.iter().zip(&want).enumerate() {
            assert_eq!(got, want, "partition {partition}, record #{index}");
        }
    }
}

/// One record for the python producer.
#[derive(Clone, Debug)]
pub struct PlannedRecord {
    /// Partition.
    pub partition: i32,
    /// Key.
    pub key: Option<Vec<u8>>,
    /// Value.
    pub value: Option<Vec<u8>>,
    /// Headers (keys must be UTF-8: the python client takes `str` keys).
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// Create time, when set explicitly.
    pub timestamp: Option<i64>,
}

/// What the python producer should do.
#[derive(Clone, Debug, Default)]
pub struct ProducePlan {
    /// Topic.
    pub topic: String,
    /// `none`, `gzip`, `snappy`, `lz4` or `zstd`.
    pub compression: String,
    /// Transactional id (transactions on), or plain idempotent producing.
    pub transactional_id: Option<String>,
    /// Steps in order: records and, for a transactional producer, whether to commit them.
    pub steps: Vec<(Option<bool>, Vec<PlannedRecord>)>,
}

impl ProducePlan {
    fn to_json(&self, bootstrap: &str) -> String {
        let bytes = |b: &Option<Vec<u8>>| match b {
            Some(b) => serde_json::Value::String(hex(b)),
            None => serde_json::Value::Null,
        };
        let steps: Vec<serde_json::Value> = self
            .steps
            .iter()
            .map(|(commit, records)| {
                serde_json::json!({
                    "commit": commit,
                    "records": records.iter().map(|r| serde_json::json!({
                        "partition": r.partition,
                        "key": bytes(&r.key),
                        "value": bytes(&r.value),
                        "headers": r.headers.iter().map(|(k, v)| serde_json::json!([hex(k), bytes(v)])).collect::<Vec<_>>(),
                        "timestamp": r.timestamp,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        serde_json::json!({
            "bootstrap": bootstrap,
            "topic": self.topic,
            "compression": self.compression,
            "transactional_id": self.transactional_id,
            "steps": steps,
        })
        .to_string()
    }
}

/// A varied record: null and binary keys/values, duplicate and null headers.
pub fn varied_record(i: usize, partitions: i32) -> PlannedRecord {
    let key = match i % 7 {
        0 => None,
        1 => Some(vec![0xff, 0x00, i as u8]),
        _ => Some(format!("key-{i}").into_bytes()),
    };
    let value = match i % 11 {
        0 => None,
        1 => Some(Vec::new()),
        2 => Some(vec![0x80; 3 + i % 5]),
        _ => Some(format!("value-{i}-{}", "x".repeat(i % 97)).into_bytes()),
    };
    let headers = match i % 4 {
        0 => Vec::new(),
        1 => vec![(b"trace".to_vec(), Some(format!("t{i}").into_bytes()))],
        2 => vec![
            (b"dup".to_vec(), Some(b"a".to_vec())),
            (b"dup".to_vec(), Some(b"b".to_vec())),
            (b"nil".to_vec(), None),
        ],
        _ => vec![(
            "bin\u{e9}".as_bytes().to_vec(),
            Some(vec![0, 0xfe, i as u8]),
        )],
    };
    PlannedRecord {
        partition: (i % partitions as usize) as i32,
        key,
        value,
        headers,
        timestamp: None,
    }
}

/// Reads a plan on stdin, produces it with confluent-kafka, prints one JSON line per
/// acknowledged record (hex bytes, partition, offset, whether its transaction committed).
const PYTHON_PRODUCER: &str = r#"
import json, sys, time
from confluent_kafka import Producer
plan = json.load(sys.stdin)
conf = {"bootstrap.servers": plan["bootstrap"], "compression.type": plan["compression"],
        "linger.ms": 20, "enable.idempotence": True, "acks": "all"}
if plan["transactional_id"]:
    conf["transactional.id"] = plan["transactional_id"]
p = Producer(conf)
if plan["transactional_id"]:
    p.init_transactions(30)
out = []
def unhex(h):
    return None if h is None else bytes.fromhex(h)
for step in plan["steps"]:
    acked = []
    def report(err, msg, r):
        if err is not None:
            sys.exit("delivery failed: %s" % err)
        acked.append((msg.partition(), msg.offset(), msg.timestamp()[1], r))
    txn = plan["transactional_id"] is not None and step["commit"] is not None
    if txn:
        p.begin_transaction()
    for r in step["records"]:
        headers = [(bytes.fromhex(k).decode("utf-8"), unhex(v)) for k, v in r["headers"]]
        kwargs = {"partition": r["partition"], "key": unhex(r["key"]), "value": unhex(r["value"]),
                  "headers": headers, "on_delivery": lambda err, msg, r=r: report(err, msg, r)}
        if r["timestamp"] is not None:
            kwargs["timestamp"] = r["timestamp"]
        p.produce(plan["topic"], **kwargs)
        p.poll(0)
    p.flush(60)
    if txn:
        if step["commit"]:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    committed = step["commit"] is not False
    for partition, offset, timestamp, r in acked:
        print(json.dumps({"partition": partition, "offset": offset, "key": r["key"],
            "value": r["value"], "headers": r["headers"], "timestamp": timestamp,
            "committed": committed}))
p.flush(30)
if plan["transactional_id"]:
    wait_for_markers(plan["bootstrap"], plan["topic"])
"#;

/// `count` plain records `value-<from + i>` keyed `key-<from + i>`, spread over `partitions`.
pub fn simple_records(from: usize, count: usize, partitions: i32) -> Vec<PlannedRecord> {
    (from..from + count)
        .map(|i| PlannedRecord {
            partition: (i % partitions as usize) as i32,
            key: Some(format!("key-{i}").into_bytes()),
            value: Some(format!("value-{i}").into_bytes()),
            headers: vec![(b"n".to_vec(), Some(i.to_string().into_bytes()))],
            timestamp: None,
        })
        .collect()
}

/// Waits for a child for at most `timeout`, killing it after that.
pub fn wait_with_timeout(
    child: &mut std::process::Child,
    timeout: std::time::Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A `krec consume -c TOTAL` held in the middle of a topic, so a test can inject a fault
/// (a broker restart, a leader change) while it runs: a small fetch buffer and a stdout pipe
/// that is read only after the first lines keep the consumer mid-partition (back-pressure).
pub struct HeldConsume {
    child: std::process::Child,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    lines: Vec<String>,
    err_path: PathBuf,
}

impl HeldConsume {
    /// Starts the consumer with `RUST_LOG=krec_client=info,krec_consumer=info` and reads its first `head` lines.
    pub fn start(bootstrap: &str, topic: &str, total: usize, head: usize) -> Self {
        Self::start_with(bootstrap, topic, total, head, &[])
    }

    /// Like [`HeldConsume::start`], with more `krec consume` arguments.
    pub fn start_with(
        bootstrap: &str,
        topic: &str,
        total: usize,
        head: usize,
        extra: &[&str],
    ) -> Self {
        use std::io::BufRead;
        let err_path =
            std::env::temp_dir().join(format!("krec-held-{topic}-{}.err", std::process::id()));
        let total = total.to_string();
        let mut args = vec![
            "-c",
            &total,
            "--buffer-bytes",
            "65536",
            "--partition-max-bytes",
            "16384",
            "--max-wait-ms",
            "100",
            // A record that never comes (one lost) ends the run instead of hanging the test.
            "--idle-timeout",
            "30s",
        ];
        args.extend_from_slice(extra);
        let mut child = krec_consume_command(bootstrap, topic, &args)
            .env("RUST_LOG", "krec_client=info,krec_consumer=info")
            .stdout(Stdio::piped())
            .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()))
            .spawn()
            .expect("start krec consume");
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut held = HeldConsume {
            child,
            stdout,
            lines: Vec::new(),
            err_path,
        };
        while held.lines.len() < head {
            let mut line = String::new();
            assert!(
                held.stdout.read_line(&mut line).unwrap() > 0,
                "krec stopped early"
            );
            held.lines.push(line);
        }
        held
    }

    /// Reads the rest, waits for a successful exit, and returns the printed records and the
    /// consumer's log.
    pub fn finish(mut self) -> (Vec<Produced>, String) {
        use std::io::BufRead;
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).unwrap() == 0 {
                break;
            }
            self.lines.push(line);
        }
        let status = wait_with_timeout(&mut self.child, std::time::Duration::from_secs(120));
        let stderr = std::fs::read_to_string(&self.err_path).unwrap_or_default();
        let _ = std::fs::remove_file(&self.err_path);
        assert!(
            status.is_some_and(|s| s.success()),
            "krec consume did not finish: {status:?}\n{stderr}"
        );
        (parse_json_lines(self.lines.concat().as_bytes()), stderr)
    }
}
