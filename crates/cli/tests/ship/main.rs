//! krec as an installed tool: completion scripts, man pages and `krec version -v`. Needs no
//! broker; runs the shells and groff the suite installs (scripts/install-deps.sh).

mod completions;
mod man;
mod version;

use std::process::{Command, Output};

/// Runs `krec ARGS` and returns its output, which must be a success.
pub fn krec(args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(args)
        .output()
        .expect("run krec");
    assert!(
        output.status.success(),
        "krec {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The subcommands `krec --help` lists (`help` aside).
pub fn subcommands() -> Vec<String> {
    let help = String::from_utf8(krec(&["--help"]).stdout).unwrap();
    let listed = help
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands section")
        .lines()
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect::<Vec<_>>();
    assert!(listed.len() >= 6, "{help}");
    listed
}
