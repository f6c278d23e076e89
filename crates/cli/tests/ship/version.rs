//! `krec version`: short by default, and with `-v` (`-J`) exactly what this build has.

use std::process::Command;

use serde_json::Value;

use crate::krec;

/// Whether this test binary, and so the `krec` it runs (cargo builds both with the same
/// features), has krec-cli feature `name`.
fn built_with(name: &str) -> bool {
    match name {
        "aws-msk-iam" => cfg!(feature = "aws-msk-iam"),
        "gssapi" => cfg!(feature = "gssapi"),
        other => panic!("feature {other} is new: add it here and to src/version.rs"),
    }
}

/// The features crates/cli/Cargo.toml declares, `default` aside.
fn declared_features() -> Vec<String> {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"));
    let manifest = manifest.unwrap();
    let section = manifest.split("\n[features]\n").nth(1).unwrap();
    section
        .lines()
        .take_while(|line| !line.starts_with('['))
        .filter_map(|line| line.split_once(" = ").map(|(name, _)| name.trim()))
        .filter(|name| !name.starts_with('#') && *name != "default")
        .map(str::to_owned)
        .collect()
}

fn report() -> Value {
    serde_json::from_slice(&krec(&["version", "-v", "-J"]).stdout).unwrap()
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

#[test]
fn lists_exactly_the_features_it_was_built_with() {
    let declared = declared_features();
    assert!(declared.contains(&"gssapi".to_owned()), "{declared:?}");
    let expected: Vec<&str> = declared
        .iter()
        .map(String::as_str)
        .filter(|name| built_with(name))
        .collect();
    let report = report();
    assert_eq!(strings(&report["features"]), expected);

    // A feature's mechanism and token source go with it.
    let mechanisms = strings(&report["sasl_mechanisms"]);
    assert_eq!(mechanisms.contains(&"GSSAPI"), built_with("gssapi"));
    assert_eq!(
        mechanisms.contains(&"AWS_MSK_IAM"),
        built_with("aws-msk-iam")
    );
    for always in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"] {
        assert!(mechanisms.contains(&always), "{mechanisms:?}");
    }
    let methods = strings(&report["oauthbearer_methods"]);
    assert_eq!(methods.contains(&"aws_msk_iam"), built_with("aws-msk-iam"));
    assert!(methods.contains(&"oidc"), "{methods:?}");
}

#[test]
fn reports_version_commit_codecs_tls_and_api_ranges() {
    let report = report();
    assert_eq!(report["version"], env!("CARGO_PKG_VERSION"));
    let head = Command::new("git")
        .args(["rev-parse", "--short=9", "HEAD"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map_or("unknown".to_owned(), |output| {
            String::from_utf8(output.stdout).unwrap().trim().to_owned()
        });
    assert_eq!(report["commit"], head, "built from this checkout's HEAD");
    assert_eq!(
        strings(&report["codecs"]),
        ["gzip", "snappy", "lz4", "zstd"]
    );
    assert!(report["tls"].as_str().unwrap().starts_with("rustls"));

    let apis = report["apis"].as_array().unwrap();
    let fetch = apis.iter().find(|api| api["name"] == "Fetch").unwrap();
    assert_eq!(fetch["key"], 1);
    for api in apis {
        let (min, max) = (api["min"].as_i64().unwrap(), api["max"].as_i64().unwrap());
        assert!(0 <= min && min <= max, "{api}");
    }
    assert!(apis.iter().any(|api| api["name"] == "SaslAuthenticate"));
}

#[test]
fn text_report_says_the_same_and_plain_version_stays_short() {
    let text = String::from_utf8(krec(&["version", "-v"]).stdout).unwrap();
    let report = report();
    let commit = report["commit"].as_str().unwrap();
    assert!(text.contains(&format!("commit: {commit}\n")), "{text}");
    let features = strings(&report["features"]).join(" ");
    let features = if features.is_empty() {
        "(none)".to_owned()
    } else {
        features
    };
    assert!(text.contains(&format!("features: {features}\n")), "{text}");
    assert!(text.contains("  Fetch (1): "), "{text}");

    let short = format!("krec {}\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(String::from_utf8(krec(&["version"]).stdout).unwrap(), short);
    assert_eq!(
        String::from_utf8(krec(&["--version"]).stdout).unwrap(),
        short
    );
}
