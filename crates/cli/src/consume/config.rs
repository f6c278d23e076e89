//! The consumer and group settings the arguments of `krec consume` describe.

use std::time::Duration;

use krec_batch::DecodeConfig;
use krec_consumer::group::{Assignor, GroupProtocol};
use krec_consumer::{ConsumerConfig, OffsetReset, StartOffset};

use super::ConsumeArgs;
use crate::Error;

impl ConsumeArgs {
    /// The consumer settings of the properties (`config`, from
    /// [`crate::cluster::ClusterArgs::config`]) with these arguments applied over them.
    pub fn consumer_config(&self, mut config: ConsumerConfig) -> Result<ConsumerConfig, Error> {
        config.read_committed = self.read.read_committed(&config);
        if let Some(reset) = &self.reset {
            config.offset_reset = reset.parse::<OffsetReset>()?;
        }
        if self.max_bytes.is_some_and(|b| b <= 0)
            || self.partition_max_bytes.is_some_and(|b| b <= 0)
        {
            return Err(Error::InvalidArgument {
                what: "fetch size",
                detail: "--max-bytes and --partition-max-bytes must be positive".to_owned(),
            });
        }
        if let Some(max_bytes) = self.max_bytes {
            config.set_max_bytes(max_bytes)?;
        }
        config.partition_max_bytes = self
            .partition_max_bytes
            .unwrap_or(config.partition_max_bytes);
        config.buffer_bytes = self.buffer_bytes.max(1);
        // Fetching only just ahead of the decode threads lets the connection reuse its response
        // buffers instead of mapping fresh memory for each (see BENCHMARKS.md, end to end).
        config.max_held_responses = Some(ConsumerConfig::HELD_RESPONSES_FOR_REUSE);
        if let Some(ms) = self.max_wait_ms {
            config.max_wait = Duration::from_millis(ms);
        }
        config.max_fetch_version = self.fetch_version;
        config.metadata_refresh = self.metadata_refresh(config.metadata_refresh)?;
        config.give_up_after = Duration::from_millis(self.give_up_after_ms);
        config.decode = DecodeConfig {
            verify_crc: !self.no_crc,
            ..DecodeConfig::default()
        };
        Ok(config)
    }

    /// `--metadata-refresh-ms`, else `properties` (the properties' value, else the Java
    /// client's 5 minutes).
    fn metadata_refresh(&self, properties: Duration) -> Result<Duration, Error> {
        match self.metadata_refresh_ms {
            None => Ok(properties),
            Some(0) => Err(Error::InvalidArgument {
                what: "metadata refresh",
                detail: "--metadata-refresh-ms (or metadata.max.age.ms) must be positive"
                    .to_owned(),
            }),
            Some(millis) => Ok(Duration::from_millis(millis)),
        }
    }

    /// Puts `-G` and its options over the group settings of the properties, in
    /// `config.group` (the one place the library reads them); `start` (`-o`, when given) is
    /// where partitions without a committed offset begin.
    pub fn apply_group(
        &self,
        group: &str,
        start: Option<StartOffset>,
        config: &mut ConsumerConfig,
    ) -> Result<(), Error> {
        let options = &*self.group;
        let mut group_config = config.group.clone();
        group_config.group_id = group.to_owned();
        group_config.topics = self.topic_entries();
        if let Some(protocol) = &options.group_protocol {
            group_config.protocol = protocol.parse::<GroupProtocol>()?;
        }
        if !options.assignors.is_empty() {
            group_config.assignors = options
                .assignors
                .iter()
                .map(|a| a.parse::<Assignor>())
                .collect::<Result<_, _>>()?;
        }
        let or =
            |flag: Option<u64>, property: Duration| flag.map_or(property, Duration::from_millis);
        group_config.server_assignor = options
            .server_assignor
            .clone()
            .or(group_config.server_assignor);
        group_config.instance_id = options.instance_id.clone().or(group_config.instance_id);
        group_config.session_timeout = or(options.session_timeout_ms, group_config.session_timeout);
        let heartbeat = or(
            options.heartbeat_interval_ms,
            group_config.heartbeat_interval,
        );
        group_config.heartbeat_interval = heartbeat.max(Duration::from_millis(1));
        group_config.rebalance_timeout =
            or(options.rebalance_timeout_ms, group_config.rebalance_timeout);
        let commit = or(options.commit_interval_ms, group_config.commit_interval);
        group_config.commit_interval = commit.max(Duration::from_millis(1));
        group_config.start_without_commit = match start {
            None => group_config.start_without_commit,
            Some(start @ (StartOffset::Beginning | StartOffset::End)) => start,
            Some(other) => {
                return Err(Error::InvalidArgument {
                    what: "offset",
                    detail: format!(
                        "{other:?}: with -G, -o says where partitions without a committed \
                         offset start: beginning or end"
                    ),
                })
            }
        };
        if !self.read.partitions.is_empty() {
            return Err(Error::InvalidArgument {
                what: "partitions",
                detail: "-p cannot be used with -G: the group assigns the partitions".to_owned(),
            });
        }
        config.group = group_config;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consume::args::tests::parse;

    /// The settings `line` gives over properties `-X` each of `properties`.
    fn configured(line: &[&str], properties: &[&str]) -> Result<ConsumerConfig, Error> {
        let mut words = line.to_vec();
        for property in properties {
            words.extend(["-X", property]);
        }
        let args = parse(&words);
        args.consumer_config(args.cluster.config()?)
    }

    #[test]
    fn the_refresh_flag_wins_over_the_properties_which_win_over_the_default() {
        let plain = ["-b", "h:1", "-t", "^a"];
        let refresh = |line: &[&str], properties: &[&str]| {
            configured(line, properties).map(|c| c.metadata_refresh)
        };
        let from_properties = ["metadata.max.age.ms=2000"];
        assert_eq!(refresh(&plain, &[]).unwrap(), Duration::from_secs(300));
        assert_eq!(
            refresh(&plain, &from_properties).unwrap(),
            Duration::from_secs(2)
        );
        let flagged = ["-b", "h:1", "-t", "^a", "--metadata-refresh-ms", "500"];
        assert_eq!(
            refresh(&flagged, &from_properties).unwrap(),
            Duration::from_millis(500)
        );
        let zero = ["-b", "h:1", "-t", "^a", "--metadata-refresh-ms", "0"];
        assert!(refresh(&zero, &[]).is_err());
    }

    #[test]
    fn fetch_flags_win_over_the_properties_which_win_over_the_defaults() {
        let plain = ["-b", "h:1", "-t", "a"];
        let defaults = configured(&plain, &[]).unwrap();
        assert_eq!(defaults.max_bytes, 50 << 20);
        assert_eq!(defaults.connection.max_frame_bytes, (50 << 20) + (16 << 20));
        assert_eq!(defaults.partition_max_bytes, 1 << 20);
        assert_eq!(defaults.max_wait, Duration::from_millis(500));
        assert_eq!(defaults.offset_reset, OffsetReset::Earliest);
        assert!(!defaults.read_committed);
        assert_eq!(
            defaults.max_held_responses,
            Some(ConsumerConfig::HELD_RESPONSES_FOR_REUSE)
        );
        let properties = [
            "fetch.max.bytes=1000",
            "max.partition.fetch.bytes=100",
            "fetch.max.wait.ms=10",
            "auto.offset.reset=latest",
            "isolation.level=read_committed",
        ];
        let from_properties = configured(&plain, &properties).unwrap();
        assert_eq!(
            from_properties.connection.max_frame_bytes,
            1000 + (16 << 20)
        );
        assert_eq!(from_properties.partition_max_bytes, 100);
        assert_eq!(from_properties.max_wait, Duration::from_millis(10));
        assert_eq!(from_properties.offset_reset, OffsetReset::Latest);
        assert!(from_properties.read_committed);
        let flags = [
            "-b",
            "h:1",
            "-t",
            "a",
            "--max-bytes",
            "2000",
            "--partition-max-bytes",
            "200",
            "--max-wait-ms",
            "20",
            "--reset",
            "fail",
            "--isolation",
            "read_uncommitted",
        ];
        let flagged = configured(&flags, &properties).unwrap();
        assert_eq!(flagged.max_bytes, 2000);
        assert_eq!(flagged.connection.max_frame_bytes, 2000 + (16 << 20));
        assert_eq!(flagged.partition_max_bytes, 200);
        assert_eq!(flagged.max_wait, Duration::from_millis(20));
        assert_eq!(flagged.offset_reset, OffsetReset::Fail);
        assert!(!flagged.read_committed);
        let zero = configured(&["-b", "h:1", "-t", "a", "--max-bytes", "0"], &[]).unwrap_err();
        assert!(zero.to_string().contains("--max-bytes"), "{zero}");
    }

    #[test]
    fn group_flags_win_over_the_group_properties() {
        let properties = [
            "group.id=billing",
            "group.protocol=consumer",
            "session.timeout.ms=10000",
            "max.poll.interval.ms=90000",
            "auto.offset.reset=latest",
        ];
        let group = |line: &[&str], start: Option<StartOffset>| {
            let mut words = line.to_vec();
            for property in properties {
                words.extend(["-X", property]);
            }
            let args = parse(&words);
            let config = args
                .consumer_config(args.cluster.config().unwrap())
                .unwrap();
            let mut config = config;
            args.apply_group("g", start, &mut config).unwrap();
            config.group
        };
        let from_properties = group(&["-b", "h:1", "-t", "a"], None);
        assert_eq!(from_properties.group_id, "g");
        assert_eq!(from_properties.topics, ["a"]);
        assert_eq!(from_properties.protocol, GroupProtocol::Consumer);
        assert_eq!(from_properties.session_timeout, Duration::from_secs(10));
        assert_eq!(from_properties.rebalance_timeout, Duration::from_secs(90));
        assert_eq!(from_properties.start_without_commit, StartOffset::End);
        let flags = [
            "-b",
            "h:1",
            "-t",
            "a",
            "--group-protocol",
            "classic",
            "--session-timeout-ms",
            "20000",
            "--rebalance-timeout-ms",
            "1000",
        ];
        let flagged = group(&flags, Some(StartOffset::Beginning));
        assert_eq!(flagged.protocol, GroupProtocol::Classic);
        assert_eq!(flagged.session_timeout, Duration::from_secs(20));
        assert_eq!(flagged.rebalance_timeout, Duration::from_secs(1));
        assert_eq!(flagged.start_without_commit, StartOffset::Beginning);
        assert_eq!(
            flagged.assignors,
            [Assignor::Range, Assignor::CooperativeSticky]
        );
    }
}
