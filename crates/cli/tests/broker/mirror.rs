//! `krec mirror` against the real broker: topics copied to prefixed topics of the same
//! cluster (the target is just another cluster to the mirror), written by librdkafka in every
//! codec with an aborted transaction, read back by krec and kcat and compared record by
//! record; restarts, `kill -9` at several moments, and a target that lost its positions.
//! Consumer groups' offsets translated by the library's sink, read back by kcat; the
//! source's topic ids.

use std::process::{Command, Output, Stdio};

use base64::Engine;
use std::time::Duration;

use krec_client::TopicPartition;
use krec_consumer::{ConsumerConfig, GroupConfig, TopicSubscription};
use krec_copy::{
    BatchSource, ClusterSink, ClusterSource, CopySnapshot, Pipeline, PipelineSettings,
};
use krec_producer::ProducerConfig;

use crate::support::broker::{
    broker, simple_records, unique_topic, varied_record, Broker, ProducePlan, Produced,
};
use crate::support::group::{wait_stable, Member};

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

pub(crate) fn mirror_command(broker: &Broker, topics: &str, name: &str, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
    command
        .args(["mirror", "-b", &broker.bootstrap, "-t", topics])
        .args([
            "--to",
            &broker.bootstrap,
            "--name",
            name,
            "--topic-prefix",
            "copy-",
        ])
        .args(extra)
        .stdin(Stdio::null());
    command
}

pub(crate) fn mirror_to_end(broker: &Broker, topics: &str, name: &str) -> Output {
    let output = mirror_command(broker, topics, name, &["-e"])
        .output()
        .expect("run krec mirror");
    assert!(
        output.status.success(),
        "krec mirror failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Every committed record of `topic`, read committed, per partition in order.
pub(crate) fn committed(broker: &Broker, topic: &str) -> Vec<Produced> {
    let args = ["-e", "-J", "--isolation", "read_committed"];
    broker.consume_records(topic, &args)
}

/// Source and copy hold the same records (key, value, headers, timestamp) in the same order
/// in each partition; offsets may differ.
pub(crate) fn assert_copied(source: &[Produced], copy: &[Produced]) {
    let strip = |records: &[Produced], partition: i32| -> Vec<Produced> {
        (records.iter())
            .filter(|r| r.partition == partition)
            .map(|r| Produced {
                offset: 0,
                ..r.clone()
            })
            .collect()
    };
    let partitions = source
        .iter()
        .chain(copy)
        .map(|r| r.partition)
        .max()
        .unwrap_or(0);
    for partition in 0..=partitions {
        let (want, got) = (strip(source, partition), strip(copy, partition));
        assert_eq!(got.len(), want.len(), "records in partition {partition}");
        for (index, (got, want)) in got.iter().zip(&want).enumerate() {
            assert_eq!(got, want, "partition {partition}, record #{index}");
        }
    }
}

pub(crate) fn summary_count(stderr: &str, what: &str) -> u64 {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.contains(what))
        .unwrap_or("");
    let before = line.split(what).next().unwrap_or("");
    let number = before
        .split([' ', ',', ';', '('])
        .rev()
        .find(|w| !w.is_empty());
    number
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{what} in {stderr}"))
}

#[test]
fn every_codec_and_an_aborted_transaction_copied_as_they_are() {
    let broker = broker();
    let mut topics = Vec::new();
    for codec in CODECS {
        let topic = unique_topic(&format!("mirror-{codec}"));
        broker.create_topic(&topic, 3, 1);
        let records = |range: std::ops::Range<usize>| -> Vec<_> {
            range.map(|i| varied_record(i, 3)).collect()
        };
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: codec.to_owned(),
            transactional_id: Some(format!("{topic}-tx")),
            steps: vec![
                (Some(true), records(0..60)),
                (Some(false), records(60..90)),
                (Some(true), records(90..150)),
            ],
        });
        topics.push(topic);
    }
    let name = unique_topic("mirror-codecs");
    let output = mirror_to_end(&broker, &topics.join(","), &name);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(summary_count(&stderr, "records, "), 5 * 120, "{stderr}");
    assert_eq!(
        summary_count(&stderr, "re-encoded"),
        0,
        "forwarded as they are: {stderr}"
    );
    for topic in &topics {
        let copy = format!("copy-{topic}");
        let source = committed(&broker, topic);
        assert_eq!(source.len(), 120, "{topic}");
        assert_copied(&source, &committed(&broker, &copy));
        // A real reader of every codec: kcat's values equal the source's.
        let kcat = Command::new("kcat")
            .args(["-C", "-b", &broker.bootstrap, "-t", &copy, "-e", "-q"])
            .args(["-X", "isolation.level=read_committed", "-f", "%p %k %s\\n"])
            .output()
            .expect("run kcat");
        assert!(
            kcat.status.success(),
            "kcat: {}",
            String::from_utf8_lossy(&kcat.stderr)
        );
        let lines = String::from_utf8_lossy(&kcat.stdout).lines().count();
        assert!(lines >= 120, "kcat read {lines} lines of {copy}");
    }
}

#[test]
fn a_restart_copies_only_what_is_new() {
    let broker = broker();
    let topic = unique_topic("mirror-restart");
    broker.create_topic(&topic, 2, 1);
    let produce = |from: usize| {
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: "lz4".to_owned(),
            steps: vec![(None, simple_records(from, 200, 2))],
            ..ProducePlan::default()
        })
    };
    produce(0);
    let name = unique_topic("mirror-restart");
    let first = mirror_to_end(&broker, &topic, &name);
    assert_eq!(
        summary_count(&String::from_utf8_lossy(&first.stderr), "records, "),
        200
    );
    let again = mirror_to_end(&broker, &topic, &name);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(
        summary_count(&stderr, "records, "),
        0,
        "nothing new: {stderr}"
    );
    produce(200);
    let more = mirror_to_end(&broker, &topic, &name);
    assert_eq!(
        summary_count(&String::from_utf8_lossy(&more.stderr), "records, "),
        200
    );
    assert_copied(
        &committed(&broker, &topic),
        &committed(&broker, &format!("copy-{topic}")),
    );
}

#[test]
fn kill_9_at_any_moment_neither_loses_nor_repeats() {
    let broker = broker();
    let topic = unique_topic("mirror-kill");
    broker.create_topic(&topic, 4, 1);
    for round in 0..4 {
        broker.produce_python(&ProducePlan {
            topic: topic.clone(),
            compression: if round % 2 == 0 { "zstd" } else { "none" }.to_owned(),
            steps: vec![(None, simple_records(round * 5000, 5000, 4))],
            ..ProducePlan::default()
        });
    }
    let name = unique_topic("mirror-kill");
    // Throttled so that each kill lands while batches and transactions are under way.
    let slow = ["--max-bytes-per-second", "100000"];
    // SIGTERM mid-copy: the open transaction is committed, exit 0, and what the summary
    // counts is what the target holds.
    let child = mirror_command(&broker, &topic, &name, &slow)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start krec mirror");
    std::thread::sleep(Duration::from_millis(1200));
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill")
        .success());
    let output = child.wait_with_output().expect("wait for krec mirror");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let copied = summary_count(&stderr, "records, ");
    assert!(copied > 0 && copied < 20_000, "stopped mid-copy: {stderr}");
    let copy = format!("copy-{topic}");
    assert_eq!(committed(&broker, &copy).len() as u64, copied, "{stderr}");
    for pause in [300, 900, 1700] {
        let mut child = mirror_command(&broker, &topic, &name, &slow)
            .stderr(Stdio::null())
            .spawn()
            .expect("start krec mirror");
        std::thread::sleep(Duration::from_millis(pause));
        child.kill().expect("kill -9");
        child.wait().expect("reap");
    }
    mirror_to_end(&broker, &topic, &name);
    let source = committed(&broker, &topic);
    assert_eq!(source.len(), 20_000);
    assert_copied(&source, &committed(&broker, &copy));
}

#[test]
fn a_target_partition_with_records_but_no_position_is_refused() {
    let broker = broker();
    let topic = unique_topic("mirror-lost");
    broker.create_topic(&topic, 1, 1);
    broker.create_topic(&format!("copy-{topic}"), 1, 1);
    let plan = |topic: &str| ProducePlan {
        topic: topic.to_owned(),
        compression: "none".to_owned(),
        steps: vec![(None, simple_records(0, 10, 1))],
        ..ProducePlan::default()
    };
    broker.produce_python(&plan(&topic));
    broker.produce_python(&plan(&format!("copy-{topic}")));
    let output = mirror_command(&broker, &topic, &unique_topic("mirror-lost"), &["-e"])
        .output()
        .expect("run krec mirror");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("holds 10 offsets of records but group"),
        "{stderr}"
    );
    assert_eq!(
        committed(&broker, &format!("copy-{topic}")).len(),
        10,
        "nothing written"
    );
}

#[test]
fn metrics_count_the_copy_and_sigterm_commits_and_exits_0() {
    use crate::support::metrics::{free_port, get, promtool_check, samples};
    let broker = broker();
    let topic = unique_topic("mirror-metrics");
    broker.create_topic(&topic, 2, 1);
    broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "zstd".to_owned(),
        steps: vec![(None, simple_records(0, 300, 2))],
        ..ProducePlan::default()
    });
    let address = format!("127.0.0.1:{}", free_port());
    let name = unique_topic("mirror-metrics");
    let child = mirror_command(&broker, &topic, &name, &["--metrics", &address])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start krec mirror");
    let url = format!("http://{address}/metrics");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let text = loop {
        let scraped = get(&url, &[]).map(|(_, body)| body).unwrap_or_default();
        let copied = samples(&scraped, "krec_mirror_records_total");
        if copied.first().is_some_and(|&(_, n)| n >= 300.0) {
            break scraped;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never 300 copied: {scraped}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let (valid, report) = promtool_check(&text);
    assert!(valid, "promtool: {report}\n{text}");
    assert_eq!(samples(&text, "krec_mirror_records_total"), [("", 300.0)]);
    let lag = samples(&text, "krec_mirror_lag");
    assert_eq!(lag.len(), 2, "{text}");
    assert!(lag.iter().all(|&(_, lag)| lag == 0.0), "{text}");
    // SIGTERM: the open transaction (none left here) is committed, exit 0.
    let pid = child.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let output = child.wait_with_output().expect("wait for krec mirror");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(summary_count(&stderr, "records, "), 300, "{stderr}");
    assert_copied(
        &committed(&broker, &topic),
        &committed(&broker, &format!("copy-{topic}")),
    );
}

/// The offset `group` committed for partition 0 of `topic`, as `krec groups` reads it; none
/// for a group that does not exist.
fn group_offset(broker: &Broker, group: &str, topic: &str) -> Option<i64> {
    let output = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(["groups", "-b", &broker.bootstrap, group, "-J"])
        .stdin(Stdio::null())
        .output()
        .expect("run krec groups");
    if String::from_utf8_lossy(&output.stderr).contains("GROUP_ID_NOT_FOUND") {
        return None;
    }
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "krec groups {group}: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let partitions = doc["partitions"].as_array()?;
    let row = partitions.iter().find(|p| p["topic"] == topic)?;
    row["committed_offset"].as_i64()
}

/// The first committed record kcat reads in partition 0 of `topic` from `offset`: its
/// offset and value.
fn first_record_from(broker: &Broker, topic: &str, offset: i64) -> Option<(i64, String)> {
    let output = Command::new("kcat")
        .args(["-C", "-b", &broker.bootstrap, "-t", topic, "-p", "0"])
        .args(["-o", &offset.to_string(), "-c", "1", "-e", "-q"])
        .args(["-X", "isolation.level=read_committed", "-f", "%o %s\\n"])
        .stdin(Stdio::null())
        .output()
        .expect("run kcat");
    assert!(output.status.success(), "kcat: {output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    let (at, value) = text.lines().next()?.split_once(' ')?;
    Some((at.parse().expect("an offset"), value.to_owned()))
}

fn runtime() -> tokio::runtime::Runtime {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(2).enable_all();
    builder.build().expect("a runtime")
}

/// Copies `topic` to `copy-TOPIC` with the library's pipeline, the sink watching `offsets`
/// (group, source partition, source offset).
fn copy_translating(
    broker: &Broker,
    topic: &str,
    offsets: Vec<(String, TopicPartition, i64)>,
) -> Result<CopySnapshot, krec_copy::Error> {
    let bootstrap = vec![broker.bootstrap.clone()];
    let name = unique_topic("hooks-translate");
    runtime().block_on(async {
        let subscription = TopicSubscription::parse([topic]).expect("a topic name");
        let mut member = ConsumerConfig::new(bootstrap.clone());
        member.group = GroupConfig {
            instance_id: Some("only".to_owned()),
            ..GroupConfig::new(name, Vec::new())
        };
        let target = ProducerConfig::new(bootstrap.clone());
        let mut sink = ClusterSink::connect(target, member, &subscription, "copy-").await?;
        sink.watch_group_offsets(offsets);
        let source = ClusterSource::connect(ConsumerConfig::new(bootstrap), subscription, true);
        let pipeline = Pipeline::new(source.await?, sink, PipelineSettings::default());
        pipeline.run(std::future::pending()).await
    })
}

#[test]
fn group_offsets_land_on_the_same_records_across_an_aborted_transaction() {
    let broker = broker();
    let topic = unique_topic("hooks-group-offsets");
    broker.create_topic(&topic, 1, 1);
    // value-0..4 committed, value-5..9 aborted, value-10..14 committed, each with its marker.
    let produced = broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "none".to_owned(),
        transactional_id: Some(unique_topic("hooks-group-offsets")),
        steps: vec![
            (Some(true), simple_records(0, 5, 1)),
            (Some(false), simple_records(5, 5, 1)),
            (Some(true), simple_records(10, 5, 1)),
        ],
    });
    let source_offset = |i: usize| -> i64 {
        let value = format!("value-{i}").into_bytes();
        let record = produced.iter().find(|r| r.value.as_ref() == Some(&value));
        record.expect("produced").offset
    };
    // The log's end: past value-14 and its transaction's marker.
    let end = source_offset(14) + 2;
    let cases = [
        ("start", source_offset(0), Some("value-0")),
        ("inside", source_offset(12), Some("value-12")),
        ("aborted", source_offset(7), Some("value-10")),
        ("end", end, None),
    ];
    let group = |case: &str| format!("{topic}-{case}");
    let source = TopicPartition::new(topic.as_str(), 0);
    // Past anything the copy reaches: never translated.
    let beyond = (group("beyond"), source.clone(), end + 5);
    let watched = (cases.iter())
        .map(|&(case, offset, _)| (group(case), source.clone(), offset))
        .chain([beyond])
        .collect();
    let copied = copy_translating(&broker, &topic, watched).expect("copied");
    assert_eq!((copied.records, copied.lost_records), (10, 0), "{copied:?}");

    let copy = format!("copy-{topic}");
    let copied = committed(&broker, &copy);
    let last = copied.last().expect("records copied").offset;
    for (case, _, value) in cases {
        let offset = group_offset(&broker, &group(case), &copy);
        let offset = offset.unwrap_or_else(|| panic!("{case}: no committed offset"));
        let read = first_record_from(&broker, &copy, offset);
        match value {
            Some(value) => {
                let target = copied
                    .iter()
                    .find(|r| r.value.as_deref() == Some(value.as_bytes()));
                let target = target.expect("copied").offset;
                assert_eq!(offset, target, "{case}");
                assert_eq!(read, Some((target, value.to_owned())), "{case}");
            }
            None => {
                assert_eq!(offset, last + 1, "{case}: right after the last record");
                assert_eq!(read, None, "{case}");
            }
        }
    }
    assert_eq!(group_offset(&broker, &group("beyond"), &copy), None);
}

#[test]
fn a_group_with_active_members_is_refused_by_name() {
    let broker = broker();
    let topic = unique_topic("hooks-busy-group");
    broker.create_topic(&topic, 1, 1);
    let copy = format!("copy-{topic}");
    broker.create_topic(&copy, 1, 1);
    broker.produce_python(&ProducePlan {
        topic: topic.clone(),
        compression: "none".to_owned(),
        steps: vec![(None, simple_records(0, 5, 1))],
        ..ProducePlan::default()
    });
    let group = unique_topic("hooks-busy-group");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut member = Member::start(&broker.bootstrap, &copy, &group, dir.path(), "m0", &[]);
    wait_stable(&[&member], 1, Duration::from_secs(60));
    let watched = vec![(group.clone(), TopicPartition::new(topic.as_str(), 0), 2)];
    let refused = copy_translating(&broker, &topic, watched);
    member.stop();
    let error = refused
        .expect_err("a group with a member is refused")
        .to_string();
    assert!(error.contains(&group), "{error}");
    assert!(error.contains("stop its consumers"), "{error}");
}

#[test]
fn the_source_gives_each_topic_its_id() {
    let broker = broker();
    let topic = unique_topic("hooks-topic-id");
    broker.create_topic(&topic, 2, 1);
    let topics = runtime().block_on(async {
        let subscription = TopicSubscription::parse([topic.as_str()]).expect("a topic name");
        let config = ConsumerConfig::new(vec![broker.bootstrap.clone()]);
        let mut source = ClusterSource::connect(config, subscription, true).await?;
        source.topics().await
    });
    let topics = topics.expect("the source's topics");
    // krec metadata prints the id as Kafka's tools do: URL-safe base64 of its 16 bytes.
    let output = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(["metadata", "-b", &broker.bootstrap, "-J", "-t", &topic])
        .stdin(Stdio::null())
        .output()
        .expect("run krec metadata");
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let printed = doc["topics"][0]["id"].as_str().expect("an id");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(printed)
        .expect("base64");
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let (a, rest) = hex.split_at(8);
    let (b, rest) = rest.split_at(4);
    let (c, rest) = rest.split_at(4);
    let (d, e) = rest.split_at(4);
    let uuid = format!("{a}-{b}-{c}-{d}-{e}");
    let found: Vec<(&str, Option<&str>, i32)> = (topics.iter())
        .map(|t| (t.name.as_str(), t.id.as_deref(), t.partitions))
        .collect();
    assert_eq!(found, [(topic.as_str(), Some(uuid.as_str()), 2)]);
}
