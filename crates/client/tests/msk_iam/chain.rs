//! AWS's credential chain as krec builds it, fed from the places AWS's tools look: the
//! environment, the shared files with profiles (and `credential_process`), and IMDSv2 served
//! by AWS's EC2 metadata mock.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use krec_client::sasl::aws_msk_iam::credentials::{
    CredentialChain, CredentialSource, CredentialsFailure,
};
use krec_client::sasl::aws_msk_iam::AwsCredentials;

use super::sandbox::Sandbox;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn load(source: CredentialSource) -> Result<AwsCredentials, CredentialsFailure> {
    runtime().block_on(CredentialChain::new(source).credentials("us-east-1"))
}

fn profile(name: &str) -> CredentialSource {
    CredentialSource {
        profile: Some(name.to_owned()),
        ..CredentialSource::default()
    }
}

#[test]
fn environment_variables_come_first() {
    let sandbox = Sandbox::new("env");
    sandbox.write(
        ".aws/credentials",
        "[default]\naws_access_key_id = AKIAFROMFILE\naws_secret_access_key = file\n",
    );
    std::env::set_var("AWS_ACCESS_KEY_ID", "ASIAFROMENVIRONMENT");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "env-secret-value");
    std::env::set_var("AWS_SESSION_TOKEN", "env-session-token");
    let credentials = load(CredentialSource::default()).unwrap();
    assert_eq!(credentials.access_key_id(), "ASIAFROMENVIRONMENT");
    assert_eq!(credentials.secret_access_key(), "env-secret-value");
    assert_eq!(credentials.session_token(), Some("env-session-token"));
    let debug = format!("{credentials:?}");
    assert!(
        !debug.contains("env-secret-value") && !debug.contains("env-session-token"),
        "{debug}"
    );
}

#[test]
fn profiles_of_the_shared_files_by_name_by_aws_profile_and_by_credential_process() {
    let sandbox = Sandbox::new("profiles");
    let credentials_file = sandbox.write(
        "credentials-file",
        "[default]\naws_access_key_id = AKIADEFAULTPROFILE\naws_secret_access_key = d\n\
         [team]\naws_access_key_id = AKIATEAMPROFILE\naws_secret_access_key = t\n",
    );
    let process_output = r#"{"Version": 1, "AccessKeyId": "ASIAFROMPROCESS", "SecretAccessKey": "p", "SessionToken": "s", "Expiration": "2099-01-01T00:00:00Z"}"#;
    let process_file = sandbox.write("process.json", process_output);
    let config_file = sandbox.write(
        "config-file",
        &format!(
            "[profile tool]\ncredential_process = cat {}\n",
            process_file.display()
        ),
    );
    std::env::set_var("AWS_SHARED_CREDENTIALS_FILE", &credentials_file);
    std::env::set_var("AWS_CONFIG_FILE", &config_file);

    assert_eq!(
        load(CredentialSource::default()).unwrap().access_key_id(),
        "AKIADEFAULTPROFILE"
    );
    assert_eq!(
        load(profile("team")).unwrap().access_key_id(),
        "AKIATEAMPROFILE"
    );
    let from_process = load(profile("tool")).unwrap();
    assert_eq!(from_process.access_key_id(), "ASIAFROMPROCESS");
    assert!(
        from_process.expiry().is_some(),
        "temporary credentials keep their expiry"
    );
    std::env::set_var("AWS_PROFILE", "team");
    assert_eq!(
        load(CredentialSource::default()).unwrap().access_key_id(),
        "AKIATEAMPROFILE"
    );

    match load(profile("missing")) {
        Err(CredentialsFailure::Fatal(error)) => {
            let text = error.to_string();
            assert!(text.contains("AWS profile \"missing\""), "{text}");
            assert!(text.contains("is the profile in ~/.aws/config"), "{text}");
        }
        other => panic!("an unknown profile must fail for good: {other:?}"),
    }
}

#[test]
fn no_credentials_anywhere_is_a_fatal_error_that_says_where_krec_looked() {
    let _sandbox = Sandbox::new("none");
    match load(CredentialSource::default()) {
        Err(CredentialsFailure::Fatal(error)) => {
            let text = error.to_string();
            assert!(
                text.starts_with("no AWS credentials from AWS's default credential chain"),
                "{text}"
            );
        }
        other => panic!("expected a fatal failure: {other:?}"),
    }
}

/// AWS's EC2 metadata mock, IMDSv2 only, serving one role's credentials.
struct MetadataMock(Child);

impl MetadataMock {
    fn start(binary: &Path, config: &Path) -> (Self, u16) {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(binary)
            .args([
                "--imdsv2",
                "--hostname",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--config-file",
            ])
            .arg(config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ec2-metadata-mock");
        let mock = Self(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "ec2-metadata-mock did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        (mock, port)
    }
}

impl Drop for MetadataMock {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn ec2_instance_metadata_over_imdsv2() {
    let binary = super::tool("KREC_TEST_EC2_METADATA_MOCK", "metadata-mock");
    let sandbox = Sandbox::new("imds");
    let config = sandbox.write(
        "aemm.json",
        r#"{"metadata": {"values": {
            "iam-security-credentials-role": "krec-test-role",
            "iam-security-credentials": {"Code": "Success", "LastUpdated": "2026-01-01T00:00:00Z",
                "Type": "AWS-HMAC", "AccessKeyId": "ASIAFROMINSTANCEROLE", "SecretAccessKey": "imds-secret",
                "Token": "imds-session-token", "Expiration": "2099-01-01T00:00:00Z"}}}}"#,
    );
    let (_mock, port) = MetadataMock::start(&binary, &config);
    std::env::remove_var("AWS_EC2_METADATA_DISABLED");
    std::env::set_var(
        "AWS_EC2_METADATA_SERVICE_ENDPOINT",
        format!("http://127.0.0.1:{port}"),
    );
    let credentials = load(CredentialSource::default()).unwrap();
    assert_eq!(credentials.access_key_id(), "ASIAFROMINSTANCEROLE");
    assert_eq!(credentials.session_token(), Some("imds-session-token"));
    let expiry = credentials.expiry().expect("instance credentials expire");
    assert!(
        expiry > SystemTime::now() + Duration::from_secs(365 * 24 * 3600),
        "{expiry:?}"
    );
}
