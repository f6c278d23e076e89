//! `krec decode FILE...`: decode Kafka log segment files.

use std::process::ExitCode;

/// Arguments of `krec decode`.
#[derive(Debug, clap::Args)]
pub struct DecodeArgs {
    /// Log segment files (`.log`) to decode.
    #[arg(required = true)]
    pub files: Vec<std::path::PathBuf>,
}

/// Runs `krec decode`.
pub fn run(_args: DecodeArgs) -> ExitCode {
    eprintln!("krec decode: not implemented yet");
    ExitCode::FAILURE
}
