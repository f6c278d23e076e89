//! The errors an embedder sees for a wrong name or argument: each names what was wrong,
//! and comes quickly.

use std::time::{Duration, Instant};

use krec_consumer::{
    Consumer, ConsumerConfig, Error, GroupConsumer, StartOffset, TopicPartition, TopicSubscription,
};

use crate::support::{config, live, within};

/// A topic the broker does not have: `assign_topic`, a named subscription and a group
/// member each fail with an error naming it, in seconds (the lookups of
/// `UNKNOWN_TOPIC_LOOKUPS`), not after the consumer's give-up time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_topic_is_an_error_naming_it() {
    let broker = live::broker();
    let missing = live::unique_name("kc-missing");

    let started = Instant::now();
    let mut consumer = Consumer::connect(config(&broker)).await.expect("connect");
    let error = within(
        "assign_topic",
        consumer.assign_topic(&missing, StartOffset::Beginning),
    )
    .await
    .expect_err("an unknown topic");
    assert!(error.to_string().contains(&missing), "{error}");
    let named = TopicSubscription::parse([missing.as_str()]).expect("a name");
    let error = within(
        "subscribe",
        consumer.subscribe(named, StartOffset::Beginning),
    )
    .await
    .expect_err("an unknown topic");
    assert!(error.to_string().contains(&missing), "{error}");

    let mut settings = config(&broker);
    settings.group.group_id = live::unique_name("kc-missing-group");
    let error = within(
        "group subscribe",
        GroupConsumer::subscribe(settings, &[&missing]),
    )
    .await
    .expect_err("an unknown topic");
    assert!(error.to_string().contains(&missing), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "three unknown-topic errors took {:?}",
        started.elapsed()
    );
}

/// Wrong arguments: a group member without `group.id` (refused before connecting), or
/// without topics; a partition the topic does not have; seeking a partition not assigned;
/// a bootstrap address without a port; a property value the consumer does not know. Each error names the setting or the partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_errors_naming_what() {
    let broker = live::broker();
    let topic = live::unique_name("kc-bad-args");
    broker.create_topic(&topic, 2);

    let error = within(
        "subscribe",
        GroupConsumer::subscribe(config(&broker), &[&topic]),
    )
    .await
    .expect_err("no group.id");
    assert!(matches!(error, Error::InvalidArgument { .. }), "{error:?}");
    assert!(error.to_string().contains("group.id"), "{error}");

    let mut settings = config(&broker);
    settings.group.group_id = live::unique_name("kc-bad-args-group");
    let error = within("subscribe", GroupConsumer::subscribe(settings, &[]))
        .await
        .expect_err("no topics");
    assert!(error.to_string().contains("topic"), "{error}");

    let mut consumer = Consumer::connect(config(&broker)).await.expect("connect");
    let absent = TopicPartition::new(topic.as_str(), 5);
    let error = within(
        "assign",
        consumer.assign(std::slice::from_ref(&absent), StartOffset::Beginning),
    )
    .await
    .expect_err("partition 5 of 2");
    match &error {
        Error::UnknownPartition {
            topic: named,
            partition: 5,
            count: 2,
        } if *named == topic => {}
        other => panic!("not UnknownPartition {topic}/5 of 2: {other:?}"),
    }
    assert!(error.to_string().contains(&topic), "{error}");
    assert_eq!(
        consumer.assigned_count(),
        0,
        "nothing assigned after the error"
    );

    let error = consumer
        .seek(&absent, StartOffset::Offset(0))
        .expect_err("not assigned");
    assert!(error.to_string().contains(&absent.to_string()), "{error}");

    let error = ConsumerConfig::parse_bootstrap("127.0.0.1").expect_err("no port");
    assert!(error.to_string().contains("127.0.0.1"), "{error}");
    let error = ConsumerConfig::from_properties([("isolation.level", "read_most")])
        .expect_err("no such isolation level");
    assert!(error.to_string().contains("isolation.level"), "{error}");
}
