//! `krec completions SHELL`: a tab-completion script for the shell, made by clap_complete
//! from the same definition the command line is parsed with.

use std::process::ExitCode;

use clap::Args;
use clap_complete::Shell;

use crate::cluster::{finish, print};

/// Arguments of `krec completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Prints the completion script of `command` (the whole `krec` command line) for the shell.
pub fn run(args: CompletionsArgs, mut command: clap::Command) -> ExitCode {
    // Into memory first: clap_complete panics on a failed write (`| head`); print reports it.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "krec", &mut script);
    finish("completions", print(&String::from_utf8_lossy(&script)))
}
