//! The GSSAPI mechanism and its exchange: one Kerberos context per authentication, then the
//! security-layer step.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use libgssapi::context::{ClientCtx, CtxFlags, SecurityContext};
use libgssapi::credential::Cred;
use libgssapi::error::Error as GssError;
use libgssapi::name::Name;
use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE};

use super::advice::{advice, Situation};
use super::credentials::{self, Store};
use super::security_layer;
use super::{Credentials, KerberosSettings, DEFAULT_SERVICE_NAME};
use crate::sasl::{BoxError, BoxFuture, SaslExchange, SaslMechanism};

/// Tells the in-memory ticket caches of keytab mechanisms apart within the process.
static NEXT_CACHE: AtomicU64 = AtomicU64::new(1);

/// GSSAPI (Kerberos) with its credentials: build one with [`Gssapi::keytab`] or
/// [`Gssapi::ticket_cache`] and hand it to [`SaslConfig::new`](crate::SaslConfig::new).
pub struct Gssapi {
    service_name: String,
    credentials: Credentials,
    /// With a keytab: the process-private cache (`MEMORY:`) its tickets are kept in, so that
    /// reconnections reuse them and no one else's cache is touched.
    memory_cache: String,
}

impl Gssapi {
    /// Keys of `principal` from the keytab file `keytab`; the tickets stay in this process.
    pub fn keytab(principal: impl Into<String>, keytab: impl Into<PathBuf>) -> Self {
        Self::new(Credentials::Keytab {
            principal: principal.into(),
            keytab: keytab.into(),
        })
    }

    /// Tickets `kinit` left in `cache` (`FILE:/tmp/krb5cc_1000`; `None`: KRB5CCNAME, else the
    /// system default), for `principal` (`None`: the cache's own).
    pub fn ticket_cache(principal: Option<String>, cache: Option<String>) -> Self {
        Self::new(Credentials::TicketCache { principal, cache })
    }

    /// The broker's service name (default `kafka`): the service principal asked for is
    /// `SERVICE/HOST` for the host of the broker address connected to.
    pub fn service_name(mut self, service_name: impl Into<String>) -> Self {
        self.service_name = service_name.into();
        self
    }

    pub(in crate::sasl) fn from_settings(settings: KerberosSettings) -> Self {
        Self::new(settings.credentials).service_name(settings.service_name)
    }

    fn new(credentials: Credentials) -> Self {
        let memory_cache = format!(
            "MEMORY:krec-gssapi-{}-{}",
            std::process::id(),
            NEXT_CACHE.fetch_add(1, Ordering::Relaxed)
        );
        Self {
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            credentials,
            memory_cache,
        }
    }

    /// MIT's credential store for these credentials, and the principal to ask for.
    fn store(&self) -> (Option<String>, Store) {
        match &self.credentials {
            Credentials::Keytab { principal, keytab } => (
                Some(principal.clone()),
                vec![
                    ("client_keytab", keytab.display().to_string()),
                    ("ccache", self.memory_cache.clone()),
                ],
            ),
            Credentials::TicketCache { principal, cache } => (
                principal.clone(),
                cache.iter().map(|c| ("ccache", c.clone())).collect(),
            ),
        }
    }

    fn keytab_path(&self) -> Option<&Path> {
        match &self.credentials {
            Credentials::Keytab { keytab, .. } => Some(keytab),
            Credentials::TicketCache { .. } => None,
        }
    }
}

impl fmt::Debug for Gssapi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gssapi")
            .field("service_name", &self.service_name)
            .field("credentials", &self.credentials)
            .finish()
    }
}

impl SaslMechanism for Gssapi {
    fn name(&self) -> &'static str {
        "GSSAPI"
    }

    fn identity(&self) -> String {
        match &self.credentials {
            Credentials::Keytab { principal, keytab } => {
                format!(
                    "Kerberos principal {principal} (keytab {})",
                    keytab.display()
                )
            }
            Credentials::TicketCache { principal, cache } => format!(
                "Kerberos principal {} (ticket cache {})",
                principal.as_deref().unwrap_or("of the ticket cache"),
                cache.as_deref().unwrap_or("KRB5CCNAME or the default")
            ),
        }
    }

    fn start<'a>(
        &'a self,
        broker: &'a str,
    ) -> BoxFuture<'a, Result<Box<dyn SaslExchange>, BoxError>> {
        Box::pin(async move {
            let host = host_of(broker);
            let service = format!("{}/{host}", self.service_name);
            let explain = Explain {
                principal: match &self.credentials {
                    Credentials::Keytab { principal, .. } => Some(principal.clone()),
                    Credentials::TicketCache { principal, .. } => principal.clone(),
                },
                keytab: self.keytab_path().map(Path::to_path_buf),
                service,
            };
            if let Some(keytab) = self.keytab_path() {
                // The library reports an unreadable keytab as an empty one; say what it is.
                // Opening a file blocks: off the async threads.
                let keytab = keytab.to_path_buf();
                tokio::task::spawn_blocking(move || {
                    std::fs::File::open(&keytab).map(drop).map_err(|error| {
                        format!(
                            "cannot read keytab {} (sasl.kerberos.keytab): {error}",
                            keytab.display()
                        )
                    })
                })
                .await
                .map_err(|error| format!("the GSSAPI task failed: {error}"))??;
            }
            let (principal, store) = self.store();
            let target = format!("{}@{host}", self.service_name);
            let context = tokio::task::spawn_blocking(move || -> Result<ClientCtx, GssError> {
                let cred: Cred = credentials::acquire(principal.as_deref(), &store)?;
                let target = Name::new(target.as_bytes(), Some(GSS_NT_HOSTBASED_SERVICE))?;
                // Mutual: the broker proves it holds the service key. Integrity: the
                // security-layer messages are wrapped.
                let flags = CtxFlags::GSS_C_MUTUAL_FLAG
                    | CtxFlags::GSS_C_SEQUENCE_FLAG
                    | CtxFlags::GSS_C_INTEG_FLAG;
                Ok(ClientCtx::new(
                    Some(cred),
                    target,
                    flags,
                    Some(GSS_MECH_KRB5),
                ))
            })
            .await
            .map_err(|error| format!("the GSSAPI task failed: {error}"))?
            .map_err(|error| explain.error("getting Kerberos credentials", &error))?;
            Ok(Box::new(GssapiExchange {
                context: Some(context),
                state: State::Context,
                explain,
            }) as Box<dyn SaslExchange>)
        })
    }
}

/// The host of `host:port` (`[v6]:port` too); the whole string if it has no port.
fn host_of(broker: &str) -> &str {
    let host = match broker.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => broker,
    };
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// Turns GSS failures into messages that say what to fix.
struct Explain {
    principal: Option<String>,
    keytab: Option<PathBuf>,
    service: String,
}

impl Explain {
    fn error(&self, doing: &str, error: &GssError) -> BoxError {
        let situation = Situation {
            principal: self.principal.as_deref(),
            keytab: self.keytab.as_deref(),
            service: &self.service,
        };
        // The minor status is a krb5 error code, a signed 32-bit value in an unsigned field.
        let advice = advice(error.minor as i32, &situation);
        format!(
            "GSSAPI: {advice} (while {doing} for {}: {error})",
            self.service
        )
        .into()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Kerberos context tokens going back and forth.
    Context,
    /// Established; the broker's security-layer offer comes next.
    SecurityLayer,
    /// The answer is sent; the broker's next (empty) reply ends the exchange.
    Done,
}

struct GssapiExchange {
    /// Taken while a GSS call runs on a blocking thread.
    context: Option<ClientCtx>,
    state: State,
    explain: Explain,
}

impl SaslExchange for GssapiExchange {
    fn step<'a>(
        &'a mut self,
        challenge: Option<&'a [u8]>,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, BoxError>> {
        Box::pin(async move {
            match self.state {
                State::Context => {
                    let input = challenge.map(<[u8]>::to_vec);
                    let (token, complete) = self
                        .with_context(move |context| {
                            let token = context.step(input.as_deref(), None)?;
                            Ok((token.map(|t| t.to_vec()), context.is_complete()))
                        })
                        .await?
                        .map_err(|error| self.explain.error("establishing the context", &error))?;
                    if complete {
                        self.state = State::SecurityLayer;
                    }
                    // An established context with nothing left to say still answers, with an
                    // empty message: the broker sends its offer in reply.
                    Ok(Some(token.unwrap_or_default()))
                }
                State::SecurityLayer => {
                    let offer = challenge.unwrap_or_default().to_vec();
                    let answer = self
                        .with_context(move |context| {
                            let offer = context.unwrap(&offer)?;
                            if let Err(fault) = security_layer::check_offer(&offer) {
                                return Ok(Err(fault));
                            }
                            let answer = context.wrap(false, &security_layer::answer(b""))?;
                            Ok(Ok(answer.to_vec()))
                        })
                        .await?
                        .map_err(|error| {
                            self.explain.error("answering the broker's offer", &error)
                        })?
                        .map_err(|fault| format!("GSSAPI: {fault}"))?;
                    self.state = State::Done;
                    Ok(Some(answer))
                }
                State::Done => Ok(None),
            }
        })
    }
}

impl GssapiExchange {
    /// Runs `call` on the context on a blocking thread (it may contact the KDC).
    async fn with_context<T: Send + 'static>(
        &mut self,
        call: impl FnOnce(&mut ClientCtx) -> Result<T, GssError> + Send + 'static,
    ) -> Result<Result<T, GssError>, BoxError> {
        let mut context = self
            .context
            .take()
            .ok_or("GSSAPI: the exchange was interrupted before")?;
        let (context, result) = tokio::task::spawn_blocking(move || {
            let result = call(&mut context);
            (context, result)
        })
        .await
        .map_err(|error| format!("the GSSAPI task failed: {error}"))?;
        self.context = Some(context);
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_host_is_the_host_connected_to() {
        assert_eq!(host_of("127.0.0.1:9092"), "127.0.0.1");
        assert_eq!(
            host_of("b-1.kafka.example.com:9093"),
            "b-1.kafka.example.com"
        );
        assert_eq!(host_of("[::1]:9092"), "::1");
        assert_eq!(host_of("broker"), "broker");
    }

    #[test]
    fn debug_and_identity_name_the_principal_and_its_source() {
        let keytab = Gssapi::keytab("alice@EXAMPLE.COM", "/etc/alice.keytab");
        assert!(keytab.identity().contains("alice@EXAMPLE.COM"));
        assert!(keytab.identity().contains("/etc/alice.keytab"));
        assert!(format!("{keytab:?}").contains("alice@EXAMPLE.COM"));
        let cache = Gssapi::ticket_cache(None, None).service_name("kafka-x");
        assert!(
            cache.identity().contains("ticket cache"),
            "{}",
            cache.identity()
        );
        assert!(format!("{cache:?}").contains("kafka-x"));
    }

    #[test]
    fn keytab_mechanisms_keep_their_tickets_apart() {
        let one = Gssapi::keytab("a", "/k");
        let two = Gssapi::keytab("a", "/k");
        assert_ne!(one.store().1, two.store().1);
        assert!(one.memory_cache.starts_with("MEMORY:"));
    }
}
