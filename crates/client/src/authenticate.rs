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
use crate::sasl::{BoxError, SaslConfig};
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
    let broker = connection.address().to_owned();
    let failed = |detail: BoxError| failure(&broker, sasl, detail.to_string());
    let mut exchange = sasl.get().start(&broker).await.map_err(failed)?;
    let mut message = exchange.step(None).await.map_err(failed)?;
    let mut last_lifetime_ms = 0;
    while let Some(bytes) = message {
        let response = step(connection, sasl, bytes).await?;
        last_lifetime_ms = response.session_lifetime_ms;
        message = exchange
            .step(Some(&response.auth_bytes))
            .await
            .map_err(failed)?;
    }
    Ok(lifetime(last_lifetime_ms))
}

/// Lets `sasl` fetch what it needs before a connection to `broker` opens.
pub(crate) async fn prepare(broker: &str, sasl: &SaslConfig) -> Result<(), Error> {
    sasl.get()
        .prepare(broker)
        .await
        .map_err(|detail| failure(broker, sasl, detail.to_string()))
}

async fn handshake(connection: &mut Connection, mechanism: &'static str) -> Result<(), Error> {
    let request =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
    let response = connection
        .exchange(&request, crate::versions::SASL_HANDSHAKE_VERSION)
        .await?;
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
        return Err(failure(connection.address(), sasl, detail));
    }
    Ok(response)
}

fn failure(broker: &str, sasl: &SaslConfig, detail: String) -> Error {
    Error::Authentication {
        broker: broker.to_owned(),
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
