//! GSSAPI (Kerberos V5, RFC 4752) through the system's MIT krb5, behind the cargo feature
//! `gssapi` (it links libgssapi_krb5). Without the feature `sasl.mechanism=GSSAPI` is still
//! known, and says which feature to turn on.
//!
//! The exchange, as Kafka's broker (Java's GSSAPI SaslServer) runs it: the Kerberos context
//! tokens, each in a SaslAuthenticate, until the context is established (mutual
//! authentication: the broker proves itself too); then the broker's wrapped security-layer
//! offer, answered by `security_layer`. The service principal is
//! `sasl.kerberos.service.name/HOST` for the host of the broker address connected to.
//!
//! Credentials come from a keytab (`sasl.kerberos.keytab` with `sasl.kerberos.principal`) or a
//! ticket cache (`kinit`'s, KRB5CCNAME), as librdkafka's and Java's names set them. GSS calls
//! may contact the KDC, so they run on tokio's blocking threads.

use std::path::PathBuf;

use crate::security::config::config_error;
use crate::security::jaas::JaasLogin;
use crate::security::properties_map::{check_module, PropertyMap};
use crate::Error;

use super::{Registration, SaslConfig};

#[cfg(feature = "gssapi")]
mod advice;
#[cfg(feature = "gssapi")]
mod credentials;
#[cfg(feature = "gssapi")]
mod exchange;
#[cfg(feature = "gssapi")]
mod security_layer;

#[cfg(feature = "gssapi")]
pub use exchange::Gssapi;

pub(super) const REGISTRATION: Registration = Registration {
    names: &["GSSAPI"],
    properties: &[
        "sasl.kerberos.service.name",
        "sasl.kerberos.principal",
        "sasl.kerberos.keytab",
        // Accepted so that a cluster's properties file works unchanged; krec gets and renews
        // tickets through the GSS library, never by running kinit.
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.kerberos.ticket.renew.jitter",
    ],
    secrets: &[],
    build,
    available: cfg!(feature = "gssapi"),
};

/// Kafka's default `sasl.kerberos.service.name`.
const DEFAULT_SERVICE_NAME: &str = "kafka";

/// Where the client's Kerberos credentials come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Credentials {
    /// Keys of `principal` in a keytab file.
    Keytab {
        /// The client principal (`alice@EXAMPLE.COM`; no realm: krb5.conf's default).
        principal: String,
        /// The keytab file.
        keytab: PathBuf,
    },
    /// Tickets `kinit` left in a ticket cache.
    TicketCache {
        /// The principal whose tickets to use (`None`: the cache's own).
        principal: Option<String>,
        /// The cache (`FILE:/tmp/krb5cc_1000`; `None`: KRB5CCNAME, else the default).
        cache: Option<String>,
    },
}

/// What `sasl.mechanism=GSSAPI` reads: librdkafka's names first, else the JAAS line of
/// Java's `Krb5LoginModule`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KerberosSettings {
    /// The broker's service name, the first part of its principal.
    pub(crate) service_name: String,
    pub(crate) credentials: Credentials,
}

fn build(_name: &str, properties: &PropertyMap) -> Result<SaslConfig, Error> {
    let jaas = properties.jaas()?;
    with_settings(settings(|key| properties.get(key), jaas.as_ref())?)
}

#[cfg(feature = "gssapi")]
fn with_settings(settings: KerberosSettings) -> Result<SaslConfig, Error> {
    Ok(SaslConfig::new(Gssapi::from_settings(settings)))
}

#[cfg(not(feature = "gssapi"))]
fn with_settings(_settings: KerberosSettings) -> Result<SaslConfig, Error> {
    Err(feature_off())
}

/// The error of a build without the `gssapi` feature.
#[cfg_attr(feature = "gssapi", allow(dead_code))]
fn feature_off() -> Error {
    config_error(
        "sasl.mechanism",
        "GSSAPI (Kerberos) needs krec built with the cargo feature `gssapi` (for the program: \
         `cargo install krec-cli --features gssapi`; for the libraries: krec-client, \
         krec-consumer or krec, feature `gssapi`), which links the system's MIT Kerberos \
         (Debian: libkrb5-dev and libclang-dev to build)"
            .to_owned(),
    )
}

/// The settings from the properties (`get`) and the parsed `sasl.jaas.config`.
fn settings<'p>(
    get: impl Fn(&str) -> Option<&'p str>,
    jaas: Option<&'p JaasLogin>,
) -> Result<KerberosSettings, Error> {
    if let Some(login) = jaas {
        check_module(login, "Krb5LoginModule")?;
    }
    let option = |key: &str| jaas.and_then(|login| login.option(key));
    let jaas_flag = |key: &str| -> Result<bool, Error> {
        match option(key) {
            None => Ok(false),
            Some(value) if value.eq_ignore_ascii_case("true") => Ok(true),
            Some(value) if value.eq_ignore_ascii_case("false") => Ok(false),
            Some(value) => Err(config_error(
                "sasl.jaas.config",
                format!("option {key}={value:?} is neither true nor false"),
            )),
        }
    };
    let service_name = get("sasl.kerberos.service.name")
        .or_else(|| option("serviceName"))
        .unwrap_or(DEFAULT_SERVICE_NAME);
    if service_name.is_empty() || service_name.contains(['/', '@']) {
        return Err(config_error(
            "sasl.kerberos.service.name",
            format!(
                "{service_name:?} is not a service name: give the first part of the broker's \
                 principal (kafka for kafka/HOST@REALM)"
            ),
        ));
    }
    let principal = get("sasl.kerberos.principal")
        .or_else(|| option("principal"))
        .map(str::to_owned);
    let keytab = match get("sasl.kerberos.keytab") {
        Some(path) => Some(("sasl.kerberos.keytab", path)),
        None if jaas_flag("useKeyTab")? => Some((
            "sasl.jaas.config",
            option("keyTab").ok_or_else(|| {
                config_error(
                    "sasl.jaas.config",
                    "useKeyTab=true needs keyTab=\"PATH\"".to_owned(),
                )
            })?,
        )),
        None => None,
    };
    let credentials = match keytab {
        Some((key, path)) => Credentials::Keytab {
            principal: principal.ok_or_else(|| {
                config_error(
                    key,
                    "a keytab needs its principal: set sasl.kerberos.principal (or principal= \
                     in the JAAS line), as `klist -k KEYTAB` lists it"
                        .to_owned(),
                )
            })?,
            keytab: PathBuf::from(path),
        },
        None => Credentials::TicketCache {
            principal,
            cache: option("ticketCache").map(|path| {
                if path.contains(':') {
                    path.to_owned()
                } else {
                    format!("FILE:{path}")
                }
            }),
        },
    };
    Ok(KerberosSettings {
        service_name: service_name.to_owned(),
        credentials,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings_of(pairs: &[(&str, &str)]) -> Result<KerberosSettings, Error> {
        let get = |key: &str| pairs.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| *v);
        let jaas = get("sasl.jaas.config")
            .map(|text| crate::security::jaas::parse(text).expect("test JAAS parses"));
        settings(get, jaas.as_ref())
    }

    #[test]
    fn librdkafka_names() {
        let keytab = settings_of(&[
            ("sasl.kerberos.principal", "alice@EXAMPLE.COM"),
            ("sasl.kerberos.keytab", "/etc/alice.keytab"),
            ("sasl.kerberos.kinit.cmd", "kinit -k -t ..."),
        ])
        .unwrap();
        assert_eq!(keytab.service_name, "kafka");
        assert_eq!(
            keytab.credentials,
            Credentials::Keytab {
                principal: "alice@EXAMPLE.COM".to_owned(),
                keytab: PathBuf::from("/etc/alice.keytab"),
            }
        );
        let cache = settings_of(&[("sasl.kerberos.service.name", "kafka-prod")]).unwrap();
        assert_eq!(cache.service_name, "kafka-prod");
        assert_eq!(
            cache.credentials,
            Credentials::TicketCache {
                principal: None,
                cache: None
            }
        );
    }

    #[test]
    fn java_names() {
        let keytab = settings_of(&[
            ("sasl.kerberos.service.name", "kafka"),
            (
                "sasl.jaas.config",
                "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true \
                 storeKey=true keyTab=\"/etc/alice.keytab\" principal=\"alice@EXAMPLE.COM\";",
            ),
        ])
        .unwrap();
        assert_eq!(
            keytab.credentials,
            Credentials::Keytab {
                principal: "alice@EXAMPLE.COM".to_owned(),
                keytab: PathBuf::from("/etc/alice.keytab"),
            }
        );
        let cache = settings_of(&[(
            "sasl.jaas.config",
            "com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true \
             ticketCache=\"/tmp/krb5cc_alice\" serviceName=\"kafka-x\";",
        )])
        .unwrap();
        assert_eq!(cache.service_name, "kafka-x");
        assert_eq!(
            cache.credentials,
            Credentials::TicketCache {
                principal: None,
                cache: Some("FILE:/tmp/krb5cc_alice".to_owned())
            }
        );
    }

    #[test]
    fn mistakes_name_the_property() {
        // The properties, the property the error names, and a word of its advice.
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
        let cases: &[Case<'_>] = &[
            (
                &[("sasl.kerberos.keytab", "/k")],
                "sasl.kerberos.keytab",
                "principal",
            ),
            (
                &[(
                    "sasl.jaas.config",
                    "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;",
                )],
                "sasl.jaas.config",
                "keyTab",
            ),
            (
                &[(
                    "sasl.jaas.config",
                    "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=yes;",
                )],
                "sasl.jaas.config",
                "useKeyTab",
            ),
            (
                &[(
                    "sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required;",
                )],
                "sasl.jaas.config",
                "Krb5LoginModule",
            ),
            (
                &[("sasl.kerberos.service.name", "kafka/b1.example.com")],
                "sasl.kerberos.service.name",
                "first part",
            ),
        ];
        for (pairs, property, needle) in cases {
            let error = settings_of(pairs).unwrap_err().to_string();
            assert!(
                error.contains(property) && error.contains(needle),
                "{error}"
            );
        }
    }

    /// The whole path from the properties, in a build without the feature (`cargo test -p
    /// krec-client`); with it, the same properties build the mechanism.
    #[test]
    fn sasl_mechanism_gssapi_builds_only_with_the_feature() {
        let built = crate::SecurityConfig::from_properties([
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "GSSAPI"),
        ]);
        if cfg!(feature = "gssapi") {
            let sasl = built.unwrap().sasl.unwrap();
            assert_eq!(sasl.mechanism(), "GSSAPI");
        } else {
            let error = built.unwrap_err().to_string();
            assert!(error.contains("feature `gssapi`"), "{error}");
        }
    }

    #[test]
    fn the_feature_off_error_says_which_feature_to_turn_on() {
        let error = feature_off().to_string();
        assert!(
            error.contains("sasl.mechanism") && error.contains("feature `gssapi`"),
            "{error}"
        );
    }
}
