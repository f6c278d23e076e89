//! The two signed forms of AWS MSK IAM, pure functions of credentials, region, host and time:
//! the native `AWS_MSK_IAM` payload (as AWS's Java library and franz-go send it) and the
//! OAUTHBEARER token (as AWS's `aws-msk-iam-sasl-signer-*` libraries make it).
//!
//! Both are a SigV4 presigned `GET /?Action=kafka-cluster%3AConnect` for the service
//! `kafka-cluster`, signed over the `host` header alone and an empty body; they differ in the
//! host signed for and in how the signed query is carried.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
};
use aws_sigv4::sign::v4;
use base64::Engine as _;

use crate::sasl::BoxError;
use crate::security::secret::Secret;

/// The service MSK IAM signatures are for.
const SERVICE: &str = "kafka-cluster";
/// The one action a signature asks for.
const ACTION: &str = "kafka-cluster:Connect";
/// How long a signature is valid: what AWS's libraries ask for.
pub const SIGNATURE_LIFETIME: Duration = Duration::from_secs(900);
/// The native payload's format version; the broker refuses any other.
pub const PAYLOAD_VERSION: &str = "2020_10_22";

/// The query parameters of a presigned request, in the order AWS's Python signer writes them
/// after `Action` (the signature does not depend on the order; the golden tests do).
const QUERY_ORDER: [&str; 7] = [
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Security-Token",
    "X-Amz-Signature",
];

/// An OAUTHBEARER token for MSK IAM and the moment it stops being valid.
#[derive(Clone, Debug)]
pub struct SignedToken {
    /// Base64url (unpadded) of the presigned URL.
    pub token: Secret,
    /// The end of the signature's lifetime, or of the credentials' if they end first.
    pub expires_at: SystemTime,
}

/// The OAUTHBEARER token for a cluster in `region`: the presigned URL
/// `https://kafka.REGION.amazonaws.com/?Action=kafka-cluster%3AConnect&X-Amz-...&User-Agent=...`,
/// base64url-encoded without padding. `user_agent` is appended after signing, unsigned, as
/// AWS's signers do.
pub fn oauthbearer_token(
    credentials: &Credentials,
    region: &str,
    user_agent: &str,
    time: SystemTime,
) -> Result<SignedToken, BoxError> {
    let host = format!("kafka.{region}.amazonaws.com");
    let params = presign(credentials, region, &host, time)?;
    let mut url = format!("https://{host}/?Action=");
    encode_into(&mut url, ACTION);
    for name in QUERY_ORDER {
        if let Some((_, value)) = params.iter().find(|(n, _)| *n == name) {
            let _ = write!(url, "&{name}=");
            encode_into(&mut url, value);
        }
    }
    url.push_str("&User-Agent=");
    encode_into(&mut url, user_agent);
    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(url.as_bytes());
    Ok(SignedToken {
        token: Secret::new(token),
        expires_at: expiry(credentials, time),
    })
}

/// The native mechanism's first message for the broker at `host` (no port): a JSON object of
/// the presigned query's parameters (names in lower case, values as they are), `version`,
/// `host` and `user-agent`.
pub fn native_payload(
    credentials: &Credentials,
    region: &str,
    host: &str,
    user_agent: &str,
    time: SystemTime,
) -> Result<Vec<u8>, BoxError> {
    let params = presign(credentials, region, host, time)?;
    let mut fields = serde_json::Map::new();
    fields.insert("version".into(), PAYLOAD_VERSION.into());
    fields.insert("host".into(), host.into());
    fields.insert("user-agent".into(), user_agent.into());
    fields.insert("action".into(), ACTION.into());
    for (name, value) in params {
        fields.insert(name.to_ascii_lowercase(), value.into());
    }
    Ok(serde_json::to_vec(&serde_json::Value::Object(fields))?)
}

/// When a signature made at `time` with `credentials` stops being accepted: its own lifetime,
/// or the temporary credentials' if they expire first.
pub fn expiry(credentials: &Credentials, time: SystemTime) -> SystemTime {
    let signature_end = time + SIGNATURE_LIFETIME;
    credentials
        .expiry()
        .map_or(signature_end, |end| end.min(signature_end))
}

/// The presigned query's parameters besides `Action`, values not yet percent-encoded.
fn presign(
    credentials: &Credentials,
    region: &str,
    host: &str,
    time: SystemTime,
) -> Result<Vec<(&'static str, String)>, BoxError> {
    check_region(region)?;
    if host.is_empty() || host.contains(['/', '?', '#', '@', ' ']) {
        return Err(format!("cannot sign for the host {host:?}: not a host name").into());
    }
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(SIGNATURE_LIFETIME);
    let identity = credentials.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(SERVICE)
        .time(time)
        .settings(settings)
        .build()?
        .into();
    let url = format!("https://{host}/?Action=kafka-cluster%3AConnect");
    let request = SignableRequest::new("GET", url, std::iter::empty(), SignableBody::Bytes(&[]))?;
    let (instructions, _signature) = sign(request, &params)?.into_parts();
    let (_headers, query) = instructions.into_parts();
    Ok(query
        .into_iter()
        .map(|(name, value)| (name, value.into_owned()))
        .collect())
}

/// A region name as AWS spells them (`us-east-1`, `cn-north-1`, `us-gov-west-1`).
pub(crate) fn check_region(region: &str) -> Result<(), BoxError> {
    let shaped = !region.is_empty()
        && region.len() <= 32
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !region.starts_with('-')
        && !region.ends_with('-');
    if shaped {
        Ok(())
    } else {
        Err(format!("{region:?} is not an AWS region name (like us-east-1)").into())
    }
}

/// Percent-encodes as SigV4 does: everything but `A-Z a-z 0-9 - _ . ~`.
fn encode_into(out: &mut String, value: &str) {
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(session_token: Option<&str>, expiry: Option<SystemTime>) -> Credentials {
        Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            session_token.map(str::to_owned),
            expiry,
            "test",
        )
    }

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
    }

    fn decoded(token: &SignedToken) -> String {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.token.expose())
            .unwrap();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn the_token_is_the_presigned_url_with_the_user_agent_last() {
        let token = oauthbearer_token(
            &credentials(Some("tok/en+="), None),
            "eu-west-1",
            "krec/0.1.0",
            at(1_714_979_289),
        )
        .unwrap();
        let url = decoded(&token);
        assert!(url.starts_with("https://kafka.eu-west-1.amazonaws.com/?Action=kafka-cluster%3AConnect&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20240506%2Feu-west-1%2Fkafka-cluster%2Faws4_request&X-Amz-Date=20240506T070809Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Security-Token=tok%2Fen%2B%3D&X-Amz-Signature="), "{url}");
        assert!(url.ends_with("&User-Agent=krec%2F0.1.0"), "{url}");
        assert!(
            !token.token.expose().contains(['=', '+', '/']),
            "unpadded base64url"
        );
        assert_eq!(token.expires_at, at(1_714_979_289 + 900));
    }

    #[test]
    fn credentials_that_end_first_end_the_token() {
        let token = oauthbearer_token(
            &credentials(None, Some(at(1000))),
            "us-east-1",
            "krec",
            at(500),
        )
        .unwrap();
        assert_eq!(token.expires_at, at(1000));
        assert!(
            !decoded(&token).contains("Security-Token"),
            "no session token, no parameter"
        );
    }

    #[test]
    fn the_native_payload_names_the_broker_host_and_the_version() {
        let payload = native_payload(
            &credentials(Some("session"), None),
            "us-east-1",
            "b-1.demo.kafka.us-east-1.amazonaws.com",
            "krec",
            at(0),
        )
        .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        assert_eq!(json["version"], "2020_10_22");
        assert_eq!(json["host"], "b-1.demo.kafka.us-east-1.amazonaws.com");
        assert_eq!(json["action"], "kafka-cluster:Connect");
        assert_eq!(
            json["x-amz-credential"],
            "AKIDEXAMPLE/19700101/us-east-1/kafka-cluster/aws4_request"
        );
        assert_eq!(json["x-amz-security-token"], "session");
        assert_eq!(json["x-amz-expires"], "900");
        assert_eq!(json["x-amz-signature"].as_str().unwrap().len(), 64);
    }

    #[test]
    fn a_bad_region_or_host_is_refused_without_the_secret() {
        let creds = credentials(None, None);
        for region in ["", "US-EAST-1", "us east", "-x"] {
            let error = oauthbearer_token(&creds, region, "krec", at(0))
                .unwrap_err()
                .to_string();
            assert!(error.contains("not an AWS region"), "{error}");
        }
        let error = native_payload(&creds, "us-east-1", "a/b", "krec", at(0))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("not a host name") && !error.contains("EXAMPLEKEY"),
            "{error}"
        );
    }
}
