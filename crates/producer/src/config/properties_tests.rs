use std::time::Duration;

use krec_batch::{Codec, Compression};
use krec_client::partitioner::Partitioning;

use super::*;
use crate::Error;

fn config(pairs: &[(&str, &str)]) -> Result<ProducerConfig, Error> {
    ProducerConfig::from_properties(pairs.iter().copied())
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
fn defaults_are_the_java_clients() {
    let config = config(&[]).unwrap();
    assert!(config.bootstrap.is_empty());
    assert_eq!(config.acks, Acks::All);
    assert_eq!(config.acks.code(), -1);
    assert_eq!(config.linger, Duration::from_millis(5));
    assert_eq!(config.write.batch_size, 16384);
    assert_eq!(config.write.max_record_size, 1_048_576);
    assert_eq!(config.max_batch_records, None);
    assert_eq!(config.codec, Codec::NONE);
    assert!(config.idempotence);
    assert_eq!(config.max_in_flight, 5);
    assert_eq!(config.delivery_timeout, Duration::from_millis(120_000));
    assert_eq!(
        config.connection.request_timeout,
        Duration::from_millis(30_000)
    );
    assert_eq!(config.retries, i32::MAX);
    assert_eq!(config.retry_backoff, Duration::from_millis(100));
    assert_eq!(config.buffer_memory, 33_554_432);
    assert_eq!(config.max_block, Duration::from_millis(60_000));
    assert_eq!(config.partitioning, Partitioning::JAVA_DEFAULT);
    assert_eq!(config.connection.client_id, "krec");
}

/// Each key under its Java name and under librdkafka's, with the value it must set.
#[test]
fn every_key_and_its_librdkafka_alias_fill_the_typed_fields() {
    for (java, librdkafka) in [
        ("linger.ms", "queue.buffering.max.ms"),
        ("delivery.timeout.ms", "message.timeout.ms"),
    ] {
        for key in [java, librdkafka] {
            let config = config(&[(key, "200000")]).unwrap();
            let got = if java == "linger.ms" {
                config.linger
            } else {
                config.delivery_timeout
            };
            assert_eq!(got, Duration::from_millis(200_000), "{key}");
        }
    }
    for key in ["acks", "request.required.acks"] {
        assert_eq!(
            config(&[(key, "0"), ("enable.idempotence", "false")])
                .unwrap()
                .acks,
            Acks::None,
            "{key}"
        );
        assert_eq!(config(&[(key, "-1")]).unwrap().acks, Acks::All, "{key}");
        assert_eq!(config(&[(key, "all")]).unwrap().acks, Acks::All, "{key}");
    }
    for key in ["max.request.size", "message.max.bytes"] {
        assert_eq!(
            config(&[(key, "2000000")]).unwrap().write.max_record_size,
            2_000_000,
            "{key}"
        );
    }
    for key in ["compression.type", "compression.codec"] {
        assert_eq!(
            config(&[(key, "zstd")]).unwrap().codec,
            Codec::new(Compression::Zstd),
            "{key}"
        );
    }
    for key in ["retries", "message.send.max.retries"] {
        assert_eq!(config(&[(key, "7")]).unwrap().retries, 7, "{key}");
    }
    for key in ["max.in.flight.requests.per.connection", "max.in.flight"] {
        assert_eq!(config(&[(key, "3")]).unwrap().max_in_flight, 3, "{key}");
    }
    let config = config(&[
        ("batch.size", "65536"),
        ("batch.num.messages", "500"),
        ("retry.backoff.ms", "250"),
        ("max.block.ms", "1500"),
        ("enable.idempotence", "false"),
        ("client.id", "orders"),
        ("request.timeout.ms", "5000"),
        ("metadata.max.age.ms", "1000"),
    ])
    .unwrap();
    assert_eq!(config.write.batch_size, 65536);
    assert_eq!(config.max_batch_records, Some(500));
    assert_eq!(config.retry_backoff, Duration::from_millis(250));
    assert_eq!(config.max_block, Duration::from_millis(1500));
    assert!(!config.idempotence);
    assert_eq!(config.connection.client_id, "orders");
    assert_eq!(
        config.connection.request_timeout,
        Duration::from_millis(5000)
    );
    assert_eq!(config.metadata_refresh, Duration::from_millis(1000));
}

#[test]
fn memory_is_bytes_in_java_and_kib_in_librdkafka() {
    assert_eq!(
        config(&[("buffer.memory", "1048576")])
            .unwrap()
            .buffer_memory,
        1 << 20
    );
    let kib = config(&[("queue.buffering.max.kbytes", "1024")]).unwrap();
    assert_eq!(kib.buffer_memory, 1 << 20);
    assert!(error(&[("buffer.memory", "0")]).contains("property buffer.memory"));
    assert!(error(&[("linger.ms", "5s")]).contains("not a number of milliseconds"));
}

#[test]
fn compression_levels_are_checked_in_kafkas_ranges() {
    let zstd = config(&[
        ("compression.type", "zstd"),
        ("compression.zstd.level", "19"),
    ])
    .unwrap();
    assert_eq!(zstd.codec, Codec::zstd(19).unwrap());
    let gzip = config(&[
        ("compression.gzip.level", "9"),
        ("compression.type", "gzip"),
    ])
    .unwrap();
    assert_eq!(gzip.codec, Codec::gzip(9).unwrap());
    let lz4 = config(&[("compression.type", "lz4"), ("compression.lz4.level", "17")]).unwrap();
    assert_eq!(lz4.codec.level(), Some(17));
    assert_eq!(
        config(&[("compression.type", "snappy")]).unwrap().codec,
        Codec::SNAPPY
    );
    for (key, bad) in [
        ("compression.gzip.level", "10"),
        ("compression.lz4.level", "18"),
        ("compression.lz4.level", "0"),
        ("compression.zstd.level", "23"),
    ] {
        let message = error(&[(key, bad)]);
        assert!(message.contains(&format!("property {key}")), "{message}");
    }
    assert!(error(&[("compression.type", "brotli")]).contains("none, gzip, snappy, lz4 or zstd"));
}

#[test]
fn an_explicit_idempotence_conflict_names_both_keys() {
    for (key, value) in [
        ("acks", "1"),
        ("max.in.flight.requests.per.connection", "6"),
        ("retries", "0"),
    ] {
        let message = error(&[("enable.idempotence", "true"), (key, value)]);
        assert!(message.contains("enable.idempotence=true"), "{message}");
        assert!(message.contains(&format!("{key}={value}")), "{message}");
    }
    // librdkafka's alias is named by the Java key it sets.
    let message = error(&[("max.in.flight", "10"), ("enable.idempotence", "true")]);
    assert!(
        message.contains("max.in.flight.requests.per.connection=10"),
        "{message}"
    );
}

#[test]
fn a_transactional_id_needs_idempotence_as_in_java() {
    let given = config(&[
        ("transactional.id", "billing-1"),
        ("transaction.timeout.ms", "30000"),
    ])
    .unwrap();
    assert_eq!(given.transactional_id.as_deref(), Some("billing-1"));
    assert_eq!(given.transaction_timeout, Duration::from_secs(30));
    assert!(given.idempotence);
    let message = error(&[("transactional.id", "t"), ("enable.idempotence", "false")]);
    assert!(message.contains("transactional.id=t"), "{message}");
    assert!(message.contains("enable.idempotence=false"), "{message}");
    let message = error(&[("acks", "1"), ("transactional.id", "t")]);
    assert!(message.contains("transactional.id=t"), "{message}");
    assert!(
        config(&[("transactional.id", "")])
            .unwrap()
            .transactional_id
            .is_none(),
        "an empty id is none"
    );
}

#[test]
fn default_idempotence_gives_way_to_a_conflicting_key() {
    for (key, value) in [("acks", "1"), ("max.in.flight", "6"), ("retries", "0")] {
        let config = config(&[(key, value)]).unwrap();
        assert!(!config.idempotence, "{key}={value}");
    }
    // The check reads the settings as a whole: a later acks=all brings it back.
    let back = config(&[("acks", "1")])
        .unwrap()
        .with("acks", "all")
        .unwrap();
    assert!(back.idempotence);
    assert!(
        config(&[("enable.idempotence", "true"), ("acks", "all")])
            .unwrap()
            .idempotence
    );
}

#[test]
fn delivery_timeout_covers_linger_and_one_request() {
    let message = error(&[
        ("delivery.timeout.ms", "1000"),
        ("linger.ms", "500"),
        ("request.timeout.ms", "600"),
    ]);
    assert!(message.contains("delivery.timeout.ms=1000"), "{message}");
    assert!(
        message.contains("linger.ms + request.timeout.ms = 1100 ms"),
        "{message}"
    );
    let exact = config(&[
        ("message.timeout.ms", "1100"),
        ("linger.ms", "500"),
        ("request.timeout.ms", "600"),
    ]);
    assert_eq!(exact.unwrap().delivery_timeout, Duration::from_millis(1100));
    // Unset, it is raised to the sum, as the Java client does.
    let raised = config(&[("request.timeout.ms", "200000")]).unwrap();
    assert_eq!(raised.delivery_timeout, Duration::from_millis(200_005));
}

#[test]
fn adaptive_partitioning_is_on_unless_turned_off_and_the_availability_timeout_stays_off() {
    assert!(config(&[]).unwrap().partitioning.is_adaptive());
    let off = [("partitioner.adaptive.partitioning.enable", "false")];
    assert!(!config(&off).unwrap().partitioning.is_adaptive());
    let ignoring_keys = [
        ("partitioner.ignore.keys", "true"),
        ("partitioner.adaptive.partitioning.enable", "false"),
    ];
    let ignoring = config(&ignoring_keys).unwrap().partitioning;
    assert!(!ignoring.is_adaptive() && ignoring.keys().is_none());
    assert!(config(&[("partitioner.availability.timeout.ms", "0")]).is_ok());
    let message = error(&[("partitioner.availability.timeout.ms", "1000")]);
    assert!(
        message.contains("property partitioner.availability.timeout.ms:")
            && message.contains("not supported"),
        "{message}"
    );
}

#[test]
fn partitioner_choices_go_through_krec_client() {
    let librdkafka = config(&[("partitioner", "consistent_random")]).unwrap();
    assert_eq!(librdkafka.partitioning, Partitioning::LIBRDKAFKA_DEFAULT);
    let java = config(&[(
        "partitioner.class",
        "org.apache.kafka.clients.producer.RoundRobinPartitioner",
    )])
    .unwrap();
    assert_ne!(java.partitioning, Partitioning::JAVA_DEFAULT);
    let message = error(&[("partitioner", "fnv1a")]);
    assert!(
        message.contains("ProducerConfig::from_properties: property partitioner:"),
        "{message}"
    );
}

#[test]
fn consumer_keys_are_refused_as_consumer_keys_and_unknown_keys_by_name() {
    for key in ["group.id", "auto.offset.reset", "fetch.max.bytes"] {
        let message = error(&[(key, "x")]);
        assert!(
            message.contains(&format!("property {key}: a consumer's property")),
            "{message}"
        );
    }
    assert!(error(&[("lingr.ms", "5")]).contains("property lingr.ms: unknown or unsupported"));
    assert!(config(&[(
        "key.serializer",
        "org.apache.kafka.common.serialization.StringSerializer"
    )])
    .is_ok());
}

#[test]
fn errors_name_the_key_and_file_line_and_never_a_secret() {
    let (_dir, path) = file(
        "bootstrap.servers=a:9092\n\
         security.protocol=SASL_SSL\n\
         sasl.mechanism=PLAIN\n\
         sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
         username=\"u\" password=\"hunter2-secret\";\n\
         acks=2\n",
    );
    let message = ProducerConfig::from_file(&path).unwrap_err().to_string();
    assert!(
        message.contains(&format!("{}:5: property acks", path.display())),
        "{message}"
    );
    assert!(!message.contains("hunter2-secret"), "{message}");
    let (_dir, path) = file(
        "security.protocol=SASL_PLAINTEXT\n\
         sasl.mechanism=PLAIN\n\
         sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
         password=\"hunter2-secret\";\n",
    );
    let message = ProducerConfig::from_file(&path).unwrap_err().to_string();
    assert!(message.contains("property sasl.username"), "{message}");
    assert!(!message.contains("hunter2-secret"), "{message}");
    let (_dir, path) = file(
        "security.protocol=SASL_PLAINTEXT\n\
         sasl.mechanism=PLAIN\n\
         sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
         username=\"u\" password=\"hunter2-secret\";\n",
    );
    let loaded = ProducerConfig::from_file(&path).unwrap();
    let shown = format!("{loaded:?}");
    assert!(!shown.contains("hunter2-secret"), "{shown}");
}

#[test]
fn one_client_properties_file_serves_consumer_and_producer() {
    let (_dir, path) = file(
        "bootstrap.servers=k1:9093,k2:9093\n\
         client.id=billing\n\
         request.timeout.ms=4000\n\
         security.protocol=SASL_SSL\n\
         sasl.mechanism=SCRAM-SHA-512\n\
         sasl.username=billing\n\
         sasl.password=pw\n\
         schema.registry.url=http://registry:8081\n\
         linger.ms=10\n",
    );
    let producer = ProducerConfig::from_file(&path).unwrap();
    let consumer = krec_consumer::ConsumerConfig::from_file(&path).unwrap();
    assert_eq!(producer.bootstrap, consumer.bootstrap);
    assert_eq!(producer.bootstrap, ["k1:9093", "k2:9093"]);
    assert_eq!(producer.connection.client_id, consumer.connection.client_id);
    assert_eq!(
        producer.connection.request_timeout,
        consumer.connection.request_timeout
    );
    assert_eq!(
        format!("{:?}", producer.connection.security),
        format!("{:?}", consumer.connection.security)
    );
    assert!(producer.connection.security.protocol.uses_sasl());
    assert_eq!(producer.foreign_properties(), consumer.foreign_properties());
    assert_eq!(producer.linger, Duration::from_millis(10));
}
