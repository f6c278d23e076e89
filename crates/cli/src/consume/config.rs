//! The consumer and group settings the arguments of `krec consume` describe.

use std::time::Duration;

use krec_batch::DecodeConfig;
use krec_consumer::group::{Assignor, GroupConfig, GroupProtocol};
use krec_consumer::{ConsumerConfig, OffsetReset, StartOffset};

use super::ConsumeArgs;
use crate::properties::ClientProperties;
use crate::Error;

/// Fetch responses per broker held (queued or being written) before the next fetch waits.
/// Fetching only just ahead of the decode threads lets the connection reuse its response
/// buffers (3 held plus 1 being read fill its pool of 4) instead of mapping fresh memory for
/// every response, which costs far more CPU than it saves (see BENCHMARKS.md, end to end).
const HELD_RESPONSES: usize = 3;

impl ConsumeArgs {
    /// The consumer settings these arguments and `properties` describe.
    pub fn consumer_config(&self, properties: &ClientProperties) -> Result<ConsumerConfig, Error> {
        let brokers = match (&self.cluster.brokers, &properties.bootstrap) {
            (Some(brokers), _) | (None, Some(brokers)) => brokers,
            (None, None) => {
                return Err(Error::InvalidArgument {
                    what: "brokers",
                    detail: "give -b HOST:PORT or bootstrap.servers in the properties".to_owned(),
                })
            }
        };
        let mut config = ConsumerConfig::new(ConsumerConfig::parse_bootstrap(brokers)?);
        config.connection.security = properties.security.clone();
        if let Some(client_id) = &properties.client_id {
            config.connection.client_id = client_id.clone();
        }
        if let Some(ms) = properties.request_timeout_ms {
            config.connection.request_timeout = Duration::from_millis(ms);
        }
        config.client_rack = properties.client_rack.clone();
        config.read_committed = self.read.read_committed();
        config.offset_reset = self.reset.parse::<OffsetReset>()?;
        if self.max_bytes <= 0 || self.partition_max_bytes <= 0 {
            return Err(Error::InvalidArgument {
                what: "fetch size",
                detail: "--max-bytes and --partition-max-bytes must be positive".to_owned(),
            });
        }
        config.max_bytes = self.max_bytes;
        config.partition_max_bytes = self.partition_max_bytes;
        config.connection.max_frame_bytes = self.max_bytes as usize + (16 << 20);
        config.buffer_bytes = self.buffer_bytes.max(1);
        config.max_held_responses = Some(HELD_RESPONSES);
        config.max_wait = Duration::from_millis(self.max_wait_ms);
        config.max_fetch_version = self.fetch_version;
        config.metadata_refresh = self.metadata_refresh(properties)?;
        config.give_up_after = Duration::from_millis(self.give_up_after_ms);
        config.fetch_sessions = properties.fetch_sessions.unwrap_or(true);
        config.decode = DecodeConfig {
            verify_crc: !self.no_crc,
            ..DecodeConfig::default()
        };
        Ok(config)
    }
}

impl ConsumeArgs {
    /// `--metadata-refresh-ms`, else the properties' value, else the Java client's 5 minutes.
    fn metadata_refresh(&self, properties: &ClientProperties) -> Result<Duration, Error> {
        let millis = self
            .metadata_refresh_ms
            .or(properties.metadata_refresh_ms)
            .unwrap_or(300_000);
        if millis == 0 {
            return Err(Error::InvalidArgument {
                what: "metadata refresh",
                detail: "--metadata-refresh-ms (or metadata.max.age.ms) must be positive"
                    .to_owned(),
            });
        }
        Ok(Duration::from_millis(millis))
    }

    /// The group settings `-G` and its options describe; `start` (`-o`) is where partitions
    /// without a committed offset begin.
    pub fn group_config(
        &self,
        group: &str,
        start: StartOffset,
        properties: &ClientProperties,
    ) -> Result<GroupConfig, Error> {
        let options = &*self.group;
        let mut config = GroupConfig::new(group, self.topic_entries());
        config.protocol = options.group_protocol.parse::<GroupProtocol>()?;
        config.assignors = options
            .assignors
            .iter()
            .map(|a| a.parse::<Assignor>())
            .collect::<Result<_, _>>()?;
        config.server_assignor = options.server_assignor.clone();
        config.instance_id = options.instance_id.clone();
        let session_ms = options.session_timeout_ms.or(properties.session_timeout_ms);
        let heartbeat_ms = options
            .heartbeat_interval_ms
            .or(properties.heartbeat_interval_ms);
        config.session_timeout = Duration::from_millis(session_ms.unwrap_or(45_000));
        config.heartbeat_interval = Duration::from_millis(heartbeat_ms.unwrap_or(3_000).max(1));
        config.rebalance_timeout = Duration::from_millis(options.rebalance_timeout_ms);
        config.commit_interval = Duration::from_millis(options.commit_interval_ms.max(1));
        config.start_without_commit = match start {
            StartOffset::Beginning | StartOffset::End => start,
            other => {
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
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consume::args::tests::parse;

    #[test]
    fn the_refresh_flag_wins_over_the_properties_which_win_over_the_default() {
        let from_properties = ClientProperties {
            metadata_refresh_ms: Some(2_000),
            ..ClientProperties::default()
        };
        let plain = parse(&["-b", "h:1", "-t", "^a"]);
        let refresh = |args: &ConsumeArgs, properties: &ClientProperties| {
            args.consumer_config(properties).map(|c| c.metadata_refresh)
        };
        let none = ClientProperties::default();
        assert_eq!(refresh(&plain, &none).unwrap(), Duration::from_secs(300));
        assert_eq!(
            refresh(&plain, &from_properties).unwrap(),
            Duration::from_secs(2)
        );
        let flagged = parse(&["-b", "h:1", "-t", "^a", "--metadata-refresh-ms", "500"]);
        assert_eq!(
            refresh(&flagged, &from_properties).unwrap(),
            Duration::from_millis(500)
        );
        let zero = parse(&["-b", "h:1", "-t", "^a", "--metadata-refresh-ms", "0"]);
        assert!(refresh(&zero, &none).is_err());
    }
}
