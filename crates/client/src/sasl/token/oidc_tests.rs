use std::time::{Duration, SystemTime};

use super::*;
use crate::security::properties_map::map_for_test;
use crate::SecurityConfig;

const SECRET: &str = "s3cr3t-never-shown";

fn librdkafka() -> Vec<(&'static str, &'static str)> {
    vec![
        ("security.protocol", "SASL_SSL"),
        ("sasl.mechanisms", "OAUTHBEARER"),
        ("sasl.oauthbearer.method", "oidc"),
        ("sasl.oauthbearer.client.id", "krec-good"),
        ("sasl.oauthbearer.client.secret", SECRET),
        (
            "sasl.oauthbearer.token.endpoint.url",
            "https://idp.example/oauth2/token",
        ),
        ("sasl.oauthbearer.scope", "kafka read"),
    ]
}

fn settings_of(pairs: &[(&str, &str)]) -> Result<OidcSettings, Error> {
    settings(&map_for_test(pairs)?)
}

#[test]
fn librdkafka_names_give_the_client_and_the_endpoint() {
    let settings = settings_of(&librdkafka()).unwrap();
    assert_eq!(settings.endpoint, "https://idp.example/oauth2/token");
    assert_eq!(settings.client_id, "krec-good");
    assert_eq!(settings.client_secret.expose(), SECRET);
    assert_eq!(settings.scope.as_deref(), Some("kafka read"));
    assert!(settings.ca_pem.is_none(), "the system roots by default");
    let config = SecurityConfig::from_properties(librdkafka()).unwrap();
    let sasl = config.sasl.unwrap();
    assert_eq!(sasl.mechanism(), "OAUTHBEARER");
    assert_eq!(
        sasl.identity(),
        "OAuth client krec-good of https://idp.example/oauth2/token"
    );
    let debug = format!("{sasl:?}");
    assert!(!debug.contains(SECRET), "{debug}");
    assert!(debug.contains("[redacted]"), "{debug}");
}

#[test]
fn java_names_with_either_handler_package_and_jaas_options() {
    for class in [
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
    ] {
        let jaas = format!(
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
             clientId=\"krec-good\" clientSecret=\"{SECRET}\" scope=\"kafka\" \
             extension_logicalCluster=\"lkc-1\" extension_identityPoolId=\"pool-2\";"
        );
        let pairs = [
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "OAUTHBEARER"),
            ("sasl.login.callback.handler.class", class),
            (
                "sasl.oauthbearer.token.endpoint.url",
                "https://idp.example/token",
            ),
            ("sasl.jaas.config", jaas.as_str()),
        ];
        let settings = settings_of(&pairs).unwrap();
        assert_eq!(settings.client_id, "krec-good");
        assert_eq!(settings.client_secret.expose(), SECRET);
        assert_eq!(settings.scope.as_deref(), Some("kafka"));
        assert_eq!(
            settings.extensions,
            [
                ("logicalCluster".to_owned(), "lkc-1".to_owned()),
                ("identityPoolId".to_owned(), "pool-2".to_owned())
            ]
        );
        let sasl = SecurityConfig::from_properties(pairs)
            .unwrap()
            .sasl
            .unwrap();
        assert!(
            sasl.identity().starts_with("OAuth client krec-good"),
            "{class}"
        );
    }
}

#[test]
fn kafka_4_1_client_credentials_names_are_read_too() {
    let settings = settings_of(&[
        ("sasl.oauthbearer.client.credentials.client.id", "c"),
        ("sasl.oauthbearer.client.credentials.client.secret", SECRET),
        (
            "sasl.oauthbearer.token.endpoint.url",
            "http://127.0.0.1:1/t",
        ),
    ])
    .unwrap();
    assert_eq!(settings.client_id, "c");
    assert_eq!(settings.scope, None);
}

#[test]
fn the_secret_comes_from_the_environment_and_never_shows() {
    std::env::set_var("KREC_OIDC_TEST_SECRET", SECRET);
    let mut pairs = librdkafka();
    pairs.retain(|(k, _)| *k != "sasl.oauthbearer.client.secret");
    pairs.push((
        "sasl.oauthbearer.client.secret",
        "${env:KREC_OIDC_TEST_SECRET}",
    ));
    let settings = settings_of(&pairs).unwrap();
    assert_eq!(settings.client_secret.expose(), SECRET);
    assert!(!format!("{settings:?}").contains(SECRET));
    let auth = basic_authorization(&settings);
    assert!(!format!("{auth:?}").contains("Basic"));
    assert_eq!(
        auth.expose(),
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("krec-good:{SECRET}"))
        )
    );
}

#[test]
fn credentials_go_raw_unless_url_encoding_is_asked_for() {
    let mut pairs = librdkafka();
    pairs.push(("sasl.oauthbearer.client.secret", "a~b:c"));
    let basic = |pairs: &[(&str, &str)]| {
        let settings = settings_of(pairs).unwrap();
        let encoded = basic_authorization(&settings).expose().to_owned();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.strip_prefix("Basic ").unwrap())
            .unwrap();
        String::from_utf8(decoded).unwrap()
    };
    assert_eq!(basic(&pairs), "krec-good:a~b:c");
    pairs.push(("sasl.oauthbearer.header.urlencode", "true"));
    assert_eq!(basic(&pairs), "krec-good:a%7Eb%3Ac");
}

#[test]
fn missing_or_wrong_settings_name_the_property() {
    let without = |key: &str| {
        let mut pairs = librdkafka();
        pairs.retain(|(k, _)| *k != key);
        SecurityConfig::from_properties(pairs)
            .unwrap_err()
            .to_string()
    };
    for key in [
        "sasl.oauthbearer.token.endpoint.url",
        "sasl.oauthbearer.client.id",
        "sasl.oauthbearer.client.secret",
    ] {
        let error = without(key);
        assert!(error.contains(key), "{error}");
    }
    let mut pairs = librdkafka();
    pairs.push(("sasl.oauthbearer.token.endpoint.url", "ftp://x/token"));
    let error = settings_of(&pairs).unwrap_err().to_string();
    assert!(error.contains("not an https://"), "{error}");
    let mut pairs = librdkafka();
    pairs.push(("sasl.login.retry.backoff.ms", "soon"));
    let error = settings_of(&pairs).unwrap_err().to_string();
    assert!(error.contains("sasl.login.retry.backoff.ms"), "{error}");
    let mut pairs = librdkafka();
    pairs[2] = ("sasl.oauthbearer.method", "oauth3");
    let error = SecurityConfig::from_properties(pairs)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("oidc"),
        "the known methods are listed: {error}"
    );
}

#[test]
fn the_endpoint_ca_from_librdkafka_or_a_jaas_pem_truststore() {
    let dir = std::env::temp_dir().join(format!("krec-oidc-ca-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(
        &ca,
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let mut pairs = librdkafka();
    let path = ca.to_str().unwrap();
    pairs.push(("https.ca.location", path));
    assert!(settings_of(&pairs)
        .unwrap()
        .ca_pem
        .unwrap()
        .starts_with(b"-----BEGIN"));

    let jaas = |store_type: &str| {
        format!(
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
             clientId=\"c\" clientSecret=\"s\" ssl.truststore.location=\"{path}\" \
             ssl.truststore.type=\"{store_type}\";"
        )
    };
    let java = |store_type: &str| {
        settings_of(&[
            (
                "sasl.oauthbearer.token.endpoint.url",
                "https://idp.example/t",
            ),
            ("sasl.jaas.config", &jaas(store_type)),
        ])
    };
    assert!(java("PEM").unwrap().ca_pem.is_some());
    let error = java("JKS").unwrap_err().to_string();
    assert!(error.contains("only PEM trust stores"), "{error}");

    pairs.pop();
    pairs.push(("https.ca.location", "/nonexistent/ca.pem"));
    let error = settings_of(&pairs).unwrap_err().to_string();
    assert!(
        error.contains("https.ca.location") && error.contains("/nonexistent/ca.pem"),
        "{error}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

fn jwt_with_exp(exp: u64) -> String {
    let part = |json: String| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json);
    format!(
        "{}.{}.sig",
        part(r#"{"alg":"RS256"}"#.to_owned()),
        part(format!(r#"{{"sub":"c","exp":{exp}}}"#))
    )
}

#[test]
fn expiry_is_the_sooner_of_expires_in_and_the_jwt_exp() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    let opaque = r#"{"access_token":"abc","token_type":"bearer","expires_in":300}"#;
    let (token, expires) = parse_token(opaque, now).unwrap();
    assert_eq!(token.expose(), "abc");
    assert_eq!(expires, Some(now + Duration::from_secs(300)));

    let jwt = jwt_with_exp(1_000_060);
    let body = format!(r#"{{"access_token":"{jwt}","expires_in":"3600"}}"#);
    let (_, expires) = parse_token(&body, now).unwrap();
    assert_eq!(
        expires,
        Some(now + Duration::from_secs(60)),
        "exp comes first"
    );

    let body = format!(r#"{{"access_token":"{jwt}"}}"#);
    assert_eq!(
        parse_token(&body, now).unwrap().1,
        Some(now + Duration::from_secs(60))
    );
    assert_eq!(
        parse_token(r#"{"access_token":"abc"}"#, now).unwrap().1,
        None
    );
    for bad in [
        "",
        "<html>",
        r#"{"token_type":"bearer"}"#,
        r#"{"access_token":""}"#,
    ] {
        assert!(parse_token(bad, now).is_err(), "{bad:?}");
    }
}

#[test]
fn a_refusal_says_what_to_fix_and_never_the_secret() {
    let settings = settings_of(&librdkafka()).unwrap();
    let client = refusal(
        &settings,
        401,
        r#"{"error":"invalid_client","error_description":"Client authentication failed"}"#,
    );
    assert_eq!(
        client,
        "https://idp.example/oauth2/token refused OAuth client \"krec-good\": HTTP 401: \
         invalid_client (Client authentication failed); check sasl.oauthbearer.client.id and \
         sasl.oauthbearer.client.secret"
    );
    let scope = refusal(&settings, 400, r#"{"error":"invalid_scope"}"#);
    assert!(
        scope.ends_with("invalid_scope; check sasl.oauthbearer.scope"),
        "{scope}"
    );
    let url = refusal(&settings, 404, "404 page not found");
    assert!(
        url.ends_with("check sasl.oauthbearer.token.endpoint.url"),
        "{url}"
    );
    for text in [client, scope, url] {
        assert!(!text.contains(SECRET));
    }
    let long = format!(
        r#"{{"error":"x","error_description":"{}"}}"#,
        "y".repeat(5000)
    );
    assert!(describe_error(&long).len() < 2 * MAX_DESCRIPTION_CHARS);
}

#[test]
fn form_encoding_of_scopes_and_credentials() {
    assert_eq!(form_encode("kafka read"), "kafka+read");
    assert_eq!(form_encode("api://a/.default"), "api%3A%2F%2Fa%2F.default");
    assert_eq!(form_encode("p@ss:w&rd=é"), "p%40ss%3Aw%26rd%3D%C3%A9");
}
