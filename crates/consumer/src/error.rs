//! The crate's one error enum.

/// Everything that can go wrong in krec-consumer, with the context needed to act on it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a file or stream failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done (e.g. the file path).
        context: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },

    /// A TCP connection to a broker could not be opened or broke while in use.
    #[error("broker {broker}: {action}: {source}")]
    Connection {
        /// `host:port` of the broker.
        broker: String,
        /// What the client was doing (connecting, sending a request, reading a response).
        action: &'static str,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },

    /// A broker did not answer within the allowed time.
    #[error("broker {broker}: no response to {api} within {timeout_ms} ms")]
    Timeout {
        /// `host:port` of the broker.
        broker: String,
        /// The request that timed out.
        api: &'static str,
        /// The time limit that passed.
        timeout_ms: u64,
    },

    /// A broker sent bytes that do not follow the Kafka protocol.
    #[error("broker {broker}: malformed {api} response: {detail}")]
    Protocol {
        /// `host:port` of the broker.
        broker: String,
        /// The request whose response was malformed.
        api: &'static str,
        /// What was wrong.
        detail: String,
    },

    /// A response frame announced more bytes than the configured bound allows.
    #[error("broker {broker}: response frame of {size} bytes exceeds the {max} byte limit")]
    FrameTooLarge {
        /// `host:port` of the broker.
        broker: String,
        /// The size announced on the wire.
        size: i64,
        /// The configured bound.
        max: usize,
    },

    /// The broker does not speak any version of an API that this client supports.
    #[error("broker {broker}: no common version of {api} (broker {broker_min}..={broker_max}, ours {ours_min}..={ours_max})")]
    UnsupportedVersion {
        /// `host:port` of the broker.
        broker: String,
        /// The API.
        api: &'static str,
        /// Lowest version the broker speaks.
        broker_min: i16,
        /// Highest version the broker speaks.
        broker_max: i16,
        /// Lowest version we speak.
        ours_min: i16,
        /// Highest version we speak.
        ours_max: i16,
    },

    /// A broker answered with an error code that the client cannot recover from.
    #[error("broker {broker}: {api} for {topic}/{partition}: error {code} ({name})")]
    Broker {
        /// `host:port` or node id of the broker.
        broker: String,
        /// The request.
        api: &'static str,
        /// Topic concerned (empty when the error is not about a topic).
        topic: String,
        /// Partition concerned (-1 when not about a partition).
        partition: i32,
        /// Kafka's error code.
        code: i16,
        /// Kafka's name for the error code.
        name: String,
    },

    /// None of the bootstrap brokers could be reached.
    #[error("no bootstrap broker reachable ({brokers}): last error: {last}")]
    NoBroker {
        /// The bootstrap list that was tried.
        brokers: String,
        /// The error of the last attempt.
        last: Box<Error>,
    },

    /// The topic does not exist in the cluster.
    #[error("unknown topic {topic:?} (the cluster has no topic of that name)")]
    UnknownTopic {
        /// The topic that was asked for.
        topic: String,
    },

    /// The partition does not exist in the topic.
    #[error("topic {topic:?} has no partition {partition} (it has {count})")]
    UnknownPartition {
        /// The topic.
        topic: String,
        /// The partition that was asked for.
        partition: i32,
        /// How many partitions the topic has.
        count: usize,
    },

    /// The fetch offset is outside the partition's log and the reset policy is `fail`.
    #[error("{topic}/{partition}: offset {offset} is out of range (log is {log_start}..{high_watermark})")]
    OffsetOutOfRange {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The offset that was fetched.
        offset: i64,
        /// The log start offset, when known (-1 otherwise).
        log_start: i64,
        /// The high watermark, when known (-1 otherwise).
        high_watermark: i64,
    },

    /// A partition's records could not be decoded.
    #[error("{topic}/{partition} at fetch offset {fetch_offset}: {source}")]
    Decode {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The offset the fetch started at.
        fetch_offset: i64,
        /// What krec-batch found wrong.
        #[source]
        source: krec_batch::Error,
    },

    /// A fetched batch header announces a length no batch can have.
    #[error("{topic}/{partition} at fetch offset {fetch_offset}: batch at byte {position} (offset {offset}) has an impossible length {length}")]
    MalformedBatch {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The offset the fetch started at.
        fetch_offset: i64,
        /// Byte position of the batch in the partition's record bytes.
        position: usize,
        /// The batch's base offset field.
        offset: i64,
        /// The length field.
        length: i32,
    },

    /// Offsets did not follow each other: records would be lost or duplicated.
    #[error("{topic}/{partition}: offsets not contiguous: expected {expected}, got {actual}")]
    OffsetGap {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The offset that should have come next.
        expected: i64,
        /// The offset that came.
        actual: i64,
    },

    /// A fetch made no progress several times in a row (a batch larger than any fetch allows).
    #[error("{topic}/{partition}: fetch at offset {offset} returned no complete batch {attempts} times ({}; raise --max-bytes)", needed_text(*.needed))]
    NoProgress {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The stuck offset.
        offset: i64,
        /// How many fetches came back without a complete batch.
        attempts: u32,
        /// Size of the batch that did not fit, when known.
        needed: Option<usize>,
    },

    /// A retriable condition persisted past the retry limit.
    #[error("{what}: gave up after {attempts} attempts: {last}")]
    RetriesExhausted {
        /// What was being retried.
        what: String,
        /// How many attempts were made.
        attempts: u32,
        /// The last error.
        last: Box<Error>,
    },

    /// A command-line or configuration value is invalid.
    #[error("invalid {what}: {detail}")]
    InvalidArgument {
        /// Which argument.
        what: &'static str,
        /// Why it is invalid.
        detail: String,
    },

    /// The group coordinator answered a group request with an error krec cannot recover from
    /// (or kept answering with one past the retry limit).
    #[error("group {group}: {api} on broker {broker}: {name} (error code {code})")]
    Group {
        /// Group id.
        group: String,
        /// `host:port` of the coordinator (empty when none was found).
        broker: String,
        /// The request (`JoinGroup`, `OffsetCommit`, ...).
        api: &'static str,
        /// Kafka error code.
        code: i16,
        /// Kafka's name for the code.
        name: String,
    },

    /// Group membership data (a member's subscription or an assignment) could not be read.
    #[error("group {group}: {what}")]
    GroupProtocol {
        /// Group id.
        group: String,
        /// What was wrong, with the member and version.
        what: String,
    },

    /// The consumer's background task stopped (it failed earlier or was shut down).
    #[error("the consumer's fetch task has stopped")]
    Stopped,

    /// An output format option (`--format` template, delimiter) could not be parsed.
    #[error("invalid {option} {text:?}: byte {position}: {reason}")]
    InvalidFormat {
        /// Which option held the text (e.g. `--format`).
        option: &'static str,
        /// The text as given.
        text: String,
        /// Byte position of the problem within `text`.
        position: usize,
        /// What is wrong there.
        reason: String,
    },

    /// An input file holds bytes that are not valid Kafka batches (or ends inside one).
    #[error("{file}: byte {position}: offset {}: {source}", offset_text(*.offset))]
    DecodeInput {
        /// The file (`-` for standard input).
        file: String,
        /// Byte position in the file of the batch where decoding failed.
        position: usize,
        /// Base offset of that batch, when it could be read.
        offset: Option<i64>,
        /// What krec-batch found wrong.
        #[source]
        source: krec_batch::Error,
    },

    /// An input file is larger than the configured bound on what is read into memory.
    #[error("{file}: {size} bytes, over the limit of {limit} (raise --max-file-bytes)")]
    InputTooLarge {
        /// The file (`-` for standard input).
        file: String,
        /// Its size, or the bytes read before stopping.
        size: u64,
        /// The bound.
        limit: u64,
    },
}

/// Shows an offset that may be unknown.
fn offset_text(offset: Option<i64>) -> String {
    offset.map_or_else(|| "unknown".to_owned(), |offset| offset.to_string())
}

/// What a batch that did not fit needs, when its size arrived (like [`offset_text`]).
fn needed_text(needed: Option<usize>) -> String {
    needed.map_or_else(
        || "the batch's size did not arrive".to_owned(),
        |needed| format!("the batch needs {needed} bytes"),
    )
}
