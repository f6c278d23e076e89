//! The arguments of `krec restore`, and the configuration they make, checked before anything
//! connects.

use krec_batch::OnCorrupt;
use krec_client::client_properties::Property;
use krec_consumer::TopicSubscription;
use krec_copy::{PipelineSettings, RestoreConfig};
use krec_producer::ProducerConfig;

use crate::cluster::ClusterArgs;
use crate::Error;

/// Arguments of `krec restore`.
#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// The target cluster: `-b` and its client properties (`-X`, `-F`; the producer's,
    /// transaction.timeout.ms 10 s here by default).
    #[command(flatten)]
    pub target: ClusterArgs,

    /// The backup: a directory, or an s3://, gs:// or az:// URL (credentials as each cloud's
    /// SDK finds them).
    #[arg(value_name = "DIR")]
    pub location: String,

    /// Backed-up topics to restore, `TOPIC[,TOPIC...]`; one starting with `^` is a regular
    /// expression (default: every topic of the backup).
    #[arg(short = 't', long = "topic", value_name = "TOPIC,...")]
    pub topic: Option<String>,

    /// Put before each topic's name to name its copy.
    #[arg(long = "topic-prefix", value_name = "PREFIX", default_value = "")]
    pub topic_prefix: String,

    /// Stop each partition at its first record stamped at or after TIME: ms since the epoch,
    /// RFC 3339 (2026-11-30T10:00:00Z) or a time before now (-2h).
    #[arg(long = "until", value_name = "TIME", allow_hyphen_values = true)]
    pub until: Option<String>,

    /// Set the consumer groups' offsets the backup kept, translated to the target's offsets.
    #[arg(long = "groups")]
    pub groups: bool,

    /// `stop` (default) at a corrupt batch in the backup, naming the file and byte, or `skip`
    /// it, warn and go on (exit status 3).
    #[arg(long = "on-corrupt", value_name = "POLICY", default_value = "stop", value_parser = crate::corrupt::parse_on_corrupt)]
    pub on_corrupt: OnCorrupt,

    /// Write at most this many bytes per second.
    #[arg(long = "max-bytes-per-second", value_name = "BYTES")]
    pub max_bytes_per_second: Option<u64>,

    /// Every S seconds (default 1), records, bytes and what is left, on stderr.
    #[arg(long = "stats", value_name = "SECONDS", num_args = 0..=1, default_missing_value = "1")]
    pub stats: Option<f64>,
}

impl RestoreArgs {
    /// The restore's whole configuration.
    pub fn config(&self) -> Result<RestoreConfig, Error> {
        let until = (self.until.as_deref())
            .map(|text| crate::time::parse_instant("--until", text, crate::time::now_ms()))
            .transpose()?;
        let settings = PipelineSettings {
            max_bytes_per_second: self.max_bytes_per_second,
            ..PipelineSettings::default()
        };
        Ok(RestoreConfig {
            target: self.target_config()?,
            location: self.location.clone(),
            topics: self.subscription()?,
            topic_prefix: self.topic_prefix.clone(),
            until,
            groups: self.groups,
            on_corrupt: self.on_corrupt,
            settings,
        })
    }

    fn subscription(&self) -> Result<Option<TopicSubscription>, Error> {
        let Some(topic) = &self.topic else {
            return Ok(None);
        };
        let entries = topic.split(',').map(str::trim).filter(|t| !t.is_empty());
        let subscription = TopicSubscription::parse(entries)?;
        if subscription.is_empty() {
            return Err(Error::InvalidArgument {
                what: "topic",
                detail: "-t names no topic".to_owned(),
            });
        }
        Ok(Some(subscription))
    }

    /// `$KREC_CONFIG`, `-F`, `-X`, then `-b`, as `krec produce` reads them.
    fn target_config(&self) -> Result<ProducerConfig, Error> {
        let brokers_flag = self.target.brokers.is_some();
        // A transaction a killed restore left open holds up its partitions until it times
        // out: a restore's are short, as a mirror's.
        let default = Property::new("transaction.timeout.ms", "10000", "krec restore's default");
        let mut properties = vec![default];
        let given = self.target.client.properties()?.into_iter();
        properties.extend(
            given.filter(|p| !(brokers_flag && crate::properties::is_bootstrap_key(&p.key))),
        );
        if let Some(brokers) = &self.target.brokers {
            properties.push(Property::new("bootstrap.servers", brokers, "-b"));
        }
        let config = ProducerConfig::new(Vec::new()).apply_properties(properties)?;
        if config.bootstrap.is_empty() {
            return Err(Error::InvalidArgument {
                what: "brokers",
                detail: "give -b HOST:PORT or bootstrap.servers in the properties".to_owned(),
            });
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Line {
        #[command(flatten)]
        args: RestoreArgs,
    }

    fn parse(line: &[&str]) -> RestoreArgs {
        let words = ["krec"].iter().chain(line);
        Line::try_parse_from(words).expect("valid arguments").args
    }

    #[test]
    fn bad_arguments_exit_2_before_connecting() {
        let no_broker = parse(&["dir"]).config().expect_err("no broker");
        assert_eq!(no_broker.exit_code(), 2, "{no_broker}");
        for until in ["soon", "-5x"] {
            let error = parse(&["-b", "h:1", "dir", "--until", until])
                .config()
                .expect_err("bad time");
            assert!(error.to_string().contains("--until"), "{until}: {error}");
            assert_eq!(error.exit_code(), 2);
        }
        let error = parse(&["-b", "h:1", "dir", "-t", " , "])
            .config()
            .expect_err("no topic");
        assert!(error.to_string().contains("names no topic"), "{error}");
        let line = ["krec", "-b", "h:1", "dir", "--on-corrupt", "later"];
        assert!(Line::try_parse_from(line).is_err());
    }

    #[test]
    fn good_arguments_make_the_configuration() {
        let line = [
            "-b",
            "target:9092",
            "s3://bucket/backups",
            "-t",
            "a, ^b.*",
            "--topic-prefix",
            "r-",
            "--until",
            "2026-11-30T10:00:00Z",
            "--groups",
            "--on-corrupt",
            "skip",
        ];
        let config = parse(&line).config().expect("valid");
        assert_eq!(config.target.bootstrap, ["target:9092"]);
        assert_eq!(config.location, "s3://bucket/backups");
        let topics = config.topics.expect("topics");
        assert_eq!(topics.names(), ["a".to_owned()]);
        assert_eq!(topics.patterns().collect::<Vec<_>>(), ["^b.*"]);
        assert_eq!(config.topic_prefix, "r-");
        assert_eq!(config.until, Some(1_796_032_800_000));
        assert!(config.groups);
        assert_eq!(config.on_corrupt, OnCorrupt::Skip);
        assert_eq!(config.target.transaction_timeout, Duration::from_secs(10));
        let ago = parse(&["-b", "t:1", "dir", "--until", "-1h"])
            .config()
            .expect("valid");
        let hour_ago = crate::time::now_ms() - 3_600_000;
        assert!(ago.until.is_some_and(|t| (t - hour_ago).abs() < 60_000));
        let all = parse(&["-b", "t:1", "dir"]).config().expect("valid");
        assert!(all.topics.is_none() && all.until.is_none() && !all.groups);
        assert_eq!(all.on_corrupt, OnCorrupt::Stop);
    }
}
