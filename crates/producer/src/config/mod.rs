//! What a producer is told: brokers, acknowledgements, batching, compression, idempotence,
//! transactions, retries, memory and partitioning, with the Java client's defaults.
//!
//! `properties` reads the same settings from the Java client's and librdkafka's properties.

mod properties;

use std::time::Duration;

use krec_batch::{Codec, WriteConfig};
use krec_client::client_properties::{Property, SecurityProperties};
use krec_client::partitioner::Partitioning;
use krec_client::ConnectionSettings;

/// Which replicas must have a batch before the broker acknowledges it (`acks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acks {
    /// `acks=0`: no acknowledgement at all.
    None,
    /// `acks=1`: the leader's log.
    Leader,
    /// `acks=all` (`-1`): every in-sync replica.
    All,
}

impl Acks {
    /// The value a Produce request carries: 0, 1 or -1.
    pub fn code(self) -> i16 {
        match self {
            Acks::None => 0,
            Acks::Leader => 1,
            Acks::All => -1,
        }
    }
}

/// The most requests in flight per connection with idempotence: the broker keeps the
/// sequences of the last five batches per producer and partition.
pub const MAX_IDEMPOTENT_IN_FLIGHT: u32 = 5;

/// Producer settings. [`ProducerConfig::new`] fills in the Java client's defaults.
#[derive(Clone, Debug)]
pub struct ProducerConfig {
    /// Bootstrap brokers, `host:port` each; tried in order until one answers.
    pub bootstrap: Vec<String>,
    /// Connection identity (`client.id`), `request.timeout.ms`, security.
    pub connection: ConnectionSettings,
    /// How often metadata is read again (`metadata.max.age.ms`).
    pub metadata_refresh: Duration,
    /// `acks` (`request.required.acks`).
    pub acks: Acks,
    /// How long a batch waits for more records (`linger.ms`, `queue.buffering.max.ms`).
    pub linger: Duration,
    /// `batch.size` and `max.request.size` (`message.max.bytes`), as the batch writer takes them.
    pub write: WriteConfig,
    /// librdkafka's `batch.num.messages`: the most records in one batch; `None` (the Java
    /// client's way) leaves `batch.size` the only limit.
    pub max_batch_records: Option<u32>,
    /// `compression.type` (`compression.codec`) at its `compression.<codec>.level`.
    pub codec: Codec,
    /// `enable.idempotence`: producer id, sequences, retries without duplicates.
    pub idempotence: bool,
    /// `transactional.id`: the producer's identity across restarts, which makes it
    /// transactional (and idempotent); a newer producer with the same id fences it.
    pub transactional_id: Option<String>,
    /// `transaction.timeout.ms`: how long the coordinator lets a transaction stay open
    /// before it aborts it (the producer's next batch is then refused: `abort`, and go on).
    pub transaction_timeout: Duration,
    /// `max.in.flight.requests.per.connection` (`max.in.flight`).
    pub max_in_flight: u32,
    /// How long a record may take from `send` to its acknowledgement, retries included
    /// (`delivery.timeout.ms`, `message.timeout.ms`).
    pub delivery_timeout: Duration,
    /// How many times a failed batch is sent again (`retries`, `message.send.max.retries`).
    pub retries: i32,
    /// The wait before a retry (`retry.backoff.ms`).
    pub retry_backoff: Duration,
    /// Bytes of records held before `send` waits (`buffer.memory`,
    /// `queue.buffering.max.kbytes` in KiB).
    pub buffer_memory: u64,
    /// How long `send` waits for room or metadata before failing (`max.block.ms`).
    pub max_block: Duration,
    /// How records choose a partition (`partitioner`, `partitioner.class`,
    /// `partitioner.ignore.keys`, `partitioner.adaptive.partitioning.enable`).
    pub partitioning: Partitioning,
    /// What the typed fields cannot hold.
    retained: Retained,
}

/// The settings the checks read as given: security and foreign properties, which keys were set
/// and where (an explicit conflict is an error, a default gives way), the codec's name and
/// levels, the partitioner settings.
#[derive(Clone, Debug, Default)]
struct Retained {
    security: SecurityProperties,
    foreign: Vec<Property>,
    /// Origins of the keys the checks look at, by their Java name, last setting kept.
    explicit: Vec<(&'static str, String, String)>,
    /// `compression.type` as given (the codec is built with its level once all are read).
    compression: Option<krec_batch::Compression>,
    /// `compression.gzip.level`, `compression.lz4.level`, `compression.zstd.level`.
    levels: Levels,
    /// `partitioner`, `partitioner.class`, `partitioner.ignore.keys`: value and origin.
    partitioner: [Option<(String, String)>; 3],
    /// `partitioner.adaptive.partitioning.enable`.
    adaptive: Option<bool>,
}

/// The levels of the three codecs that have one.
#[derive(Clone, Copy, Debug)]
struct Levels {
    gzip: i32,
    lz4: i32,
    zstd: i32,
}

impl Default for Levels {
    fn default() -> Self {
        Levels {
            gzip: Codec::GZIP_DEFAULT_LEVEL,
            lz4: Codec::LZ4_DEFAULT_LEVEL,
            zstd: Codec::ZSTD_DEFAULT_LEVEL,
        }
    }
}

impl ProducerConfig {
    /// `linger.ms` by default: the Java client's since 4.0.
    pub const DEFAULT_LINGER: Duration = Duration::from_millis(5);
    /// `delivery.timeout.ms` by default.
    pub const DEFAULT_DELIVERY_TIMEOUT: Duration = Duration::from_secs(120);
    /// `transaction.timeout.ms` by default, the Java client's.
    pub const DEFAULT_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(60);

    /// The Java client's defaults for the given bootstrap brokers: `acks=all`, `linger.ms=5`,
    /// `batch.size=16384`, no compression, idempotent, 5 requests in flight, and the rest.
    pub fn new(bootstrap: Vec<String>) -> Self {
        Self {
            bootstrap,
            connection: ConnectionSettings {
                request_timeout: Duration::from_secs(30),
                ..ConnectionSettings::default()
            },
            metadata_refresh: Duration::from_secs(300),
            acks: Acks::All,
            linger: Self::DEFAULT_LINGER,
            write: WriteConfig::default(),
            max_batch_records: None,
            codec: Codec::NONE,
            idempotence: true,
            transactional_id: None,
            transaction_timeout: Self::DEFAULT_TRANSACTION_TIMEOUT,
            max_in_flight: MAX_IDEMPOTENT_IN_FLIGHT,
            delivery_timeout: Self::DEFAULT_DELIVERY_TIMEOUT,
            retries: i32::MAX,
            retry_backoff: Duration::from_millis(100),
            buffer_memory: 32 << 20,
            max_block: Duration::from_secs(60),
            partitioning: Partitioning::JAVA_DEFAULT,
            retained: Retained::default(),
        }
    }

    /// The properties kept for other libraries (`schema.registry.*`, `basic.auth.*`), in the
    /// order given, with their origins.
    pub fn foreign_properties(&self) -> &[Property] {
        &self.retained.foreign
    }
}

#[cfg(test)]
#[path = "properties_tests.rs"]
mod tests;
