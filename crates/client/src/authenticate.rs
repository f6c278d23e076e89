//! SASL on a connection (KIP-43, KIP-152): SaslHandshake names the mechanism, then its
//! messages travel in SaslAuthenticate requests; KIP-368's session lifetime comes back with
//! the last one and says when to authenticate again.

use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
};
use kafka_protocol::protocol::StrBytes;

use crate::connection::Connection;
use crate::security::config::{OAuthBearerToken, SaslConfig};
use crate::security::secret::Secret;
use crate::security::{oauthbearer, scram};
use crate::Error;

/// UNSUPPORTED_SASL_MECHANISM.
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;

/// When an authenticated session must be renewed, if the broker limits it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SessionLifetime {
    /// Re-authenticate after this (85-95% of the lifetime, as the Java client does, so that
    /// a group's members do not all renew at once).
    pub(crate) renew_at: Instant,
    /// The broker closes the connection at its next request after this.
    pub(crate) expires_at: Instant,
}

/// Authenticates `connection` with `sasl`; the session's lifetime if the broker set one.
pub(crate) async fn authenticate(
    connection: &mut Connection,
    sasl: &SaslConfig,
) -> Result<Option<SessionLifetime>, Error> {
    handshake(connection, sasl.mechanism()).await?;
    let last = match sasl {
        SaslConfig::Plain { username, password } => {
            let mut message = Vec::with_capacity(username.len() + password.expose().len() + 2);
            message.push(0);
            message.extend_from_slice(username.as_bytes());
            message.push(0);
            message.extend_from_slice(password.expose().as_bytes());
            step(connection, sasl, message).await?
        }
        SaslConfig::Scram {
            mechanism,
            username,
            password,
        } => {
            let fault = |fault: scram::ScramFault| failed(connection, sasl, fault.to_string());
            let mut client =
                scram::ScramClient::new(*mechanism, username, password).map_err(fault)?;
            let server_first = step(connection, sasl, client.client_first()).await?;
            // Up to a million PBKDF2 rounds: off the runtime thread, which serves the fetches.
            let challenge = server_first.auth_bytes;
            let (returned, answer) = tokio::task::spawn_blocking(move || {
                let answer = client.handle_server_first(&challenge);
                (client, answer)
            })
            .await
            .map_err(|e| failed(connection, sasl, format!("SCRAM key derivation: {e}")))?;
            client = returned;
            let client_final = answer.map_err(|f| failed(connection, sasl, f.to_string()))?;
            let server_final = step(connection, sasl, client_final).await?;
            client
                .handle_server_final(&server_final.auth_bytes)
                .map_err(|f| failed(connection, sasl, f.to_string()))?;
            server_final
        }
        SaslConfig::OAuthBearer { token, extensions } => {
            oauthbearer_exchange(connection, sasl, token, extensions).await?
        }
    };
    Ok(lifetime(last.session_lifetime_ms))
}

async fn handshake(connection: &mut Connection, mechanism: &'static str) -> Result<(), Error> {
    let request =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
    // v1: the mechanism's messages then travel in SaslAuthenticate requests (KIP-152).
    let response = connection.exchange(&request, 1).await?;
    match response.error_code {
        0 => Ok(()),
        UNSUPPORTED_SASL_MECHANISM => Err(Error::MechanismNotEnabled {
            broker: connection.address().to_owned(),
            mechanism,
            enabled: response
                .mechanisms
                .iter()
                .map(|m| m.as_str().to_owned())
                .collect(),
        }),
        code => Err(Error::Authentication {
            broker: connection.address().to_owned(),
            mechanism,
            identity: String::new(),
            detail: format!("SaslHandshake error {code} ({})", crate::error_name(code)),
        }),
    }
}

/// One SaslAuthenticate round trip; a broker error is an authentication failure.
async fn step(
    connection: &mut Connection,
    sasl: &SaslConfig,
    message: Vec<u8>,
) -> Result<SaslAuthenticateResponse, Error> {
    let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(message));
    let version = connection
        .versions()
        .negotiate::<SaslAuthenticateRequest>(connection.address())?;
    let response = connection.exchange(&request, version).await?;
    if response.error_code != 0 {
        let detail = match &response.error_message {
            Some(text) if !text.is_empty() => text.as_str().to_owned(),
            _ => crate::error_name(response.error_code),
        };
        return Err(failed(connection, sasl, detail));
    }
    Ok(response)
}

/// RFC 7628: a failure comes back as a JSON challenge, answered with a lone 0x01 so that the
/// broker sends its error.
async fn oauthbearer_exchange(
    connection: &mut Connection,
    sasl: &SaslConfig,
    token: &OAuthBearerToken,
    extensions: &[(String, String)],
) -> Result<SaslAuthenticateResponse, Error> {
    let fault = |f: oauthbearer::OAuthConfigFault| failed(connection, sasl, f.to_string());
    let (token, extensions): (Secret, Vec<(String, String)>) = match token {
        OAuthBearerToken::File(path) => (
            oauthbearer::read_token_file(path).map_err(fault)?,
            extensions.to_vec(),
        ),
        OAuthBearerToken::UnsecuredJwt(config) => {
            let jwt = oauthbearer::unsecured_jwt(config, SystemTime::now()).map_err(fault)?;
            tracing::debug!(principal = %jwt.principal, lifetime = ?jwt.lifetime, "unsecured JWT built");
            let mut all = jwt.extensions;
            all.extend_from_slice(extensions);
            (jwt.token, all)
        }
    };
    let message = oauthbearer::client_first_message(&token, &extensions)
        .map_err(|f| failed(connection, sasl, f.to_string()))?;
    let response = step(connection, sasl, message).await?;
    if response.auth_bytes.is_empty() {
        return Ok(response);
    }
    let challenge = String::from_utf8_lossy(&response.auth_bytes).into_owned();
    match step(
        connection,
        sasl,
        oauthbearer::FAILURE_ACKNOWLEDGEMENT.to_vec(),
    )
    .await
    {
        Err(error) => Err(error),
        Ok(_) => Err(failed(
            connection,
            sasl,
            format!("token refused: {challenge}"),
        )),
    }
}

fn failed(connection: &Connection, sasl: &SaslConfig, detail: String) -> Error {
    Error::Authentication {
        broker: connection.address().to_owned(),
        mechanism: sasl.mechanism(),
        identity: sasl.identity(),
        detail,
    }
}

/// The renewal point and expiry of a session of `lifetime_ms` (0: the broker sets none).
fn lifetime(lifetime_ms: i64) -> Option<SessionLifetime> {
    if lifetime_ms <= 0 {
        return None;
    }
    let now = Instant::now();
    let lifetime = Duration::from_millis(lifetime_ms as u64);
    // Jitter needs no strong randomness: the clock's low bits spread renewals enough.
    let spread = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() % 1000);
    let fraction = 0.85 + 0.10 * f64::from(spread) / 1000.0;
    Some(SessionLifetime {
        renew_at: now + lifetime.mul_f64(fraction),
        expires_at: now + lifetime,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewal_falls_between_85_and_95_percent_of_the_lifetime() {
        let before = Instant::now();
        let session = lifetime(10_000).unwrap();
        let renew = session.renew_at.duration_since(before);
        assert!(renew >= Duration::from_millis(8_500) && renew <= Duration::from_millis(9_600));
        assert!(session.expires_at >= session.renew_at);
        assert!(lifetime(0).is_none());
        assert!(lifetime(-1).is_none());
    }
}
