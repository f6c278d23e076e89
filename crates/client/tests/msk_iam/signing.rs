//! The signatures, byte for byte against AWS's Python signer and botocore, with fixed
//! credentials and a frozen clock.

use std::time::{Duration, SystemTime};

use krec_client::sasl::aws_msk_iam::{native_payload, oauthbearer_token, AwsCredentials};
use serde_json::{json, Value};

use super::reference;

struct Case {
    access_key: &'static str,
    secret_key: &'static str,
    session_token: Option<&'static str>,
    region: &'static str,
    time: u64,
}

const CASES: [Case; 3] = [
    Case {
        access_key: "AKIAIOSFODNN7EXAMPLE",
        secret_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        session_token: None,
        region: "us-east-1",
        time: 1_700_000_000,
    },
    Case {
        access_key: "ASIAEXAMPLESESSION01",
        secret_key: "Se+cret/Key=With/Odd+Chars",
        // A session token as STS writes them: base64 with '+', '/' and '='.
        session_token: Some(
            "IQoJb3JpZ2luX2VjEXAMPLE//////////wEaCXVzLWVhc3QtMSJHMEUCIQD+token/a==",
        ),
        region: "eu-central-1",
        time: 1_714_979_289,
    },
    Case {
        access_key: "ASIACHINAEXAMPLE0002",
        secret_key: "another-secret",
        session_token: Some("short-token"),
        region: "cn-north-1",
        time: 1_893_456_000,
    },
];

fn credentials(case: &Case) -> AwsCredentials {
    AwsCredentials::new(
        case.access_key,
        case.secret_key,
        case.session_token.map(str::to_owned),
        None,
        "test",
    )
}

fn at(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
}

#[test]
fn oauthbearer_tokens_equal_those_of_aws_msk_iam_sasl_signer_python() {
    let requests: Vec<Value> = CASES
        .iter()
        .map(|case| {
            json!({
                "op": "token",
                "access_key": case.access_key,
                "secret_key": case.secret_key,
                "session_token": case.session_token,
                "region": case.region,
                "time": case.time,
            })
        })
        .collect();
    for (case, python) in CASES.iter().zip(reference(&requests)) {
        let user_agent = python["user_agent"].as_str().unwrap();
        let ours =
            oauthbearer_token(&credentials(case), case.region, user_agent, at(case.time)).unwrap();
        assert_eq!(
            ours.token.expose(),
            python["token"].as_str().unwrap(),
            "region {}",
            case.region
        );
        let expiry_ms = ours
            .expires_at
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        assert_eq!(expiry_ms, python["expiry_ms"].as_u64().unwrap() as u128);
    }
}

#[test]
fn native_payloads_carry_the_signature_botocore_computes() {
    let hosts = [
        "b-1.demo.abc123.c2.kafka.us-east-1.amazonaws.com",
        "boot-abcd1234.c1.kafka-serverless.eu-central-1.amazonaws.com",
        "b-3.demo.xyz.c3.kafka.cn-north-1.amazonaws.com.cn",
    ];
    let payloads: Vec<Vec<u8>> = CASES
        .iter()
        .zip(hosts)
        .map(|(case, host)| {
            native_payload(
                &credentials(case),
                case.region,
                host,
                "krec/test",
                at(case.time),
            )
            .unwrap()
        })
        .collect();
    let requests: Vec<Value> = CASES
        .iter()
        .zip(&payloads)
        .map(|(case, payload)| {
            json!({
                "op": "verify_native",
                "payload": String::from_utf8(payload.clone()).unwrap(),
                "secret_key": case.secret_key,
                "region": case.region,
                "time": case.time,
            })
        })
        .collect();
    let answers = reference(&requests);
    for ((payload, host), botocore) in payloads.iter().zip(hosts).zip(answers) {
        let ours: Value = serde_json::from_slice(payload).unwrap();
        let expected = botocore["params"].as_object().unwrap();
        // Everything botocore signs and sends, ours carries with the same value...
        for (name, value) in expected {
            assert_eq!(&ours[name], value, "{name} for {host}");
        }
        // ...and nothing else but the payload's own three fields.
        let mut extra: Vec<&str> = ours
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .filter(|k| !expected.contains_key(*k))
            .collect();
        extra.sort_unstable();
        assert_eq!(extra, ["host", "user-agent", "version"]);
        assert_eq!(ours["version"], "2020_10_22");
        assert_eq!(ours["host"], host);
    }
}
