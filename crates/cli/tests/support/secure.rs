//! The secured broker of `scripts/kafka.sh start --secured`: its listeners, certificates and
//! users, read from the `secure.env` file it writes.

use std::collections::HashMap;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::broker::{varied_record, Broker, ProducePlan, Produced};

/// The secured single node.
pub struct SecureBroker {
    /// Its PLAINTEXT listener, for topics, ACLs and producers.
    pub admin: Broker,
    env: HashMap<String, String>,
}

/// The secured broker `scripts/test.sh` started.
pub fn secure_broker() -> SecureBroker {
    let (admin, env) = krec_testkit::live::secure_broker();
    SecureBroker {
        admin: Broker(admin),
        env,
    }
}

impl SecureBroker {
    /// A value of secure.env (a listener address, a file path, a password).
    pub fn get(&self, key: &str) -> &str {
        self.env
            .get(key)
            .unwrap_or_else(|| panic!("secure.env has no {key}"))
    }

    /// `-X` arguments for `protocol` and `mechanism` as alice (mechanism `None`: SSL, mutual
    /// TLS with alice's PKCS#8 key).
    pub fn alice_properties(&self, protocol: &str, mechanism: Option<&str>) -> Vec<String> {
        let mut properties = vec![format!("security.protocol={protocol}")];
        if protocol.contains("SSL") {
            properties.push(format!("ssl.ca.location={}", self.get("CA_PEM")));
        }
        match mechanism {
            Some("OAUTHBEARER") => properties.extend([
                "sasl.mechanisms=OAUTHBEARER".to_owned(),
                "enable.sasl.oauthbearer.unsecure.jwt=true".to_owned(),
                "sasl.oauthbearer.config=principal=alice".to_owned(),
            ]),
            Some(mechanism) => properties.extend([
                format!("sasl.mechanisms={mechanism}"),
                "sasl.username=alice".to_owned(),
                format!("sasl.password={}", self.get("ALICE_PASSWORD")),
            ]),
            None => properties.extend([
                format!("ssl.certificate.location={}", self.get("CLIENT_CERT_PEM")),
                format!("ssl.key.location={}", self.get("CLIENT_KEY_PKCS8")),
            ]),
        }
        properties
    }
}

/// `krec consume -t TOPIC` with `-X` for each property and `args`, with a time limit.
pub fn krec_secure(
    listener: &str,
    topic: &str,
    properties: &[String],
    args: &[&str],
    limit: Duration,
) -> (Output, Duration) {
    run_limited(
        krec_secure_command(listener, topic, properties, args),
        limit,
    )
}

/// The command [`krec_secure`] runs, for callers that add to it (an environment).
pub fn krec_secure_command(
    listener: &str,
    topic: &str,
    properties: &[String],
    args: &[&str],
) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
    command.args(["consume", "-b", listener, "-t", topic]);
    for property in properties {
        command.args(["-X", property]);
    }
    command.args(args);
    command
}

/// Runs `command` to its end, killing it after `limit` (a hang fails the test, not CI).
pub fn run_limited(mut command: Command, limit: Duration) -> (Output, Duration) {
    let started = Instant::now();
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run krec");
    let pid = child.id();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let killer = std::thread::spawn(move || {
        if finished.recv_timeout(limit).is_err() {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            return true;
        }
        false
    });
    let output = child.wait_with_output().expect("output");
    let _ = done.send(());
    let killed = killer.join().expect("killer thread");
    assert!(
        !killed,
        "{command:?} still running after {limit:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (output, started.elapsed())
}

/// Produces `batches` batches of `per_batch` varied records on two partitions, one batch per
/// producer run with `pause` after each: records that keep coming while a reader goes through
/// several sessions (re-authentication tests). Returns them sorted by partition and offset.
pub fn produce_paced(
    broker: &Broker,
    topic: &str,
    compression: &str,
    (batches, per_batch): (usize, usize),
    pause: Duration,
) -> Vec<Produced> {
    let mut produced = Vec::new();
    for batch in 0..batches {
        let plan = ProducePlan {
            topic: topic.to_owned(),
            compression: compression.to_owned(),
            steps: vec![(
                None,
                (0..per_batch)
                    .map(|i| varied_record(batch * per_batch + i, 2))
                    .collect(),
            )],
            ..ProducePlan::default()
        };
        produced.extend(broker.produce_python(&plan));
        std::thread::sleep(pause);
    }
    produced.sort_by_key(|r| (r.partition, r.offset));
    produced
}
