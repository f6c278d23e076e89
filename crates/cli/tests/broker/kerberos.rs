//! GSSAPI (Kerberos) against the secured broker and the real MIT KDC of `scripts/kdc.sh`
//! (secure.env's KDC_ENV names its kdc.env): reading exactly over SASL_PLAINTEXT and SASL_SSL
//! with a keytab and with a `kinit` ticket cache, a group and `krec metadata` over GSSAPI, and
//! every credential failure a person can cause, each fast and with what to fix.
//!
//! Every krec here gets the KDC's krb5.conf through KRB5_CONFIG, as a Kerberos client does.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::support::broker::{assert_same_records, parse_json_lines, unique_topic, varied_record};
use crate::support::broker::{ProducePlan, Produced};
use crate::support::secure::{
    krec_secure_command, produce_paced, run_limited, secure_broker, SecureBroker,
};

/// A failure must end krec within this (no reconnect loop, no long KDC time-out).
const FAILURE_LIMIT: Duration = Duration::from_secs(10);
/// A successful read of a small topic.
const READ_LIMIT: Duration = Duration::from_secs(60);

/// The KDC's kdc.env: principals, keytabs, krb5.conf.
struct Kdc(HashMap<String, String>);

impl Kdc {
    fn of(broker: &SecureBroker) -> Self {
        let text = std::fs::read_to_string(broker.get("KDC_ENV")).expect("read kdc.env");
        Self(
            text.lines()
                .filter_map(|line| line.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        )
    }

    fn get(&self, key: &str) -> &str {
        self.0
            .get(key)
            .unwrap_or_else(|| panic!("kdc.env has no {key}"))
    }

    /// librdkafka's properties for a keytab.
    fn keytab_properties(
        &self,
        protocol: &str,
        broker: &SecureBroker,
        keytab: &str,
        principal: &str,
    ) -> Vec<String> {
        let mut properties = base_properties(protocol, broker);
        properties.extend([
            "sasl.mechanisms=GSSAPI".to_owned(),
            format!("sasl.kerberos.keytab={keytab}"),
            format!("sasl.kerberos.principal={principal}"),
        ]);
        properties
    }

    /// `kinit` into a new ticket cache in `dir`: with alice's keytab, or bob's password on
    /// stdin. Returns the cache's name.
    fn kinit(&self, dir: &Path, who: &str) -> String {
        let cache = format!("FILE:{}", dir.join(format!("{who}.ccache")).display());
        let mut command = Command::new("kinit");
        command
            .env("KRB5_CONFIG", self.get("KRB5_CONFIG"))
            .env("KRB5CCNAME", &cache);
        let output = if who == "alice" {
            command
                .args([
                    "-k",
                    "-t",
                    self.get("ALICE_KEYTAB"),
                    self.get("ALICE_PRINCIPAL"),
                ])
                .output()
                .expect("run kinit (krb5-user, installed by scripts/install-deps.sh)")
        } else {
            use std::io::Write;
            let mut child = command
                .arg(self.get("BOB_PRINCIPAL"))
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("run kinit");
            let mut stdin = child.stdin.take().expect("stdin");
            writeln!(stdin, "{}", self.get("BOB_PASSWORD")).expect("password");
            drop(stdin);
            child.wait_with_output().expect("kinit")
        };
        assert!(
            output.status.success(),
            "kinit {who}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        cache
    }
}

fn base_properties(protocol: &str, broker: &SecureBroker) -> Vec<String> {
    let mut properties = vec![format!("security.protocol={protocol}")];
    if protocol == "SASL_SSL" {
        properties.push(format!("ssl.ca.location={}", broker.get("CA_PEM")));
    }
    properties
}

/// `krec consume` on `listener` with `krb5_conf` and `ccache` (a cache that does not exist,
/// unless a test made it: no test depends on the machine's own tickets).
fn krec(
    (krb5_conf, ccache): (&str, &str),
    listener: &str,
    topic: &str,
    properties: &[String],
    args: &[&str],
    limit: Duration,
) -> (Output, Duration) {
    let mut command = krec_secure_command(listener, topic, properties, args);
    command
        .env("KRB5_CONFIG", krb5_conf)
        .env("KRB5CCNAME", ccache);
    run_limited(command, limit)
}

/// A topic alice may read (`sec-` prefix) holding varied records written by librdkafka.
fn alice_topic(broker: &SecureBroker, records: usize) -> (String, Vec<Produced>) {
    let topic = unique_topic("sec-krb");
    broker.admin.create_topic(&topic, 2, 1);
    let plan = ProducePlan {
        topic: topic.clone(),
        compression: "zstd".to_owned(),
        steps: vec![(None, (0..records).map(|i| varied_record(i, 2)).collect())],
        ..ProducePlan::default()
    };
    let produced = broker.admin.produce_python(&plan);
    (topic, produced)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn no_cache(dir: &Path) -> String {
    format!("FILE:{}", dir.join("none.ccache").display())
}

#[test]
fn a_keytab_reads_exactly_over_sasl_plaintext_and_sasl_ssl() {
    let broker = secure_broker();
    let kdc = Kdc::of(&broker);
    let dir = tempfile::tempdir().unwrap();
    let (topic, produced) = alice_topic(&broker, 200);
    // librdkafka's names on one listener, Java's JAAS line on the other.
    let librdkafka = kdc.keytab_properties(
        "SASL_PLAINTEXT",
        &broker,
        kdc.get("ALICE_KEYTAB"),
        kdc.get("ALICE_PRINCIPAL"),
    );
    let mut java = base_properties("SASL_SSL", &broker);
    java.extend([
        "sasl.mechanism=GSSAPI".to_owned(),
        "sasl.kerberos.service.name=kafka".to_owned(),
        format!(
            "sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required \
             useKeyTab=true storeKey=true keyTab=\"{}\" principal=\"{}\";",
            kdc.get("ALICE_KEYTAB"),
            kdc.get("ALICE_PRINCIPAL")
        ),
    ]);
    for (listener, properties) in [("SASL_PLAINTEXT", &librdkafka), ("SASL_SSL", &java)] {
        let (output, _) = krec(
            (kdc.get("KRB5_CONFIG"), &no_cache(dir.path())),
            broker.get(listener),
            &topic,
            properties,
            &["-e", "-J"],
            READ_LIMIT,
        );
        assert!(output.status.success(), "{listener}: {}", stderr(&output));
        assert_same_records(&parse_json_lines(&output.stdout), &produced);
    }
}

#[test]
fn a_kinit_ticket_cache_reads_exactly_and_is_whoever_ran_kinit() {
    let broker = secure_broker();
    let kdc = Kdc::of(&broker);
    let dir = tempfile::tempdir().unwrap();
    let (topic, produced) = alice_topic(&broker, 50);
    // alice's cache, named by the JAAS line (useTicketCache, ticketCache), not KRB5CCNAME.
    let alice_cache = kdc.kinit(dir.path(), "alice");
    let mut properties = base_properties("SASL_SSL", &broker);
    properties.extend([
        "sasl.mechanism=GSSAPI".to_owned(),
        format!(
            "sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required \
             useTicketCache=true ticketCache=\"{}\";",
            alice_cache.trim_start_matches("FILE:")
        ),
    ]);
    let (output, _) = krec(
        (kdc.get("KRB5_CONFIG"), &no_cache(dir.path())),
        broker.get("SASL_SSL"),
        &topic,
        &properties,
        &["-e", "-J"],
        READ_LIMIT,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_same_records(&parse_json_lines(&output.stdout), &produced);

    // bob's cache, from his password, through KRB5CCNAME: he authenticates, and the broker
    // knows him as User:bob, who has no ACL on the topic.
    let bob_cache = kdc.kinit(dir.path(), "bob");
    let mut properties = base_properties("SASL_PLAINTEXT", &broker);
    properties.push("sasl.mechanisms=GSSAPI".to_owned());
    let (output, took) = krec(
        (kdc.get("KRB5_CONFIG"), &bob_cache),
        broker.get("SASL_PLAINTEXT"),
        &topic,
        &properties,
        &["-e"],
        FAILURE_LIMIT,
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("TOPIC_AUTHORIZATION_FAILED"),
        "{}",
        stderr(&output)
    );
    assert!(took < FAILURE_LIMIT, "took {took:?}");
}

#[test]
fn metadata_and_a_group_member_work_over_gssapi() {
    let broker = secure_broker();
    let kdc = Kdc::of(&broker);
    let dir = tempfile::tempdir().unwrap();
    let (topic, produced) = alice_topic(&broker, 100);
    let properties = kdc.keytab_properties(
        "SASL_SSL",
        &broker,
        kdc.get("ALICE_KEYTAB"),
        kdc.get("ALICE_PRINCIPAL"),
    );

    let mut metadata = Command::new(env!("CARGO_BIN_EXE_krec"));
    metadata.args(["metadata", "-b", broker.get("SASL_SSL"), "-t", &topic]);
    for property in &properties {
        metadata.args(["-X", property]);
    }
    metadata
        .env("KRB5_CONFIG", kdc.get("KRB5_CONFIG"))
        .env("KRB5CCNAME", no_cache(dir.path()));
    let (output, _) = run_limited(metadata, READ_LIMIT);
    assert!(output.status.success(), "{}", stderr(&output));
    let listing = String::from_utf8_lossy(&output.stdout);
    assert!(
        listing.contains(&topic) && listing.contains("partition 1"),
        "{listing}"
    );

    // A group member commits what it wrote; its second run starts at the end.
    let group = unique_topic("sec-krb-group");
    let args = ["-G", &group, "-e", "-J", "--commit-interval-ms", "200"];
    for expected in [produced, Vec::new()] {
        let (output, _) = krec(
            (kdc.get("KRB5_CONFIG"), &no_cache(dir.path())),
            broker.get("SASL_SSL"),
            &topic,
            &properties,
            &args,
            READ_LIMIT,
        );
        assert!(output.status.success(), "{}", stderr(&output));
        assert_same_records(&parse_json_lines(&output.stdout), &expected);
    }
}

#[test]
fn credential_failures_end_fast_saying_what_to_fix() {
    let broker = secure_broker();
    let kdc = Kdc::of(&broker);
    let dir = tempfile::tempdir().unwrap();
    let topic = "sec-krb-unread";
    let krb5_conf = kdc.get("KRB5_CONFIG");
    // The same krb5.conf, but its KDC at a port nothing listens on.
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down_conf = dir.path().join("kdc-down.conf");
    let text = std::fs::read_to_string(krb5_conf).unwrap();
    std::fs::write(
        &down_conf,
        text.replace(kdc.get("KDC"), &format!("127.0.0.1:{closed_port}")),
    )
    .unwrap();
    let down_conf = down_conf.display().to_string();

    let alice = (kdc.get("ALICE_KEYTAB"), kdc.get("ALICE_PRINCIPAL"));
    let missing_keytab = dir.path().join("none.keytab").display().to_string();
    let cases: Vec<(&str, &str, Vec<String>, Vec<&str>)> = vec![
        (
            "stale keytab",
            krb5_conf,
            kdc.keytab_properties("SASL_SSL", &broker, kdc.get("STALE_KEYTAB"), alice.1),
            vec!["stale", kdc.get("STALE_KEYTAB"), "alice@KREC.TEST"],
        ),
        (
            "unknown principal",
            krb5_conf,
            kdc.keytab_properties(
                "SASL_SSL",
                &broker,
                kdc.get("GHOST_KEYTAB"),
                kdc.get("GHOST_PRINCIPAL"),
            ),
            vec![
                "does not know principal ghost@KREC.TEST",
                "sasl.kerberos.principal",
            ],
        ),
        (
            "principal not in the keytab",
            krb5_conf,
            kdc.keytab_properties("SASL_SSL", &broker, alice.0, "bob@KREC.TEST"),
            vec!["holds no key for bob@KREC.TEST", "klist -k"],
        ),
        (
            "unreadable keytab",
            krb5_conf,
            kdc.keytab_properties("SASL_SSL", &broker, &missing_keytab, alice.1),
            vec![
                "cannot read keytab",
                &missing_keytab,
                "sasl.kerberos.keytab",
            ],
        ),
        (
            "KDC down",
            &down_conf,
            kdc.keytab_properties("SASL_SSL", &broker, alice.0, alice.1),
            vec!["no KDC", "[realms]"],
        ),
        (
            "no ticket cache",
            krb5_conf,
            with(
                base_properties("SASL_SSL", &broker),
                "sasl.mechanisms=GSSAPI",
            ),
            vec!["kinit", "sasl.kerberos.keytab"],
        ),
        (
            "wrong service name",
            krb5_conf,
            with(
                kdc.keytab_properties("SASL_SSL", &broker, alice.0, alice.1),
                "sasl.kerberos.service.name=kafka-other",
            ),
            vec!["kafka-other/127.0.0.1", "sasl.kerberos.service.name"],
        ),
    ];
    for (what, conf, properties, needles) in cases {
        let (output, took) = krec(
            (conf, &no_cache(dir.path())),
            broker.get("SASL_SSL"),
            topic,
            &properties,
            &["-e"],
            FAILURE_LIMIT,
        );
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{what}: {message}");
        for needle in needles {
            assert!(
                message.contains(needle),
                "{what}: no {needle:?} in: {message}"
            );
        }
        assert!(
            !message.contains(kdc.get("BOB_PASSWORD")),
            "{what}: {message}"
        );
        assert!(took < FAILURE_LIMIT, "{what}: took {took:?}");
    }
}

fn with(mut properties: Vec<String>, extra: &str) -> Vec<String> {
    properties.push(extra.to_owned());
    properties
}

#[test]
fn a_consume_across_session_lifetimes_re_authenticates_with_kerberos() {
    let broker = secure_broker();
    let kdc = Kdc::of(&broker);
    let dir = tempfile::tempdir().unwrap();
    let reauth_ms: u64 = broker.get("REAUTH_MS").parse().unwrap();
    let topic = unique_topic("sec-krb-reauth");
    broker.admin.create_topic(&topic, 2, 1);
    // Records keep arriving for about three session lifetimes while krec reads them.
    let (batches, per_batch) = (6, 40);
    let count = (batches * per_batch).to_string();
    let properties = kdc.keytab_properties(
        "SASL_PLAINTEXT",
        &broker,
        kdc.get("ALICE_KEYTAB"),
        kdc.get("ALICE_PRINCIPAL"),
    );
    let args = ["-J", "-c", &count, "--max-wait-ms", "100"];
    let mut command = krec_secure_command(broker.get("SASL_PLAINTEXT"), &topic, &properties, &args);
    command
        .env("KRB5_CONFIG", kdc.get("KRB5_CONFIG"))
        .env("KRB5CCNAME", no_cache(dir.path()))
        .env("RUST_LOG", "krec_client::connection=debug");
    let reader = std::thread::spawn(move || run_limited(command, READ_LIMIT).0);
    let produced = produce_paced(
        &broker.admin,
        &topic,
        "none",
        (batches, per_batch),
        Duration::from_millis(reauth_ms / 2),
    );
    let output = reader.join().unwrap();
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert_same_records(&parse_json_lines(&output.stdout), &produced);
    let renewals = log.matches("re-authenticated").count();
    assert!(renewals >= 2, "only {renewals} re-authentications: {log}");
    assert!(
        !log.contains("WARN") && !log.contains("ERROR"),
        "a clean run: {log}"
    );
}
