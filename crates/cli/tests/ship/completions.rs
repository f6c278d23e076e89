//! `krec completions`: each script passes its own shell's syntax check, and bash completes a
//! flag through the script's completion function, as it would at a TAB.

use std::process::Command;

use crate::krec;

/// A `krec consume` flag and a prefix that only it starts with.
const CONSUME_FLAG: (&str, &str) = ("--sh", "--share-group");

fn script(shell: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), krec(&["completions", shell]).stdout).unwrap();
    file
}

fn syntax_check(shell: &str) {
    let file = script(shell);
    let output = Command::new(shell)
        .arg("-n")
        .arg(file.path())
        .output()
        .unwrap_or_else(|e| panic!("{shell} (scripts/install-deps.sh installs it): {e}"));
    assert!(
        output.status.success() && output.stderr.is_empty(),
        "{shell} -n: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(std::fs::metadata(file.path()).unwrap().len() > 1000);
}

#[test]
fn bash_script_parses() {
    syntax_check("bash");
}

#[test]
fn zsh_script_parses() {
    syntax_check("zsh");
}

#[test]
fn fish_script_parses() {
    syntax_check("fish");
}

#[test]
fn powershell_script_registers_a_completer() {
    let text = String::from_utf8(krec(&["completions", "powershell"]).stdout).unwrap();
    assert!(text.contains("Register-ArgumentCompleter") && text.contains("'krec'"));
}

#[test]
fn bash_completes_a_consume_flag() {
    let (prefix, flag) = CONSUME_FLAG;
    let file = script("bash");
    // What bash sets before it calls the function `complete -F` registered for krec.
    let program = format!(
        r#"source "$1"
        function=$(complete -p krec | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
        COMP_WORDS=(krec consume {prefix}); COMP_CWORD=2
        COMP_LINE="krec consume {prefix}"; COMP_POINT=${{#COMP_LINE}}
        "$function" krec {prefix} consume
        printf '%s\n' "${{COMPREPLY[@]}}""#
    );
    let output = Command::new("bash")
        .args(["-c", &program, "bash"])
        .arg(file.path())
        .output()
        .unwrap();
    let offered = String::from_utf8(output.stdout).unwrap();
    let offered: Vec<&str> = offered.split_whitespace().collect();
    assert!(
        offered.contains(&flag) && offered.iter().all(|word| word.starts_with(prefix)),
        "krec consume {prefix}<TAB> offered {offered:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
