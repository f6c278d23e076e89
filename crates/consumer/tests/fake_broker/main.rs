//! The consumer against krec-testkit's scripted fake broker on 127.0.0.1: KIP-227 fetch
//! sessions (`sessions`) and faults a real broker produces only by chance (`faults`). Needs no
//! Kafka. One binary for both, since each test binary links the whole dependency tree.

mod faults;
mod group;
mod sessions;

use std::time::Duration;

use kafka_protocol::messages::ApiKey;
use krec_consumer::ConsumerConfig;
use krec_testkit::broker::{answers, Reply, Request};

/// The one topic both fakes serve.
const TOPIC: &str = "t";

/// The ApiVersions answer of both fakes: Fetch `fetch_min..=fetch_max`, ListOffsets,
/// Metadata and ApiVersions.
fn api_versions(request: &Request, fetch_min: i16, fetch_max: i16) -> Reply {
    request.answer(&answers::api_versions(&[
        (ApiKey::Fetch, fetch_min, fetch_max),
        (ApiKey::ListOffsets, 1, 7),
        (ApiKey::Metadata, 1, 12),
        (ApiKey::ApiVersions, 0, 3),
    ]))
}

/// A consumer of `address` that retries and waits briefly, so faults cost milliseconds.
fn fast_config(address: &str) -> ConsumerConfig {
    let mut config = ConsumerConfig::new(vec![address.to_owned()]);
    config.backoff = Duration::from_millis(10);
    config.max_backoff = Duration::from_millis(50);
    config.max_wait = Duration::from_millis(50);
    config
}
