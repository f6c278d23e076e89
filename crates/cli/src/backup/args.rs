//! The arguments of `krec backup`, and the configuration they make, checked before anything
//! connects.

use std::time::Duration;

use krec_consumer::TopicSubscription;
use krec_copy::BackupConfig;

use crate::cluster::ClusterArgs;
use crate::Error;

/// Arguments of `krec backup`.
#[derive(Debug, clap::Args)]
pub struct BackupArgs {
    /// The source cluster: `-b` and its client properties (`-X`, `-F`).
    #[command(flatten)]
    pub source: ClusterArgs,

    /// Topics to back up, `TOPIC[,TOPIC...]`; one starting with `^` is a regular expression
    /// matched against the cluster's topic names.
    #[arg(short = 't', long = "topic", value_name = "TOPIC,...")]
    pub topic: String,

    /// Where the backup lives: a directory, or s3://BUCKET/PREFIX (also gs://, az://;
    /// credentials as each cloud's SDK finds them). Run again into the same place, a backup
    /// continues where it stopped.
    #[arg(value_name = "DIR")]
    pub location: String,

    /// Keep going as new records arrive (until SIGTERM or Ctrl-C, which commit first);
    /// otherwise stop once every partition is backed up to the end it had.
    #[arg(long = "follow")]
    pub follow: bool,

    /// Close a segment file before it grows past this many bytes (a larger batch gets one of
    /// its own); K, M and G suffixes are powers of 1024.
    #[arg(long = "segment-bytes", value_name = "BYTES")]
    pub segment_bytes: Option<String>,

    /// Every S seconds (default 1), records and bytes backed up and lag, on stderr.
    #[arg(long = "stats", value_name = "SECONDS", num_args = 0..=1, default_missing_value = "1")]
    pub stats: Option<f64>,
}

impl BackupArgs {
    /// The backup's whole configuration.
    pub fn config(&self) -> Result<BackupConfig, Error> {
        let source = self.source.config()?;
        let refresh = source.metadata_refresh.min(Duration::from_secs(30));
        let mut config = BackupConfig::new(source, self.subscription()?, self.location.clone());
        config.settings.refresh = refresh;
        config.follow = self.follow;
        if let Some(size) = &self.segment_bytes {
            config.segment_bytes = parse_size(size)?;
        }
        Ok(config)
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
}

/// `--segment-bytes`: a positive number of bytes, with an optional K, M or G (1024-based).
fn parse_size(text: &str) -> Result<u64, Error> {
    let invalid = || Error::InvalidArgument {
        what: "--segment-bytes",
        detail: format!("{text:?}: give a positive size in bytes, like 134217728 or 128M"),
    };
    let lower = text.trim().to_ascii_lowercase();
    let (digits, shift) = match lower.trim_end_matches(['b', 'i']) {
        t if t.ends_with('k') => (&t[..t.len() - 1], 10),
        t if t.ends_with('m') => (&t[..t.len() - 1], 20),
        t if t.ends_with('g') => (&t[..t.len() - 1], 30),
        t => (t, 0),
    };
    let number: u64 = digits.trim().parse().map_err(|_| invalid())?;
    let bytes = number.checked_mul(1 << shift).ok_or_else(invalid)?;
    if bytes == 0 {
        return Err(invalid());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Line {
        #[command(flatten)]
        args: BackupArgs,
    }

    fn parse(line: &[&str]) -> BackupArgs {
        let words = ["krec", "-b", "127.0.0.1:1"].iter().chain(line);
        Line::try_parse_from(words).expect("valid arguments").args
    }

    #[test]
    fn the_flags_make_the_configuration() {
        let config = parse(&["-t", "a, ^b.*", "dir", "--follow", "--segment-bytes", "8M"])
            .config()
            .expect("valid");
        assert_eq!(config.topics.names(), ["a".to_owned()]);
        assert_eq!(config.topics.patterns().collect::<Vec<_>>(), ["^b.*"]);
        assert_eq!(config.location, "dir");
        assert!(config.follow);
        assert_eq!(config.segment_bytes, 8 << 20);
        let plain = parse(&["-t", "a", "s3://bucket/prefix"])
            .config()
            .expect("valid");
        assert!(!plain.follow);
        assert_eq!(plain.segment_bytes, BackupConfig::DEFAULT_SEGMENT_BYTES);
        assert_eq!(
            plain.settings.commit_interval,
            BackupConfig::COMMIT_INTERVAL
        );
    }

    #[test]
    fn bad_arguments_exit_2_before_connecting() {
        for size in ["0", "-1", "lots", "1T", "99999999999G"] {
            let flag = format!("--segment-bytes={size}");
            let error = parse(&["-t", "a", "dir", &flag]).config().expect_err(size);
            assert_eq!(error.exit_code(), 2, "{size}: {error}");
            assert!(error.to_string().contains("--segment-bytes"), "{error}");
        }
        let error = parse(&["-t", " , ", "dir"]).config().expect_err("no topic");
        assert!(error.to_string().contains("names no topic"), "{error}");
        for (size, bytes) in [("1k", 1024), ("2MiB", 2 << 20), ("1g", 1 << 30), ("77", 77)] {
            assert_eq!(parse_size(size).expect(size), bytes);
        }
    }
}
