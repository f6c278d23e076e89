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
}
