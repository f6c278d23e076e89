//! The programs of `examples/` that talk to a broker, run against the suite's brokers with
//! topics of known records, their output checked line for line.
//!
//! They are the root package's examples: this test builds nothing, it runs the executables
//! test.sh's build step (`cargo test --workspace --all-targets --no-run`) left in
//! `target/debug/examples/` next to this binary's `target/debug/deps/`. By hand, build them
//! first: `cargo build --examples`. The measuring programs are under `benches/` and left to
//! the bench scripts that run them (`embed_fast.rs`, `partition_memory.rs`).

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use crate::support::{live, numbered, LiveBroker, Record};

/// `target/debug/examples/NAME`, next to this test's `target/debug/deps/`.
fn example(name: &str) -> Command {
    let exe = std::env::current_exe().expect("the test's path");
    let path: PathBuf = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/debug/deps")
        .join("examples")
        .join(name);
    assert!(
        path.is_file(),
        "{} is missing: build the examples first (`cargo build --examples`; scripts/test.sh \
         builds them)",
        path.display()
    );
    let mut command = Command::new(path);
    command.stdin(Stdio::null());
    command
}

/// Runs `command`, asserting success; returns its output.
fn succeed(command: &mut Command) -> Output {
    let output = command.output().expect("run the example");
    assert!(
        output.status.success(),
        "{command:?} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn sorted_lines(stdout: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// A topic of 2 partitions holding 10 records, half of them with a `trace` header.
fn traced_topic(broker: &LiveBroker, prefix: &str) -> (String, Vec<live::Acked>) {
    let topic = live::unique_name(prefix);
    broker.create_topic(&topic, 2);
    let records: Vec<Record> = numbered(10, 2)
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            if i % 2 == 0 {
                r.header("trace", &format!("t{i}"))
            } else {
                r
            }
        })
        .collect();
    let acked = broker.produce(&topic, &records);
    (topic, acked)
}

/// examples/consume.rs prints every record (topic/partition, offset, value, trace header)
/// and the count; with PARTITION:OFFSET, that partition starts there.
#[test]
fn consume_example_prints_every_record() {
    let broker = live::broker();
    let (topic, acked) = traced_topic(&broker, "kc-ex-consume");
    let line = |a: &live::Acked| {
        let trace = a
            .record
            .headers
            .iter()
            .find(|(k, _)| k == "trace")
            .map(|(_, v)| v.clone());
        format!(
            "{topic}/{} offset {} value {:?} trace {:?}",
            a.record.partition, a.offset, a.record.value, trace
        )
    };
    let mut want: Vec<String> = acked.iter().map(line).collect();
    want.sort();

    let output = succeed(example("consume").args([&broker.bootstrap, &topic]));
    assert_eq!(sorted_lines(&output.stdout), want);
    assert_eq!(String::from_utf8_lossy(&output.stderr), "10 records\n");

    let output = succeed(example("consume").args([&broker.bootstrap, &topic, "1:3"]));
    let mut want: Vec<String> = acked
        .iter()
        .filter(|a| a.record.partition == 0 || a.offset >= 3)
        .map(line)
        .collect();
    want.sort();
    assert_eq!(want.len(), 5 + 2);
    assert_eq!(sorted_lines(&output.stdout), want);
    assert_eq!(String::from_utf8_lossy(&output.stderr), "7 records\n");
}

/// examples/group.rs with COUNT: joins, prints every record once, commits and exits; Kafka's
/// ConsumerGroupCommand then shows the group's commits at each partition's end.
#[test]
fn group_example_prints_count_records_and_commits() {
    let broker = live::broker();
    let (topic, acked) = traced_topic(&broker, "kc-ex-group");
    let group = live::unique_name("kc-ex-group");
    let mut want: Vec<String> = acked
        .iter()
        .map(|a| {
            format!(
                "{topic}/{} {}: {:?}",
                a.record.partition, a.offset, a.record.value
            )
        })
        .collect();
    want.sort();

    let output = succeed(example("group").args([&broker.bootstrap, &group, &topic, "10"]));
    assert_eq!(sorted_lines(&output.stdout), want);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("assigned: "), "{stderr}");
    let committed = broker.committed_offsets(&group, &topic);
    assert_eq!(
        committed,
        [(0, Some(5)), (1, Some(5))].into_iter().collect(),
        "the example's commits"
    );
}

/// examples/share.rs with COUNT in a share group set to start at the earliest offset: prints
/// every record once at delivery 1 and accepts them; a second run of the same group, with
/// two more records produced, gets only those: the first run's were accepted, not released.
#[test]
fn share_example_prints_count_records_and_accepts_them() {
    let broker = live::broker();
    let (topic, acked) = traced_topic(&broker, "kc-ex-share");
    let group = live::unique_name("kc-ex-share");
    broker.tool(
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--bootstrap-server",
            "{bootstrap}",
            "--alter",
            "--entity-type",
            "groups",
            "--entity-name",
            &group,
            "--add-config",
            "share.auto.offset.reset=earliest",
        ],
    );
    let line = |a: &live::Acked| {
        format!(
            "{topic}/{} {} (delivery 1): {:?}",
            a.record.partition, a.offset, a.record.value
        )
    };
    let mut want: Vec<String> = acked.iter().map(line).collect();
    want.sort();
    let output = succeed(example("share").args([&broker.bootstrap, &group, &topic, "10"]));
    assert_eq!(sorted_lines(&output.stdout), want);

    let more = broker.produce(
        &topic,
        &[Record::new(0, "k", "late-0"), Record::new(1, "k", "late-1")],
    );
    let mut want: Vec<String> = more.iter().map(line).collect();
    want.sort();
    let output = succeed(example("share").args([&broker.bootstrap, &group, &topic, "2"]));
    assert_eq!(
        sorted_lines(&output.stdout),
        want,
        "only the records produced since"
    );
}

/// examples/secure.rs on the secured broker's SASL_SSL listener as alice (SCRAM-SHA-512),
/// with typed settings and from a properties file; as bob, who has no ACL, it fails.
#[test]
fn secure_example_reads_over_sasl_ssl() {
    let (broker, env) = live::secure_broker();
    // Alice may read topics of the ACL prefix only.
    let topic = live::unique_name(&format!("{}kc-ex-secure", env["ACL_PREFIX"]));
    broker.create_topic(&topic, 2);
    broker.produce(&topic, &numbered(7, 2));
    let listener = &env["SASL_SSL"];
    let ca = &env["CA_PEM"];

    let output = succeed(
        example("secure")
            .args([listener, &topic, &env["ALICE_USER"], ca])
            .env("KREC_PASSWORD", &env["ALICE_PASSWORD"]),
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "7 records\n");

    let dir = std::env::temp_dir().join(live::unique_name("kc-ex-secure"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let properties = dir.join("client.properties");
    std::fs::write(
        &properties,
        format!(
            "bootstrap.servers={listener}\nsecurity.protocol=SASL_SSL\n\
             sasl.mechanism=SCRAM-SHA-512\nsasl.username={}\nsasl.password={}\n\
             ssl.ca.location={ca}\n",
            env["ALICE_USER"], env["ALICE_PASSWORD"]
        ),
    )
    .expect("write client.properties");
    let output = succeed(example("secure").args([
        "--properties",
        properties.to_str().expect("UTF-8 path"),
        &topic,
    ]));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "7 records\n");

    let output = example("secure")
        .args([listener, &topic, &env["BOB_USER"], ca])
        .env("KREC_PASSWORD", &env["BOB_PASSWORD"])
        .output()
        .expect("run the example");
    assert!(!output.status.success(), "bob read the topic");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.to_lowercase().contains("authoriz"), "{stderr}");
}
