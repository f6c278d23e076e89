//! Embeds the git commit krec is built from as `KREC_GIT_COMMIT`, for `krec version -v`.
//!
//! From a published package, the commit `cargo package` recorded in `.cargo_vcs_info.json`;
//! from a checkout, `git rev-parse --short HEAD`; without either, "unknown".

use std::path::Path;
use std::process::Command;

fn main() {
    // Without any rerun-if-changed line, cargo would run this again whenever a file changes.
    println!("cargo:rerun-if-changed=build.rs");
    let commit = packaged_commit()
        .or_else(checkout_commit)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=KREC_GIT_COMMIT={commit}");
}

/// The commit of a package made by `cargo package` from a git checkout.
fn packaged_commit() -> Option<String> {
    let info = std::fs::read_to_string(".cargo_vcs_info.json").ok()?;
    println!("cargo:rerun-if-changed=.cargo_vcs_info.json");
    let start = info.find("\"sha1\"")? + "\"sha1\"".len();
    let sha1 = info[start..].split('"').nth(1)?;
    let short = sha1.get(..9).unwrap_or(sha1);
    is_commit(short).then(|| short.to_owned())
}

/// HEAD of the checkout this crate is in. Rebuilds when HEAD moves: HEAD itself, the branch
/// it names, and packed-refs (where git keeps a branch whose loose file is gone).
fn checkout_commit() -> Option<String> {
    let commit = git(&["rev-parse", "--short=9", "HEAD"])?;
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])?];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch])?);
    }
    watched.push(git(&["rev-parse", "--git-path", "packed-refs"])?);
    // A path that does not exist would make cargo run this script at every build.
    for path in watched.iter().filter(|path| Path::new(path).exists()) {
        println!("cargo:rerun-if-changed={path}");
    }
    is_commit(&commit).then_some(commit)
}

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    output.status.success().then(|| text.trim().to_owned())
}

fn is_commit(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_hexdigit())
}
