//! AWS MSK IAM: Amazon MSK's IAM access control, in both of its forms.
//!
//! - The native mechanism `AWS_MSK_IAM` (AWS's Java library `aws-msk-iam-auth`, franz-go): a
//!   JSON payload carrying a SigV4 signature for the broker's host, and the broker's JSON
//!   answer checked.
//! - OAUTHBEARER with `sasl.oauthbearer.method=aws_msk_iam` (librdkafka, kaf and others with
//!   AWS's `aws-msk-iam-sasl-signer-*` libraries): a token that is a presigned URL, from the
//!   token source in `token::aws_msk_iam`.
//!
//! Credentials come from AWS's standard chain (`credentials`), cached until shortly before
//! they expire; signatures are made per authentication (`sign`). The region is configured or
//! read from the broker's host name (`region`). Needs the cargo feature `aws-msk-iam`; without
//! it the names are still known, and say which feature to turn on.
//!
//! Properties (librdkafka style, krec's own names): `sasl.aws.region`, `sasl.aws.profile`,
//! `sasl.aws.role.arn`, `sasl.aws.role.session.name`. Java: `sasl.jaas.config` with
//! `software.amazon.msk.auth.iam.IAMLoginModule` and its options `awsProfileName`,
//! `awsRoleArn`, `awsRoleSessionName`, `awsStsRegion`, and
//! `sasl.client.callback.handler.class=software.amazon.msk.auth.iam.IAMClientCallbackHandler`.

#[cfg(not(feature = "aws-msk-iam"))]
use crate::security::{config::config_error, properties_map::PropertyMap};
#[cfg(not(feature = "aws-msk-iam"))]
use crate::{sasl::SaslConfig, Error};

use super::Registration;

#[cfg(feature = "aws-msk-iam")]
pub mod credentials;
#[cfg(feature = "aws-msk-iam")]
mod native;
#[cfg(feature = "aws-msk-iam")]
pub mod region;
#[cfg(feature = "aws-msk-iam")]
mod settings;
#[cfg(feature = "aws-msk-iam")]
pub mod sign;

#[cfg(feature = "aws-msk-iam")]
pub use super::token::aws_msk_iam::MskIamTokens;
#[cfg(feature = "aws-msk-iam")]
pub use aws_credential_types::Credentials as AwsCredentials;
#[cfg(feature = "aws-msk-iam")]
pub use native::AwsMskIam;
#[cfg(feature = "aws-msk-iam")]
use settings::build;
#[cfg(feature = "aws-msk-iam")]
pub use settings::Settings;
#[cfg(feature = "aws-msk-iam")]
pub use sign::{native_payload, oauthbearer_token, SignedToken};

/// The properties both forms read.
pub(crate) const PROPERTIES: &[&str] = &[
    "sasl.aws.region",
    "sasl.aws.profile",
    "sasl.aws.role.arn",
    "sasl.aws.role.session.name",
];

pub(super) const REGISTRATION: Registration = Registration {
    names: &["AWS_MSK_IAM"],
    properties: &[
        "sasl.aws.region",
        "sasl.aws.profile",
        "sasl.aws.role.arn",
        "sasl.aws.role.session.name",
        "sasl.client.callback.handler.class",
    ],
    secrets: &[],
    build,
    available: cfg!(feature = "aws-msk-iam"),
};

/// The cargo feature both forms need, for the error of a build without it.
#[cfg(not(feature = "aws-msk-iam"))]
pub(crate) fn feature_missing(property: &str, what: &str) -> Error {
    config_error(
        property,
        format!(
            "{what} needs krec built with the cargo feature aws-msk-iam (on by default in the \
             krec binary; a library user enables it on krec-client, krec-consumer or krec)"
        ),
    )
}

#[cfg(not(feature = "aws-msk-iam"))]
fn build(_name: &str, _properties: &PropertyMap) -> Result<SaslConfig, Error> {
    Err(feature_missing("sasl.mechanism", "AWS_MSK_IAM"))
}

#[cfg(all(test, not(feature = "aws-msk-iam")))]
mod tests {
    use crate::security::SecurityConfig;
    use crate::Error;

    #[test]
    fn without_the_feature_both_forms_name_it() {
        for (key, value) in [
            ("sasl.mechanism", "AWS_MSK_IAM"),
            ("sasl.oauthbearer.method", "aws_msk_iam"),
        ] {
            let mut pairs = vec![("security.protocol", "SASL_SSL"), (key, value)];
            if key != "sasl.mechanism" {
                pairs.push(("sasl.mechanism", "OAUTHBEARER"));
            }
            match SecurityConfig::from_properties(pairs) {
                Err(Error::Config { property, detail }) => {
                    assert_eq!(property, key);
                    assert!(detail.contains("cargo feature aws-msk-iam"), "{detail}");
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
