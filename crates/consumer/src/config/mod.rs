//! What a consumer is told: brokers, where to start, limits, and how to react to faults.
//!
//! `properties` reads the same settings from librdkafka and Java client properties.

mod properties;

use std::str::FromStr;
use std::time::Duration;

use krec_batch::DecodeConfig;

use crate::group::GroupConfig;
use crate::Error;
use krec_client::ConnectionSettings;

pub use properties::Property;
use properties::Retained;

/// Where a partition starts (kcat's `-o`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartOffset {
    /// The log start offset (`beginning`).
    Beginning,
    /// The high watermark, or the last stable offset when reading committed data (`end`).
    End,
    /// An absolute offset (`OFFSET`).
    Offset(i64),
    /// This many records before the end, never before the beginning (`-N`).
    FromEnd(i64),
    /// The first record at or after this timestamp in ms; the end if there is none (`@MS`).
    Timestamp(i64),
}

impl FromStr for StartOffset {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let invalid = |detail: &str| Error::InvalidArgument {
            what: "offset",
            detail: format!("{text:?}: {detail}"),
        };
        match text {
            "beginning" | "earliest" => Ok(Self::Beginning),
            "end" | "latest" => Ok(Self::End),
            _ => {
                if let Some(ms) = text.strip_prefix('@') {
                    let ms = ms
                        .parse::<i64>()
                        .map_err(|_| invalid("expected @TIMESTAMP_MS"))?;
                    if ms < 0 {
                        return Err(invalid("a timestamp cannot be negative"));
                    }
                    Ok(Self::Timestamp(ms))
                } else if let Some(count) = text.strip_prefix('-') {
                    let count = count
                        .parse::<i64>()
                        .ok()
                        .filter(|count| *count >= 0)
                        .ok_or_else(|| invalid("expected -N (records before the end)"))?;
                    Ok(Self::FromEnd(count))
                } else {
                    let offset = text.parse::<i64>().map_err(|_| {
                        invalid("expected beginning, end, OFFSET, -N or @TIMESTAMP_MS")
                    })?;
                    Ok(Self::Offset(offset))
                }
            }
        }
    }
}

/// What to do when the broker says a fetch offset is out of range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffsetReset {
    /// Restart at the log start offset (records before it were deleted; logged as a warning).
    Earliest,
    /// Restart at the end.
    Latest,
    /// Stop with [`Error::OffsetOutOfRange`].
    Fail,
}

impl FromStr for OffsetReset {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        match text {
            "earliest" | "beginning" => Ok(Self::Earliest),
            "latest" | "end" => Ok(Self::Latest),
            "fail" | "error" => Ok(Self::Fail),
            _ => Err(Error::InvalidArgument {
                what: "offset reset policy",
                detail: format!("{text:?}: expected earliest, latest or fail"),
            }),
        }
    }
}

/// `fetch.max.bytes` by default, as the Java client.
const DEFAULT_MAX_BYTES: i32 = 50 << 20;

/// Consumer settings. [`ConsumerConfig::new`] fills in defaults close to the Java client's.
#[derive(Clone, Debug)]
pub struct ConsumerConfig {
    /// Bootstrap brokers, `host:port` each; tried in order until one answers.
    pub bootstrap: Vec<String>,
    /// Connection identity, timeouts and the response-frame bound.
    pub connection: ConnectionSettings,
    /// Read only committed transactional data (isolation level `read_committed`).
    pub read_committed: bool,
    /// How long a broker may hold a fetch waiting for `min_bytes`.
    pub max_wait: Duration,
    /// Bytes a broker should gather before answering a fetch.
    pub min_bytes: i32,
    /// Record bytes per fetch response (the first batch is returned whole even if larger).
    pub max_bytes: i32,
    /// Record bytes per partition in a fetch response.
    pub partition_max_bytes: i32,
    /// Bytes of fetched data held before fetching pauses (back-pressure), in every mode: a
    /// share group member acquires no more records than fit. Response buffers
    /// kept for reuse add at most half of this again (and at most
    /// [`ConnectionSettings::frame_buffer_bytes`]) per broker connection.
    pub buffer_bytes: usize,
    /// Fetch responses per broker whose data may be held at once (queued, or being decoded)
    /// before that broker's next fetch waits for one to be dropped; `None`: only
    /// `buffer_bytes` limits fetching ahead. A small limit keeps fetching just ahead of
    /// decoding, so response buffers are reused instead of freshly mapped; a program that
    /// keeps chunks while it polls for more must leave it `None` or hold fewer than this.
    pub max_held_responses: Option<usize>,
    /// What to do on OFFSET_OUT_OF_RANGE.
    pub offset_reset: OffsetReset,
    /// First delay before retrying after a connection or leader error; doubles up to `max_backoff`.
    pub backoff: Duration,
    /// Longest delay between retries, and the longest broker throttle honoured.
    pub max_backoff: Duration,
    /// How long a partition may stay without a reachable leader before the consumer gives up.
    pub give_up_after: Duration,
    /// Highest Fetch version to use even if both sides speak a newer one (`None`: the
    /// highest common version). Lets older protocol paths, such as topic names instead of
    /// topic ids before v13, be exercised against a new broker.
    pub max_fetch_version: Option<i16>,
    /// How often a subscription ([`crate::Consumer::subscribe`], a group's topics) looks at
    /// the cluster's topics again (`metadata.max.age.ms`, the Java client's default).
    pub metadata_refresh: Duration,
    /// Use KIP-227 incremental fetch sessions: after a first full fetch, each request names
    /// only the partitions whose position changed. Off, every fetch names every partition.
    pub fetch_sessions: bool,
    /// How long [`Consumer::close`](crate::Consumer::close) waits for the brokers to end the
    /// fetch sessions.
    pub close_timeout: Duration,
    /// Limits for decoding batches.
    pub decode: DecodeConfig,
    /// The consumer's rack (`client.rack`, KIP-392): sent with every fetch, so that a leader
    /// with a rack-aware replica selector can name a follower in this rack to read from.
    pub client_rack: Option<String>,
    /// How long a follower named by a leader is read from before the leader is asked again
    /// (the Java client uses `metadata.max.age.ms`). Errors and leader changes end it sooner.
    pub preferred_replica_lease: Duration,
    /// Group membership: the one place of a member's settings (`group.id` and the other group
    /// properties fill it), read by [`GroupConsumer::join`](crate::GroupConsumer::join) and
    /// [`GroupConsumer::subscribe`](crate::GroupConsumer::subscribe); an empty
    /// [`GroupConfig::group_id`] means none is set. `subscribe` sets its `topics`.
    pub group: GroupConfig,
    /// Security properties as given (rebuilt into `connection.security` when one changes)
    /// and the properties kept for other libraries.
    retained: Retained,
}

impl ConsumerConfig {
    /// Fetch responses a consumer can hold per broker while the connection still reads each
    /// new response into a reused buffer: one fewer than the buffers it keeps, the last being
    /// for the response in flight. A value for [`ConsumerConfig::max_held_responses`].
    pub const HELD_RESPONSES_FOR_REUSE: usize = krec_client::POOLED_FRAME_BUFFERS - 1;

    /// Room in a response frame beyond its record bytes (`max_bytes`): headers, and the one
    /// batch a broker returns whole even when it is larger.
    const FRAME_OVERHEAD_BYTES: usize = 16 << 20;

    /// Defaults for the given bootstrap brokers.
    pub fn new(bootstrap: Vec<String>) -> Self {
        Self {
            bootstrap,
            connection: ConnectionSettings {
                max_frame_bytes: Self::frame_bytes_for(DEFAULT_MAX_BYTES),
                ..ConnectionSettings::default()
            },
            read_committed: false,
            max_wait: Duration::from_millis(500),
            min_bytes: 1,
            max_bytes: DEFAULT_MAX_BYTES,
            partition_max_bytes: 1 << 20,
            buffer_bytes: 256 << 20,
            max_held_responses: None,
            offset_reset: OffsetReset::Earliest,
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            give_up_after: Duration::from_secs(300),
            max_fetch_version: None,
            metadata_refresh: Duration::from_secs(300),
            fetch_sessions: true,
            close_timeout: Duration::from_secs(2),
            decode: DecodeConfig::default(),
            client_rack: None,
            preferred_replica_lease: Duration::from_secs(300),
            group: GroupConfig::new("", Vec::new()),
            retained: Retained::default(),
        }
    }

    /// Sets [`ConsumerConfig::max_bytes`] (`fetch.max.bytes`) and the response-frame bound that
    /// follows from it, [`ConnectionSettings::max_frame_bytes`]; refuses a size not positive.
    pub fn set_max_bytes(&mut self, max_bytes: i32) -> Result<(), Error> {
        if max_bytes <= 0 {
            return Err(Error::InvalidArgument {
                what: "fetch.max.bytes",
                detail: format!("{max_bytes}: must be positive"),
            });
        }
        self.max_bytes = max_bytes;
        self.connection.max_frame_bytes = Self::frame_bytes_for(max_bytes);
        Ok(())
    }

    /// The largest response frame accepted when fetches ask for `max_bytes` of records.
    fn frame_bytes_for(max_bytes: i32) -> usize {
        usize::try_from(max_bytes).unwrap_or(0) + Self::FRAME_OVERHEAD_BYTES
    }

    /// The bootstrap brokers, or an error naming `bootstrap.servers` when there are none.
    pub(crate) fn check_bootstrap(&self) -> Result<&[String], Error> {
        if self.bootstrap.is_empty() {
            return Err(Error::InvalidArgument {
                what: "bootstrap.servers",
                detail: "no bootstrap brokers: set bootstrap.servers=HOST:PORT[,HOST:PORT...]"
                    .to_owned(),
            });
        }
        Ok(&self.bootstrap)
    }

    /// Parses a `host:port[,host:port...]` list.
    pub fn parse_bootstrap(list: &str) -> Result<Vec<String>, Error> {
        krec_client::client_properties::parse_bootstrap(list).map_err(|detail| {
            Error::InvalidArgument {
                what: "brokers",
                detail,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_offsets_parse_like_kcat() {
        let cases = [
            ("beginning", StartOffset::Beginning),
            ("end", StartOffset::End),
            ("42", StartOffset::Offset(42)),
            ("-10", StartOffset::FromEnd(10)),
            ("@1700000000000", StartOffset::Timestamp(1_700_000_000_000)),
        ];
        for (text, expected) in cases {
            assert_eq!(text.parse::<StartOffset>().unwrap(), expected, "{text}");
        }
        for bad in ["", "begin", "@", "@-5", "--3", "1.5", "@x"] {
            assert!(bad.parse::<StartOffset>().is_err(), "{bad}");
        }
    }

    #[test]
    fn bootstrap_lists_are_checked() {
        assert_eq!(
            ConsumerConfig::parse_bootstrap("a:1, b:2").unwrap(),
            vec!["a:1".to_owned(), "b:2".to_owned()]
        );
        for bad in ["", ",", "a", "a:x", ":9092", "a:70000"] {
            assert!(ConsumerConfig::parse_bootstrap(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reset_policies_parse() {
        assert_eq!("fail".parse::<OffsetReset>().unwrap(), OffsetReset::Fail);
        assert_eq!(
            "earliest".parse::<OffsetReset>().unwrap(),
            OffsetReset::Earliest
        );
        assert!("sometimes".parse::<OffsetReset>().is_err());
    }
}
