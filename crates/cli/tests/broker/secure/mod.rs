//! krec against the secured node of `scripts/kafka.sh start --secured`: every protocol and
//! SASL mechanism reads what librdkafka wrote, exactly; properties from `-X`, `-F`, Java-style
//! files and `$KREC_CONFIG`; a group with commits; re-authentication. The failures a person can
//! cause are in `failures`.

mod failures;

use std::process::Command;
use std::time::Duration;

use crate::support::broker::{assert_same_records, parse_json_lines, unique_topic, varied_record};
use crate::support::broker::{ProducePlan, Produced};
use crate::support::secure::{
    krec_secure, krec_secure_command, produce_paced, run_limited, secure_broker, SecureBroker,
};

/// A failure must end krec within this (no reconnect loop).
const FAILURE_LIMIT: Duration = Duration::from_secs(10);
/// A successful read of a small topic.
const READ_LIMIT: Duration = Duration::from_secs(60);

/// A topic alice may read (`sec-` prefix) holding varied records written by librdkafka.
fn alice_topic(broker: &SecureBroker, records: usize) -> (String, Vec<Produced>) {
    let topic = unique_topic("sec-topic");
    broker.admin.create_topic(&topic, 2, 1);
    let plan = ProducePlan {
        topic: topic.clone(),
        compression: "lz4".to_owned(),
        steps: vec![(None, (0..records).map(|i| varied_record(i, 2)).collect())],
        ..ProducePlan::default()
    };
    let produced = broker.admin.produce_python(&plan);
    (topic, produced)
}

/// Field for field, timestamps included.
fn assert_exact(printed: &[Produced], produced: &[Produced]) {
    assert_same_records(printed, produced);
    let mut printed: Vec<_> = printed
        .iter()
        .map(|r| (r.partition, r.offset, r.timestamp))
        .collect();
    printed.sort_unstable();
    let want: Vec<_> = produced
        .iter()
        .map(|r| (r.partition, r.offset, r.timestamp))
        .collect();
    assert_eq!(printed, want, "timestamps");
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Reads `topic` over `listener` with `properties` (`-e -J`), asserting success and every
/// record of `produced` field for field; `what` names the case in a failure.
fn reads_exactly(
    listener: &str,
    topic: &str,
    properties: &[String],
    produced: &[Produced],
    what: &str,
) -> std::process::Output {
    let (output, _) = krec_secure(listener, topic, properties, &["-e", "-J"], READ_LIMIT);
    assert!(output.status.success(), "{what}: {}", stderr(&output));
    assert_exact(&parse_json_lines(&output.stdout), produced);
    output
}

#[test]
fn every_protocol_and_mechanism_reads_librdkafka_records_exactly() {
    let broker = secure_broker();
    let (topic, produced) = alice_topic(&broker, 300);
    let cases: &[(&str, Option<&str>)] = &[
        ("SASL_SSL", Some("PLAIN")),
        ("SASL_SSL", Some("SCRAM-SHA-256")),
        ("SASL_SSL", Some("SCRAM-SHA-512")),
        ("SASL_SSL", Some("OAUTHBEARER")),
        ("SASL_PLAINTEXT", Some("PLAIN")),
        ("SASL_PLAINTEXT", Some("SCRAM-SHA-256")),
        ("SASL_PLAINTEXT", Some("SCRAM-SHA-512")),
        ("SASL_PLAINTEXT", Some("OAUTHBEARER")),
        ("SSL", None),
    ];
    for (protocol, mechanism) in cases {
        let properties = broker.alice_properties(protocol, *mechanism);
        reads_exactly(
            broker.get(protocol),
            &topic,
            &properties,
            &produced,
            &format!("{protocol} {mechanism:?}"),
        );
    }
}

#[test]
fn tls_1_2_and_1_3_both_read_exactly() {
    let broker = secure_broker();
    let (topic, produced) = alice_topic(&broker, 40);
    for (versions, negotiated) in [
        ("TLSv1.2", "TLSv1_2"),
        ("TLSv1.3", "TLSv1_3"),
        ("TLSv1.2,TLSv1.3", "TLSv1_3"),
    ] {
        let mut properties = broker.alice_properties("SASL_SSL", Some("SCRAM-SHA-256"));
        properties.push(format!("ssl.enabled.protocols={versions}"));
        let mut command =
            krec_secure_command(broker.get("SASL_SSL"), &topic, &properties, &["-e", "-J"]);
        command.env("RUST_LOG", "krec_client::transport=debug");
        let output = run_limited(command, READ_LIMIT).0;
        assert!(output.status.success(), "{versions}: {}", stderr(&output));
        assert!(
            stderr(&output).contains(negotiated),
            "{versions}: {}",
            stderr(&output)
        );
        assert_exact(&parse_json_lines(&output.stdout), &produced);
    }
}

#[test]
fn mutual_tls_takes_pkcs1_sec1_and_encrypted_pkcs8_keys() {
    let broker = secure_broker();
    let (topic, produced) = alice_topic(&broker, 50);
    let ca = format!("ssl.ca.location={}", broker.get("CA_BUNDLE_PEM"));
    let keys = [
        (
            broker.get("CLIENT_CERT_PEM"),
            broker.get("CLIENT_KEY_PKCS1"),
            None,
        ),
        (
            broker.get("CLIENT_EC_CERT_PEM"),
            broker.get("CLIENT_KEY_SEC1"),
            None,
        ),
        (
            broker.get("CLIENT_CERT_PEM"),
            broker.get("CLIENT_KEY_ENCRYPTED"),
            Some(broker.get("CLIENT_KEY_PASSWORD")),
        ),
    ];
    for (certificate, key, password) in keys {
        let mut properties = vec![
            "security.protocol=ssl".to_owned(),
            ca.clone(),
            format!("ssl.certificate.location={certificate}"),
            format!("ssl.key.location={key}"),
        ];
        if let Some(password) = password {
            properties.push(format!("ssl.key.password={password}"));
        }
        reads_exactly(broker.get("SSL"), &topic, &properties, &produced, key);
    }
    // A Java PEM keystore: key and certificate chain in one file.
    let dir = tempfile::tempdir().unwrap();
    let keystore = dir.path().join("keystore.pem");
    let pem = |key: &str| std::fs::read_to_string(broker.get(key)).unwrap();
    std::fs::write(&keystore, pem("CLIENT_KEY_PKCS8") + &pem("CLIENT_CERT_PEM")).unwrap();
    let properties = vec![
        "security.protocol=SSL".to_owned(),
        "ssl.truststore.type=PEM".to_owned(),
        format!("ssl.truststore.location={}", broker.get("CA_PEM")),
        "ssl.keystore.type=PEM".to_owned(),
        format!("ssl.keystore.location={}", keystore.display()),
    ];
    reads_exactly(
        broker.get("SSL"),
        &topic,
        &properties,
        &produced,
        "PEM keystore",
    );

    // The encrypted key without its password: a clear error, before any connection.
    let properties = vec![
        "security.protocol=SSL".to_owned(),
        ca,
        format!("ssl.certificate.location={}", broker.get("CLIENT_CERT_PEM")),
        format!("ssl.key.location={}", broker.get("CLIENT_KEY_ENCRYPTED")),
    ];
    let (output, _) = krec_secure(
        broker.get("SSL"),
        &topic,
        &properties,
        &["-e"],
        FAILURE_LIMIT,
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("ssl.key.password"),
        "{}",
        stderr(&output)
    );
}

/// A Java client.properties (JAAS line, PEM truststore) as `-F`, without `-b`.
fn java_properties(broker: &SecureBroker, mechanism: &str, password: &str) -> String {
    let module = if mechanism == "PLAIN" {
        "org.apache.kafka.common.security.plain.PlainLoginModule"
    } else {
        "org.apache.kafka.common.security.scram.ScramLoginModule"
    };
    format!(
        "# as a cloud console hands it out\n\
         bootstrap.servers={}\n\
         security.protocol=SASL_SSL\n\
         sasl.mechanism={mechanism}\n\
         sasl.jaas.config={module} required username='alice' password='{password}';\n\
         ssl.truststore.type=PEM\n\
         ssl.truststore.location={}\n\
         client.dns.lookup=use_all_dns_ips\n\
         session.timeout.ms=45000\n\
         acks=all\n",
        broker.get("SASL_SSL"),
        broker.get("CA_PEM"),
    )
}

#[test]
fn properties_files_java_style_and_librdkafka_style_with_precedence() {
    let broker = secure_broker();
    let (topic, produced) = alice_topic(&broker, 80);
    let dir = tempfile::tempdir().unwrap();
    let java = dir.path().join("client.properties");
    std::fs::write(
        &java,
        java_properties(&broker, "SCRAM-SHA-512", broker.get("ALICE_PASSWORD")),
    )
    .unwrap();
    let read = |args: &[&str], env: Option<&std::path::Path>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
        command
            .args(["consume", "-t", &topic, "-e", "-J"])
            .args(args);
        match env {
            Some(path) => command.env("KREC_CONFIG", path),
            None => command.env_remove("KREC_CONFIG"),
        };
        run_limited(command, READ_LIMIT).0
    };
    let output = read(&["-F", java.to_str().unwrap()], None);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_exact(&parse_json_lines(&output.stdout), &produced);

    // librdkafka names, a wrong password in the default file fixed by -F, then by -X.
    let wrong = dir.path().join("default.properties");
    std::fs::write(
        &wrong,
        java_properties(&broker, "PLAIN", "not-the-password"),
    )
    .unwrap();
    let librdkafka = dir.path().join("kcat.conf");
    std::fs::write(
        &librdkafka,
        format!(
            "sasl.mechanisms=PLAIN\nsasl.username=alice\nsasl.password={}\nssl.ca.location={}\n",
            broker.get("ALICE_PASSWORD"),
            broker.get("CA_PEM")
        ),
    )
    .unwrap();
    let output = read(&[], Some(&wrong));
    assert_eq!(
        output.status.code(),
        Some(1),
        "the default file alone has the wrong password"
    );
    let output = read(&["-F", librdkafka.to_str().unwrap()], Some(&wrong));
    assert!(
        output.status.success(),
        "-F over $KREC_CONFIG: {}",
        stderr(&output)
    );
    assert_exact(&parse_json_lines(&output.stdout), &produced);
    let fixed = format!("sasl.password={}", broker.get("ALICE_PASSWORD"));
    let output = read(&["-X", &fixed, "-X", "sasl.mechanism=PLAIN"], Some(&wrong));
    assert!(
        output.status.success(),
        "-X over $KREC_CONFIG: {}",
        stderr(&output)
    );

    // A password from the environment rather than argv.
    let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
    command
        .args([
            "consume",
            "-t",
            &topic,
            "-e",
            "-J",
            "-F",
            java.to_str().unwrap(),
        ])
        .args([
            "-X",
            "sasl.password=${env:KREC_TEST_ALICE}",
            "-X",
            "sasl.username=alice",
        ])
        .env("KREC_TEST_ALICE", broker.get("ALICE_PASSWORD"))
        .env_remove("KREC_CONFIG");
    let output = run_limited(command, READ_LIMIT).0;
    assert!(output.status.success(), "${{env:}}: {}", stderr(&output));
    assert_exact(&parse_json_lines(&output.stdout), &produced);
}

#[test]
fn java_console_consumer_and_krec_agree_with_the_same_properties_file() {
    let broker = secure_broker();
    let topic = unique_topic("sec-java");
    broker.admin.create_topic(&topic, 2, 1);
    let records = (0..120)
        .map(|i| {
            let mut record = varied_record(i, 2);
            record.key = Some(format!("k{i}").into_bytes());
            record.value = Some(format!("v{i}-{}", "z".repeat(i % 13)).into_bytes());
            record
        })
        .collect();
    let plan = ProducePlan {
        topic: topic.clone(),
        compression: "zstd".to_owned(),
        steps: vec![(None, records)],
        ..ProducePlan::default()
    };
    let produced = broker.admin.produce_python(&plan);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("client.properties");
    std::fs::write(
        &file,
        java_properties(&broker, "SCRAM-SHA-256", broker.get("ALICE_PASSWORD")),
    )
    .unwrap();
    let java = broker.admin.kafka_sh(
        "tool",
        &[
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            "--bootstrap-server",
            broker.get("SASL_SSL"),
            "--consumer.config",
            file.to_str().unwrap(),
            "--topic",
            &topic,
            "--from-beginning",
            // Its own random group would need an ACL alice lacks.
            "--group",
            &unique_topic("sec-java-group"),
            "--max-messages",
            &produced.len().to_string(),
            "--timeout-ms",
            "30000",
            "--property",
            "print.partition=true",
            "--property",
            "print.offset=true",
            "--property",
            "print.key=true",
        ],
    );
    // "Partition:P\tOffset:O\tKEY\tVALUE"
    let mut java_records: Vec<(i32, i64, String, String)> = java
        .lines()
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let partition = fields.next()?.strip_prefix("Partition:")?.parse().ok()?;
            let offset = fields.next()?.strip_prefix("Offset:")?.parse().ok()?;
            Some((
                partition,
                offset,
                fields.next()?.to_owned(),
                fields.next()?.to_owned(),
            ))
        })
        .collect();
    java_records.sort();
    let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
    command
        .args([
            "consume",
            "-t",
            &topic,
            "-e",
            "-J",
            "-F",
            file.to_str().unwrap(),
        ])
        .env_remove("KREC_CONFIG");
    let output = run_limited(command, READ_LIMIT).0;
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = parse_json_lines(&output.stdout);
    assert_exact(&printed, &produced);
    let text = |b: &Option<Vec<u8>>| String::from_utf8(b.clone().unwrap()).unwrap();
    let mut krec_records: Vec<(i32, i64, String, String)> = printed
        .iter()
        .map(|r| (r.partition, r.offset, text(&r.key), text(&r.value)))
        .collect();
    krec_records.sort();
    assert_eq!(
        java_records.len(),
        produced.len(),
        "the Java consumer read everything: {java}"
    );
    assert_eq!(
        krec_records, java_records,
        "krec and the Java consumer agree record for record"
    );
}

#[test]
fn a_group_over_sasl_ssl_commits_what_it_wrote() {
    let broker = secure_broker();
    let (topic, produced) = alice_topic(&broker, 200);
    let group = unique_topic("sec-group");
    let properties = broker.alice_properties("SASL_SSL", Some("SCRAM-SHA-512"));
    let args = ["-G", &group, "-e", "-J", "--commit-interval-ms", "200"];
    let (output, _) = krec_secure(
        broker.get("SASL_SSL"),
        &topic,
        &properties,
        &args,
        READ_LIMIT,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_exact(&parse_json_lines(&output.stdout), &produced);
    // Everything was committed: the group's second run starts at the end.
    let (output, _) = krec_secure(
        broker.get("SASL_SSL"),
        &topic,
        &properties,
        &args,
        READ_LIMIT,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        parse_json_lines(&output.stdout),
        Vec::new(),
        "nothing left after the commits"
    );
}

#[test]
fn a_long_consume_through_many_reauthentications_is_exact() {
    let broker = secure_broker();
    let reauth_ms: u64 = broker.get("REAUTH_MS").parse().unwrap();
    let topic = unique_topic("sec-reauth");
    broker.admin.create_topic(&topic, 2, 1);
    // Records keep arriving for about six session lifetimes while krec reads them.
    let batches = 12;
    let per_batch = 100;
    let total = batches * per_batch;
    let properties = broker.alice_properties("SASL_SSL", Some("SCRAM-SHA-256"));
    let count = total.to_string();
    let args = ["-J", "-c", &count, "--max-wait-ms", "100"];
    let mut command = krec_secure_command(broker.get("SASL_SSL"), &topic, &properties, &args);
    command.env("RUST_LOG", "krec_client::connection=debug");
    let reader = std::thread::spawn(move || run_limited(command, Duration::from_secs(120)).0);
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
    assert_exact(&parse_json_lines(&output.stdout), &produced);
    let renewals = log.matches("re-authenticated").count();
    assert!(renewals >= 5, "only {renewals} re-authentications: {log}");
    assert!(
        !log.contains("WARN") && !log.contains("ERROR"),
        "a clean run: {log}"
    );
}

/// An unsecured JWT for `principal`, as Kafka's unsecured validator takes it, expiring
/// `life_seconds` from now (a negative life: already expired).
fn unsecured_token(principal: &str, life_seconds: i64) -> String {
    use base64::Engine;
    let encode = |json: String| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    format!(
        "{}.{}.",
        encode(r#"{"alg":"none"}"#.to_owned()),
        encode(format!(
            r#"{{"sub":"{principal}","iat":{now},"exp":{}}}"#,
            now + life_seconds
        ))
    )
}

#[test]
fn an_oauthbearer_token_file_is_read_at_every_authentication() {
    let broker = secure_broker();
    let (topic, produced) = alice_topic(&broker, 30);
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{}\n", unsecured_token("alice", 3600))).unwrap();
    let properties = vec![
        "security.protocol=SASL_SSL".to_owned(),
        format!("ssl.ca.location={}", broker.get("CA_PEM")),
        "sasl.mechanism=OAUTHBEARER".to_owned(),
        format!("sasl.oauthbearer.token.file={}", token_file.display()),
    ];
    reads_exactly(
        broker.get("SASL_SSL"),
        &topic,
        &properties,
        &produced,
        "token file",
    );

    // A long read; the file then holds an expired token: the next re-authentication reads
    // it, and the broker refuses it.
    let command = krec_secure_command(broker.get("SASL_SSL"), &topic, &properties, &["-J"]);
    let reader = std::thread::spawn(move || run_limited(command, Duration::from_secs(60)).0);
    std::thread::sleep(Duration::from_secs(1));
    std::fs::write(&token_file, unsecured_token("alice", -60)).unwrap();
    let output = reader.join().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("OAUTHBEARER authentication as the token in")
            && stderr(&output).contains("invalid_token"),
        "{}",
        stderr(&output)
    );
    assert_exact(&parse_json_lines(&output.stdout), &produced);
}
