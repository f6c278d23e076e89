//! Tests of `message`.
use super::*;
use base64::engine::general_purpose::STANDARD_NO_PAD;

fn at(seconds: u64, millis: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(seconds * 1000 + millis)
}

/// The token's header and claims, decoded; asserts the empty signature.
fn decode(token: &Secret) -> (serde_json::Value, serde_json::Value) {
    let parts: Vec<&str> = token.expose().split('.').collect();
    assert_eq!(parts.len(), 3, "header.claims.signature");
    assert_eq!(parts[2], "", "unsecured JWS has no signature");
    let json = |part: &str| -> serde_json::Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    };
    (json(parts[0]), json(parts[1]))
}

fn fault(config: &str) -> OAuthConfigFault {
    unsecured_jwt(config, at(1_700_000_000, 0)).unwrap_err()
}

#[test]
fn client_first_message_has_kafkas_form() {
    let token = Secret::new("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.".into());
    let message = client_first_message(&token, &[]).unwrap();
    assert_eq!(
        message,
        b"n,,\x01auth=Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.\x01\x01"
    );
    let extensions = vec![
        ("traceId".to_owned(), "abc 123".to_owned()),
        ("logicalCluster".to_owned(), "lkc-x1".to_owned()),
    ];
    let message = client_first_message(&Secret::new("t0k+/en==".into()), &extensions).unwrap();
    assert_eq!(
        message,
        b"n,,\x01auth=Bearer t0k+/en==\x01traceId=abc 123\x01logicalCluster=lkc-x1\x01\x01"
    );
}

#[test]
fn extension_names_kafka_refuses_are_refused() {
    let token = Secret::new("tok".into());
    for name in [
        "auth",
        "",
        "with_underscore",
        "digits1",
        "sp ace",
        "\u{e9}t\u{e9}",
    ] {
        let extensions = vec![(name.to_owned(), "v".to_owned())];
        assert!(
            matches!(
                client_first_message(&token, &extensions),
                Err(OAuthConfigFault::ExtensionName { .. })
            ),
            "{name:?}"
        );
    }
}

#[test]
fn extension_values_kafka_refuses_are_refused() {
    let token = Secret::new("tok".into());
    for value in ["", "a\x01b", "nul\0", "caf\u{e9}"] {
        let extensions = vec![("name".to_owned(), value.to_owned())];
        assert!(
            matches!(
                client_first_message(&token, &extensions),
                Err(OAuthConfigFault::ExtensionValue { .. })
            ),
            "{value:?}"
        );
    }
    let extensions = vec![("x".to_owned(), "\t tab CR\r LF\n ~".to_owned())];
    client_first_message(&token, &extensions).unwrap();
}

#[test]
fn duplicate_extension_names_are_refused() {
    let extensions = vec![
        ("a".to_owned(), "1".to_owned()),
        ("a".to_owned(), "2".to_owned()),
    ];
    assert!(matches!(
        client_first_message(&Secret::new("tok".into()), &extensions),
        Err(OAuthConfigFault::DuplicateExtension { name }) if name == "a"
    ));
}

#[test]
fn tokens_outside_b64token_are_refused_without_quoting_them() {
    for (token, problem) in [
        ("", TokenProblem::Empty),
        ("===", TokenProblem::Character(0)),
        ("abc def", TokenProblem::Character(3)),
        ("ab\x01cd", TokenProblem::Character(2)),
        ("a=b", TokenProblem::Character(1)),
    ] {
        let fault = client_first_message(&Secret::new(token.into()), &[]).unwrap_err();
        assert!(
            matches!(&fault, OAuthConfigFault::Token { path: None, problem: p } if *p == problem),
            "{token:?}: {fault}"
        );
    }
    let fault =
        client_first_message(&Secret::new("secret-part secret-rest".into()), &[]).unwrap_err();
    assert!(!fault.to_string().contains("secret"), "{fault}");
}

#[test]
fn unsecured_jwt_defaults() {
    let jwt = unsecured_jwt("principal=alice", at(1_700_000_000, 123)).unwrap();
    assert_eq!(jwt.principal, "alice");
    assert_eq!(jwt.lifetime, Duration::from_secs(3600));
    assert!(jwt.extensions.is_empty());
    let (header, claims) = decode(&jwt.token);
    assert_eq!(header, serde_json::json!({"alg": "none"}));
    assert_eq!(
        claims,
        serde_json::json!({"sub": "alice", "iat": 1_700_000_000.123, "exp": 1_700_003_600.123})
    );
    assert!(jwt.token.expose().starts_with("eyJhbGciOiJub25lIn0."));
}

#[test]
fn unsecured_jwt_full_config() {
    let config = "principalClaimName=azp principal=admin scopeClaimName=roles \
                  scope=role1,,role2,role1 lifeSeconds=600 extension_traceId=123 \
                  extension_logicalCluster=lkc-abc";
    let jwt = unsecured_jwt(config, at(1_549_251_467, 546)).unwrap();
    assert_eq!(jwt.principal, "admin");
    assert_eq!(jwt.lifetime, Duration::from_secs(600));
    assert_eq!(
        jwt.extensions,
        vec![
            ("traceId".to_owned(), "123".to_owned()),
            ("logicalCluster".to_owned(), "lkc-abc".to_owned()),
        ]
    );
    let (_, claims) = decode(&jwt.token);
    assert_eq!(
        claims,
        serde_json::json!({
            "azp": "admin",
            "iat": 1_549_251_467.546,
            "exp": 1_549_252_067.546,
            "roles": ["role1", "role2"],
        })
    );
    // The extensions go into the initial response as they are.
    let message = client_first_message(&jwt.token, &jwt.extensions).unwrap();
    assert!(message.ends_with(b"\x01traceId=123\x01logicalCluster=lkc-abc\x01\x01"));
}

#[test]
fn whole_second_times_are_still_numbers() {
    let jwt = unsecured_jwt("principal=bob lifeSeconds=1", at(1_700_000_000, 0)).unwrap();
    let (_, claims) = decode(&jwt.token);
    assert_eq!(claims["iat"].as_f64(), Some(1_700_000_000.0));
    assert_eq!(claims["exp"].as_f64(), Some(1_700_000_001.0));
}

#[test]
fn a_scope_of_only_commas_adds_no_claim() {
    let jwt = unsecured_jwt("principal=bob scope=,,", at(1_700_000_000, 0)).unwrap();
    let (_, claims) = decode(&jwt.token);
    assert!(claims.get("scope").is_none());
}

/// Kafka's unsecured validator decodes with Java's basic base64 alphabet (no `-`, `_`):
/// typical claims must not need the URL-safe characters, so both decoders agree.
#[test]
fn common_claims_need_no_url_safe_characters() {
    for config in [
        "principal=alice",
        "principal=User:service-account_1 scope=read,write lifeSeconds=86400",
        "principalClaimName=azp principal=admin@example.com scopeClaimName=roles scope=a.b",
    ] {
        for ms in [0, 1, 999, 123_456] {
            let jwt = unsecured_jwt(config, at(1_700_000_000, ms)).unwrap();
            let claims = jwt.token.expose().split('.').nth(1).unwrap().to_owned();
            assert!(!claims.contains(['-', '_']), "{config}");
            STANDARD_NO_PAD.decode(&claims).unwrap();
        }
    }
}

#[test]
fn hostile_configs_are_refused() {
    assert!(matches!(fault(""), OAuthConfigFault::Empty));
    assert!(matches!(fault("   "), OAuthConfigFault::MissingPrincipal));
    assert!(matches!(
        fault("scope=a lifeSeconds=5"),
        OAuthConfigFault::MissingPrincipal
    ));
    assert!(matches!(
        fault("principal=a colour=blue"),
        OAuthConfigFault::UnknownKey { key, position: 12 } if key == "colour"
    ));
    assert!(matches!(
        fault("principal=a verbose"),
        OAuthConfigFault::UnknownKey { key, .. } if key == "verbose"
    ));
    assert!(matches!(
        fault("principal=a principal=b"),
        OAuthConfigFault::Duplicate { key: "principal" }
    ));
    assert!(matches!(
        fault("principal=a lifeSeconds=5 lifeSeconds=6"),
        OAuthConfigFault::Duplicate { key: "lifeSeconds" }
    ));
    assert!(matches!(
        fault("principal=a extension_x=1 extension_x=2"),
        OAuthConfigFault::DuplicateExtension { name } if name == "x"
    ));
    assert!(matches!(
        fault("principal="),
        OAuthConfigFault::EmptyValue { key: "principal" }
    ));
    assert!(matches!(
        fault("principal=a scope="),
        OAuthConfigFault::EmptyValue { key: "scope" }
    ));
    assert!(matches!(
        fault("principal=a\"b"),
        OAuthConfigFault::Quote { key: "principal" }
    ));
    assert!(matches!(
        fault("principal=a scope=x\"y"),
        OAuthConfigFault::Quote { key: "scope" }
    ));
    assert!(matches!(
        fault("principal=a principalClaimName=exp"),
        OAuthConfigFault::ClaimClash { name } if name == "exp"
    ));
    assert!(matches!(
        fault("principal=a scopeClaimName=sub scope=x"),
        OAuthConfigFault::ClaimClash { name } if name == "sub"
    ));
    assert!(matches!(
        fault("principal=a extension_auth=x"),
        OAuthConfigFault::ExtensionName { .. }
    ));
    assert!(matches!(
        fault("principal=a extension_=x"),
        OAuthConfigFault::ExtensionName { .. }
    ));
    assert!(matches!(
        fault("principal=a extension_x="),
        OAuthConfigFault::ExtensionValue { .. }
    ));
    assert!(matches!(
        fault("principal=a extension_x"),
        OAuthConfigFault::UnknownKey { .. }
    ));
}

#[test]
fn bad_life_seconds_are_refused() {
    for life in [
        "0",
        "-5",
        "+5",
        "1.5",
        "abc",
        "2147483648",
        "99999999999999999999",
        "5s",
    ] {
        assert!(
            matches!(
                fault(&format!("principal=a lifeSeconds={life}")),
                OAuthConfigFault::LifeSeconds
            ),
            "{life}"
        );
    }
    assert!(matches!(
        fault("principal=a lifeSeconds="),
        OAuthConfigFault::EmptyValue { key: "lifeSeconds" }
    ));
    let jwt = unsecured_jwt("principal=a lifeSeconds=2147483647", at(1_700_000_000, 0)).unwrap();
    assert_eq!(jwt.lifetime, Duration::from_secs(2_147_483_647));
}

#[test]
fn a_clock_before_1970_is_refused() {
    let before = UNIX_EPOCH - Duration::from_secs(1);
    assert!(matches!(
        unsecured_jwt("principal=a", before),
        Err(OAuthConfigFault::Clock)
    ));
}

#[test]
fn faults_never_quote_values() {
    for config in [
        "principal=hunter2\"x",
        "principal=a lifeSeconds=hunter2",
        "principal=a extension_x=hunter2\u{7f}",
    ] {
        let text = fault(config).to_string();
        assert!(!text.contains("hunter2"), "{text}");
    }
}

struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, contents: &[u8]) -> TempFile {
        let path = std::env::temp_dir().join(format!("krec-oauth-{}-{name}", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn token_file_is_trimmed() {
    let file = TempFile::new("trim", b"  \n eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.\r\n\n");
    let token = read_token_file(&file.0).unwrap();
    assert_eq!(token.expose(), "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.");
}

#[test]
fn token_file_faults_name_the_path_never_the_token() {
    let empty = TempFile::new("empty", b" \n\t\n");
    let fault = read_token_file(&empty.0).unwrap_err();
    assert!(matches!(
        &fault,
        OAuthConfigFault::Token { path: Some(p), problem: TokenProblem::Empty } if *p == empty.0
    ));
    assert!(
        fault.to_string().contains(&*empty.0.to_string_lossy()),
        "{fault}"
    );

    let spaced = TempFile::new("spaced", b"hunter2 hunter3\n");
    let fault = read_token_file(&spaced.0).unwrap_err();
    assert!(matches!(
        fault,
        OAuthConfigFault::Token {
            problem: TokenProblem::Character(7),
            ..
        }
    ));
    assert!(!fault.to_string().contains("hunter"), "{fault}");

    let binary = TempFile::new("binary", b"tok\xffen");
    assert!(matches!(
        read_token_file(&binary.0).unwrap_err(),
        OAuthConfigFault::Token {
            problem: TokenProblem::NotText(3),
            ..
        }
    ));

    let large = TempFile::new("large", &vec![b'a'; MAX_TOKEN_FILE as usize + 1]);
    assert!(matches!(
        read_token_file(&large.0).unwrap_err(),
        OAuthConfigFault::TokenFileTooLarge { .. }
    ));
    let largest = TempFile::new("largest", &vec![b'a'; MAX_TOKEN_FILE as usize]);
    assert_eq!(read_token_file(&largest.0).unwrap().expose().len(), 65536);

    let missing = std::env::temp_dir().join("krec-oauth-no-such-file");
    let fault = read_token_file(&missing).unwrap_err();
    assert!(matches!(fault, OAuthConfigFault::TokenFile { .. }));
    assert!(
        fault.to_string().contains("krec-oauth-no-such-file"),
        "{fault}"
    );
}
