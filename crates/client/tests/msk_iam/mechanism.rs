//! Both forms as a connection runs them, from client properties to the first SASL message:
//! credentials from the chain, the region from the broker's host name, the signature checked
//! by botocore at the moment it was made.

use krec_client::{SaslConfig, SecurityConfig};
use serde_json::{json, Value};

use super::reference;
use super::sandbox::Sandbox;

const BROKER: &str = "b-2.orders.x1y2z3.c3.kafka.eu-west-3.amazonaws.com:9098";
const SECRET_KEY: &str = "mechanism-secret-key";
const SESSION_TOKEN: &str = "mechanism-session-token";

/// Credentials in the environment, as a container or CI job gets them.
fn sandbox_with_credentials(name: &str) -> Sandbox {
    let sandbox = Sandbox::new(name);
    std::env::set_var("AWS_ACCESS_KEY_ID", "ASIAMECHANISMTEST01");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", SECRET_KEY);
    std::env::set_var("AWS_SESSION_TOKEN", SESSION_TOKEN);
    sandbox
}

fn sasl(pairs: &[(&str, &str)]) -> SaslConfig {
    let mut all = vec![("security.protocol", "SASL_SSL")];
    all.extend_from_slice(pairs);
    SecurityConfig::from_properties(all).unwrap().sasl.unwrap()
}

/// The mechanism's first message to `broker`.
fn first_message(sasl: &SaslConfig, broker: &str) -> Result<Vec<u8>, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mechanism = sasl.get();
        mechanism.prepare(broker).await.map_err(|e| e.to_string())?;
        let mut exchange = mechanism.start(broker).await.map_err(|e| e.to_string())?;
        Ok(exchange
            .step(None)
            .await
            .map_err(|e| e.to_string())?
            .unwrap())
    })
}

#[test]
fn aws_msk_iam_signs_for_the_brokers_host_with_the_chains_credentials() {
    let _sandbox = sandbox_with_credentials("native");
    let sasl = sasl(&[("sasl.mechanism", "AWS_MSK_IAM")]);
    let payload = first_message(&sasl, BROKER).unwrap();
    let ours: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        ours["host"],
        "b-2.orders.x1y2z3.c3.kafka.eu-west-3.amazonaws.com"
    );
    let credential = ours["x-amz-credential"].as_str().unwrap();
    assert!(
        credential.starts_with("ASIAMECHANISMTEST01/"),
        "{credential}"
    );
    assert!(
        credential.ends_with("/eu-west-3/kafka-cluster/aws4_request"),
        "{credential}"
    );
    assert_eq!(
        ours["user-agent"],
        concat!("krec/", env!("CARGO_PKG_VERSION"))
    );

    let botocore = reference(&[json!({
        "op": "verify_native",
        "payload": String::from_utf8(payload).unwrap(),
        "secret_key": SECRET_KEY,
        "region": "eu-west-3",
    })]);
    assert_eq!(
        ours["x-amz-signature"],
        botocore[0]["params"]["x-amz-signature"]
    );
    assert_eq!(ours["x-amz-security-token"], SESSION_TOKEN);

    let debug = format!("{sasl:?}");
    assert!(
        !debug.contains(SECRET_KEY) && !debug.contains(SESSION_TOKEN),
        "{debug}"
    );
}

#[test]
fn oauthbearer_carries_a_token_botocore_signs_alike() {
    let _sandbox = sandbox_with_credentials("oauthbearer");
    let sasl = sasl(&[
        ("sasl.mechanisms", "OAUTHBEARER"),
        ("sasl.oauthbearer.method", "aws_msk_iam"),
    ]);
    let message = String::from_utf8(first_message(&sasl, BROKER).unwrap()).unwrap();
    // RFC 7628: gs2 header, then auth=Bearer TOKEN between ^A separators.
    let token = message
        .strip_prefix("n,,\u{1}auth=Bearer ")
        .and_then(|rest| rest.strip_suffix("\u{1}\u{1}"))
        .unwrap_or_else(|| panic!("not an OAUTHBEARER client message: {message:?}"));
    let answer =
        &reference(&[json!({"op": "verify_token", "token": token, "secret_key": SECRET_KEY})])[0];
    let url = answer["url"].as_str().unwrap();
    assert!(
        url.starts_with("https://kafka.eu-west-3.amazonaws.com/?Action=kafka-cluster%3AConnect&"),
        "{url}"
    );
    assert!(
        url.contains("X-Amz-Credential=ASIAMECHANISMTEST01%2F"),
        "{url}"
    );
    let signature = answer["signature"].as_str().unwrap();
    assert!(
        url.contains(&format!("&X-Amz-Signature={signature}&")),
        "botocore's {signature} in {url}"
    );
    assert!(
        url.ends_with(&format!("&User-Agent=krec%2F{}", env!("CARGO_PKG_VERSION"))),
        "{url}"
    );
    let debug = format!("{sasl:?}");
    assert!(
        !debug.contains(token) && !debug.contains(SECRET_KEY),
        "{debug}"
    );
}

#[test]
fn a_broker_outside_aws_needs_the_region_configured() {
    let _sandbox = sandbox_with_credentials("region");
    let error =
        first_message(&sasl(&[("sasl.mechanism", "AWS_MSK_IAM")]), "10.1.2.3:9098").unwrap_err();
    assert!(
        error.contains("cannot tell the AWS region of broker 10.1.2.3:9098"),
        "{error}"
    );
    assert!(error.contains("set sasl.aws.region"), "{error}");
    let configured = sasl(&[
        ("sasl.mechanism", "AWS_MSK_IAM"),
        ("sasl.aws.region", "us-east-2"),
    ]);
    let payload: Value =
        serde_json::from_slice(&first_message(&configured, "10.1.2.3:9098").unwrap()).unwrap();
    assert_eq!(payload["host"], "10.1.2.3");
    assert!(payload["x-amz-credential"]
        .as_str()
        .unwrap()
        .contains("/us-east-2/"));
}

#[test]
fn no_credentials_fail_and_say_where_krec_looked() {
    let _sandbox = Sandbox::new("no-credentials");
    let error = first_message(&sasl(&[("sasl.mechanism", "AWS_MSK_IAM")]), BROKER).unwrap_err();
    assert!(
        error.starts_with("no AWS credentials from AWS's default credential chain"),
        "{error}"
    );
}
