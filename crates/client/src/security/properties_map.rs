//! librdkafka and Java client property names mapped onto a [`SecurityConfig`].
//!
//! Both families are accepted so that the `client.properties` a cloud provider hands out works
//! unchanged: `sasl.mechanisms`/`sasl.mechanism`, `sasl.username`+`sasl.password` or
//! `sasl.jaas.config`, `ssl.ca.location` or a PEM truststore, and so on.

use std::collections::HashMap;
use std::path::PathBuf;

use super::config::{config_error, Pem, SecurityConfig, SecurityProtocol, TlsConfig};
use super::jaas::{self, JaasLogin};
use super::secret::Secret;
use crate::sasl::SaslConfig;
use crate::Error;

/// Largest file a `${file:PATH}` value may name.
const MAX_VALUE_FILE_BYTES: u64 = 1 << 20;

/// The properties, last value of each key kept, secret indirections resolved.
pub(crate) struct PropertyMap(HashMap<String, String>);

impl PropertyMap {
    /// The value of `key`, if set.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// The first of `keys` that is set.
    pub(crate) fn first(&self, keys: &[&'static str]) -> Option<(&'static str, &str)> {
        keys.iter()
            .find_map(|&key| self.get(key).map(|value| (key, value)))
    }

    /// A `true`/`false` property.
    pub(crate) fn flag(&self, key: &str) -> Result<Option<bool>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(value) => match value.to_ascii_lowercase().as_str() {
                "true" => Ok(Some(true)),
                "false" => Ok(Some(false)),
                _ => Err(config_error(
                    key,
                    format!("{value:?} is neither true nor false"),
                )),
            },
        }
    }
}

/// The properties as `build` reads them, for the unit tests of the modules that read them.
#[cfg(test)]
pub(crate) fn map_for_test(pairs: &[(&str, &str)]) -> Result<PropertyMap, Error> {
    let mut map = HashMap::new();
    for &(key, value) in pairs {
        map.insert(key.to_owned(), resolve_indirection(key, value)?);
    }
    Ok(PropertyMap(map))
}

pub(super) fn build<'a>(
    properties: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<SecurityConfig, Error> {
    let mut map = HashMap::new();
    for (key, value) in properties {
        if !SecurityConfig::handles(key) {
            return Err(config_error(key, "not a security property".to_owned()));
        }
        map.insert(key.to_owned(), resolve_indirection(key, value)?);
    }
    let properties = PropertyMap(map);
    let protocol = match properties.get("security.protocol") {
        Some(name) => name.parse()?,
        None => SecurityProtocol::Plaintext,
    };
    let tls = tls_config(&properties)?;
    let sasl = if protocol.uses_sasl() {
        Some(sasl_config(&properties)?)
    } else {
        None
    };
    Ok(SecurityConfig {
        protocol,
        tls,
        sasl,
    })
}

/// `${env:NAME}` and `${file:PATH}` read the value from elsewhere; anything else is literal.
fn resolve_indirection(key: &str, value: &str) -> Result<String, Error> {
    let Some(inner) = value.strip_prefix("${").and_then(|v| v.strip_suffix('}')) else {
        return Ok(value.to_owned());
    };
    if let Some(name) = inner.strip_prefix("env:") {
        return std::env::var(name)
            .map_err(|_| config_error(key, format!("environment variable {name} is not set")));
    }
    if let Some(path) = inner.strip_prefix("file:") {
        let read = || -> std::io::Result<String> {
            let file = std::fs::File::open(path)?;
            if file.metadata()?.len() > MAX_VALUE_FILE_BYTES {
                return Err(std::io::Error::other("larger than 1 MiB"));
            }
            std::fs::read_to_string(path)
        };
        return read()
            .map(|text| text.trim_end_matches(['\n', '\r']).to_owned())
            .map_err(|error| config_error(key, format!("cannot read {path}: {error}")));
    }
    Err(config_error(
        key,
        "a ${...} value must be ${env:NAME} or ${file:PATH}".to_owned(),
    ))
}

fn sasl_config(properties: &PropertyMap) -> Result<SaslConfig, Error> {
    let Some((key, mechanism)) = properties.first(&["sasl.mechanisms", "sasl.mechanism"]) else {
        return Err(config_error(
            "sasl.mechanism",
            format!(
                "SASL needs a mechanism: one of {}",
                crate::sasl::known_names().join(", ")
            ),
        ));
    };
    crate::sasl::from_properties(key, mechanism, properties)
}

fn tls_config(properties: &PropertyMap) -> Result<TlsConfig, Error> {
    reject_java_store_types(properties)?;
    let ca = pem_from(
        properties,
        &["ssl.ca.location", "ssl.truststore.location"],
        &["ssl.ca.pem", "ssl.truststore.certificates"],
    );
    let (certificate, key) = match properties.get("ssl.keystore.location") {
        // A Java PEM keystore file holds the key and its certificate chain together.
        Some(path) => (Some(Pem::File(path.into())), Some(Pem::File(path.into()))),
        None => (
            pem_from(
                properties,
                &["ssl.certificate.location"],
                &["ssl.certificate.pem", "ssl.keystore.certificate.chain"],
            ),
            pem_from(
                properties,
                &["ssl.key.location"],
                &["ssl.key.pem", "ssl.keystore.key"],
            ),
        ),
    };
    if certificate.is_some() != key.is_some() {
        let (have, missing) = if certificate.is_some() {
            ("a client certificate", "ssl.key.location")
        } else {
            ("a client key", "ssl.certificate.location")
        };
        return Err(config_error(
            missing,
            format!("{have} is set but not {missing}: mutual TLS needs both"),
        ));
    }
    let verify_hostname = match properties.get("ssl.endpoint.identification.algorithm") {
        None => true,
        Some(value) => match value.to_ascii_lowercase().as_str() {
            "https" => true,
            "none" | "" => false,
            _ => {
                return Err(config_error(
                    "ssl.endpoint.identification.algorithm",
                    format!("{value:?} is neither https nor none"),
                ))
            }
        },
    };
    let (tls12, tls13) = tls_versions(properties)?;
    Ok(TlsConfig {
        ca,
        certificate,
        key,
        key_password: properties
            .get("ssl.key.password")
            .map(|p| Secret::new(p.to_owned())),
        verify_certificate: properties
            .flag("enable.ssl.certificate.verification")?
            .unwrap_or(true),
        verify_hostname,
        tls12,
        tls13,
    })
}

/// A PEM from the first file key set, else from the first inline key set.
fn pem_from(
    properties: &PropertyMap,
    file_keys: &[&'static str],
    text_keys: &[&'static str],
) -> Option<Pem> {
    if let Some((_, path)) = properties.first(file_keys) {
        return Some(Pem::File(PathBuf::from(path)));
    }
    properties
        .first(text_keys)
        .map(|(_, text)| Pem::Text(Secret::new(text.to_owned())))
}

/// JKS and PKCS12 stores are binary formats krec does not read: say how to get PEM files.
fn reject_java_store_types(properties: &PropertyMap) -> Result<(), Error> {
    for (key, store) in [
        ("ssl.truststore.type", "ssl.truststore.location"),
        ("ssl.keystore.type", "ssl.keystore.location"),
    ] {
        let kind = properties
            .get(key)
            .unwrap_or(if properties.get(store).is_some() {
                "JKS"
            } else {
                "PEM"
            });
        if !kind.eq_ignore_ascii_case("PEM") {
            return Err(config_error(
                key,
                format!(
                    "{kind} stores are not supported; convert the store to PEM and set \
                     {key}=PEM (keytool -importkeystore -srckeystore STORE -destkeystore \
                     store.p12 -deststoretype PKCS12, then openssl pkcs12 -in store.p12 \
                     -nokeys -out certs.pem, and -nocerts -nodes -out key.pem for a keystore)"
                ),
            ));
        }
    }
    Ok(())
}

/// Which of TLS 1.2 and 1.3 to offer: `ssl.enabled.protocols` picks; `ssl.protocol` (Java's
/// SSLContext name) is only checked. An older version asked for is refused, not ignored.
fn tls_versions(properties: &PropertyMap) -> Result<(bool, bool), Error> {
    let mut enabled = (true, true);
    for key in ["ssl.protocol", "ssl.enabled.protocols"] {
        let Some(value) = properties.get(key) else {
            continue;
        };
        let mut listed = (false, false);
        for version in value.split(',').map(str::trim).filter(|v| !v.is_empty()) {
            match version {
                "TLSv1.2" => listed.0 = true,
                "TLSv1.3" => listed.1 = true,
                "TLS" => listed = (true, true),
                _ => {
                    return Err(config_error(
                        key,
                        format!("{version} is not supported: krec speaks TLSv1.2 and TLSv1.3"),
                    ))
                }
            }
        }
        if key == "ssl.enabled.protocols" {
            enabled = listed;
        }
    }
    if enabled == (false, false) {
        return Err(config_error(
            "ssl.enabled.protocols",
            "lists no TLS version".to_owned(),
        ));
    }
    Ok(enabled)
}

impl PropertyMap {
    /// User name and password: librdkafka's two properties, else the JAAS line's options (of
    /// login `module`).
    pub(crate) fn credentials(&self, module: &str) -> Result<(String, Secret), Error> {
        let jaas = self.jaas()?;
        let from_jaas = |option: &str| -> Result<Option<String>, Error> {
            let Some(login) = &jaas else { return Ok(None) };
            check_module(login, module)?;
            Ok(login.option(option).map(str::to_owned))
        };
        let username = match self.get("sasl.username") {
            Some(name) => name.to_owned(),
            None => from_jaas("username")?.ok_or_else(|| {
                config_error(
                    "sasl.username",
                    "not set (nor a username in sasl.jaas.config)".to_owned(),
                )
            })?,
        };
        let password = match self.get("sasl.password") {
            Some(password) => password.to_owned(),
            None => from_jaas("password")?.ok_or_else(|| {
                config_error(
                    "sasl.password",
                    "not set (nor a password in sasl.jaas.config)".to_owned(),
                )
            })?,
        };
        Ok((username, Secret::new(password)))
    }

    /// `sasl.jaas.config` parsed, if set.
    pub(crate) fn jaas(&self) -> Result<Option<JaasLogin>, Error> {
        self.get("sasl.jaas.config")
            .map(|text| {
                jaas::parse(text)
                    .map_err(|fault| config_error("sasl.jaas.config", fault.to_string()))
            })
            .transpose()
    }
}

/// The JAAS login module must be the mechanism's (its last dotted part is compared).
pub(crate) fn check_module(login: &JaasLogin, expected: &str) -> Result<(), Error> {
    let class = login.module.rsplit('.').next().unwrap_or(&login.module);
    if class == expected {
        Ok(())
    } else {
        Err(config_error(
            "sasl.jaas.config",
            format!(
                "login module {} does not match sasl.mechanism (expected {expected})",
                login.module
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build_from(pairs: &[(&str, &str)]) -> Result<SecurityConfig, Error> {
        build(pairs.iter().copied())
    }

    #[test]
    fn librdkafka_names_build_sasl_ssl_plain() {
        let config = build_from(&[
            ("security.protocol", "sasl_ssl"),
            ("sasl.mechanisms", "PLAIN"),
            ("sasl.username", "alice"),
            ("sasl.password", "alice-secret"),
            ("ssl.ca.location", "/ca.pem"),
        ])
        .unwrap();
        assert_eq!(config.protocol, SecurityProtocol::SaslSsl);
        assert_eq!(config.tls.ca, Some(Pem::File("/ca.pem".into())));
        let sasl = config.sasl.unwrap();
        assert_eq!(
            (sasl.mechanism(), sasl.identity()),
            ("PLAIN", r#"user "alice""#.into())
        );
    }

    #[test]
    fn java_names_with_jaas_build_scram_with_a_pem_truststore() {
        let config = build_from(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.scram.ScramLoginModule required \
                 username=\"alice\" password=\"alice-secret\";",
            ),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", "/ca.pem"),
        ])
        .unwrap();
        assert_eq!(config.tls.ca, Some(Pem::File("/ca.pem".into())));
        let sasl = config.sasl.unwrap();
        assert_eq!(
            (sasl.mechanism(), sasl.identity()),
            ("SCRAM-SHA-512", r#"user "alice""#.into())
        );
    }

    #[test]
    fn a_java_pem_keystore_is_the_key_and_the_chain() {
        let config = build_from(&[
            ("security.protocol", "SSL"),
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", "/ks.pem"),
            ("ssl.key.password", "kp"),
        ])
        .unwrap();
        assert_eq!(config.tls.certificate, Some(Pem::File("/ks.pem".into())));
        assert_eq!(config.tls.key, Some(Pem::File("/ks.pem".into())));
        assert_eq!(config.tls.key_password, Some(Secret::new("kp".into())));
        let error = build_from(&[("ssl.certificate.location", "/c.pem")]).unwrap_err();
        assert!(error.to_string().contains("ssl.key.location"), "{error}");
    }

    #[test]
    fn a_jaas_module_of_another_mechanism_is_refused() {
        let error = build_from(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "SCRAM-SHA-256"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required \
                 username='u' password='p';",
            ),
        ])
        .unwrap_err();
        assert!(error.to_string().contains("does not match"), "{error}");
        assert!(!error.to_string().contains("'p'"));
    }

    #[test]
    fn jks_stores_and_old_tls_are_refused_with_a_way_out() {
        let error = build_from(&[("ssl.truststore.location", "/t.jks")]).unwrap_err();
        assert!(
            error.to_string().contains("keytool -importkeystore"),
            "{error}"
        );
        let error = build_from(&[("ssl.enabled.protocols", "TLSv1.1,TLSv1.2")]).unwrap_err();
        assert!(error.to_string().contains("TLSv1.1"), "{error}");
    }

    #[test]
    fn secrets_come_from_the_environment_or_a_file() {
        std::env::set_var("KREC_TEST_PASSWORD_VAR", "from-env");
        let dir = std::env::temp_dir().join(format!("krec-secret-{}", std::process::id()));
        std::fs::write(&dir, "from-file\n").unwrap();
        let file_value = format!("${{file:{}}}", dir.display());
        let config = build_from(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", "${env:KREC_TEST_PASSWORD_VAR}"),
            ("sasl.password", &file_value),
        ])
        .unwrap();
        let password = resolve_indirection("sasl.password", &file_value).unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(password, "from-file");
        assert_eq!(config.sasl.unwrap().identity(), r#"user "from-env""#);
        let error = build_from(&[("sasl.password", "${env:KREC_NO_SUCH_VARIABLE}")]).unwrap_err();
        assert!(
            error.to_string().contains("KREC_NO_SUCH_VARIABLE"),
            "{error}"
        );
    }

    #[test]
    fn oauthbearer_sources() {
        let unsecured = build_from(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "OAUTHBEARER"),
            ("enable.sasl.oauthbearer.unsecure.jwt", "true"),
            ("sasl.oauthbearer.config", "principal=alice"),
        ])
        .unwrap();
        assert_eq!(
            unsecured.sasl.as_ref().unwrap().identity(),
            "an unsecured JWT (principal=alice)"
        );
        let java = build_from(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "OAUTHBEARER"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
                 unsecuredLoginStringClaim_sub=\"alice\";",
            ),
        ])
        .unwrap();
        assert_eq!(unsecured.sasl, java.sasl);
        let missing = build_from(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "OAUTHBEARER"),
        ])
        .unwrap_err();
        assert!(missing.to_string().contains("sasl.oauthbearer.token.file"));
    }

    #[test]
    fn unknown_and_unsupported_settings_name_the_property() {
        let error = build_from(&[("ssl.cipher.suites", "x")]).unwrap_err();
        assert!(error.to_string().contains("ssl.cipher.suites"), "{error}");
        let error = build_from(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "NTLM"),
        ])
        .unwrap_err();
        assert!(error.to_string().contains("NTLM"), "{error}");
        let error = build_from(&[("security.protocol", "TLS")]).unwrap_err();
        assert!(error.to_string().contains("security.protocol"), "{error}");
    }
}
