//! Every failure a person can cause on the secured node: wrong credentials, certificates,
//! protocols, ACLs and properties, each with its message, exit status and time bound, and no
//! secret in any log.

use super::*;

/// Runs krec expecting it to fail fast with `status`, its message holding every `needle`
/// and never a password.
fn assert_fails(
    broker: &SecureBroker,
    listener: &str,
    topic: &str,
    properties: &[String],
    args: &[&str],
    status: i32,
    needles: &[&str],
) {
    let (output, took) = krec_secure(broker.get(listener), topic, properties, args, FAILURE_LIMIT);
    let message = stderr(&output);
    assert_eq!(
        output.status.code(),
        Some(status),
        "{properties:?}: {message}"
    );
    for needle in needles {
        assert!(
            message.contains(needle),
            "{properties:?}: no {needle:?} in: {message}"
        );
    }
    for secret in [
        broker.get("ALICE_PASSWORD"),
        broker.get("BOB_PASSWORD"),
        "wrong-password",
    ] {
        assert!(!message.contains(secret), "a password leaked: {message}");
    }
    assert!(took < FAILURE_LIMIT, "took {took:?}");
}

fn with(mut properties: Vec<String>, extra: &[String]) -> Vec<String> {
    properties.extend_from_slice(extra);
    properties
}

#[test]
fn authentication_failures_are_fatal_and_clear() {
    let broker = secure_broker();
    let (topic, _) = alice_topic(&broker, 5);
    for mechanism in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] {
        let properties = with(
            broker.alice_properties("SASL_SSL", Some(mechanism)),
            &["sasl.password=wrong-password".to_owned()],
        );
        let expected = format!("SASL {mechanism} authentication as user \"alice\" failed");
        assert_fails(
            &broker,
            "SASL_SSL",
            &topic,
            &properties,
            &["-e"],
            1,
            &[&expected],
        );
    }
    let properties = broker.alice_properties("SASL_PLAINTEXT", Some("SCRAM-SHA-512"));
    assert_fails(
        &broker,
        "SASL_PLAIN_ONLY",
        &topic,
        &properties,
        &["-e"],
        1,
        &["SCRAM-SHA-512 is not enabled", "it offers PLAIN"],
    );
}

#[test]
fn certificate_failures_name_what_to_fix() {
    let broker = secure_broker();
    let (topic, produced) = alice_topic(&broker, 5);
    let sasl_ssl = broker.alice_properties("SASL_SSL", Some("PLAIN"));
    let other_ca = with(
        sasl_ssl.clone(),
        &[format!("ssl.ca.location={}", broker.get("OTHER_CA_PEM"))],
    );
    assert_fails(
        &broker,
        "SASL_SSL",
        &topic,
        &other_ca,
        &["-e"],
        1,
        &["issued by", "krec test CA", "not trusted"],
    );
    let wrong_host = vec![
        "security.protocol=SSL".to_owned(),
        format!("ssl.ca.location={}", broker.get("CA_PEM")),
    ];
    assert_fails(
        &broker,
        "SSL_WRONG_HOST",
        &topic,
        &wrong_host,
        &["-e"],
        1,
        &["host name mismatch", "wrong.example"],
    );
    let foreign = vec![
        "security.protocol=SSL".to_owned(),
        format!("ssl.ca.location={}", broker.get("CA_PEM")),
        format!(
            "ssl.certificate.location={}",
            broker.get("FOREIGN_CLIENT_CERT_PEM")
        ),
        format!("ssl.key.location={}", broker.get("FOREIGN_CLIENT_KEY")),
    ];
    assert_fails(
        &broker,
        "SSL",
        &topic,
        &foreign,
        &["-e"],
        1,
        &["refused our client certificate"],
    );
    let none = vec![
        "security.protocol=SSL".to_owned(),
        format!("ssl.ca.location={}", broker.get("CA_PEM")),
    ];
    assert_fails(
        &broker,
        "SSL",
        &topic,
        &none,
        &["-e"],
        1,
        &["refused our client certificate"],
    );

    // Checks turned off: the read works, with one warning.
    let unverified = with(
        sasl_ssl,
        &[
            "enable.ssl.certificate.verification=false".to_owned(),
            format!("ssl.ca.location={}", broker.get("OTHER_CA_PEM")),
        ],
    );
    let output = reads_exactly(
        broker.get("SASL_SSL"),
        &topic,
        &unverified,
        &produced,
        "verification off",
    );
    assert_eq!(
        stderr(&output).matches("verification is off").count(),
        1,
        "{}",
        stderr(&output)
    );
    let no_hostname = with(
        wrong_host,
        &["ssl.endpoint.identification.algorithm=none".to_owned()],
    );
    reads_exactly(
        broker.get("SSL_WRONG_HOST"),
        &topic,
        &no_hostname,
        &produced,
        "host name check off",
    );
}

#[test]
fn a_protocol_that_does_not_match_the_listener_is_detected() {
    let broker = secure_broker();
    let (topic, _) = alice_topic(&broker, 5);
    let tls = vec![
        "security.protocol=SSL".to_owned(),
        format!("ssl.ca.location={}", broker.get("CA_PEM")),
    ];
    assert_fails(
        &broker,
        "PLAINTEXT",
        &topic,
        &tls,
        &["-e"],
        1,
        &["does not speak TLS"],
    );
    let plain = vec!["security.protocol=PLAINTEXT".to_owned()];
    assert_fails(
        &broker,
        "SSL_WRONG_HOST",
        &topic,
        &plain,
        &["-e"],
        1,
        &["security.protocol=SSL"],
    );
}

#[test]
fn missing_acls_are_fatal_and_say_which() {
    let broker = secure_broker();
    let (topic, _) = alice_topic(&broker, 5);
    let bob = vec![
        "security.protocol=SASL_SSL".to_owned(),
        format!("ssl.ca.location={}", broker.get("CA_PEM")),
        "sasl.mechanisms=SCRAM-SHA-256".to_owned(),
        "sasl.username=bob".to_owned(),
        format!("sasl.password={}", broker.get("BOB_PASSWORD")),
    ];
    assert_fails(
        &broker,
        "SASL_SSL",
        &topic,
        &bob,
        &["-e"],
        1,
        &["TOPIC_AUTHORIZATION_FAILED", &format!("Topic:{topic}")],
    );
    let alice = broker.alice_properties("SASL_SSL", Some("PLAIN"));
    assert_fails(
        &broker,
        "SASL_SSL",
        &topic,
        &alice,
        &["-G", "not-alices-group", "-e"],
        1,
        &["GROUP_AUTHORIZATION_FAILED", "Group:not-alices-group"],
    );
}

#[test]
fn bad_properties_exit_2_naming_the_property() {
    let broker = secure_broker();
    let topic = "sec-unused";
    let cases: &[(&[&str], &str)] = &[
        (&["fetch.magic.number=1"], "fetch.magic.number"),
        (&["security.protocol=TLS"], "security.protocol"),
        (&["ssl.truststore.location=/x.jks"], "keytool"),
        (
            &[
                "security.protocol=SASL_SSL",
                "sasl.mechanism=GSSAPI",
                "sasl.kerberos.keytab=/x.keytab",
            ],
            // With the feature, a keytab without its principal; without, the feature to add.
            if cfg!(feature = "gssapi") {
                "sasl.kerberos.principal"
            } else {
                "feature `gssapi`"
            },
        ),
        (
            &[
                "security.protocol=SASL_SSL",
                "sasl.mechanism=PLAIN",
                "sasl.password=wrong-password",
            ],
            "sasl.username",
        ),
    ];
    for (properties, needle) in cases {
        let properties: Vec<String> = properties.iter().map(|p| (*p).to_owned()).collect();
        assert_fails(
            &broker,
            "SASL_SSL",
            topic,
            &properties,
            &["-e"],
            2,
            &[needle],
        );
    }
}

#[test]
fn no_password_in_debug_logs_or_stats() {
    let broker = secure_broker();
    let (topic, _) = alice_topic(&broker, 20);
    let properties = broker.alice_properties("SASL_SSL", Some("PLAIN"));
    let args = ["-e", "--stats", "0.1"];
    let mut command = krec_secure_command(broker.get("SASL_SSL"), &topic, &properties, &args);
    command.env("RUST_LOG", "trace");
    let output = run_limited(command, READ_LIMIT).0;
    assert!(output.status.success(), "{}", stderr(&output));
    let everything = format!(
        "{}{}",
        stderr(&output),
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(
        everything.contains("TLS established") && everything.contains("connected"),
        "trace logging covered the TLS handshake and the connection: {everything}"
    );
    assert!(
        !everything.contains(broker.get("ALICE_PASSWORD")),
        "the password leaked"
    );
}
