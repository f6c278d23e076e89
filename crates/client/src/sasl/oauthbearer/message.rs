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
#[path = "message_tests.rs"]
mod tests;
