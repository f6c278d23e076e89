//! The crate's one error enum.

/// Everything that can go wrong in the `krec` command, with the file, option or topic it concerns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Consuming failed (the consumer's error names the topic, partition, group or broker).
    #[error(transparent)]
    Consumer(#[from] krec_consumer::Error),

    /// Producing failed, or the producer's configuration is unusable (the producer's error
    /// names the property, topic or partition).
    #[error(transparent)]
    Producer(#[from] krec_producer::Error),

    /// Copying failed (`krec mirror`; the error names the cluster, topic and partition).
    #[error(transparent)]
    Copy(#[from] krec_copy::Error),

    /// `krec produce`'s input cannot become a record (the error names `FILE:LINE`).
    #[error(transparent)]
    ProduceInput(#[from] crate::produce::InputError),

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
            Self::Producer(
                krec_producer::Error::Property { .. } | krec_producer::Error::Conflict { .. },
            ) => 2,
            Self::Consumer(error) => consumer_exit_code(error),
            Self::Copy(krec_copy::Error::InvalidConfig { .. }) => 2,
            Self::Copy(krec_copy::Error::Consumer(error)) => consumer_exit_code(error),
            Self::Copy(krec_copy::Error::Target(error)) => match **error {
                krec_producer::Error::Property { .. } | krec_producer::Error::Conflict { .. } => 2,
                _ => 1,
            },
            _ => 1,
        }
    }
}

/// Configuration keys the library's messages name, and the flag that sets each here.
const KEY_FLAGS: &[(&str, &str)] = &[
    ("bootstrap.servers", "-b"),
    ("group.id", "-G"),
    ("fetch.max.bytes", "--max-bytes"),
    ("max.partition.fetch.bytes", "--partition-max-bytes"),
    ("fetch.max.wait.ms", "--max-wait-ms"),
    ("isolation.level", "--isolation"),
    ("auto.offset.reset", "--reset"),
    ("metadata.max.age.ms", "--metadata-refresh-ms"),
    ("group.protocol", "--group-protocol"),
    ("partition.assignment.strategy", "--assignor"),
    ("group.remote.assignor", "--server-assignor"),
    ("group.instance.id", "--group-instance-id"),
    ("session.timeout.ms", "--session-timeout-ms"),
    ("heartbeat.interval.ms", "--heartbeat-interval-ms"),
    ("max.poll.interval.ms", "--rebalance-timeout-ms"),
    ("auto.commit.interval.ms", "--commit-interval-ms"),
];

impl Error {
    /// The message to print: a consumer error that names a configuration key also names the
    /// flag that sets it (`raise fetch.max.bytes (--max-bytes)`). Property errors are about
    /// what a property said, so they stay as they are.
    pub fn with_flags(&self) -> String {
        let mut text = self.to_string();
        if let Self::Consumer(error) = self {
            if !matches!(error, krec_consumer::Error::Property { .. }) {
                for (key, flag) in KEY_FLAGS {
                    text = text.replacen(key, &format!("{key} ({flag})"), 1);
                }
            }
        }
        text
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

/// 2 for a consumer error that is a usage error (a bad argument or property), else 1.
fn consumer_exit_code(error: &krec_consumer::Error) -> u8 {
    match error {
        krec_consumer::Error::InvalidArgument { .. } | krec_consumer::Error::Property { .. } => 2,
        krec_consumer::Error::Client(
            krec_client::Error::Config { .. } | krec_client::Error::InvalidArgument { .. },
        ) => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn consumer_errors_name_the_flag_beside_the_key() {
        let stuck = Error::Consumer(krec_consumer::Error::NoProgress {
            topic: "t".to_owned(),
            partition: 0,
            offset: 5,
            attempts: 3,
            needed: Some(100),
        });
        let shown = stuck.with_flags();
        assert!(
            shown.ends_with("raise fetch.max.bytes (--max-bytes))"),
            "{shown}"
        );
        let property = Error::Consumer(krec_consumer::Error::Property {
            key: "fetch.max.bytes".to_owned(),
            origin: "-X".to_owned(),
            detail: "must be positive".to_owned(),
        });
        assert_eq!(property.with_flags(), property.to_string());
    }
}
