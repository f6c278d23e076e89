//! The `krec` command: `krec decode` for segment files, `krec consume` and `krec produce`
//! for a live cluster.

use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use krec_cli as cli;

/// krec: a fast Kafka consumer and record-batch decoder.
#[derive(Debug, Parser)]
#[command(name = "krec", version, about)]
enum Command {
    /// Decode Kafka log segment files and write their records out.
    #[command(after_help = DECODE_EXAMPLES)]
    Decode(cli::decode::DecodeArgs),
    /// Consume topics from a Kafka cluster and write their records out.
    #[command(after_help = CONSUME_EXAMPLES)]
    Consume(Box<cli::consume::ConsumeArgs>),
    /// Write records from standard input or files to a topic (kcat's -P), or JSON lines.
    #[command(after_help = PRODUCE_EXAMPLES)]
    Produce(Box<cli::produce::ProduceArgs>),
    /// Copy topics to another cluster as they are (batches untouched), exactly once.
    #[command(after_help = MIRROR_EXAMPLES)]
    Mirror(Box<cli::mirror::MirrorArgs>),
    /// Back topics up into a directory or object store, in Kafka's segment format.
    #[command(after_help = BACKUP_EXAMPLES)]
    Backup(Box<cli::backup::BackupArgs>),
    /// Write a backup's topics back into a cluster, exactly once (`krec backup` writes them).
    #[command(after_help = RESTORE_EXAMPLES)]
    Restore(Box<cli::restore::RestoreArgs>),
    /// Show brokers, controller and topic partitions with replicas and ISR (kcat's -L).
    #[command(
        after_help = "Examples:\n  krec metadata -b h1:9092\n  krec metadata -b h1:9092 -t orders -J"
    )]
    Metadata(cli::metadata::MetadataArgs),
    /// Count the data records of a topic or of segment files, per partition and in total.
    #[command(
        after_help = "Examples:\n  krec count -b h1:9092 -t orders --isolation read_committed\n  krec count -J /var/lib/kafka/orders-0/*.log"
    )]
    Count(cli::count::CountArgs),
    /// Show each partition's earliest, latest and at-a-time offsets (kcat's -Q).
    #[command(
        after_help = "Examples:\n  krec offsets -b h1:9092 -t orders\n  krec offsets -b h1:9092 -t orders -p 0,1 --at 2026-11-30T10:00:00Z -J"
    )]
    Offsets(cli::offsets::OffsetsArgs),
    /// List the groups with their type and state, or describe one: members, lag per partition.
    #[command(
        after_help = "Examples:\n  krec groups -b h1:9092\n  krec groups -b h1:9092 --type share,consumer -J\n  krec groups -b h1:9092 billing --isolation read_committed"
    )]
    Groups(cli::groups::GroupsArgs),
    /// Print a tab-completion script for bash, zsh, fish, elvish or PowerShell.
    #[command(
        after_help = "Example:\n  krec completions bash > ~/.local/share/bash-completion/completions/krec"
    )]
    Completions(cli::completions::CompletionsArgs),
    /// Write man pages: krec.1 and one per subcommand (krec-consume.1, ...).
    #[command(after_help = "Example:\n  krec man ~/.local/share/man/man1")]
    Man(cli::man::ManArgs),
    /// Print the version; with -v also the commit, features, codecs, SASL, TLS and Kafka APIs.
    Version(cli::version::VersionArgs),
}

const DECODE_EXAMPLES: &str = "Examples:
  krec decode /var/lib/kafka/orders-0/00000000000000000000.log
  krec decode -J --header trace=abc123 /var/lib/kafka/orders-*/*.log
  krec decode -f '%o %T %k %s\\n' --grep 'error|timeout' segment.log";

const CONSUME_EXAMPLES: &str = "Examples:
  krec consume -b h1:9092 -t orders -e
  krec consume -b h1:9092 -t orders -o s@2026-11-30T10:00:00Z -o e@2026-11-30T10:05:00Z
  krec consume -b h1:9092 -t orders -o @-15m: --idle-timeout 30s
  krec consume -b h1:9092 -t orders -p 3 -o 1000:2000 -J
  krec consume -b h1:9092 -t orders -e --key user-42 --partitioner murmur2
  krec consume -b h1:9092 -t orders -e --header trace=abc123 -f '%I %k %s\\n'
  krec consume -b h1:9092 -t orders,'^logs-' -G billing --metrics 127.0.0.1:9464";

const PRODUCE_EXAMPLES: &str = "Examples:
  krec produce -b h1:9092 -t orders < orders.txt
  krec produce -b h1:9092 -t orders -K : -H source=batch -z zstd -l orders-*.txt
  krec produce -b h1:9092 -t orders -p 0 -k user-42 -Z
  krec consume -b h1:9092 -t orders -e -J | krec produce -b h2:9092 -t orders -J";

const MIRROR_EXAMPLES: &str = "Examples:
  krec mirror -b h1:9092 -t orders --to h2:9092 --name dr
  krec mirror -b h1:9092 -t orders,'^logs-' --to h2:9092 --name dr --topic-prefix h1. --stats
  krec mirror -b h1:9092 -F source.properties -t orders --to h2:9093 --to-config target.properties --name dr -e";

const BACKUP_EXAMPLES: &str = "Examples:
  krec backup -b h1:9092 -t orders /backups/orders
  krec backup -b h1:9092 -t orders,'^logs-' s3://bucket/kafka --stats
  krec backup -b h1:9092 -F source.properties -t orders /backups/orders --follow
Exit status 3: backed up, but the source had deleted records (retention) before the backup
read them; the manifest lists the lost ranges.";
const RESTORE_EXAMPLES: &str = "Examples:
  krec restore -b h2:9092 /backups/orders
  krec restore -b h2:9092 s3://bucket/backups/orders -t orders --until 2026-11-30T10:00:00Z --groups
  krec restore -b h1:9092 /backups/orders --topic-prefix restored. --stats";

fn main() -> ExitCode {
    match Command::parse() {
        Command::Decode(args) => cli::decode::run(args),
        Command::Consume(args) => cli::consume::run(*args),
        Command::Produce(args) => cli::produce::run(*args),
        Command::Mirror(args) => cli::mirror::run(*args),
        Command::Backup(args) => cli::backup::run(*args),
        Command::Restore(args) => cli::restore::run(*args),
        Command::Metadata(args) => cli::metadata::run(args),
        Command::Offsets(args) => cli::offsets::run(args),
        Command::Count(args) => cli::count::run(args),
        Command::Groups(args) => cli::groups::run(args),
        Command::Completions(args) => cli::completions::run(args, Command::command()),
        Command::Man(args) => cli::man::run(args, Command::command()),
        Command::Version(args) => cli::version::run(args),
    }
}
