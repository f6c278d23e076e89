//! The crate's one error enum.

/// Everything that can go wrong in the `krec` command, with the file, option or topic it concerns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Consuming failed (the consumer's error names the topic, partition, group or broker).
    #[error(transparent)]
    Consumer(#[from] krec_consumer::Error),

    /// Reading or writing a file or stream failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done (e.g. the file path).
        context: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },

    /// A client property (`-X`, `-F`, `$KREC_CONFIG`) is unknown, unsupported or invalid; its
    /// value is never shown.
    #[error("{}property {property}: {detail}", source_text(source_name))]
    Property {
        /// The property's name (empty when the whole file is at fault).
        property: String,
        /// Where it was set: `-X`, or `FILE:LINE`.
        source_name: String,
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

    /// Topics named on the command line that the cluster answered with an error.
    #[error("{}", topics.join("; "))]
    TopicErrors {
        /// `TOPIC: ERROR_NAME` each.
        topics: Vec<String>,
    },

    /// A listening address (`--metrics`) could not be bound: taken, not local, or invalid.
    #[error("{option} {address}: cannot listen there: {source}")]
    Listen {
        /// The option that named the address.
        option: &'static str,
        /// The address as given.
        address: String,
        /// What binding said.
        #[source]
        source: std::io::Error,
    },

    /// The Schema Registry settings are unusable (no URL, a bad CA file, ...).
    #[error("schema registry: {0}")]
    SchemaSetup(Box<krec_schema::Error>),

    /// A key or value could not be decoded with its schema (`-s`).
    #[error(transparent)]
    Schema(Box<crate::format::schema::RecordSchemaError>),

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

fn source_text(source_name: &str) -> String {
    if source_name.is_empty() {
        String::new()
    } else {
        format!("{source_name}: ")
    }
}

impl Error {
    /// The exit status for this error: 2 for a bad property or argument (as for clap's usage
    /// errors), 1 for anything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Property { .. }
            | Self::InvalidArgument { .. }
            | Self::Listen { .. }
            | Self::SchemaSetup(_) => 2,
            Self::Consumer(krec_consumer::Error::InvalidArgument { .. }) => 2,
            Self::Consumer(krec_consumer::Error::Client(krec_client::Error::Config { .. })) => 2,
            _ => 1,
        }
    }
}

impl Error {
    /// The error for a failed write of records while `context`: a record that `-s` could not
    /// decode comes back out of the I/O error the writers return.
    pub fn output(context: &str, source: std::io::Error) -> Error {
        use crate::format::schema::RecordSchemaError;
        let io = |source| Error::Io {
            context: context.to_owned(),
            source,
        };
        if source.get_ref().is_none() {
            return io(source);
        }
        let kind = source.kind();
        match source
            .into_inner()
            .map(|inner| inner.downcast::<RecordSchemaError>())
        {
            Some(Ok(schema)) => Error::Schema(schema),
            Some(Err(inner)) => io(std::io::Error::new(kind, inner)),
            None => io(std::io::Error::from(kind)),
        }
    }
}

/// Shows an offset that may be unknown.
fn offset_text(offset: Option<i64>) -> String {
    offset.map_or_else(|| "unknown".to_owned(), |offset| offset.to_string())
}
