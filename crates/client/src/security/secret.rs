//! A password or token that never prints.

use std::fmt;

use zeroize::Zeroizing;

/// A password, token or other credential string.
///
/// `Debug` and `Display` print `[redacted]`, so a `Secret` inside a configuration struct
/// can be logged with the rest of it. The bytes are wiped when the value is dropped; copies
/// a caller takes with [`Secret::expose`] are the caller's to look after.
#[derive(Clone)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    /// Takes ownership of `value`; its buffer is the one wiped on drop.
    pub fn new(value: String) -> Secret {
        Secret(Zeroizing::new(value))
    }

    /// The credential itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Secret {
        Secret::new(value)
    }
}

/// Equal when the values are (for comparing configurations; not constant-time).
impl PartialEq for Secret {
    fn eq(&self, other: &Secret) -> bool {
        *self.0 == *other.0
    }
}

impl Eq for Secret {}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::Secret;

    #[derive(Debug)]
    #[allow(dead_code, reason = "read through Debug only")]
    struct Login {
        user: String,
        password: Secret,
    }

    #[test]
    fn debug_of_a_holder_never_shows_the_value() {
        let login = Login {
            user: "alice".into(),
            password: Secret::new("hunter2-correct-horse".into()),
        };
        for text in [format!("{login:?}"), format!("{login:#?}")] {
            assert!(!text.contains("hunter2"), "{text}");
            assert!(text.contains("[redacted]"), "{text}");
            assert!(text.contains("alice"), "{text}");
        }
    }

    #[test]
    fn display_is_redacted_and_expose_is_not() {
        let secret = Secret::new("s3cr3t".into());
        assert_eq!(secret.to_string(), "[redacted]");
        assert_eq!(secret.expose(), "s3cr3t");
        assert_eq!(secret.clone().expose(), "s3cr3t");
    }
}
