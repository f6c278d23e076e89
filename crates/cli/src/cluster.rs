//! What every subcommand that asks a cluster something shares: the bootstrap brokers, the
//! client properties, and running one request on a small async runtime.

use std::future::Future;
use std::io::Write;
use std::process::ExitCode;

use crate::properties::ClientArgs;
use crate::Error;
use krec_client::ConnectionSettings;
use krec_consumer::ConsumerConfig;

/// `-b` and the client properties (`-X`, `-F`).
#[derive(Debug, clap::Args)]
pub struct ClusterArgs {
    /// Bootstrap brokers, `HOST:PORT[,HOST:PORT...]` (default: `bootstrap.servers` from the
    /// properties).
    #[arg(short = 'b', long = "brokers", value_name = "HOST:PORT,...")]
    pub brokers: Option<String>,

    /// Client properties: TLS, SASL, client id.
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `-p` and `--isolation`: which partitions of the topic, and whether open and aborted
/// transactions count.
#[derive(Debug, clap::Args)]
pub struct PartitionArgs {
    /// Partitions, comma-separated (default: all).
    #[arg(
        short = 'p',
        long = "partitions",
        value_delimiter = ',',
        value_name = "N,..."
    )]
    pub partitions: Vec<i32>,

    /// `read_uncommitted` (default, like kcat, or `isolation.level`) or `read_committed`:
    /// aborted transactions are left out, and the end of a partition is its last stable
    /// offset, not its high watermark.
    #[arg(long = "isolation", value_parser = ["read_uncommitted", "read_committed"])]
    pub isolation: Option<String>,
}

impl PartitionArgs {
    /// Whether to read committed data only: `--isolation`, else what `config` says.
    pub fn read_committed(&self, config: &ConsumerConfig) -> bool {
        self.isolation
            .as_deref()
            .map_or(config.read_committed, |level| level == "read_committed")
    }
}

/// Where to connect and how.
#[derive(Debug)]
pub struct ClusterAccess {
    /// Bootstrap brokers.
    pub bootstrap: Vec<String>,
    /// Security and client id from the properties.
    pub settings: ConnectionSettings,
    /// Everything the properties and `-b` say.
    pub config: ConsumerConfig,
}

impl ClusterArgs {
    /// The consumer settings of the properties, with `-b` over `bootstrap.servers`; an error
    /// when neither names a broker.
    pub fn config(&self) -> Result<ConsumerConfig, Error> {
        let mut config = self.client.load(self.brokers.is_some())?;
        if let Some(brokers) = &self.brokers {
            config.bootstrap = ConsumerConfig::parse_bootstrap(brokers)?;
        }
        if config.bootstrap.is_empty() {
            return Err(Error::InvalidArgument {
                what: "brokers",
                detail: "give -b HOST:PORT or bootstrap.servers in the properties".to_owned(),
            });
        }
        Ok(config)
    }

    /// The brokers and connection settings `-b` and the properties give.
    pub fn access(&self) -> Result<ClusterAccess, Error> {
        let config = self.config()?;
        let settings = ConnectionSettings {
            security: config.connection.security.clone(),
            client_id: config.connection.client_id.clone(),
            ..ConnectionSettings::default()
        };
        Ok(ClusterAccess {
            bootstrap: config.bootstrap.clone(),
            settings,
            config,
        })
    }
}

/// Runs `work` on a one-thread runtime and turns its outcome into the exit status, errors
/// reported on stderr as `krec COMMAND: ...`.
pub fn run_command(command: &str, work: impl Future<Output = Result<(), Error>>) -> ExitCode {
    init_logging();
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| Error::Io {
            context: "starting the async runtime".to_owned(),
            source,
        })
        .and_then(|runtime| runtime.block_on(work));
    finish(command, outcome)
}

/// The exit status of `krec COMMAND` from its outcome; an error is reported on stderr.
pub fn finish(command: &str, outcome: Result<(), Error>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`krec ... | head`): stopping is what it asked for.
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(error) => {
            let _ = std::io::stdout().flush();
            eprintln!("krec {command}: {}", error.with_flags());
            ExitCode::from(error.exit_code())
        }
    }
}

/// Logs to stderr at `warn` unless `RUST_LOG` says otherwise.
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Colour codes only on a terminal: logs written to a file are read by programs.
    let _ = tracing_subscriber::fmt()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Writes `text` to stdout, naming a write failure.
pub fn print(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| Error::Io {
            context: "writing to stdout".to_owned(),
            source,
        })
}
