//! Thin public wrappers over the crate-private SASL parsers, for `crates/client/fuzz` only
//! (feature `fuzzing`). Not an API: nothing here is stable.

use crate::security::scram::{ScramClient, ScramMechanism};
use crate::security::{jaas, properties, Secret};

/// The client nonce of [`scram_exchange`]'s client: a server-first that goes further must
/// start with `r=` and this.
pub const SCRAM_NONCE: &str = "fyko+d2lbbFgONRv9qkxdawL";
/// The password of [`scram_exchange`]'s client, which no output may contain.
pub const SCRAM_PASSWORD: &str = "pencil-fuzz-secret";

/// How far a SCRAM exchange got.
#[derive(Debug)]
pub struct ScramOutcome {
    /// The client-final message, if the server-first was accepted.
    pub client_final: Option<Vec<u8>>,
    /// True if the server-final verified.
    pub complete: bool,
    /// The fault's text, if one ended the exchange.
    pub fault: Option<String>,
}

/// Feeds `server_first` and then (if it was accepted) `server_final` to a client for user
/// `user` with [`SCRAM_NONCE`], accepting 1..=64 iterations so the fuzzer stays fast.
pub fn scram_exchange(sha512: bool, server_first: &[u8], server_final: &[u8]) -> ScramOutcome {
    let mechanism = if sha512 {
        ScramMechanism::Sha512
    } else {
        ScramMechanism::Sha256
    };
    let password = Secret::new(SCRAM_PASSWORD.to_owned());
    let mut client = match ScramClient::with_nonce(mechanism, "user", &password, SCRAM_NONCE) {
        Ok(client) => client.with_iteration_range(1..=64),
        Err(fault) => {
            return ScramOutcome {
                client_final: None,
                complete: false,
                fault: Some(fault.to_string()),
            }
        }
    };
    let client_final = match client.handle_server_first(server_first) {
        Ok(message) => message,
        Err(fault) => {
            return ScramOutcome {
                client_final: None,
                complete: false,
                fault: Some(fault.to_string()),
            }
        }
    };
    let fault = client.handle_server_final(server_final).err();
    ScramOutcome {
        client_final: Some(client_final),
        complete: client.is_complete(),
        fault: fault.map(|f| f.to_string()),
    }
}

/// A parsed login: (module, flag, options).
pub type JaasParts = (String, String, Vec<(String, String)>);

/// `sasl.jaas.config` parsed into its parts, or the fault's text.
pub fn jaas(text: &str) -> Result<JaasParts, String> {
    jaas::parse(text)
        .map(|login| (login.module, login.flag, login.options))
        .map_err(|fault| fault.to_string())
}

/// A properties file parsed into (key, value, line), or the fault's text.
pub fn properties(input: &[u8]) -> Result<Vec<(String, String, usize)>, String> {
    properties::parse(input)
        .map(|entries| {
            entries
                .into_iter()
                .map(|p| (p.key, p.value, p.line))
                .collect()
        })
        .map_err(|fault| fault.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fuzz corpus's seed exchange (16 iterations; signature from Python's hashlib):
    /// the wrapper reaches a verified end, so the fuzzer can too.
    #[test]
    fn seed_exchange_completes() {
        let outcome = scram_exchange(
            true,
            b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=ZnV6ei1zYWx0,i=16",
            b"v=VxIIxTdY3tJwLz3/jRIx8hjPi+0DSCGo7CpuH1uWa23rB0dqmxjsqeUaEQOWBrGaWuvQ3ssvRe3I/KRgeuCrCg==",
        );
        assert!(outcome.complete, "{outcome:?}");
        assert_eq!(
            jaas("M required k='v';"),
            Ok((
                "M".into(),
                "required".into(),
                vec![("k".into(), "v".into())]
            ))
        );
        assert_eq!(properties(b"k=v"), Ok(vec![("k".into(), "v".into(), 1)]));
    }
}
