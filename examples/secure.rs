//! Consuming from a secured cluster: SASL_SSL with SCRAM-SHA-512 set up with typed fields, or
//! the same from a `client.properties` file as a cloud provider hands it out.
//!
//! ```text
//! KREC_PASSWORD=... cargo run --example secure -- broker:9093 my-topic alice /path/ca.pem
//! cargo run --example secure -- --properties client.properties my-topic
//! ```

use krec::client::security::properties;
use krec::client::security::{Pem, ScramMechanism};
use krec::client::{SaslConfig, Secret, SecurityConfig, SecurityProtocol, TlsConfig};
use krec::consumer::{Consumer, ConsumerConfig, StartOffset};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (brokers, topic, security) = match args.as_slice() {
        [flag, file, topic] if flag == "--properties" => from_properties(file, topic)?,
        [brokers, topic, user, ca] => (brokers.clone(), topic.clone(), typed(user, ca)?),
        _ => {
            eprintln!("usage: secure BROKERS TOPIC USER CA.pem | secure --properties FILE TOPIC");
            std::process::exit(2);
        }
    };
    let mut config = ConsumerConfig::new(ConsumerConfig::parse_bootstrap(&brokers)?);
    config.connection.security = security;
    let mut consumer = Consumer::connect(config).await?;
    consumer
        .assign_topic(&topic, StartOffset::Beginning)
        .await?;
    consumer.stop_at_end(true);
    let mut records = 0u64;
    while let Some(chunk) = consumer.next_chunk().await? {
        chunk.for_each_record(|_| records += 1)?;
    }
    println!("{records} records");
    Ok(())
}

/// SASL_SSL + SCRAM-SHA-512, the password from `$KREC_PASSWORD` (never on argv).
fn typed(user: &str, ca: &str) -> Result<SecurityConfig, Box<dyn std::error::Error>> {
    Ok(SecurityConfig {
        protocol: SecurityProtocol::SaslSsl,
        tls: TlsConfig {
            ca: Some(Pem::File(ca.into())),
            ..TlsConfig::default()
        },
        sasl: Some(SaslConfig::scram(
            ScramMechanism::Sha512,
            user,
            Secret::new(std::env::var("KREC_PASSWORD")?),
        )),
    })
}

/// librdkafka or Java properties; `bootstrap.servers` names the brokers.
fn from_properties(
    file: &str,
    topic: &str,
) -> Result<(String, String, SecurityConfig), Box<dyn std::error::Error>> {
    let parsed = properties::parse(&std::fs::read(file)?)?;
    let brokers = parsed
        .iter()
        .rev()
        .find(|p| p.key == "bootstrap.servers")
        .map(|p| p.value.clone())
        .ok_or("no bootstrap.servers in the file")?;
    let security = SecurityConfig::from_properties(
        parsed
            .iter()
            .filter(|p| SecurityConfig::handles(&p.key))
            .map(|p| (p.key.as_str(), p.value.as_str())),
    )?;
    Ok((brokers, topic.to_owned(), security))
}
