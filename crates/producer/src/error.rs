//! The producer crate's one error type.

use krec_client::client_properties::PropertyError;

/// What can go wrong; today, only configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A client property is unknown, unsupported or invalid; a secret's value is never shown.
    #[error("{}{detail}", property_text(origin, key))]
    Property {
        /// The property's key (empty when a whole properties file is at fault).
        key: String,
        /// Where it was set: `FILE:LINE`, a file, or how it was given
        /// (`ProducerConfig::with`, ...).
        origin: String,
        /// What is wrong, and how to fix it.
        detail: String,
    },

    /// Two settings that cannot hold together, each named with where it was set.
    #[error("{first} conflicts with {second}: {detail}")]
    Conflict {
        /// The first key, with its value and origin (`enable.idempotence=true (FILE:3)`).
        first: String,
        /// The second key, with its value and origin.
        second: String,
        /// Why, and how to fix it.
        detail: String,
    },
}

impl From<PropertyError> for Error {
    fn from(error: PropertyError) -> Self {
        let PropertyError {
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
