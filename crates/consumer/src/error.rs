//! The crate's one error enum.

/// Everything that can go wrong while consuming, with the topic, partition or group it concerns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The wire client failed: a broker could not be reached, answered with an error code, or
    /// sent something malformed (the client's error names the broker and request).
    #[error(transparent)]
    Client(#[from] krec_client::Error),

    /// Reading or writing a file or stream failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done (e.g. the file path).
        context: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
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
    #[error("{topic}/{partition}: offset {offset} is out of range (log is {}..{})", offset_text(*.log_start), offset_text(*.high_watermark))]
    OffsetOutOfRange {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The offset that was fetched.
        offset: i64,
        /// The log start offset, when the broker sent it.
        log_start: Option<i64>,
        /// The high watermark, when the broker sent it.
        high_watermark: Option<i64>,
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

    /// A chunk's walk found a batch cut short that the fetch's header scan had counted whole:
    /// the two disagree about the bytes, so nothing after it can be trusted.
    #[error("{topic}/{partition} at fetch offset {fetch_offset}: batch at byte {position} is cut short inside data the fetch counted as whole batches")]
    CutBatch {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The offset the fetch started at.
        fetch_offset: i64,
        /// Byte position of the cut batch in the partition's record bytes.
        position: usize,
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
    #[error("{topic}/{partition}: fetch at offset {offset} returned no complete batch {attempts} times ({}; raise fetch.max.bytes)", needed_text(*.needed))]
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

    /// A client property is unknown, unsupported or invalid; a secret's value is never shown.
    #[error("{}{detail}", property_text(origin, key))]
    Property {
        /// The property's key (empty when a whole properties file is at fault).
        key: String,
        /// Where it was set: `FILE:LINE`, a file, or how it was given
        /// (`ConsumerConfig::with`, ...).
        origin: String,
        /// What is wrong, and how to fix it.
        detail: String,
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
    #[error("group {group}: {api} on broker {broker}: {name} (error code {code}){}", group_acl_hint(*code, group))]
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
}

impl Error {
    /// The connection broke or a response did not come in time: worth a new connection and a
    /// retry, unlike an answer the broker gave.
    pub fn is_connection_failure(&self) -> bool {
        matches!(self, Self::Client(error) if error.is_connection_failure())
    }

    /// Wrong credentials, certificates or settings, or a missing ACL: fatal, a person must
    /// change something.
    pub fn is_security_failure(&self) -> bool {
        match self {
            Self::Client(error) => error.is_security_failure(),
            Self::Group { code, .. } => *code == GROUP_AUTHORIZATION_FAILED,
            _ => false,
        }
    }
}

/// GROUP_AUTHORIZATION_FAILED.
const GROUP_AUTHORIZATION_FAILED: i16 = 30;

/// The ACL a GROUP_AUTHORIZATION_FAILED asks for, as `kafka-acls` takes it.
fn group_acl_hint(code: i16, group: &str) -> String {
    if code == GROUP_AUTHORIZATION_FAILED {
        format!(": the principal lacks the ACL Read on Group:{group}")
    } else {
        String::new()
    }
}

impl From<krec_client::client_properties::PropertyError> for Error {
    fn from(error: krec_client::client_properties::PropertyError) -> Self {
        let krec_client::client_properties::PropertyError {
            key,
            origin,
            detail,
        } = error;
        Error::Property {
            key,
            origin,
            detail,
        }
    }
}

/// `ORIGIN: property KEY: `, each part only when known.
fn property_text(origin: &str, key: &str) -> String {
    let mut text = String::new();
    if !origin.is_empty() {
        text = format!("{origin}: ");
    }
    if !key.is_empty() {
        text.push_str(&format!("property {key}: "));
    }
    text
}

/// What a batch that did not fit needs, when its size arrived.
fn needed_text(needed: Option<usize>) -> String {
    needed.map_or_else(
        || "the batch's size did not arrive".to_owned(),
        |needed| format!("the batch needs {needed} bytes"),
    )
}

/// An offset the broker may not have sent (`-1` on the wire).
fn offset_text(offset: Option<i64>) -> String {
    offset.map_or_else(|| "unknown".to_owned(), |offset| offset.to_string())
}
