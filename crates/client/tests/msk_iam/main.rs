//! AWS MSK IAM without AWS: no broker outside AWS checks these signatures, so they are checked
//! against AWS's own implementations (the Python signer and botocore, `reference.py`), and
//! the credential chain against local files and AWS's EC2 metadata mock. scripts/aws.sh
//! installs both; scripts/test.sh names them in KREC_TEST_AWS_PYTHON and
//! KREC_TEST_EC2_METADATA_MOCK (without them, scripts/aws.sh says where they are).

mod chain;
mod mechanism;
mod sandbox;
mod signing;
mod wire;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

/// The tool `variable` names, or the one scripts/aws.sh installed.
fn tool(variable: &str, aws_sh_command: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(variable) {
        return PathBuf::from(path);
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/aws.sh");
    let mut command = Command::new("bash");
    command.args([script, aws_sh_command]);
    if let Some(home) = sandbox::original_home() {
        command.env("HOME", home);
    }
    let output = command.output().expect("run scripts/aws.sh");
    let path = PathBuf::from(String::from_utf8(output.stdout).unwrap().trim());
    assert!(
        path.exists(),
        "{} not found: run scripts/install-deps.sh (or scripts/aws.sh fetch), or set {variable}",
        path.display()
    );
    path
}

/// Asks `reference.py` (AWS's libraries) the questions of `requests`, in one run.
fn reference(requests: &[Value]) -> Vec<Value> {
    let python = tool("KREC_TEST_AWS_PYTHON", "python");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/msk_iam/reference.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the reference python");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(Value::from(requests.to_vec()).to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "reference.py failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}
