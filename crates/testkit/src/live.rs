//! The live brokers `scripts/test.sh` starts for the `broker` test binaries: their
//! environment, `scripts/kafka.sh`, unique names, and topics created and records produced
//! by a real client (confluent-kafka's Python producer, librdkafka underneath).
//!
//! ```no_run
//! use krec_testkit::live::{self, Record};
//!
//! let broker = live::broker(); // KREC_TEST_BOOTSTRAP, KREC_KAFKA_SH, KREC_KAFKA_NAME
//! let topic = live::unique_name("orders");
//! broker.create_topic(&topic, 2);
//! let acked = broker.produce(&topic, &[Record::new(0, "k", "v")]);
//! assert_eq!(acked[0].offset, 0);
//! ```
//!
//! Nothing here depends on a krec crate: every crate's broker tests can use it.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A broker of the suite, reached on a PLAINTEXT listener.
#[derive(Clone, Debug)]
pub struct LiveBroker {
    /// Bootstrap string (`127.0.0.1:PORT`).
    pub bootstrap: String,
    /// Absolute path of `scripts/kafka.sh`.
    pub kafka_sh: PathBuf,
    /// Its `kafka.sh` instance name.
    pub name: String,
}

/// The value of an environment variable test.sh sets, or a panic saying how to run.
pub fn required(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!(
            "{var} is not set: the broker tests need a running Kafka. Run them with \
             `bash scripts/test.sh`, or start one (`bash scripts/kafka.sh start --name tk`) \
             and set KREC_TEST_BOOTSTRAP, KREC_KAFKA_SH and KREC_KAFKA_NAME"
        )
    })
}

/// The suite's single-node broker.
pub fn broker() -> LiveBroker {
    LiveBroker {
        bootstrap: required("KREC_TEST_BOOTSTRAP"),
        kafka_sh: PathBuf::from(required("KREC_KAFKA_SH")),
        name: required("KREC_KAFKA_NAME"),
    }
}

/// The suite's three-node cluster (`KREC_TEST_CLUSTER_BOOTSTRAP`, `KREC_TEST_CLUSTER_NAME`).
pub fn cluster() -> LiveBroker {
    LiveBroker {
        bootstrap: required("KREC_TEST_CLUSTER_BOOTSTRAP"),
        kafka_sh: PathBuf::from(required("KREC_KAFKA_SH")),
        name: required("KREC_TEST_CLUSTER_NAME"),
    }
}

/// The secured broker's `secure.env` (listeners, certificate paths, users; see the header of
/// `scripts/kafka.sh`) and that broker on its PLAINTEXT listener, for topics and producers.
pub fn secure_broker() -> (LiveBroker, HashMap<String, String>) {
    let path = required("KREC_TEST_SECURE_ENV");
    let text = std::fs::read_to_string(&path).expect("read secure.env");
    let env: HashMap<String, String> = text
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let broker = LiveBroker {
        bootstrap: env["PLAINTEXT"].clone(),
        kafka_sh: PathBuf::from(required("KREC_KAFKA_SH")),
        name: required("KREC_TEST_SECURE_NAME"),
    };
    (broker, env)
}

/// A topic or group name no other test, test binary or earlier run uses.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{prefix}-{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A record to produce: text key, value and headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Partition.
    pub partition: i32,
    /// Key (`None`: a null key).
    pub key: Option<String>,
    /// Value (`None`: a null value, a tombstone).
    pub value: Option<String>,
    /// Headers in order.
    pub headers: Vec<(String, String)>,
}

impl Record {
    /// A record with a key and a value and no headers.
    pub fn new(partition: i32, key: &str, value: &str) -> Self {
        Self {
            partition,
            key: Some(key.to_owned()),
            value: Some(value.to_owned()),
            headers: Vec::new(),
        }
    }

    /// This record with one more header.
    pub fn header(mut self, key: &str, value: &str) -> Self {
        self.headers.push((key.to_owned(), value.to_owned()));
        self
    }
}

/// A produced record and the offset the broker gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acked {
    /// What was produced.
    pub record: Record,
    /// Its offset.
    pub offset: i64,
}

/// The Python function both suites' transactional producers end with (this crate's and the
/// CLI tests'): `wait_for_markers(bootstrap, topic)` returns once every partition's last
/// stable offset has reached its high watermark.
pub const WAIT_FOR_MARKERS_PY: &str = r#"
import sys, time
def wait_for_markers(bootstrap, topic):
    # A commit returns before the coordinator writes its markers; until it has, the last stable
    # offset lags the high watermark and read_committed readers stop short.
    from confluent_kafka import Consumer, TopicPartition
    ends = {}
    for level in ("read_committed", "read_uncommitted"):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "krec-test-markers",
                      "isolation.level": level})
        ends[level] = c
    partitions = ends["read_uncommitted"].list_topics(topic, timeout=10).topics[topic].partitions
    deadline = time.time() + 30
    for partition in partitions:
        tp = TopicPartition(topic, partition)
        while ends["read_committed"].get_watermark_offsets(tp, timeout=10)[1] \
                != ends["read_uncommitted"].get_watermark_offsets(tp, timeout=10)[1]:
            if time.time() > deadline:
                sys.exit("transaction markers of %s-%d not written after 30 s" % (topic, partition))
            time.sleep(0.05)
    for c in ends.values():
        c.close()
"#;

/// Creates topics and produces: one JSON request on stdin, one JSON line per acknowledged
/// record on stdout (`[index, offset]`, in the order of `records`).
const PYTHON: &str = r#"
import json, sys, time
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
req = json.load(sys.stdin)
conf = {"bootstrap.servers": req["bootstrap"]}
if req["op"] == "create":
    admin = AdminClient(conf)
    for f in admin.create_topics([NewTopic(req["topic"], req["partitions"], 1)],
                                 operation_timeout=30).values():
        f.result()
    deadline = time.time() + 30
    while True:
        t = admin.list_topics(req["topic"], timeout=10).topics.get(req["topic"])
        if t is not None and t.error is None and len(t.partitions) == req["partitions"] \
                and all(p.leader >= 0 for p in t.partitions.values()):
            break
        if time.time() > deadline:
            sys.exit("topic %s has no leaders after 30 s" % req["topic"])
        time.sleep(0.05)
    sys.exit(0)
conf.update({"linger.ms": 5, "enable.idempotence": True, "acks": "all"})
txn = req["transactional_id"]
if txn:
    conf["transactional.id"] = txn
p = Producer(conf)
if txn:
    p.init_transactions(30)
acked = {}
def report(err, msg, index):
    if err is not None:
        sys.exit("delivery failed: %s" % err)
    acked[index] = msg.offset()
index = 0
for step in req["steps"]:
    if txn:
        p.begin_transaction()
    for r in step["records"]:
        enc = lambda s: None if s is None else s.encode()
        p.produce(req["topic"], partition=r["partition"], key=enc(r["key"]), value=enc(r["value"]),
                  headers=[(k, v.encode()) for k, v in r["headers"]],
                  on_delivery=lambda err, msg, i=index: report(err, msg, i))
        index += 1
        p.poll(0)
    p.flush(60)
    if txn:
        if step["commit"]:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
p.flush(30)
if txn:
    wait_for_markers(req["bootstrap"], req["topic"])
for i in range(index):
    print(json.dumps([i, acked[i]]))
"#;

impl LiveBroker {
    /// Runs `kafka.sh COMMAND --name N ARGS...` and returns its stdout; panics on failure.
    pub fn kafka_sh(&self, command: &str, args: &[&str]) -> String {
        let output = Command::new("bash")
            .arg(&self.kafka_sh)
            .arg(command)
            .args(["--name", &self.name])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run kafka.sh");
        assert!(
            output.status.success(),
            "kafka.sh {command} {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Runs one of Kafka's own Java tools (`kafka.sh tool CLASS ARGS...`; the word
    /// `{bootstrap}` in ARGS is replaced by the bootstrap string) and returns its stdout.
    pub fn tool(&self, class: &str, args: &[&str]) -> String {
        let mut all = vec![class];
        all.extend_from_slice(args);
        self.kafka_sh("tool", &all)
    }

    /// The committed offsets of `group` for `topic`, by partition, as Kafka's
    /// ConsumerGroupCommand describes them (`None`: the partition has no commit). Partitions
    /// the group knows nothing of are left out.
    pub fn committed_offsets(&self, group: &str, topic: &str) -> HashMap<i32, Option<i64>> {
        let text = self.tool(
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            &[
                "--bootstrap-server",
                "{bootstrap}",
                "--describe",
                "--group",
                group,
            ],
        );
        // GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
        text.lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>())
            .filter(|columns| columns.len() >= 4 && columns[0] == group && columns[1] == topic)
            .map(|columns| {
                let partition = columns[2].parse().expect("a partition number");
                (partition, columns[3].parse().ok())
            })
            .collect()
    }

    /// Creates `topic` with `partitions` partitions and waits until the broker's metadata
    /// shows a leader for each.
    pub fn create_topic(&self, topic: &str, partitions: u32) {
        let request = format!(
            r#"{{"op":"create","bootstrap":{},"topic":{},"partitions":{partitions}}}"#,
            json_string(&self.bootstrap),
            json_string(topic)
        );
        self.python(&request);
    }

    /// Produces `records` with an idempotent producer (acks=all) and returns them with their
    /// offsets, in the same order.
    pub fn produce(&self, topic: &str, records: &[Record]) -> Vec<Acked> {
        self.produce_transactions(topic, None, &[(true, records.to_vec())])
    }

    /// Produces `steps` in order, each as one transaction of `transactional_id` that is
    /// committed (`true`) or aborted (`false`); without an id, plainly. Returns every record
    /// with its offset, in order.
    pub fn produce_transactions(
        &self,
        topic: &str,
        transactional_id: Option<&str>,
        steps: &[(bool, Vec<Record>)],
    ) -> Vec<Acked> {
        let optional = |text: &Option<String>| text.as_deref().map_or("null".into(), json_string);
        let steps_json: Vec<String> = steps
            .iter()
            .map(|(commit, records)| {
                let records: Vec<String> = records
                    .iter()
                    .map(|r| {
                        let headers: Vec<String> = r
                            .headers
                            .iter()
                            .map(|(k, v)| format!("[{},{}]", json_string(k), json_string(v)))
                            .collect();
                        format!(
                            r#"{{"partition":{},"key":{},"value":{},"headers":[{}]}}"#,
                            r.partition,
                            optional(&r.key),
                            optional(&r.value),
                            headers.join(",")
                        )
                    })
                    .collect();
                format!(r#"{{"commit":{commit},"records":[{}]}}"#, records.join(","))
            })
            .collect();
        let request = format!(
            r#"{{"op":"produce","bootstrap":{},"topic":{},"transactional_id":{},"steps":[{}]}}"#,
            json_string(&self.bootstrap),
            json_string(topic),
            transactional_id.map_or("null".into(), json_string),
            steps_json.join(",")
        );
        let offsets: Vec<i64> = self
            .python(&request)
            .lines()
            .map(|line| {
                let (_, offset) = line
                    .trim_matches(|c| c == '[' || c == ']')
                    .split_once(',')
                    .expect("[index, offset]");
                offset.trim().parse().expect("an offset")
            })
            .collect();
        let records: Vec<Record> = steps.iter().flat_map(|(_, r)| r.clone()).collect();
        assert_eq!(offsets.len(), records.len(), "one offset per record");
        records
            .into_iter()
            .zip(offsets)
            .map(|(record, offset)| Acked { record, offset })
            .collect()
    }

    fn python(&self, request: &str) -> String {
        run_python(PYTHON, request)
    }

    /// Runs `kafka.sh tool ARGS...` (a Java tool's class, then its arguments, as in
    /// [`LiveBroker::tool`]) with `input` on its stdin, and returns its stdout.
    pub fn tool_with_input(&self, args: &[&str], input: &[u8]) -> String {
        let mut command = Command::new("bash");
        command
            .arg(&self.kafka_sh)
            .arg("tool")
            .args(["--name", &self.name])
            .args(args);
        let what = format!("kafka.sh tool {args:?}");
        output_with_input(command, input, &what)
    }
}

/// Runs the Python `script` (with [`WAIT_FOR_MARKERS_PY`] defined before it) with `input` on
/// its stdin, and returns its stdout; panics when it fails.
pub fn run_python(script: &str, input: &str) -> String {
    let mut command = Command::new("/usr/bin/python3");
    command.args(["-c", &[WAIT_FOR_MARKERS_PY, script].concat()]);
    output_with_input(
        command,
        input.as_bytes(),
        "python3 (python3-confluent-kafka: scripts/install-deps.sh)",
    )
}

/// Runs `command` with `input` on its stdin and returns its stdout; panics, naming `what`,
/// when it cannot start or fails.
fn output_with_input(mut command: Command, input: &[u8], what: &str) -> String {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("run {what}: {error}"));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .unwrap_or_else(|error| panic!("write the input of {what}: {error}"));
    let output = child.wait_with_output().expect("wait for the child");
    assert!(
        output.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `text` as a JSON string.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
