//! Connections for the calls the clients do not make themselves (topics, configs, positions).

use krec_client::connection::Connection;
use krec_client::ConnectionSettings;

/// A connection to the first of `bootstrap` that answers.
pub(crate) async fn connect_any(
    bootstrap: &[String],
    settings: &ConnectionSettings,
) -> Result<Connection, krec_client::Error> {
    let mut last = None;
    for address in bootstrap {
        match Connection::connect(address, settings).await {
            Ok(connection) => return Ok(connection),
            // The others share the credentials: do not try them all.
            Err(error) if error.is_security_failure() => return Err(error),
            Err(error) => last = Some(error),
        }
    }
    let last = last.unwrap_or_else(|| krec_client::Error::InvalidArgument {
        what: "bootstrap.servers",
        detail: "no broker given".to_owned(),
    });
    Err(krec_client::Error::NoBroker {
        brokers: bootstrap.join(","),
        last: Box::new(last),
    })
}
