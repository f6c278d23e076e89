//! The `krec` command: `krec decode` for segment files, `krec consume` for a live cluster.

use std::process::ExitCode;

use clap::Parser;
use krec_cli as cli;

/// krec: a fast Kafka consumer and record-batch decoder.
#[derive(Debug, Parser)]
#[command(name = "krec", version, about)]
enum Command {
    /// Decode Kafka log segment files and write their records out.
    Decode(cli::decode::DecodeArgs),
    /// Consume topics from a Kafka cluster and write their records out.
    Consume(Box<cli::consume::ConsumeArgs>),
    /// Show brokers, controller and topic partitions with replicas and ISR (kcat's -L).
    Metadata(cli::metadata::MetadataArgs),
    /// Count the data records of a topic or of segment files, per partition and in total.
    Count(cli::count::CountArgs),
    /// Show each partition's earliest, latest and at-a-time offsets (kcat's -Q).
    Offsets(cli::offsets::OffsetsArgs),
}

fn main() -> ExitCode {
    match Command::parse() {
        Command::Decode(args) => cli::decode::run(args),
        Command::Consume(args) => cli::consume::run(*args),
        Command::Metadata(args) => cli::metadata::run(args),
        Command::Offsets(args) => cli::offsets::run(args),
        Command::Count(args) => cli::count::run(args),
    }
}
