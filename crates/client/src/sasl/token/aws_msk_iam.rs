//! `sasl.oauthbearer.method=aws_msk_iam`: OAUTHBEARER tokens for Amazon MSK as AWS's
//! `aws-msk-iam-sasl-signer-*` libraries make them (the Java client's name for it:
//! `IAMOAuthBearerLoginCallbackHandler`). Signing and credentials are in `sasl::aws_msk_iam`.

use std::sync::Arc;

use crate::security::properties_map::PropertyMap;
use crate::Error;

use super::{Method, TokenProvider};

pub(super) const METHOD: Method = Method {
    names: &["aws_msk_iam"],
    java_handlers: &["IAMOAuthBearerLoginCallbackHandler"],
    properties: crate::sasl::aws_msk_iam::PROPERTIES,
    secrets: &[],
    build,
    available: cfg!(feature = "aws-msk-iam"),
};

#[cfg(not(feature = "aws-msk-iam"))]
fn build(_properties: &PropertyMap) -> Result<Arc<dyn TokenProvider>, Error> {
    Err(crate::sasl::aws_msk_iam::feature_missing(
        "sasl.oauthbearer.method",
        "aws_msk_iam",
    ))
}

#[cfg(feature = "aws-msk-iam")]
fn build(properties: &PropertyMap) -> Result<Arc<dyn TokenProvider>, Error> {
    let settings = Settings::from_properties(properties, "OAuthBearerLoginModule")?;
    Ok(Arc::new(MskIamTokens::new(settings)))
}

#[cfg(feature = "aws-msk-iam")]
use crate::sasl::aws_msk_iam::Settings;
#[cfg(feature = "aws-msk-iam")]
pub use with_feature::MskIamTokens;

#[cfg(feature = "aws-msk-iam")]
mod with_feature {
    use std::time::SystemTime;

    use crate::sasl::aws_msk_iam::credentials::{CredentialChain, CredentialsFailure};
    use crate::sasl::aws_msk_iam::{oauthbearer_token, Settings};
    use crate::sasl::token::refresh::{FetchError, RefreshingToken, RetryPolicy};
    use crate::sasl::token::{BearerToken, TokenProvider};
    use crate::sasl::{BoxError, BoxFuture};

    /// What the token's `User-Agent` parameter says the client is.
    const USER_AGENT: &str = concat!("krec/", env!("CARGO_PKG_VERSION"));

    /// MSK IAM tokens: credentials from AWS's chain, a new signature when most of the last
    /// one's life has passed (shared by every connection).
    #[derive(Debug)]
    pub struct MskIamTokens {
        settings: Settings,
        chain: CredentialChain,
        cache: RefreshingToken,
    }

    impl MskIamTokens {
        /// Tokens as `settings` say, none signed yet.
        pub fn new(settings: Settings) -> Self {
            Self {
                chain: CredentialChain::new(settings.source.clone()),
                settings,
                cache: RefreshingToken::new(RetryPolicy::default()),
            }
        }

        async fn sign(&self, region: &str) -> Result<BearerToken, FetchError> {
            let sts_region = self.settings.sts_region.as_deref().unwrap_or(region);
            let credentials = self
                .chain
                .credentials(sts_region)
                .await
                .map_err(|failure| match failure {
                    CredentialsFailure::Retriable(error) => FetchError::Retriable(error),
                    CredentialsFailure::Fatal(error) => FetchError::Fatal(error),
                })?;
            let signed = oauthbearer_token(&credentials, region, USER_AGENT, SystemTime::now())
                .map_err(FetchError::Fatal)?;
            Ok(BearerToken::new(signed.token).expiring_at(signed.expires_at))
        }
    }

    impl TokenProvider for MskIamTokens {
        fn describe(&self) -> String {
            format!(
                "AWS MSK IAM tokens signed with {}",
                self.settings.source.describe()
            )
        }

        fn token<'a>(&'a self, broker: &'a str) -> BoxFuture<'a, Result<BearerToken, BoxError>> {
            Box::pin(async move {
                let region = self.settings.region_for(broker)?;
                self.cache.get(|| self.sign(region)).await
            })
        }
    }
}
