//! The arguments of `krec mirror`, and the configuration they make, checked before anything
//! connects.

use std::path::PathBuf;
use std::time::Duration;

use krec_client::client_properties::Property;
use krec_consumer::{ConsumerConfig, GroupConfig, TopicSubscription};
use krec_copy::{MirrorConfig, PipelineSettings};
use krec_producer::ProducerConfig;

use crate::cluster::ClusterArgs;
use crate::Error;

/// Arguments of `krec mirror`.
#[derive(Debug, clap::Args)]
pub struct MirrorArgs {
    /// The source cluster: `-b` and its client properties (`-X`, `-F`).
    #[command(flatten)]
    pub source: ClusterArgs,

    /// Topics to copy, `TOPIC[,TOPIC...]`; one starting with `^` is a regular expression
    /// matched against the source's topic names, followed as topics come.
    #[arg(short = 't', long = "topic", value_name = "TOPIC,...")]
    pub topic: String,

    /// The target cluster's bootstrap brokers.
    #[arg(long = "to", value_name = "HOST:PORT,...")]
    pub to: Option<String>,

    /// The target's client properties: TLS, SASL, the producer's (transaction.timeout.ms, 10 s
    /// here by default) and the mirror group's (group.protocol, session.timeout.ms).
    #[arg(long = "to-config", value_name = "FILE")]
    pub to_config: Option<PathBuf>,

    /// The mirror's name: its group in the target cluster, where its positions are committed
    /// and its processes share the partitions. Keep it across restarts.
    #[arg(long = "name", value_name = "NAME")]
    pub name: String,

    /// This process's name in the mirror (default: the host name): keep it across restarts,
    /// and give each process of one mirror its own. A restarted member takes its partitions
    /// back at once and fences its predecessor (transactional.id krec-mirror-NAME-MEMBER).
    #[arg(long = "member", value_name = "MEMBER")]
    pub member: Option<String>,

    /// Put before each topic's name to name its copy.
    #[arg(long = "topic-prefix", value_name = "PREFIX", default_value = "")]
    pub topic_prefix: String,

    /// Stop once every partition is copied to the end it had, all committed.
    #[arg(short = 'e', long = "exit")]
    pub exit_at_end: bool,

    /// Stop after this long without a batch to copy (30s, 5m, 1h30m).
    #[arg(long = "idle-timeout", value_name = "DURATION")]
    pub idle_timeout: Option<String>,

    /// Copy at most this many bytes per second.
    #[arg(long = "max-bytes-per-second", value_name = "BYTES")]
    pub max_bytes_per_second: Option<u64>,

    /// Serve Prometheus metrics at http://HOST:PORT/metrics (and /health).
    #[arg(long = "metrics", value_name = "HOST:PORT")]
    pub metrics: Option<String>,

    /// Every S seconds (default 1), records, bytes, batches re-encoded and lag, on stderr.
    #[arg(long = "stats", value_name = "SECONDS", num_args = 0..=1, default_missing_value = "1")]
    pub stats: Option<f64>,
}

impl MirrorArgs {
    /// The mirror's whole configuration.
    pub fn config(&self) -> Result<MirrorConfig, Error> {
        let source = self.source.config()?;
        let topics = self.subscription()?;
        let mut settings = PipelineSettings {
            idle_timeout: crate::time::parse_duration(
                "--idle-timeout",
                self.idle_timeout.as_deref(),
            )?,
            max_bytes_per_second: self.max_bytes_per_second,
            ..PipelineSettings::default()
        };
        settings.refresh = source.metadata_refresh.min(Duration::from_secs(30));
        settings.decode = source.decode.clone();
        Ok(MirrorConfig {
            source,
            target: self.target_config()?,
            topics,
            name: self.name.clone(),
            member: self.member.clone().unwrap_or_else(host_name),
            group: self.group_config()?,
            topic_prefix: self.topic_prefix.clone(),
            stop_at_end: self.exit_at_end,
            settings,
        })
    }

    fn subscription(&self) -> Result<TopicSubscription, Error> {
        let entries = (self.topic.split(','))
            .map(str::trim)
            .filter(|t| !t.is_empty());
        let subscription = TopicSubscription::parse(entries)?;
        if subscription.is_empty() {
            return Err(Error::InvalidArgument {
                what: "topic",
                detail: "-t names no topic".to_owned(),
            });
        }
        Ok(subscription)
    }

    /// `--to-config`, then `--to` over its `bootstrap.servers`.
    fn target_config(&self) -> Result<ProducerConfig, Error> {
        // A transaction a killed process left open holds up its partitions' readers and next
        // owner until it times out: a mirror's are short, so its timeout is too.
        let default = Property::new("transaction.timeout.ms", "10000", "krec mirror's default");
        let mut properties = vec![default];
        if let Some(path) = &self.to_config {
            // The group's keys are the member's, which the producer refuses by name.
            let own = read_properties(path)?.into_iter();
            properties.extend(own.filter(|p| !GROUP_KEYS.contains(&p.key.as_str())));
        }
        let config = ProducerConfig::new(Vec::new()).apply_properties(properties)?;
        let config = match &self.to {
            Some(brokers) => config.with("bootstrap.servers", brokers)?,
            None => config,
        };
        if config.bootstrap.is_empty() {
            return Err(Error::InvalidArgument {
                what: "--to",
                detail: "give --to HOST:PORT or bootstrap.servers in --to-config".to_owned(),
            });
        }
        Ok(config)
    }
}

/// The mirror group's settings `--to-config` gives (`group.protocol`, `session.timeout.ms`,
/// ...); its other keys are the producer's.
impl MirrorArgs {
    fn group_config(&self) -> Result<GroupConfig, Error> {
        let Some(path) = &self.to_config else {
            return Ok(GroupConfig::new(self.name.clone(), Vec::new()));
        };
        let group_keys = read_properties(path)?
            .into_iter()
            .filter(|p| GROUP_KEYS.contains(&p.key.as_str()));
        let config = ConsumerConfig::new(Vec::new()).apply_properties(group_keys)?;
        Ok(config.group)
    }
}

fn read_properties(path: &std::path::Path) -> Result<Vec<Property>, Error> {
    Property::read_file(path).map_err(|e| Error::Property {
        property: e.key.clone(),
        source_name: e.origin.clone(),
        detail: e.detail.clone(),
    })
}

/// The keys of `--to-config` that set the mirror's group, not its producer.
const GROUP_KEYS: &[&str] = &[
    "group.protocol",
    "group.remote.assignor",
    "partition.assignment.strategy",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "max.poll.interval.ms",
];

/// The host's name, the default member name.
fn host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    match name.trim() {
        "" => "krec".to_owned(),
        name => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Line {
        #[command(flatten)]
        args: MirrorArgs,
    }

    /// `krec mirror` with `line`'s arguments (and `--name m` unless it names one), brokers
    /// where nothing listens: an error that comes from connecting exits 1, not 2.
    fn parse(line: &[&str]) -> MirrorArgs {
        let name: &[&str] = if line.contains(&"--name") {
            &[]
        } else {
            &["--name", "m"]
        };
        let words = ["krec", "-b", "127.0.0.1:1"].iter().chain(name).chain(line);
        Line::try_parse_from(words).expect("valid arguments").args
    }

    /// The error `line` makes, checking that it is a bad argument (exit 2) found before
    /// connecting.
    fn refused(line: &[&str]) -> Error {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let outcome = runtime.block_on(async {
            let config = parse(line).config()?;
            config.connect().await.map(drop).map_err(Error::from)
        });
        let error = outcome.expect_err("refused");
        assert_eq!(error.exit_code(), 2, "{line:?}: {error}");
        error
    }

    #[test]
    fn bad_arguments_exit_2_before_connecting() {
        let to = ["--to", "127.0.0.1:1"];
        let missing_to = refused(&["-t", "a"]);
        assert!(missing_to.to_string().contains("--to"), "{missing_to}");
        for topics in ["", ",", " , "] {
            let error = refused(&[&to[..], &["-t", topics]].concat());
            assert!(error.to_string().contains("names no topic"), "{error}");
        }
        refused(&[&to[..], &["-t", "a,^b("]].concat());
        for idle in ["soon", "0s", "-5s", "10"] {
            let flag = format!("--idle-timeout={idle}");
            let error = refused(&[&to[..], &["-t", "a", &flag]].concat());
            assert!(
                error.to_string().contains("idle-timeout"),
                "{idle}: {error}"
            );
        }
        let error = refused(&[&to[..], &["-t", "a", "--name", ""]].concat());
        assert!(error.to_string().contains("name"), "{error}");
        let error = refused(&[&to[..], &["-t", "a", "--member", ""]].concat());
        assert!(error.to_string().contains("member"), "{error}");
    }

    #[test]
    fn good_arguments_make_the_configuration() {
        let line = [
            "--to",
            "target:9092",
            "-t",
            "a, ^b.*",
            "--idle-timeout",
            "1m30s",
        ];
        let config = parse(&[&line[..], &["--topic-prefix", "dr-", "-e"]].concat())
            .config()
            .expect("valid");
        assert_eq!(config.target.bootstrap, ["target:9092"]);
        assert_eq!(config.topics.names(), ["a".to_owned()]);
        assert_eq!(config.topics.patterns().collect::<Vec<_>>(), ["^b.*"]);
        assert_eq!(config.settings.idle_timeout, Some(Duration::from_secs(90)));
        assert_eq!(
            (config.name.as_str(), config.topic_prefix.as_str()),
            ("m", "dr-")
        );
        assert!(config.stop_at_end);
        // The pipeline looks at the source's topics as often as its metadata is refreshed.
        let often = parse(
            &[
                &line[..],
                &["-X", "topic.metadata.refresh.interval.ms=1000"],
            ]
            .concat(),
        );
        let settings = often.config().expect("valid").settings;
        assert_eq!(settings.refresh, Duration::from_secs(1));
    }

    #[test]
    fn the_target_config_sets_the_group_and_the_transactions_apart() {
        let default = parse(&["--to", "t:9092", "-t", "a"])
            .config()
            .expect("valid");
        assert_eq!(default.target.transaction_timeout, Duration::from_secs(10));
        let file = tempfile::NamedTempFile::new().expect("temp file");
        let text = "transaction.timeout.ms=30000\nsession.timeout.ms=6000\nacks=all\n";
        std::fs::write(file.path(), text).expect("write");
        let path = file.path().to_str().expect("UTF-8 path");
        let line = ["--to", "t:9092", "-t", "a", "--to-config", path];
        let config = parse(&line).config().expect("valid");
        assert_eq!(config.target.transaction_timeout, Duration::from_secs(30));
        assert_eq!(config.group.session_timeout, Duration::from_secs(6));
    }
}
