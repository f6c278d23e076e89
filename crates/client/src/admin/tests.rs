//! The admin calls' answers from the scripted fake broker: NOT_CONTROLLER (which a single
//! real node does not answer) retried for the topics it concerned only, per-topic outcomes
//! kept apart, a missing answer refused; configs read without a sensitive value.

use std::sync::{Arc, Mutex};

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::{
    ApiKey, CreatePartitionsResponse, CreateTopicsResponse, DescribeConfigsResponse,
};
use krec_testkit::broker::{self, answers, Reply, Request};

use super::*;
use crate::ConnectionSettings;

fn new_topic(name: &str) -> NewTopic {
    NewTopic {
        name: name.to_owned(),
        partitions: 3,
        replication_factor: None,
        configs: vec![("cleanup.policy".to_owned(), "compact".to_owned())],
    }
}

fn created(name: &str, code: i16, message: Option<&'static str>) -> CreatableTopicResult {
    CreatableTopicResult::default()
        .with_name(TopicName(StrBytes::from_string(name.to_owned())))
        .with_error_code(code)
        .with_error_message(message.map(StrBytes::from_static_str))
}

/// A fake broker speaking the admin APIs, answering each of their requests with `script`
/// and keeping every request it was sent.
async fn admin_broker(
    mut script: impl FnMut(&Request) -> Reply + Send + 'static,
) -> (Connection, Arc<Mutex<Vec<Request>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    let address = broker::start(move |request| match request.api_key {
        ApiKey::ApiVersions => request.answer(&answers::api_versions(&[
            (ApiKey::CreateTopics, 2, 7),
            (ApiKey::DescribeConfigs, 1, 4),
            (ApiKey::CreatePartitions, 0, 3),
        ])),
        _ => {
            kept.lock().unwrap().push(request.clone());
            script(request)
        }
    })
    .await;
    let settings = ConnectionSettings::default();
    (
        Connection::connect(&address, &settings).await.unwrap(),
        seen,
    )
}

fn asked_topics(request: &Request) -> Vec<String> {
    let asked: CreateTopicsRequest = request.decode();
    asked.topics.iter().map(|t| t.name.0.to_string()).collect()
}

#[tokio::test(flavor = "current_thread")]
async fn not_controller_is_asked_again_for_its_topics_only() {
    let mut attempts = 0;
    let (mut connection, seen) = admin_broker(move |request| {
        attempts += 1;
        let answer = if attempts == 1 {
            vec![
                created("a", NOT_CONTROLLER, None),
                created("b", 0, None),
                created("c", TOPIC_ALREADY_EXISTS, Some("exists")),
                created("d", 40, Some("Unknown topic config name: colour")),
            ]
        } else {
            vec![created("a", 0, None)]
        };
        request.answer(&CreateTopicsResponse::default().with_topics(answer))
    })
    .await;
    let topics: Vec<NewTopic> = ["a", "b", "c", "d"].map(new_topic).to_vec();
    let outcomes = create_topics(&mut connection, &topics, Duration::from_secs(10))
        .await
        .unwrap();
    let outcome = |name: &str| {
        let found = outcomes.iter().find(|o| o.name == name).unwrap();
        found.outcome.clone()
    };
    assert_eq!(
        outcomes.iter().map(|o| &o.name[..]).collect::<Vec<_>>(),
        ["a", "b", "c", "d"]
    );
    assert_eq!(outcome("a"), CreationOutcome::Created);
    assert_eq!(outcome("b"), CreationOutcome::Created);
    assert_eq!(outcome("c"), CreationOutcome::AlreadyExists);
    assert_eq!(
        outcome("d"),
        CreationOutcome::Refused {
            code: 40,
            name: "INVALID_CONFIG".to_owned(),
            message: Some("Unknown topic config name: colour".to_owned()),
        }
    );
    let seen = seen.lock().unwrap();
    assert_eq!(asked_topics(&seen[0]), ["a", "b", "c", "d"]);
    assert_eq!(
        asked_topics(&seen[1]),
        ["a"],
        "only the topic answered NOT_CONTROLLER"
    );
    let first: CreateTopicsRequest = seen[0].decode();
    assert_eq!(
        first.topics[0].replication_factor, -1,
        "the broker's default"
    );
    assert_eq!(first.topics[0].num_partitions, 3);
    assert_eq!(first.topics[0].configs[0].name.as_str(), "cleanup.policy");
}

#[tokio::test(flavor = "current_thread")]
async fn not_controller_past_the_timeout_is_the_topics_refusal() {
    let (mut connection, seen) = admin_broker(|request| {
        let answer = vec![created("a", NOT_CONTROLLER, None)];
        request.answer(&CreateTopicsResponse::default().with_topics(answer))
    })
    .await;
    let topics = [new_topic("a")];
    let outcomes = create_topics(&mut connection, &topics, Duration::from_millis(350))
        .await
        .unwrap();
    assert!(
        matches!(&outcomes[0].outcome, CreationOutcome::Refused { name, .. } if name == "NOT_CONTROLLER"),
        "{outcomes:?}"
    );
    let attempts = seen.lock().unwrap().len();
    assert!((2..=4).contains(&attempts), "{attempts} attempts");
}

#[tokio::test(flavor = "current_thread")]
async fn a_topic_left_out_of_the_answer_is_a_protocol_error() {
    let (mut connection, _) = admin_broker(|request| {
        let answer = vec![created("a", 0, None)];
        request.answer(&CreateTopicsResponse::default().with_topics(answer))
    })
    .await;
    let topics = [new_topic("a"), new_topic("b")];
    let error = create_topics(&mut connection, &topics, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::Protocol { detail, .. } if detail.contains("\"b\"")),
        "{error}"
    );
    let twice = [new_topic("a"), new_topic("a")];
    let error = create_topics(&mut connection, &twice, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { .. }), "{error}");
}

#[tokio::test(flavor = "current_thread")]
async fn added_partitions_are_asked_again_after_not_controller_then_refused_in_words() {
    let mut attempts = 0;
    let (mut connection, seen) = admin_broker(move |request| {
        attempts += 1;
        let (code, message) = match attempts {
            1 => (NOT_CONTROLLER, None),
            _ => (37, Some("Topic already has 4 partitions.")),
        };
        let result = CreatePartitionsTopicResult::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_error_code(code)
            .with_error_message(message.map(StrBytes::from_static_str));
        request.answer(&CreatePartitionsResponse::default().with_results(vec![result]))
    })
    .await;
    let error = create_partitions(&mut connection, "t", 4, Duration::from_secs(5))
        .await
        .unwrap_err();
    let Error::TopicRefused {
        api,
        topic,
        name,
        message,
        ..
    } = &error
    else {
        panic!("{error}");
    };
    assert_eq!(
        (*api, &topic[..], &name[..]),
        ("CreatePartitions", "t", "INVALID_PARTITIONS")
    );
    assert_eq!(message.as_deref(), Some("Topic already has 4 partitions."));
    assert!(
        error
            .to_string()
            .contains("Topic already has 4 partitions."),
        "{error}"
    );
    let asked: CreatePartitionsRequest = seen.lock().unwrap()[1].decode();
    assert_eq!(asked.topics[0].count, 4);
    assert_eq!(
        asked.topics[0].assignments, None,
        "placed by the controller"
    );
}

fn config(name: &str, value: &str, source: i8, sensitive: bool) -> DescribeConfigsResourceResult {
    DescribeConfigsResourceResult::default()
        .with_name(StrBytes::from_string(name.to_owned()))
        .with_value(Some(StrBytes::from_string(value.to_owned())))
        .with_config_source(source)
        .with_is_sensitive(sensitive)
}

#[tokio::test(flavor = "current_thread")]
async fn configs_keep_their_source_and_never_a_sensitive_value() {
    let (mut connection, _) = admin_broker(|request| {
        let results = vec![
            DescribeConfigsResult::default()
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_static_str("gone"))
                .with_error_code(3),
            DescribeConfigsResult::default()
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_static_str("t"))
                .with_configs(vec![
                    config("retention.ms", "1000", 1, false),
                    config("segment.bytes", "1024", 5, false),
                    config("secret.thing", "hunter2", 1, true),
                ]),
        ];
        request.answer(&DescribeConfigsResponse::default().with_results(results))
    })
    .await;
    let described = describe_topic_configs(&mut connection, &["t"])
        .await
        .unwrap();
    let entries = &described[0].entries;
    assert_eq!(described[0].topic, "t");
    assert_eq!(entries[0].source, ConfigSource::DynamicTopic);
    assert_eq!(entries[1].source, ConfigSource::Default);
    assert_eq!(
        (entries[2].value.as_deref(), entries[2].sensitive),
        (None, true)
    );
    let overrides: Vec<_> = described[0].overrides().collect();
    assert_eq!(overrides, [("retention.ms", "1000")]);
    let error = describe_topic_configs(&mut connection, &["t", "gone"])
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::TopicRefused { topic, name, .. } if topic == "gone" && name == "UNKNOWN_TOPIC_OR_PARTITION"),
        "{error}"
    );
}
