//! The committed sample segment (`examples/data/sample-0/`), written by a real Kafka broker
//! from records produced by librdkafka in every codec plus one aborted transaction, decodes to
//! exactly what the producer reported. Needs no running broker.

use std::path::Path;
use std::process::Command;

use crate::support::broker::{assert_same_records, parse_json_lines, parse_produced_lines};

fn repo_file(relative: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

#[test]
fn sample_segment_decodes_to_what_was_produced() {
    let produced_text = std::fs::read_to_string(repo_file("examples/data/sample-0.produced.jsonl"))
        .expect("the producer's report of the sample");
    let produced = parse_produced_lines(&produced_text);
    assert_eq!(produced.len(), 38);
    assert_eq!(produced.iter().filter(|r| !r.committed).count(), 3);

    let output = Command::new(env!("CARGO_BIN_EXE_krec"))
        .arg("decode")
        .arg(repo_file("examples/data/sample-0/00000000000000000000.log"))
        .args(["-f", "json", "--print-control"])
        .output()
        .expect("run krec decode");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // A segment holds aborted records too: only a consumer filters them.
    assert_same_records(&parse_json_lines(&output.stdout), &produced);
    let text = String::from_utf8(output.stdout).unwrap();
    let markers: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(r#""control":"#))
        .collect();
    assert_eq!(markers.len(), 3, "two commits and one abort: {markers:?}");
    assert!(markers[1].contains(r#""control":"abort""#));
}
