//! The one error type of krec-copy: what failed, at which end, with the lower crates' errors
//! inside.

use krec_client::TopicPartition;

/// Why a copy stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the source (or a partition of the target) failed.
    #[error("{0}")]
    Consumer(Box<krec_consumer::Error>),
    /// Writing the target failed.
    #[error("target: {0}")]
    Target(Box<krec_producer::Error>),
    /// A request to a cluster failed (metadata, topics, positions).
    #[error("{cluster}: {source}")]
    Client {
        /// `source` or `target`.
        cluster: &'static str,
        /// The client's error.
        source: Box<krec_client::Error>,
    },
    /// A batch could not be re-encoded for the target.
    #[error("{partition} offset {offset}: {source}")]
    Batch {
        /// The source partition.
        partition: TopicPartition,
        /// The batch's base offset at the source.
        offset: i64,
        /// What was wrong with it.
        source: Box<krec_batch::Error>,
    },
    /// A cluster refused a request (topic creation, positions), with its error code name.
    #[error("{cluster} refused {what}: {detail}")]
    Refused {
        /// `source` or `target`.
        cluster: &'static str,
        /// The request.
        what: String,
        /// The broker's answer.
        detail: String,
    },
    /// Continuing could lose or repeat records: the copy stops and says why.
    #[error("{partition}: {detail}")]
    Unsafe {
        /// The target partition.
        partition: TopicPartition,
        /// What is wrong and what to do.
        detail: String,
    },
    /// A backup's location could not be read or written.
    #[error("{location}: {source}")]
    Store {
        /// The location (a directory, or an object store URL) and the file in it.
        location: String,
        /// What the store said (the object_store crate's error, kept out of this API).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A backup's file is not what it should be: a corrupt or truncated segment, a manifest
    /// that cannot be read, one written meanwhile by another backup.
    #[error("{file}{}: {detail}", position.map(|p| format!(" at byte {p}")).unwrap_or_default())]
    Backup {
        /// The file, named in its location.
        file: String,
        /// The byte position in it, where one is known.
        position: Option<u64>,
        /// What is wrong and what to do.
        detail: String,
    },
    /// The settings cannot work.
    #[error("invalid {what}: {detail}")]
    InvalidConfig {
        /// The setting.
        what: &'static str,
        /// Why.
        detail: String,
    },
}

impl From<krec_consumer::Error> for Error {
    fn from(error: krec_consumer::Error) -> Self {
        Error::Consumer(Box::new(error))
    }
}

impl From<krec_producer::Error> for Error {
    fn from(error: krec_producer::Error) -> Self {
        Error::Target(Box::new(error))
    }
}

impl Error {
    pub(crate) fn source_client(source: krec_client::Error) -> Self {
        Error::Client {
            cluster: "source",
            source: Box::new(source),
        }
    }

    pub(crate) fn target_client(source: krec_client::Error) -> Self {
        Error::Client {
            cluster: "target",
            source: Box::new(source),
        }
    }
}
