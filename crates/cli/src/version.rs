//! `krec version`: the version, and with `-v` what this build can do, for bug reports: the
//! commit, cargo features, codecs, SASL mechanisms, TLS provider and Kafka API versions.
//!
//! Every list is read from the code that does the work (cfg! of the features, the client's
//! mechanism and API tables), so a feature built out drops out of the report too.

use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Args;
use krec_client::sasl;
use krec_client::security::TLS_PROVIDER;
use krec_client::versions::SPOKEN;
use serde_json::json;

use crate::cluster::{finish, print};

/// Arguments of `krec version`.
#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Also the commit, cargo features, codecs, SASL mechanisms, TLS provider and the
    /// versions of each Kafka API: paste this into bug reports.
    #[arg(short, long)]
    pub verbose: bool,

    /// The `-v` report as one JSON document.
    #[arg(short = 'J', long = "json")]
    pub json: bool,
}

/// The version, as `krec --version` prints it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit built from (build.rs), "unknown" outside a git checkout or package.
pub const COMMIT: &str = env!("KREC_GIT_COMMIT");

/// Each cargo feature of krec-cli (crates/cli/Cargo.toml, `default` aside) and whether this
/// build has it.
const FEATURES: &[(&str, bool)] = &[
    ("aws-msk-iam", cfg!(feature = "aws-msk-iam")),
    ("gssapi", cfg!(feature = "gssapi")),
];

/// Prints the version, or the whole report.
pub fn run(args: VersionArgs) -> ExitCode {
    let text = if args.json {
        format!("{}\n", report_json())
    } else if args.verbose {
        report_text()
    } else {
        format!("krec {VERSION}\n")
    };
    finish("version", print(&text))
}

/// The cargo features this binary was built with.
pub fn features() -> Vec<&'static str> {
    FEATURES
        .iter()
        .filter(|(_, on)| *on)
        .map(|(name, _)| *name)
        .collect()
}

/// The compression codecs record batches may use, all decoded.
pub fn codecs() -> Vec<&'static str> {
    krec_batch::Compression::ALL
        .iter()
        .filter(|&&codec| codec != krec_batch::Compression::None)
        .map(|codec| codec.name())
        .collect()
}

/// The `-v -J` report.
pub fn report_json() -> serde_json::Value {
    let apis: Vec<serde_json::Value> = SPOKEN
        .iter()
        .map(|api| json!({"key": api.key, "name": api.name, "min": api.min, "max": api.max}))
        .collect();
    json!({
        "version": VERSION,
        "commit": COMMIT,
        "features": features(),
        "codecs": codecs(),
        "sasl_mechanisms": sasl::mechanisms(),
        "oauthbearer_methods": sasl::token_methods(),
        "tls": TLS_PROVIDER,
        "apis": apis,
    })
}

/// The `-v` report.
pub fn report_text() -> String {
    let list = |items: Vec<&str>| {
        if items.is_empty() {
            "(none)".to_owned()
        } else {
            items.join(" ")
        }
    };
    // Writing into a String cannot fail.
    let mut text = String::new();
    let _ = writeln!(text, "krec {VERSION}\ncommit: {COMMIT}");
    let _ = writeln!(text, "features: {}", list(features()));
    let _ = writeln!(text, "codecs: {}", list(codecs()));
    let _ = writeln!(text, "sasl mechanisms: {}", list(sasl::mechanisms()));
    let _ = writeln!(text, "oauthbearer methods: {}", list(sasl::token_methods()));
    let _ = writeln!(text, "tls: {TLS_PROVIDER}");
    let _ = writeln!(text, "kafka apis (key: versions):");
    for api in SPOKEN {
        let _ = writeln!(
            text,
            "  {} ({}): {}..{}",
            api.name, api.key, api.min, api.max
        );
    }
    text
}
