//! `AWS_MSK_IAM` on a connection: SaslHandshake, the payload in SaslAuthenticate, the broker's
//! JSON answer checked, then requests flow. No broker outside AWS checks the signature, so
//! the scripted fake broker stands in for MSK's side of the exchange (the signature itself is
//! botocore's business in `signing` and `mechanism`).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use krec_client::metadata::MetadataClient;
use krec_client::{ConnectionSettings, Error, SecurityConfig};
use krec_testkit::broker::{self, answers, Reply};
use serde_json::Value;

use super::sandbox::Sandbox;

/// What the fake MSK broker saw: the mechanism asked for, and each payload.
#[derive(Default)]
struct Seen {
    mechanisms: Vec<String>,
    payloads: Vec<Value>,
}

/// A broker that takes any AWS_MSK_IAM payload and answers `answer`.
async fn fake_msk(answer: &'static [u8], seen: Arc<Mutex<Seen>>) -> String {
    broker::start(move |request| match request.api_key {
        ApiKey::ApiVersions => request.answer(&answers::api_versions(&[
            (ApiKey::Metadata, 0, 12),
            (ApiKey::SaslHandshake, 0, 1),
            (ApiKey::SaslAuthenticate, 0, 2),
        ])),
        ApiKey::SaslHandshake => {
            let handshake: SaslHandshakeRequest = request.decode();
            seen.lock()
                .unwrap()
                .mechanisms
                .push(handshake.mechanism.to_string());
            request.answer(
                &SaslHandshakeResponse::default()
                    .with_mechanisms(vec![StrBytes::from_static_str("AWS_MSK_IAM")]),
            )
        }
        ApiKey::SaslAuthenticate => {
            let authenticate: SaslAuthenticateRequest = request.decode();
            let payload = serde_json::from_slice(&authenticate.auth_bytes).unwrap();
            seen.lock().unwrap().payloads.push(payload);
            request.answer(
                &SaslAuthenticateResponse::default().with_auth_bytes(Bytes::from_static(answer)),
            )
        }
        ApiKey::Metadata => request.answer(&answers::metadata(request.port, &[("orders", 2)])),
        _ => Reply::close(),
    })
    .await
}

fn settings() -> ConnectionSettings {
    let security = SecurityConfig::from_properties([
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "AWS_MSK_IAM"),
        ("sasl.aws.region", "eu-north-1"),
    ])
    .unwrap();
    ConnectionSettings {
        security,
        ..ConnectionSettings::default()
    }
}

async fn metadata(answer: &'static [u8]) -> (Result<usize, Error>, Seen) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let address = fake_msk(answer, seen.clone()).await;
    let mut client = MetadataClient::new(vec![address], settings());
    let result = client
        .fetch(&["orders".to_owned()])
        .await
        .map(|cluster| cluster.topic("orders").unwrap().partitions.len());
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    (result, seen)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn an_accepted_payload_lets_requests_through() {
    let _sandbox = Sandbox::new("wire-accepted");
    std::env::set_var("AWS_ACCESS_KEY_ID", "AKIAWIRETEST000001");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "wire-secret");
    let answer = br#"{"version":"2020_10_22","request-id":"0d9c7e0c-request"}"#;
    let (result, seen) = runtime().block_on(metadata(answer));
    assert_eq!(result.unwrap(), 2, "metadata after authentication");
    assert_eq!(seen.mechanisms, ["AWS_MSK_IAM"]);
    let payload = &seen.payloads[0];
    assert_eq!(
        payload["host"], "127.0.0.1",
        "the host signed for, without the port"
    );
    assert_eq!(payload["version"], "2020_10_22");
    let credential = payload["x-amz-credential"].as_str().unwrap();
    assert!(
        credential.starts_with("AKIAWIRETEST000001/")
            && credential.contains("/eu-north-1/kafka-cluster/")
    );
}

#[test]
fn an_answer_the_java_library_would_refuse_fails_the_connection_clearly() {
    let _sandbox = Sandbox::new("wire-refused");
    std::env::set_var("AWS_ACCESS_KEY_ID", "AKIAWIRETEST000002");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "wire-secret-two");
    let (result, _) = runtime().block_on(metadata(br#"{"version":"1999_01_01","request-id":"x"}"#));
    let text = result.unwrap_err().to_string();
    assert!(text.contains("AWS_MSK_IAM"), "{text}");
    assert!(text.contains("has version \"1999_01_01\""), "{text}");
    assert!(!text.contains("wire-secret-two"), "{text}");
}
