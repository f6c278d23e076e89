//! `krec man`: a page for krec and one per subcommand, each rendered by groff without a
//! warning.

use std::process::Command;

use crate::{krec, subcommands};

#[test]
fn writes_a_page_per_subcommand_that_renders_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("man1");
    let printed = krec(&["man", target.to_str().unwrap()]).stdout;
    let mut expected: Vec<String> = subcommands()
        .iter()
        .map(|name| format!("krec-{name}.1"))
        .collect();
    expected.push("krec.1".to_owned());
    expected.sort();
    let mut written: Vec<String> = std::fs::read_dir(&target)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    written.sort();
    assert_eq!(written, expected);
    assert_eq!(
        String::from_utf8(printed).unwrap().lines().count(),
        written.len()
    );

    for page in &written {
        let path = target.join(page);
        // -ww: every warning; -z: render, print nothing. man -l runs the same groff.
        let output = Command::new("groff")
            .args(["-man", "-ww", "-z", "-Tutf8"])
            .arg(&path)
            .output()
            .expect("groff (scripts/install-deps.sh installs it)");
        assert!(
            output.status.success() && output.stderr.is_empty(),
            "{page}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let consume = std::fs::read_to_string(target.join("krec-consume.1")).unwrap();
    assert!(
        consume.contains("bootstrap"),
        "krec-consume.1 documents its options"
    );
}
