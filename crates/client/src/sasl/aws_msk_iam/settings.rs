//! What both forms of MSK IAM are configured with, from krec's `sasl.aws.*` properties or the
//! Java library's JAAS options.

use crate::sasl::{BoxError, SaslConfig};
use crate::security::config::config_error;
use crate::security::properties_map::{check_module, PropertyMap};
use crate::Error;

use super::credentials::CredentialSource;
use super::region::region_from_host;
use super::sign::check_region;
use super::AwsMskIam;

/// The Java library's login module and callback handler (the class names, no package).
const JAVA_LOGIN_MODULE: &str = "IAMLoginModule";
const JAVA_CALLBACK_HANDLER: &str = "IAMClientCallbackHandler";

/// JAAS options of the Java library that tune its own retries and logging: accepted, unused.
const JAVA_OPTIONS_IGNORED: &[&str] = &["awsDebugCreds", "awsMaxRetries", "awsMaxBackOffTimeMs"];

/// `sasl.mechanism=AWS_MSK_IAM`: the native mechanism.
pub(super) fn build(_name: &str, properties: &PropertyMap) -> Result<SaslConfig, Error> {
    if let Some(class) = properties.get("sasl.client.callback.handler.class") {
        if class.rsplit('.').next() != Some(JAVA_CALLBACK_HANDLER) {
            return Err(config_error(
                "sasl.client.callback.handler.class",
                format!("AWS_MSK_IAM takes software.amazon.msk.auth.iam.{JAVA_CALLBACK_HANDLER}, not {class}"),
            ));
        }
    }
    let settings = Settings::from_properties(properties, JAVA_LOGIN_MODULE)?;
    Ok(SaslConfig::new(AwsMskIam::new(settings)))
}

/// What both forms are configured with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// Where credentials come from.
    pub source: CredentialSource,
    /// The cluster's region; `None`: read from each broker's host name.
    pub region: Option<String>,
    /// The region of STS calls (role assumption, web identity); `None`: the cluster's.
    pub sts_region: Option<String>,
}

impl Settings {
    /// From krec's `sasl.aws.*` properties, else the JAAS options of login module `module`
    /// (the Java library's names). A property wins over a JAAS option.
    pub(crate) fn from_properties(properties: &PropertyMap, module: &str) -> Result<Self, Error> {
        let jaas = properties.jaas()?;
        if let Some(login) = &jaas {
            check_module(login, module)?;
            let known = [
                "awsProfileName",
                "awsRoleArn",
                "awsRoleSessionName",
                "awsStsRegion",
            ];
            if let Some((key, _)) = login.options.iter().find(|(k, _)| {
                !known.contains(&k.as_str()) && !JAVA_OPTIONS_IGNORED.contains(&k.as_str())
            }) {
                return Err(config_error(
                    "sasl.jaas.config",
                    format!(
                        "{module} option {key:?} is not one krec knows: use {}",
                        known.join(", ")
                    ),
                ));
            }
        }
        let pick = |property: &str, option: &str| -> Option<String> {
            let from_jaas = || jaas.as_ref().and_then(|login| login.option(option));
            properties
                .get(property)
                .or_else(from_jaas)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let settings = Settings {
            source: CredentialSource {
                profile: pick("sasl.aws.profile", "awsProfileName"),
                role_arn: pick("sasl.aws.role.arn", "awsRoleArn"),
                role_session_name: pick("sasl.aws.role.session.name", "awsRoleSessionName"),
            },
            region: properties.get("sasl.aws.region").map(str::to_owned),
            sts_region: jaas
                .as_ref()
                .and_then(|l| l.option("awsStsRegion"))
                .map(str::to_owned),
        };
        for (key, region) in [
            ("sasl.aws.region", &settings.region),
            ("sasl.jaas.config", &settings.sts_region),
        ] {
            if let Some(region) = region {
                check_region(region).map_err(|error| config_error(key, error.to_string()))?;
            }
        }
        if let Some(role) = &settings.source.role_arn {
            if !role.starts_with("arn:") {
                return Err(config_error(
                    "sasl.aws.role.arn",
                    format!("{role:?} is not an ARN (arn:aws:iam::ACCOUNT:role/NAME)"),
                ));
            }
        }
        Ok(settings)
    }

    /// The region to sign for at `broker`: the configured one, else its host name's.
    pub fn region_for<'a>(&'a self, broker: &'a str) -> Result<&'a str, BoxError> {
        if let Some(region) = &self.region {
            return Ok(region);
        }
        region_from_host(broker).ok_or_else(|| {
            format!(
                "cannot tell the AWS region of broker {broker}: its host name is not an MSK one \
                 (b-1.CLUSTER.ID.c2.kafka.REGION.amazonaws.com); set sasl.aws.region"
            )
            .into()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::SecurityConfig;

    fn sasl(pairs: &[(&str, &str)]) -> Result<SaslConfig, Error> {
        let mut all = vec![("security.protocol", "SASL_SSL")];
        all.extend_from_slice(pairs);
        Ok(SecurityConfig::from_properties(all)?.sasl.unwrap())
    }

    fn native_settings(pairs: &[(&str, &str)]) -> Settings {
        let sasl = sasl(pairs).unwrap();
        assert_eq!(sasl.mechanism(), "AWS_MSK_IAM");
        sasl.downcast_ref::<AwsMskIam>().unwrap().settings().clone()
    }

    const ROLE: &str = "arn:aws:iam::123456789012:role/reader";

    #[test]
    fn librdkafka_style_properties() {
        let settings = native_settings(&[
            ("sasl.mechanisms", "AWS_MSK_IAM"),
            ("sasl.aws.region", "eu-west-1"),
            ("sasl.aws.profile", "team"),
            ("sasl.aws.role.arn", ROLE),
            ("sasl.aws.role.session.name", "nightly"),
        ]);
        assert_eq!(settings.region.as_deref(), Some("eu-west-1"));
        assert_eq!(settings.source.profile.as_deref(), Some("team"));
        assert_eq!(settings.source.role_arn.as_deref(), Some(ROLE));
        assert_eq!(
            settings.source.role_session_name.as_deref(),
            Some("nightly")
        );
        assert_eq!(
            settings.region_for("10.0.0.1:9098").unwrap(),
            "eu-west-1",
            "configured wins"
        );
    }

    #[test]
    fn the_java_librarys_properties() {
        let jaas = format!(
            "software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName=\"team\" \
             awsRoleArn=\"{ROLE}\" awsStsRegion=\"us-west-2\" awsDebugCreds=true;"
        );
        let settings = native_settings(&[
            ("sasl.mechanism", "AWS_MSK_IAM"),
            ("sasl.jaas.config", &jaas),
            (
                "sasl.client.callback.handler.class",
                "software.amazon.msk.auth.iam.IAMClientCallbackHandler",
            ),
        ]);
        assert_eq!(settings.source.profile.as_deref(), Some("team"));
        assert_eq!(settings.source.role_arn.as_deref(), Some(ROLE));
        assert_eq!(settings.sts_region.as_deref(), Some("us-west-2"));
        assert_eq!(settings.region, None);
        let broker = "b-1.demo.abc.c2.kafka.ap-south-1.amazonaws.com:9098";
        assert_eq!(settings.region_for(broker).unwrap(), "ap-south-1");
        let error = settings
            .region_for("kafka.internal:9098")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("kafka.internal:9098") && error.contains("set sasl.aws.region"),
            "{error}"
        );
    }

    #[test]
    fn both_oauthbearer_spellings_choose_the_aws_token_source() {
        let librdkafka = sasl(&[
            ("sasl.mechanisms", "OAUTHBEARER"),
            ("sasl.oauthbearer.method", "AWS_MSK_IAM"),
            ("sasl.aws.profile", "team"),
        ])
        .unwrap();
        assert_eq!(librdkafka.mechanism(), "OAUTHBEARER");
        assert_eq!(
            librdkafka.identity(),
            "AWS MSK IAM tokens signed with AWS profile \"team\""
        );
        let java = sasl(&[
            ("sasl.mechanism", "OAUTHBEARER"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
            ),
            (
                "sasl.login.callback.handler.class",
                "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler",
            ),
            (
                "sasl.client.callback.handler.class",
                "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler",
            ),
        ])
        .unwrap();
        assert_eq!(
            java.identity(),
            "AWS MSK IAM tokens signed with AWS's default credential chain"
        );
    }

    #[test]
    fn mistakes_name_the_property_to_fix() {
        // (extra properties, the property named, words of the detail)
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
        let cases: [Case; 5] = [
            (
                &[("sasl.client.callback.handler.class", "com.example.Handler")],
                "sasl.client.callback.handler.class",
                "IAMClientCallbackHandler",
            ),
            (
                &[(
                    "sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required;",
                )],
                "sasl.jaas.config",
                "expected IAMLoginModule",
            ),
            (
                &[(
                    "sasl.jaas.config",
                    "software.amazon.msk.auth.iam.IAMLoginModule required awsRegion=\"x\";",
                )],
                "sasl.jaas.config",
                "\"awsRegion\" is not one krec knows",
            ),
            (
                &[("sasl.aws.region", "Frankfurt")],
                "sasl.aws.region",
                "not an AWS region",
            ),
            (
                &[("sasl.aws.role.arn", "reader")],
                "sasl.aws.role.arn",
                "not an ARN",
            ),
        ];
        for (pairs, property, detail) in cases {
            let mut all = vec![("sasl.mechanism", "AWS_MSK_IAM")];
            all.extend_from_slice(pairs);
            match sasl(&all) {
                Err(Error::Config {
                    property: p,
                    detail: d,
                }) => {
                    assert_eq!(p, property);
                    assert!(d.contains(detail), "{d}");
                }
                other => panic!("{pairs:?}: {other:?}"),
            }
        }
    }
}
