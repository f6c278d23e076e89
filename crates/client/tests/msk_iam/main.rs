//! AWS MSK IAM without AWS: no broker outside AWS checks these signatures, so they are checked
//! against AWS's own implementations (the Python signer and botocore, `reference.py`), and
//! the credential chain against local files and AWS's EC2 metadata mock. scripts/aws.sh
//! installs both; scripts/test.sh names them in KREC_TEST_AWS_PYTHON and
//! KREC_TEST_EC2_METADATA_MOCK (without them, scripts/aws.sh says where they are).

mod chain;
mod signing;

use std::path::PathBuf;
use std::process::Command;

/// The tool `variable` names, or the one scripts/aws.sh installed.
fn tool(variable: &str, aws_sh_command: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(variable) {
        return PathBuf::from(path);
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/aws.sh");
    let output = Command::new("bash")
        .args([script, aws_sh_command])
        .output()
        .expect("run scripts/aws.sh");
    let path = PathBuf::from(String::from_utf8(output.stdout).unwrap().trim());
    assert!(
        path.exists(),
        "{} not found: run scripts/install-deps.sh (or scripts/aws.sh fetch), or set {variable}",
        path.display()
    );
    path
}
