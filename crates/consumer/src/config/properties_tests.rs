use std::time::Duration;

use krec_client::sasl::Plain;
use krec_client::SecurityProtocol;

use super::*;
use crate::group::{Assignor, GroupProtocol};

fn config(pairs: &[(&str, &str)]) -> Result<ConsumerConfig, Error> {
    ConsumerConfig::from_properties(pairs.iter().copied())
}

fn error(pairs: &[(&str, &str)]) -> String {
    config(pairs).unwrap_err().to_string()
}

fn file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("client.properties");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn connection_keys_fill_the_typed_fields() {
    let config = config(&[
        ("metadata.broker.list", "a:1, b:2"),
        ("client.id", "billing"),
        ("client.rack", "rack-2"),
        ("request.timeout.ms", "2500"),
        ("topic.metadata.refresh.interval.ms", "1000"),
        ("fetch.sessions", "false"),
    ])
    .unwrap();
    assert_eq!(config.bootstrap, ["a:1", "b:2"]);
    assert_eq!(config.connection.client_id, "billing");
    assert_eq!(config.client_rack.as_deref(), Some("rack-2"));
    assert_eq!(
        config.connection.request_timeout,
        Duration::from_millis(2500)
    );
    assert_eq!(config.metadata_refresh, Duration::from_secs(1));
    assert!(!config.fetch_sessions);
    let later = config.with("metadata.max.age.ms", "2000").unwrap();
    assert_eq!(later.metadata_refresh, Duration::from_secs(2));
    assert_eq!(later.with("client.rack", "").unwrap().client_rack, None);
}

#[test]
fn fetch_keys_fill_the_typed_fields_and_the_frame_bound_follows() {
    let config = config(&[
        ("isolation.level", "read_committed"),
        ("auto.offset.reset", "latest"),
        ("fetch.max.bytes", "1048576"),
        ("max.partition.fetch.bytes", "65536"),
        ("fetch.min.bytes", "0"),
        ("fetch.max.wait.ms", "100"),
    ])
    .unwrap();
    assert!(config.read_committed);
    assert_eq!(config.offset_reset, OffsetReset::Latest);
    assert_eq!(config.group.start_without_commit, StartOffset::End);
    assert_eq!(config.max_bytes, 1 << 20);
    assert_eq!(config.connection.max_frame_bytes, (1 << 20) + (16 << 20));
    assert_eq!(config.partition_max_bytes, 65536);
    assert_eq!(config.min_bytes, 0);
    assert_eq!(config.max_wait, Duration::from_millis(100));
    let earliest = config.with("auto.offset.reset", "earliest").unwrap();
    assert_eq!(earliest.group.start_without_commit, StartOffset::Beginning);
    assert_eq!(earliest.offset_reset, OffsetReset::Earliest);
}

#[test]
fn group_keys_fill_the_group_config() {
    let config = config(&[
        ("group.id", "billing"),
        ("group.protocol", "CONSUMER"),
        ("group.instance.id", "member-1"),
        ("group.remote.assignor", "uniform"),
        (
            "partition.assignment.strategy",
            "roundrobin, org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
        ),
        ("session.timeout.ms", "10000"),
        ("heartbeat.interval.ms", "0"),
        ("auto.commit.interval.ms", "1000"),
        ("max.poll.interval.ms", "90000"),
    ])
    .unwrap();
    let group = &config.group;
    assert_eq!(group.group_id, "billing");
    assert_eq!(group.protocol, GroupProtocol::Consumer);
    assert_eq!(group.instance_id.as_deref(), Some("member-1"));
    assert_eq!(group.server_assignor.as_deref(), Some("uniform"));
    assert_eq!(
        group.assignors,
        [Assignor::RoundRobin, Assignor::CooperativeSticky]
    );
    assert_eq!(group.session_timeout, Duration::from_secs(10));
    assert_eq!(group.heartbeat_interval, Duration::from_millis(1));
    assert_eq!(group.commit_interval, Duration::from_secs(1));
    assert_eq!(group.rebalance_timeout, Duration::from_secs(90));
}

#[test]
fn defaults_set_no_group_and_no_brokers() {
    let config = config(&[]).unwrap();
    assert!(config.group.group_id.is_empty());
    let refused = config.check_bootstrap().unwrap_err().to_string();
    assert!(refused.contains("bootstrap.servers"), "{refused}");
}

#[test]
fn with_sets_the_key_it_is_given() {
    let config = ConsumerConfig::from_properties([("client.id", "a")])
        .unwrap()
        .with("bootstrap.servers", "127.0.0.1:9092")
        .unwrap()
        .with("group.id", "billing")
        .unwrap();
    assert_eq!(config.bootstrap, ["127.0.0.1:9092"]);
    assert_eq!(config.group.group_id, "billing");
    assert_eq!(config.connection.client_id, "a");
    let refused = config.with("fetch.magic", "1").unwrap_err().to_string();
    assert!(
        refused.contains("ConsumerConfig::with") && refused.contains("fetch.magic"),
        "{refused}"
    );
}

#[test]
fn bad_values_are_refused_naming_the_key() {
    let cases = [
        ("bootstrap.servers", "no-port", "HOST:PORT"),
        ("request.timeout.ms", "0", "positive"),
        ("request.timeout.ms", "soon", "milliseconds"),
        ("metadata.max.age.ms", "0", "positive"),
        ("metadata.max.age.ms", "soon", "milliseconds"),
        ("fetch.sessions", "off", "true or false"),
        ("isolation.level", "dirty", "read_committed"),
        ("auto.offset.reset", "none", "earliest or latest"),
        ("fetch.max.bytes", "0", "at least 1"),
        ("max.partition.fetch.bytes", "-1", "at least 1"),
        ("fetch.min.bytes", "x", "bytes"),
        ("group.protocol", "eager", "classic or consumer"),
        (
            "partition.assignment.strategy",
            "sticky",
            "cooperative-sticky",
        ),
        ("partition.assignment.strategy", " , ", "no assignor"),
        ("session.timeout.ms", "-5", "milliseconds"),
    ];
    for (key, value, says) in cases {
        let message = error(&[(key, value)]);
        assert!(
            message.starts_with(&format!(
                "ConsumerConfig::from_properties: property {key}: "
            )) && message.contains(says),
            "{key}={value}: {message}"
        );
    }
}

#[test]
fn an_unknown_key_is_named_with_its_file_and_line() {
    let (_dir, path) = file("client.id=a\n\nfetch.magic=1\n");
    let message = ConsumerConfig::from_file(&path).unwrap_err().to_string();
    assert!(message.contains("fetch.magic"), "{message}");
    assert!(
        message.contains(&format!("{}:3", path.display())),
        "{message}"
    );
}

#[test]
fn a_file_is_read_in_order_the_last_value_winning() {
    let (_dir, path) = file(
        "# comment\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=file-user\n\
         sasl.password=file-pass\nbootstrap.servers=b:9093\nacks=all\n",
    );
    let config = ConsumerConfig::from_file(&path)
        .unwrap()
        .with("sasl.username", "later-user")
        .unwrap();
    assert_eq!(config.bootstrap, ["b:9093"]);
    assert_eq!(
        config.connection.security.protocol,
        SecurityProtocol::SaslSsl
    );
    let sasl = config.connection.security.sasl.as_ref().unwrap();
    let plain = sasl.downcast_ref::<Plain>().expect("PLAIN");
    let (username, password) = (plain.username(), plain.password());
    assert_eq!(username, "later-user");
    assert_eq!(password.expose(), "file-pass");
}

#[test]
fn unreadable_files_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.properties");
    let message = ConsumerConfig::from_file(&missing).unwrap_err().to_string();
    assert!(message.contains("missing.properties"), "{message}");
    let (_dir, path) = file("client.id=a\nbad=\\uZZZZ\n");
    let message = ConsumerConfig::from_file(&path).unwrap_err().to_string();
    assert!(
        message.contains(&format!("{}:2", path.display())),
        "{message}"
    );
    let (_dir, big) = file(&"#".repeat((1 << 20) + 1));
    let message = ConsumerConfig::from_file(&big).unwrap_err().to_string();
    assert!(message.contains("larger than 1 MiB"), "{message}");
}

#[test]
fn secret_values_are_resolved_and_never_shown() {
    // A name no other test sets, read through ${env:NAME} as on the command line.
    std::env::set_var("KREC_CONSUMER_TEST_PASSWORD", "hunter2");
    let config = config(&[
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.username", "user"),
        ("sasl.password", "${env:KREC_CONSUMER_TEST_PASSWORD}"),
        ("schema.registry.basic.auth.user.info", "reg:s3cret"),
    ])
    .unwrap();
    let sasl = config.connection.security.sasl.as_ref().unwrap();
    let password = sasl.downcast_ref::<Plain>().expect("PLAIN").password();
    assert_eq!(password.expose(), "hunter2");
    let shown = format!("{config:?}");
    assert!(
        !shown.contains("hunter2") && !shown.contains("KREC_CONSUMER_TEST"),
        "{shown}"
    );
    assert!(!shown.contains("s3cret"), "{shown}");
    let unset = error(&[
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.username", "user"),
        ("sasl.password", "${env:KREC_CONSUMER_TEST_UNSET}"),
    ]);
    assert!(
        unset.contains("sasl.password") && unset.contains("KREC_CONSUMER_TEST_UNSET"),
        "{unset}"
    );
    let wrong = error(&[
        ("security.protocol", "SASL_SSL"),
        ("sasl.mechanism", "NTLM"),
        ("sasl.password", "hunter2"),
    ]);
    assert!(
        wrong.contains("sasl.mechanism") && !wrong.contains("hunter2"),
        "{wrong}"
    );
}

#[test]
fn a_security_error_names_the_origin_of_the_key() {
    let (_dir, path) = file("security.protocol=SSL\n\nssl.enabled.protocols=TLSv1.1\n");
    let message = ConsumerConfig::from_file(&path).unwrap_err().to_string();
    let expected = format!("{}:3: property ssl.enabled.protocols: ", path.display());
    assert!(message.starts_with(&expected), "{message}");
}

#[test]
fn foreign_properties_are_kept_with_their_origins() {
    let config = config(&[
        ("schema.registry.url", "http://r:8081"),
        ("basic.auth.user.info", "u:p"),
        ("client.id", "a"),
    ])
    .unwrap()
    .with("schema.registry.request.timeout.ms", "100")
    .unwrap();
    let keys: Vec<(&str, &str)> = config
        .foreign_properties()
        .iter()
        .map(|p| (p.key.as_str(), p.origin.as_str()))
        .collect();
    assert_eq!(
        keys,
        [
            ("schema.registry.url", FROM_PROPERTIES),
            ("basic.auth.user.info", FROM_PROPERTIES),
            ("schema.registry.request.timeout.ms", WITH),
        ]
    );
    let registry: Vec<&str> = config
        .foreign_properties()
        .iter()
        .filter(|p| p.key.starts_with("schema.registry."))
        .map(|p| p.value.as_str())
        .collect();
    assert_eq!(registry, ["http://r:8081", "100"]);
}

#[test]
fn producer_keys_are_accepted_and_ignored() {
    let producer_keys = [
        ("acks", "all"),
        ("linger.ms", "5"),
        ("buffer.memory", "33554432"),
        ("max.block.ms", "60000"),
        ("compression.zstd.level", "3"),
    ];
    let config = config(&producer_keys).unwrap();
    assert!(config.foreign_properties().is_empty());
}

#[test]
fn typed_fields_stay_settable_after_properties() {
    let mut config = config(&[("isolation.level", "read_uncommitted")]).unwrap();
    config.read_committed = true;
    config.set_max_bytes(1000).unwrap();
    assert_eq!(config.connection.max_frame_bytes, 1000 + (16 << 20));
    assert!(config
        .set_max_bytes(0)
        .unwrap_err()
        .to_string()
        .contains("fetch.max.bytes"));
    // A later non-security property leaves security set by hand alone.
    config.connection.security.protocol = SecurityProtocol::Ssl;
    let config = config.with("client.id", "b").unwrap();
    assert_eq!(config.connection.security.protocol, SecurityProtocol::Ssl);
    assert!(config.read_committed);
}
