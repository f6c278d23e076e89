//! The SASL seam from outside the crates, against the secured broker: an embedder's own
//! OAUTHBEARER token source and an embedder's own mechanism authenticate real connections,
//! and a refusal names the embedder's identity.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use krec_client::sasl::{
    BearerToken, BoxError, BoxFuture, SaslConfig, SaslExchange, SaslMechanism, TokenProvider,
};
use krec_client::security::Pem;
use krec_client::{Secret, SecurityConfig, SecurityProtocol, TlsConfig};
use krec_consumer::{Consumer, ConsumerConfig, StartOffset};

use crate::support::{expected, live, numbered, read_to_end};

/// Unsigned JWTs for `sub`, as the broker's unsecured validator takes them; counts its calls.
#[derive(Debug, Default)]
struct UnsignedTokens {
    calls: AtomicUsize,
}

impl TokenProvider for UnsignedTokens {
    fn describe(&self) -> String {
        "the test's unsigned tokens".to_owned()
    }

    fn token<'a>(&'a self, _broker: &'a str) -> BoxFuture<'a, Result<BearerToken, BoxError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let claims = format!(
            r#"{{"sub":"alice","iat":{},"exp":{}}}"#,
            now.as_secs(),
            now.as_secs() + 600
        );
        // {"alg":"none"}, the claims, and an empty signature.
        let token = format!("eyJhbGciOiJub25lIn0.{}.", URL_SAFE_NO_PAD.encode(claims));
        let expires = SystemTime::now() + Duration::from_secs(600);
        Box::pin(async move { Ok(BearerToken::new(Secret::new(token)).expiring_at(expires)) })
    }
}

/// PLAIN written by an embedder: one message, then done.
#[derive(Debug)]
struct EmbeddersPlain {
    user: String,
    password: String,
}

impl SaslMechanism for EmbeddersPlain {
    fn name(&self) -> &'static str {
        "PLAIN"
    }

    fn identity(&self) -> String {
        format!("embedder's user {}", self.user)
    }

    fn start<'a>(
        &'a self,
        _broker: &'a str,
    ) -> BoxFuture<'a, Result<Box<dyn SaslExchange>, BoxError>> {
        let message = format!("\0{}\0{}", self.user, self.password).into_bytes();
        Box::pin(async move { Ok(Box::new(OneMessage(Some(message))) as Box<dyn SaslExchange>) })
    }
}

struct OneMessage(Option<Vec<u8>>);

impl SaslExchange for OneMessage {
    fn step<'a>(
        &'a mut self,
        _challenge: Option<&'a [u8]>,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, BoxError>> {
        let next = self.0.take();
        Box::pin(async move { Ok(next) })
    }
}

/// A consumer of the secured broker's SASL_SSL listener with `sasl`.
fn sasl_ssl_config(
    env: &std::collections::HashMap<String, String>,
    sasl: SaslConfig,
) -> ConsumerConfig {
    let mut config = ConsumerConfig::new(vec![env["SASL_SSL"].clone()]);
    config.max_wait = Duration::from_millis(100);
    config.connection.security = SecurityConfig {
        protocol: SecurityProtocol::SaslSsl,
        tls: TlsConfig {
            ca: Some(Pem::File(env["CA_PEM"].clone().into())),
            ..TlsConfig::default()
        },
        sasl: Some(sasl),
    };
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedders_token_source_and_mechanism_read_a_topic() {
    let (broker, env) = live::secure_broker();
    let topic = live::unique_name(&format!("{}custom-sasl", env["ACL_PREFIX"]));
    broker.create_topic(&topic, 2);
    let acked = broker.produce(&topic, &numbered(20, 2));

    let tokens = Arc::new(UnsignedTokens::default());
    let oauth = SaslConfig::oauthbearer(tokens.clone(), Vec::new());
    let plain = SaslConfig::new(EmbeddersPlain {
        user: env["ALICE_USER"].clone(),
        password: env["ALICE_PASSWORD"].clone(),
    });
    for sasl in [oauth, plain] {
        let mechanism = sasl.mechanism();
        let mut consumer = Consumer::connect(sasl_ssl_config(&env, sasl))
            .await
            .expect(mechanism);
        consumer
            .assign_topic(&topic, StartOffset::Beginning)
            .await
            .expect("assign_topic");
        consumer.stop_at_end(true);
        assert_eq!(
            read_to_end(&mut consumer, &topic).await,
            expected(&acked),
            "{mechanism}"
        );
        consumer.close().await;
    }
    // Asked before each connection opens and at each authentication: never per fetch.
    let calls = tokens.calls.load(Ordering::SeqCst);
    assert!(
        (2..=8).contains(&calls),
        "{calls} token requests for a few connections"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_embedders_mechanism_names_its_identity() {
    let (_broker, env) = live::secure_broker();
    let plain = SaslConfig::new(EmbeddersPlain {
        user: env["ALICE_USER"].clone(),
        password: "not-the-password".to_owned(),
    });
    let error = Consumer::connect(sasl_ssl_config(&env, plain))
        .await
        .expect_err("a wrong password is refused");
    let message = error.to_string();
    assert!(message.contains("embedder's user alice"), "{message}");
    assert!(!message.contains("not-the-password"), "{message}");
}
