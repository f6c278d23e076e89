//! OAUTHBEARER (RFC 7628) as Kafka uses it (KIP-255): the client's one message, the token
//! file, and librdkafka's unsecured JWT for test clusters.
//!
//! The client's initial response is `n,,\x01auth=Bearer TOKEN\x01[name=value\x01]*\x01`, the
//! form Kafka's `OAuthBearerClientInitialResponse` writes and parses. On failure the broker
//! answers with a JSON error; RFC 7628 section 3.2.3 has the client reply
//! [`FAILURE_ACKNOWLEDGEMENT`] before the broker ends the exchange.

use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use zeroize::Zeroizing;

use crate::security::secret::Secret;

/// RFC 7628 `kvsep`.
const KVSEP: u8 = 0x01;
/// The extension name the token itself travels under.
const AUTH_KEY: &str = "auth";
/// What the client sends after the broker's error challenge (a lone `kvsep`).
pub(crate) const FAILURE_ACKNOWLEDGEMENT: &[u8] = &[KVSEP];
/// Largest token file read.
pub(crate) const MAX_TOKEN_FILE: u64 = 64 * 1024;
/// Longest key or name quoted in a fault.
const MAX_QUOTED: usize = 64;
/// `base64url({"alg":"none"})`, the unsecured JWS header (RFC 7515 appendix A.5).
const UNSECURED_HEADER: &str = "eyJhbGciOiJub25lIn0";
/// librdkafka's default `lifeSeconds`.
const DEFAULT_LIFE_SECONDS: u64 = 3600;
/// librdkafka's bound on `lifeSeconds`: a positive C `int`.
const MAX_LIFE_SECONDS: u64 = i32::MAX as u64;

/// An unsecured JWT made from `sasl.oauthbearer.config`, with what the client needs to use it.
#[derive(Debug, Clone)]
pub(crate) struct UnsecuredJwt {
    /// `header.claims.` with an empty signature.
    pub(crate) token: Secret,
    /// Time from `now` until `exp`.
    pub(crate) lifetime: Duration,
    /// The principal claim's value.
    pub(crate) principal: String,
    /// `extension_NAME=VALUE` pairs in config order, for the client's initial response.
    pub(crate) extensions: Vec<(String, String)>,
}

/// Why a token, token file, extension or `sasl.oauthbearer.config` was refused. Names keys,
/// paths and positions; never a token or a value.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OAuthConfigFault {
    /// The config string is empty.
    #[error("sasl.oauthbearer.config is empty")]
    Empty,
    /// A word that is none of librdkafka's keys.
    #[error("sasl.oauthbearer.config: unknown key `{key}` at byte {position}")]
    UnknownKey {
        /// The word up to its `=` (cut short if long).
        key: String,
        /// Its byte offset.
        position: usize,
    },
    /// One of the five fixed keys given twice.
    #[error("sasl.oauthbearer.config: `{key}` given twice")]
    Duplicate {
        /// The key.
        key: &'static str,
    },
    /// A key with nothing after its `=`.
    #[error("sasl.oauthbearer.config: `{key}` is empty")]
    EmptyValue {
        /// The key.
        key: &'static str,
    },
    /// No `principal=`.
    #[error("sasl.oauthbearer.config: no principal=<value>")]
    MissingPrincipal,
    /// `lifeSeconds` is not a whole number of seconds in 1..=2147483647.
    #[error(
        "sasl.oauthbearer.config: lifeSeconds must be a whole number in 1..={MAX_LIFE_SECONDS}"
    )]
    LifeSeconds,
    /// librdkafka refuses `"` in the principal, the claim names and the scope.
    #[error("sasl.oauthbearer.config: `{key}` cannot hold a '\"' character")]
    Quote {
        /// The key.
        key: &'static str,
    },
    /// The principal or scope claim would overwrite `iat`, `exp` or each other.
    #[error("sasl.oauthbearer.config: claim name `{name}` is used twice in the token")]
    ClaimClash {
        /// The claim name.
        name: String,
    },
    /// An extension name other than letters, or the reserved `auth`.
    #[error("SASL extension name `{name}` is not allowed: letters only, and not `auth`")]
    ExtensionName {
        /// The name (cut short if long).
        name: String,
    },
    /// An extension value that is empty or holds other than visible ASCII, space, tab, CR, LF.
    #[error(
        "SASL extension `{name}` has an empty value or one with characters outside RFC 7628's"
    )]
    ExtensionValue {
        /// The extension's name.
        name: String,
    },
    /// The same extension name twice.
    #[error("SASL extension `{name}` given twice")]
    DuplicateExtension {
        /// The name.
        name: String,
    },
    /// The clock reads before 1970.
    #[error("system clock is before the Unix epoch; cannot date a token")]
    Clock,
    /// A bearer token that is empty or has a character RFC 6750's `b64token` does not allow.
    #[error("bearer token{}: {problem}", from_path(path.as_deref()))]
    Token {
        /// The token file, if the token came from one.
        path: Option<PathBuf>,
        /// What is wrong with it.
        problem: TokenProblem,
    },
    /// The token file could not be read.
    #[error("token file {}: {source}", path.display())]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The token file is larger than [`MAX_TOKEN_FILE`].
    #[error("token file {} is larger than {MAX_TOKEN_FILE} bytes", path.display())]
    TokenFileTooLarge {
        /// The file.
        path: PathBuf,
    },
}

fn from_path(path: Option<&Path>) -> String {
    path.map(|p| format!(" in {}", p.display()))
        .unwrap_or_default()
}

/// What is wrong with a bearer token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenProblem {
    /// Nothing there (or only whitespace, in a file).
    Empty,
    /// Not UTF-8, at this byte.
    NotText(usize),
    /// A character outside `b64token`, at this byte of the token.
    Character(usize),
}

impl fmt::Display for TokenProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenProblem::Empty => f.write_str("empty"),
            TokenProblem::NotText(at) => write!(f, "not UTF-8 at byte {at}"),
            TokenProblem::Character(at) => {
                write!(f, "character at byte {at} is not allowed by RFC 6750")
            }
        }
    }
}

/// The client's initial response carrying `token` and the SASL `extensions`.
///
/// Extension names must be letters and not `auth`; values non-empty visible ASCII, space,
/// tab, CR or LF (what Kafka's broker parses); names unique.
pub(crate) fn client_first_message(
    token: &Secret,
    extensions: &[(String, String)],
) -> Result<Vec<u8>, OAuthConfigFault> {
    let token = token.expose();
    check_token(token).map_err(|problem| OAuthConfigFault::Token {
        path: None,
        problem,
    })?;
    check_extensions(extensions)?;
    let mut message = Vec::with_capacity(
        token.len()
            + 32
            + extensions
                .iter()
                .map(|(k, v)| k.len() + v.len() + 2)
                .sum::<usize>(),
    );
    message.extend_from_slice(b"n,,");
    message.push(KVSEP);
    message.extend_from_slice(b"auth=Bearer ");
    message.extend_from_slice(token.as_bytes());
    message.push(KVSEP);
    for (name, value) in extensions {
        message.extend_from_slice(name.as_bytes());
        message.push(b'=');
        message.extend_from_slice(value.as_bytes());
        message.push(KVSEP);
    }
    message.push(KVSEP);
    Ok(message)
}

/// RFC 6750 `b64token`: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
fn check_token(token: &str) -> Result<(), TokenProblem> {
    let body = token.trim_end_matches('=');
    if body.is_empty() {
        return Err(if token.is_empty() {
            TokenProblem::Empty
        } else {
            TokenProblem::Character(0)
        });
    }
    match body
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)))
    {
        Some(at) => Err(TokenProblem::Character(at)),
        None => Ok(()),
    }
}

fn check_extensions(extensions: &[(String, String)]) -> Result<(), OAuthConfigFault> {
    for (i, (name, value)) in extensions.iter().enumerate() {
        check_extension(name, value)?;
        if extensions[..i].iter().any(|(earlier, _)| earlier == name) {
            return Err(OAuthConfigFault::DuplicateExtension { name: name.clone() });
        }
    }
    Ok(())
}

/// RFC 7628 section 3.1 `key = 1*(ALPHA)`, `value = *(VCHAR / SP / HTAB / CR / LF)`, with
/// Kafka's two extra rules: `auth` is reserved and a value is not empty.
fn check_extension(name: &str, value: &str) -> Result<(), OAuthConfigFault> {
    if name.is_empty() || name == AUTH_KEY || !name.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(OAuthConfigFault::ExtensionName { name: quoted(name) });
    }
    let value_ok = !value.is_empty()
        && value
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) || matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
    if !value_ok {
        return Err(OAuthConfigFault::ExtensionValue {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// At most [`MAX_QUOTED`] characters of `text`, for a fault message.
fn quoted(text: &str) -> String {
    text.chars()
        .take(MAX_QUOTED)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

/// Reads a bearer token from `path`, trimmed of surrounding whitespace.
///
/// Meant to be called on every authentication, so a token rotated on disk is picked up.
pub(crate) fn read_token_file(path: &Path) -> Result<Secret, OAuthConfigFault> {
    let io_fault = |source| OAuthConfigFault::TokenFile {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io_fault)?;
    // One read buffer, sized once: nothing reallocates and leaves a copy behind unwiped.
    let mut bytes = Zeroizing::new(Vec::with_capacity(MAX_TOKEN_FILE as usize + 1));
    file.take(MAX_TOKEN_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(io_fault)?;
    if bytes.len() as u64 > MAX_TOKEN_FILE {
        return Err(OAuthConfigFault::TokenFileTooLarge {
            path: path.to_owned(),
        });
    }
    let token_fault = |problem| OAuthConfigFault::Token {
        path: Some(path.to_owned()),
        problem,
    };
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| token_fault(TokenProblem::NotText(e.valid_up_to())))?;
    let token = text.trim();
    check_token(token).map_err(token_fault)?;
    Ok(Secret::new(token.to_owned()))
}

/// Builds librdkafka's unsecured JWT from a `sasl.oauthbearer.config` string, as librdkafka
/// does with `enable.sasl.oauthbearer.unsecure.jwt=true`: space-separated `principal=`
/// (required), `principalClaimName=` (default `sub`), `scope=` (comma-separated),
/// `scopeClaimName=` (default `scope`), `lifeSeconds=` (default 3600) and
/// `extension_NAME=VALUE`.
///
/// The claims are the principal, `iat` and `exp` in seconds with milliseconds as fractions
/// (librdkafka's `%.3f`), and the scope as a JSON array when it is not empty. Kafka's
/// unsecured validator requires `exp`, `alg` `none`, an empty signature and a non-blank
/// principal claim; it accepts a scope array.
///
/// Kafka's `OAuthBearerUnsecuredJws` decodes the parts with Java's basic base64 decoder, which
/// refuses the URL-safe `-` and `_`. Claims of ASCII text other than `>`, `?` and `~` never
/// encode to those (see the test `common_claims_need_no_url_safe_characters`); others may,
/// for librdkafka's tokens as for ours.
pub(crate) fn unsecured_jwt(
    config: &str,
    now: SystemTime,
) -> Result<UnsecuredJwt, OAuthConfigFault> {
    let parsed = parse_unsecured_config(config)?;
    let principal = parsed.principal.ok_or(OAuthConfigFault::MissingPrincipal)?;
    let principal_claim = parsed.principal_claim.unwrap_or("sub");
    let scope_claim = parsed.scope_claim.unwrap_or("scope");
    for (key, value) in [
        ("principal", Some(principal)),
        ("principalClaimName", Some(principal_claim)),
        ("scopeClaimName", Some(scope_claim)),
        ("scope", parsed.scope),
    ] {
        if value.is_some_and(|v| v.contains('"')) {
            return Err(OAuthConfigFault::Quote { key });
        }
    }
    // librdkafka: empty elements are skipped, repeats dropped, order kept.
    let mut scope: Vec<&str> = Vec::new();
    for item in parsed.scope.unwrap_or("").split(',') {
        if !item.is_empty() && !scope.contains(&item) {
            scope.push(item);
        }
    }
    let mut used = vec!["iat", "exp"];
    for name in [
        Some(principal_claim),
        (!scope.is_empty()).then_some(scope_claim),
    ]
    .into_iter()
    .flatten()
    {
        if used.contains(&name) {
            return Err(OAuthConfigFault::ClaimClash { name: quoted(name) });
        }
        used.push(name);
    }

    let life_seconds = parsed.life_seconds.unwrap_or(DEFAULT_LIFE_SECONDS);
    let since_epoch = now
        .duration_since(UNIX_EPOCH)
        .map_err(|_| OAuthConfigFault::Clock)?;
    let now_ms = u64::try_from(since_epoch.as_millis()).map_err(|_| OAuthConfigFault::Clock)?;
    let exp_ms = now_ms
        .checked_add(life_seconds * 1000)
        .ok_or(OAuthConfigFault::Clock)?;

    let mut claims = serde_json::Map::new();
    claims.insert(principal_claim.to_owned(), principal.into());
    claims.insert("iat".to_owned(), seconds(now_ms));
    claims.insert("exp".to_owned(), seconds(exp_ms));
    if !scope.is_empty() {
        claims.insert(scope_claim.to_owned(), scope.into());
    }
    let claims = serde_json::Value::Object(claims).to_string();
    let mut token = String::with_capacity(UNSECURED_HEADER.len() + claims.len() * 4 / 3 + 4);
    token.push_str(UNSECURED_HEADER);
    token.push('.');
    URL_SAFE_NO_PAD.encode_string(claims.as_bytes(), &mut token);
    token.push('.');
    Ok(UnsecuredJwt {
        token: Secret::new(token),
        lifetime: Duration::from_secs(life_seconds),
        principal: principal.to_owned(),
        extensions: parsed
            .extensions
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    })
}

/// A JWT NumericDate with milliseconds: `1700000000.123`.
fn seconds(ms: u64) -> serde_json::Value {
    // Exact for any date this side of the year 285,000: f64 holds integers up to 2^53.
    let value = ms as f64 / 1000.0;
    serde_json::Number::from_f64(value).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// `sasl.oauthbearer.config` split into its parts, values borrowed from the input.
#[derive(Default)]
struct UnsecuredConfig<'a> {
    principal: Option<&'a str>,
    principal_claim: Option<&'a str>,
    scope: Option<&'a str>,
    scope_claim: Option<&'a str>,
    life_seconds: Option<u64>,
    extensions: Vec<(&'a str, &'a str)>,
}

fn parse_unsecured_config(config: &str) -> Result<UnsecuredConfig<'_>, OAuthConfigFault> {
    if config.is_empty() {
        return Err(OAuthConfigFault::Empty);
    }
    let mut parsed = UnsecuredConfig::default();
    let mut at = 0;
    // librdkafka splits on the space character only; runs of spaces are one separator.
    for word in config.split(' ') {
        let position = at;
        at += word.len() + 1;
        if word.is_empty() {
            continue;
        }
        let (key, value) = word.split_once('=').unwrap_or((word, ""));
        let unknown = || OAuthConfigFault::UnknownKey {
            key: quoted(key),
            position,
        };
        if let Some(name) = key.strip_prefix("extension_") {
            if !word.contains('=') {
                return Err(unknown());
            }
            check_extension(name, value)?;
            if parsed.extensions.iter().any(|(n, _)| *n == name) {
                return Err(OAuthConfigFault::DuplicateExtension {
                    name: name.to_owned(),
                });
            }
            parsed.extensions.push((name, value));
            continue;
        }
        if !word.contains('=') {
            return Err(unknown());
        }
        let (key, slot): (&'static str, &mut Option<&str>) = match key {
            "principal" => ("principal", &mut parsed.principal),
            "principalClaimName" => ("principalClaimName", &mut parsed.principal_claim),
            "scope" => ("scope", &mut parsed.scope),
            "scopeClaimName" => ("scopeClaimName", &mut parsed.scope_claim),
            "lifeSeconds" => {
                if parsed.life_seconds.is_some() {
                    return Err(OAuthConfigFault::Duplicate { key: "lifeSeconds" });
                }
                if value.is_empty() {
                    return Err(OAuthConfigFault::EmptyValue { key: "lifeSeconds" });
                }
                parsed.life_seconds = Some(life_seconds(value)?);
                continue;
            }
            _ => return Err(unknown()),
        };
        if slot.is_some() {
            return Err(OAuthConfigFault::Duplicate { key });
        }
        if value.is_empty() {
            return Err(OAuthConfigFault::EmptyValue { key });
        }
        *slot = Some(value);
    }
    Ok(parsed)
}

/// Decimal digits for a whole number of seconds in 1..=[`MAX_LIFE_SECONDS`].
fn life_seconds(text: &str) -> Result<u64, OAuthConfigFault> {
    if text.is_empty() || text.len() > 10 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(OAuthConfigFault::LifeSeconds);
    }
    text.parse::<u64>()
        .ok()
        .filter(|s| (1..=MAX_LIFE_SECONDS).contains(s))
        .ok_or(OAuthConfigFault::LifeSeconds)
}

#[cfg(test)]
mod tests {
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
        let jwt =
            unsecured_jwt("principal=a lifeSeconds=2147483647", at(1_700_000_000, 0)).unwrap();
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
            let path =
                std::env::temp_dir().join(format!("krec-oauth-{}-{name}", std::process::id()));
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
}
