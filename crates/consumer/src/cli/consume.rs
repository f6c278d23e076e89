//! `krec consume`: read topics from a Kafka cluster.

use std::process::ExitCode;

/// Arguments of `krec consume`.
#[derive(Debug, clap::Args)]
pub struct ConsumeArgs {
    /// Bootstrap brokers, `HOST:PORT[,HOST:PORT...]`.
    #[arg(short = 'b', long = "brokers")]
    pub brokers: String,
}

/// Runs `krec consume`.
pub fn run(_args: ConsumeArgs) -> ExitCode {
    eprintln!("krec consume: not implemented yet");
    ExitCode::FAILURE
}
