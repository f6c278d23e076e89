//! OAUTHBEARER with tokens krec fetches itself (OAuth 2 client credentials) from the suite's
//! real OAuth server (Ory Hydra, `scripts/oauth.sh`), on the secured broker's SASL_OAUTH
//! listener, which checks each token's signature, issuer and audience against the server's
//! keys. Tokens live a few seconds (oauth.env's TTL_S) and sessions REAUTH_MS, so a read of
//! seconds spans several token refreshes and re-authentications.
//!
//! Token endpoint down at start: krec retries with backoff (a warning each time, naming the
//! URL and the cause) for `sasl.login.retry.backoff.max.ms` (30 s by default), then fails
//! with the last cause. Down mid-run: the current token serves until it expires.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::broker::{assert_same_records, parse_json_lines, unique_topic, varied_record};
use crate::support::broker::{ProducePlan, Produced};
use crate::support::secure::SecureBroker;
use crate::support::secure::{
    krec_secure, krec_secure_command, produce_paced, run_limited, secure_broker,
};

/// A failure must end krec within this.
const FAILURE_LIMIT: Duration = Duration::from_secs(10);
const READ_LIMIT: Duration = Duration::from_secs(60);

/// The OAuth server's oauth.env, named by secure.env's OAUTH_ENV.
fn oauth_env(broker: &SecureBroker) -> HashMap<String, String> {
    let text = std::fs::read_to_string(broker.get("OAUTH_ENV")).expect("read oauth.env");
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// librdkafka-style properties for client `prefix` (`""`, `LONG_`, `OTHER_`) of the server.
fn oidc_properties(
    broker: &SecureBroker,
    oauth: &HashMap<String, String>,
    prefix: &str,
) -> Vec<String> {
    vec![
        "security.protocol=SASL_SSL".to_owned(),
        format!("ssl.ca.location={}", broker.get("CA_PEM")),
        "sasl.mechanisms=OAUTHBEARER".to_owned(),
        "sasl.oauthbearer.method=oidc".to_owned(),
        format!(
            "sasl.oauthbearer.client.id={}",
            oauth[&format!("{prefix}CLIENT_ID")]
        ),
        format!(
            "sasl.oauthbearer.client.secret={}",
            oauth[&format!("{prefix}CLIENT_SECRET")]
        ),
        format!("sasl.oauthbearer.token.endpoint.url={}", oauth["TOKEN_URL"]),
        format!("sasl.oauthbearer.scope={}", oauth["SCOPE"]),
        format!("https.ca.location={}", oauth["CA_PEM"]),
    ]
}

/// `key=value` replaced (or added) in `properties`.
fn with(mut properties: Vec<String>, key: &str, value: &str) -> Vec<String> {
    properties.retain(|p| !p.starts_with(&format!("{key}=")));
    properties.push(format!("{key}={value}"));
    properties
}

/// A `sec-` topic (the OAuth clients have the same ACLs as alice) with `records` records.
fn oidc_topic(broker: &SecureBroker, prefix: &str, records: usize) -> (String, Vec<Produced>) {
    let topic = unique_topic(prefix);
    broker.admin.create_topic(&topic, 2, 1);
    let plan = ProducePlan {
        topic: topic.clone(),
        compression: "zstd".to_owned(),
        steps: vec![(None, (0..records).map(|i| varied_record(i, 2)).collect())],
        ..ProducePlan::default()
    };
    (topic.clone(), broker.admin.produce_python(&plan))
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn sorted(mut records: Vec<Produced>) -> Vec<Produced> {
    records.sort_by_key(|r| (r.partition, r.offset));
    records
}

#[test]
fn a_read_through_several_token_refreshes_and_reauthentications_is_exact() {
    let broker = secure_broker();
    let oauth = oauth_env(&broker);
    let ttl_s: u64 = oauth["TTL_S"].parse().unwrap();
    let topic = unique_topic("sec-oidc-long");
    broker.admin.create_topic(&topic, 2, 1);
    // Records keep coming for about four token lifetimes while krec reads them.
    let batches = 7;
    let per_batch = 50;
    let count = (batches * per_batch).to_string();
    // Extensions as Confluent Cloud wants them; the broker accepts any.
    let properties = with(
        oidc_properties(&broker, &oauth, ""),
        "sasl.oauthbearer.extensions",
        "logicalCluster=lkc-test,identityPoolId=pool-test",
    );
    let args = ["-J", "-c", &count, "--max-wait-ms", "100"];
    let mut command = krec_secure_command(broker.get("SASL_OAUTH"), &topic, &properties, &args);
    command.env(
        "RUST_LOG",
        "krec_client::connection=debug,krec_client::sasl=debug",
    );
    let reader = std::thread::spawn(move || run_limited(command, Duration::from_secs(90)).0);
    let produced = produce_paced(
        &broker.admin,
        &topic,
        "lz4",
        (batches, per_batch),
        Duration::from_millis(ttl_s * 1000 / 2),
    );
    let output = reader.join().unwrap();
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert_same_records(&sorted(parse_json_lines(&output.stdout)), &sorted(produced));
    let fetched = log.matches("OAuth token fetched").count();
    assert!(fetched >= 3, "only {fetched} tokens fetched: {log}");
    let renewals = log.matches("re-authenticated").count();
    assert!(renewals >= 3, "only {renewals} re-authentications: {log}");
    assert!(
        !log.contains("WARN") && !log.contains("ERROR"),
        "a clean run: {log}"
    );
}

/// Runs krec expecting a fast failure whose message holds every `needle` and no secret.
fn assert_fails(broker: &SecureBroker, topic: &str, properties: &[String], needles: &[&str]) {
    let oauth = oauth_env(broker);
    let (output, took) = krec_secure(
        broker.get("SASL_OAUTH"),
        topic,
        properties,
        &["-e"],
        FAILURE_LIMIT,
    );
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{properties:?}: {message}");
    for needle in needles {
        assert!(message.contains(needle), "no {needle:?} in: {message}");
    }
    for key in ["CLIENT_SECRET", "LONG_CLIENT_SECRET", "OTHER_CLIENT_SECRET"] {
        assert!(!message.contains(&oauth[key]), "a secret leaked: {message}");
    }
    assert!(
        !message.contains("wrong-secret"),
        "a secret leaked: {message}"
    );
    assert!(took < FAILURE_LIMIT, "took {took:?}");
}

#[test]
fn refusals_by_the_token_endpoint_or_the_broker_are_fatal_and_clear() {
    let broker = secure_broker();
    let oauth = oauth_env(&broker);
    let (topic, _) = oidc_topic(&broker, "sec-oidc-refused", 5);
    let good = oidc_properties(&broker, &oauth, "");
    let endpoint = oauth["TOKEN_URL"].as_str();
    // A wrong secret: the endpoint refuses the client.
    assert_fails(
        &broker,
        &topic,
        &with(
            good.clone(),
            "sasl.oauthbearer.client.secret",
            "wrong-secret",
        ),
        &[
            "OAuth client krec-good",
            endpoint,
            "invalid_client",
            "check sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret",
        ],
    );
    // A scope the client may not ask for: the endpoint refuses it.
    assert_fails(
        &broker,
        &topic,
        &with(good, "sasl.oauthbearer.scope", "admin"),
        &["invalid_scope", "check sasl.oauthbearer.scope"],
    );
    // A token for another audience: the endpoint gives it, the broker refuses it.
    let other = with(
        oidc_properties(&broker, &oauth, "OTHER_"),
        "sasl.oauthbearer.scope",
        "other",
    );
    assert_fails(
        &broker,
        &topic,
        &other,
        &[
            "SASL OAUTHBEARER authentication as OAuth client krec-other",
            "invalid_token",
        ],
    );
}

#[test]
fn a_token_endpoint_down_at_start_is_retried_then_reported() {
    let broker = secure_broker();
    let oauth = oauth_env(&broker);
    let (topic, _) = oidc_topic(&broker, "sec-oidc-down", 3);
    // A port nothing listens on: connections are refused at once.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}/oauth2/token", closed.local_addr().unwrap());
    drop(closed);
    let properties = with(
        with(
            oidc_properties(&broker, &oauth, ""),
            "sasl.oauthbearer.token.endpoint.url",
            &url,
        ),
        "sasl.login.retry.backoff.max.ms",
        "2000",
    );
    let (output, took) = krec_secure(
        broker.get("SASL_OAUTH"),
        &topic,
        &properties,
        &["-e"],
        FAILURE_LIMIT,
    );
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{message}");
    let retries = message.matches("token fetch failed; retrying").count();
    assert!(retries >= 2, "retried with backoff: {message}");
    assert!(message.contains(&url), "{message}");
    assert!(message.contains("Connection refused"), "{message}");
    assert!(message.contains("gave up after"), "{message}");
    assert!(took >= Duration::from_millis(1000), "backed off: {took:?}");
}

#[test]
fn a_token_endpoint_down_mid_run_leaves_the_current_token_serving() {
    let broker = secure_broker();
    let oauth = oauth_env(&broker);
    // The token endpoint behind a proxy of our own that the test can take away.
    let name = unique_topic("oidc-endpoint");
    let upstream = oauth["TOKEN_URL"]
        .trim_start_matches("https://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let created = toxiproxy(
        "POST",
        "/proxies",
        Some(
            serde_json::json!({"name": name, "listen": "127.0.0.1:0", "upstream": upstream, "enabled": true}),
        ),
    );
    let listen = serde_json::from_str::<serde_json::Value>(&created).unwrap()["listen"]
        .as_str()
        .unwrap()
        .to_owned();
    let url = format!("https://{listen}/oauth2/token");
    let set_enabled = |enabled: bool| {
        toxiproxy(
            "POST",
            &format!("/proxies/{name}"),
            Some(serde_json::json!({ "enabled": enabled })),
        );
    };
    let topic = unique_topic("sec-oidc-midrun");
    broker.admin.create_topic(&topic, 1, 1);
    let first = produce(&broker, &topic, 0, 20);
    // The long-lived client: its token outlives several sessions (REAUTH_MS).
    let properties = with(
        oidc_properties(&broker, &oauth, "LONG_"),
        "sasl.oauthbearer.token.endpoint.url",
        &url,
    );
    let mut command = krec_secure_command(
        broker.get("SASL_OAUTH"),
        &topic,
        &properties,
        &["-J", "-c", "40", "--max-wait-ms", "100"],
    );
    command.env("RUST_LOG", "krec_client::sasl=debug");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    while lines.len() < first.len() {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "krec stopped early");
        lines.push(line);
    }
    set_enabled(false);
    // Past the token's refresh point the endpoint is still down: krec warns and goes on.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    loop {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "krec ended: {log}");
        log.push_str(&line);
        if line.contains("token refresh failed; the current token is still valid") {
            break;
        }
    }
    assert!(log.contains(&url), "the warning names the endpoint: {log}");
    let second = produce(&broker, &topic, 20, 20);
    set_enabled(true);
    let logger = std::thread::spawn(move || {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
        rest
    });
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    lines.push(rest);
    let status = child.wait().unwrap();
    log.push_str(&logger.join().unwrap());
    toxiproxy("DELETE", &format!("/proxies/{name}"), None);
    assert!(status.success(), "{log}");
    let mut all = first;
    all.extend(second);
    assert_same_records(
        &sorted(parse_json_lines(lines.concat().as_bytes())),
        &sorted(all),
    );
}

/// One call of the secured broker's Toxiproxy API (its proxy.env), on a proxy of the test's
/// own: the lanes' proxies and the other tests are left alone.
fn toxiproxy(method: &str, path: &str, body: Option<serde_json::Value>) -> String {
    let env = std::env::var("KREC_TEST_SECURE_PROXY_ENV").expect("KREC_TEST_SECURE_PROXY_ENV");
    let text = std::fs::read_to_string(env).expect("read proxy.env");
    let api = text
        .lines()
        .find_map(|l| l.strip_prefix("TOXIPROXY_API="))
        .expect("TOXIPROXY_API");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let url = format!("http://{api}{path}");
    let answer = match (method, body) {
        ("POST", Some(body)) => agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(body.to_string()),
        ("DELETE", _) => agent.delete(&url).call(),
        _ => agent.get(&url).call(),
    };
    let mut answer = answer.unwrap_or_else(|e| panic!("toxiproxy {method} {path}: {e}"));
    let status = answer.status().as_u16();
    let text = answer.body_mut().read_to_string().unwrap_or_default();
    assert!(
        (200..300).contains(&status),
        "toxiproxy {method} {path}: HTTP {status} {text}"
    );
    text
}

fn produce(broker: &SecureBroker, topic: &str, from: usize, count: usize) -> Vec<Produced> {
    let plan = ProducePlan {
        topic: topic.to_owned(),
        compression: "none".to_owned(),
        steps: vec![(
            None,
            (from..from + count).map(|i| varied_record(i, 1)).collect(),
        )],
        ..ProducePlan::default()
    };
    broker.admin.produce_python(&plan)
}

#[test]
fn java_console_consumer_and_krec_read_the_same_records_with_one_properties_file() {
    let broker = secure_broker();
    let oauth = oauth_env(&broker);
    let (topic, produced) = oidc_topic(&broker, "sec-oidc-java", 80);
    // Java names: the login callback handler, the endpoint, and JAAS options with the
    // endpoint's CA as a PEM truststore (krec reads the same options).
    let text = format!(
        "security.protocol=SASL_SSL\n\
         ssl.truststore.type=PEM\n\
         ssl.truststore.location={ca}\n\
         sasl.mechanism=OAUTHBEARER\n\
         sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n\
         sasl.oauthbearer.token.endpoint.url={url}\n\
         sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
         clientId=\"{id}\" clientSecret=\"{secret}\" scope=\"{scope}\" extension_logicalCluster=\"lkc-test\" \
         ssl.truststore.type=\"PEM\" ssl.truststore.location=\"{oauth_ca}\";\n",
        ca = broker.get("CA_PEM"),
        url = oauth["TOKEN_URL"],
        id = oauth["CLIENT_ID"],
        secret = oauth["CLIENT_SECRET"],
        scope = oauth["SCOPE"],
        oauth_ca = oauth["CA_PEM"],
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("client.properties");
    std::fs::write(&file, text).unwrap();
    // Kafka 4 fetches only the URLs this JVM property allows.
    let java = Command::new("bash")
        .arg(&broker.admin.kafka_sh)
        .args(["tool", "--name", &broker.admin.name])
        .args([
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            "--bootstrap-server",
            broker.get("SASL_OAUTH"),
            "--consumer.config",
            file.to_str().unwrap(),
            "--topic",
            &topic,
            "--from-beginning",
            "--group",
            &unique_topic("sec-oidc-java-group"),
            "--max-messages",
            &produced.len().to_string(),
            "--timeout-ms",
            "30000",
            "--property",
            "print.partition=true",
            "--property",
            "print.offset=true",
        ])
        .env(
            "KREC_KAFKA_TOOL_OPTS",
            format!(
                "-Xmx256m -XX:TieredStopAtLevel=1 -Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={}",
                oauth["TOKEN_URL"]
            ),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let java_out = String::from_utf8_lossy(&java.stdout);
    assert!(
        java.status.success(),
        "{}",
        String::from_utf8_lossy(&java.stderr)
    );
    // "Partition:P\tOffset:O\tVALUE"
    let mut java_positions: Vec<(i32, i64)> = java_out
        .lines()
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let partition = fields.next()?.strip_prefix("Partition:")?.parse().ok()?;
            let offset = fields.next()?.strip_prefix("Offset:")?.parse().ok()?;
            Some((partition, offset))
        })
        .collect();
    java_positions.sort_unstable();
    let mut command = Command::new(env!("CARGO_BIN_EXE_krec"));
    command
        .args(["consume", "-b", broker.get("SASL_OAUTH"), "-t", &topic])
        .args(["-e", "-J", "-F", file.to_str().unwrap()])
        .env_remove("KREC_CONFIG");
    let output = run_limited(command, READ_LIMIT).0;
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = parse_json_lines(&output.stdout);
    assert_same_records(&sorted(printed.clone()), &sorted(produced.clone()));
    let krec_positions: Vec<(i32, i64)> = sorted(printed)
        .iter()
        .map(|r| (r.partition, r.offset))
        .collect();
    assert_eq!(
        java_positions.len(),
        produced.len(),
        "Java read everything: {java_out}"
    );
    assert_eq!(krec_positions, java_positions, "krec and Java agree");
}
