//! AWS credentials from AWS's standard chain, found as the AWS CLI finds them, by AWS's own
//! `aws-config`: environment variables, the shared config and credentials files (profiles,
//! `credential_process`, SSO), web identity (EKS IRSA, Pod Identity), ECS container
//! credentials, then EC2 instance metadata (IMDSv2). A role to assume sits on top, by STS.

use std::error::Error as _;
use std::fmt::Write as _;

use aws_config::profile::ProfileFileCredentialsProvider;
use aws_config::provider_config::ProviderConfig;
use aws_config::sts::AssumeRoleProvider;
use aws_config::{BehaviorVersion, Region};
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use tokio::sync::OnceCell;

use crate::sasl::BoxError;

/// The role session name STS records when krec assumes a role.
const ROLE_SESSION_NAME: &str = "krec-msk-iam";

/// Where credentials come from: the default chain, or a named profile, maybe under a role.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CredentialSource {
    /// A profile of the shared files (`awsProfileName`); `None`: `AWS_PROFILE` or `default`.
    pub profile: Option<String>,
    /// A role assumed with the chain's credentials (`awsRoleArn`).
    pub role_arn: Option<String>,
    /// The role session name (`awsRoleSessionName`); krec's own when `None`.
    pub role_session_name: Option<String>,
}

impl CredentialSource {
    /// Where the credentials come from, for messages.
    pub fn describe(&self) -> String {
        let mut text = match &self.profile {
            Some(profile) => format!("AWS profile {profile:?}"),
            None => "AWS's default credential chain".to_owned(),
        };
        if let Some(role) = &self.role_arn {
            let _ = write!(text, ", assuming role {role}");
        }
        text
    }
}

/// A failure to get credentials: worth trying again later, or not until a person acts.
#[derive(Debug)]
pub enum CredentialsFailure {
    /// A provider timed out or failed in passing.
    Retriable(BoxError),
    /// No credentials anywhere, a broken configuration, or a refusal (an unknown role).
    Fatal(BoxError),
}

/// AWS's credential chain for one [`CredentialSource`], built at the first request (it needs
/// the region, for STS) and kept. It does not cache credentials: callers do.
#[derive(Debug)]
pub struct CredentialChain {
    source: CredentialSource,
    provider: OnceCell<SharedCredentialsProvider>,
}

impl CredentialChain {
    /// A chain that will look where `source` says.
    pub fn new(source: CredentialSource) -> Self {
        Self {
            source,
            provider: OnceCell::new(),
        }
    }

    /// Where it looks.
    pub fn source(&self) -> &CredentialSource {
        &self.source
    }

    /// Credentials now; `region` is the one STS calls go to (the cluster's).
    pub async fn credentials(&self, region: &str) -> Result<Credentials, CredentialsFailure> {
        let provider = self
            .provider
            .get_or_init(|| build_provider(&self.source, region))
            .await;
        provider.provide_credentials().await.map_err(|error| {
            let mut text = format!(
                "no AWS credentials from {}: {}",
                self.source.describe(),
                with_causes(&error)
            );
            if self.source.profile.is_some()
                && matches!(error, CredentialsError::CredentialsNotLoaded(_))
            {
                text.push_str(
                    " (is the profile in ~/.aws/config or ~/.aws/credentials, or the files \
                     AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE name?)",
                );
            }
            let detail: BoxError = text.into();
            match error {
                CredentialsError::ProviderTimedOut(_) | CredentialsError::Unhandled(_) => {
                    CredentialsFailure::Retriable(detail)
                }
                _ => CredentialsFailure::Fatal(detail),
            }
        })
    }
}

async fn build_provider(source: &CredentialSource, region: &str) -> SharedCredentialsProvider {
    // rustls over ring for STS, SSO, ECS and IMDS: no second TLS stack in the binary.
    let http_client = aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https();
    let region = Region::new(region.to_owned());
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(http_client.clone())
        .region(region.clone());
    if let Some(profile) = &source.profile {
        loader = loader.profile_name(profile);
    }
    let config = loader.load().await;
    let base = match &source.profile {
        // A named profile alone, as AWS's CLI and Java library read it: a missing one is an
        // error, not a fall through to the instance's role.
        Some(profile) => {
            let conf = ProviderConfig::without_region()
                .with_region(Some(region))
                .with_http_client(http_client);
            SharedCredentialsProvider::new(
                ProfileFileCredentialsProvider::builder()
                    .configure(&conf)
                    .profile_name(profile)
                    .build(),
            )
        }
        None => config
            .credentials_provider()
            .expect("aws-config's loader always sets a credentials provider"),
    };
    match &source.role_arn {
        None => base,
        Some(role) => {
            let session = source
                .role_session_name
                .as_deref()
                .unwrap_or(ROLE_SESSION_NAME);
            let assume = AssumeRoleProvider::builder(role)
                .session_name(session)
                .configure(&config)
                .build_from_provider(base)
                .await;
            SharedCredentialsProvider::new(assume)
        }
    }
}

/// An error and its causes on one line: aws-config's top-level messages alone are terse.
fn with_causes(error: &CredentialsError) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let _ = write!(text, ": {inner}");
        cause = inner.source();
    }
    text
}
