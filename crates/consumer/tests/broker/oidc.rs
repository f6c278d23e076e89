//! OAUTHBEARER with OAuth client credentials from the library's front door: an embedding
//! program gives `ConsumerConfig::from_properties` the librdkafka OIDC properties, and the
//! consumer fetches its tokens from the suite's OAuth server (Hydra) and reads the secured
//! broker's SASL_OAUTH listener, which validates them against the server's keys.

use std::collections::HashMap;

use krec_consumer::{Consumer, ConsumerConfig, StartOffset};

use crate::support::{expected, live, numbered, read_to_end};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_properties_read_a_topic_through_the_library() {
    let (broker, env) = live::secure_broker();
    let oauth: HashMap<String, String> = std::fs::read_to_string(&env["OAUTH_ENV"])
        .expect("read oauth.env")
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let topic = live::unique_name(&format!("{}lib-oidc", env["ACL_PREFIX"]));
    broker.create_topic(&topic, 2);
    let acked = broker.produce(&topic, &numbered(30, 2));

    // The secret through an environment variable, as a deployment would pass it.
    std::env::set_var("KREC_LIB_OIDC_SECRET", &oauth["CLIENT_SECRET"]);
    let config = ConsumerConfig::from_properties([
        ("bootstrap.servers", env["SASL_OAUTH"].as_str()),
        ("security.protocol", "SASL_SSL"),
        ("ssl.ca.location", env["CA_PEM"].as_str()),
        ("sasl.mechanisms", "OAUTHBEARER"),
        ("sasl.oauthbearer.method", "oidc"),
        ("sasl.oauthbearer.client.id", oauth["CLIENT_ID"].as_str()),
        (
            "sasl.oauthbearer.client.secret",
            "${env:KREC_LIB_OIDC_SECRET}",
        ),
        (
            "sasl.oauthbearer.token.endpoint.url",
            oauth["TOKEN_URL"].as_str(),
        ),
        ("sasl.oauthbearer.scope", oauth["SCOPE"].as_str()),
        ("https.ca.location", oauth["CA_PEM"].as_str()),
        ("fetch.wait.max.ms", "100"),
    ])
    .expect("OIDC properties");
    let debug = format!("{config:?}");
    assert!(!debug.contains(&oauth["CLIENT_SECRET"]), "{debug}");
    let mut consumer = Consumer::connect(config).await.expect("connect");
    consumer
        .assign_topic(&topic, StartOffset::Beginning)
        .await
        .expect("assign_topic");
    consumer.stop_at_end(true);
    assert_eq!(read_to_end(&mut consumer, &topic).await, expected(&acked));
    consumer.close().await;
}
