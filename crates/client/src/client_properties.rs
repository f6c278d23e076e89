//! The one loader of client properties that krec's consumer and producer share: a
//! properties file read into [`Property`] entries (origin `FILE:LINE`), errors naming key and
//! origin ([`PropertyError`]), the security keys kept and built ([`SecurityProperties`]),
//! the keys other libraries read kept as given, and the keys every client has (brokers,
//! identity, timeouts: [`CommonKeys`]). Each client adds only its own keys
//! ([`PropertyTarget::apply_own`]).

use std::fmt;
use std::path::Path;
use std::time::Duration;

use crate::security::properties::{self as file_format, PropertiesFault};
use crate::{ConnectionSettings, Secret, SecurityConfig};

/// Key prefixes of the properties kept for other libraries (the Schema Registry client's).
pub const FOREIGN_PREFIXES: &[&str] = &["schema.registry.", "basic.auth."];

/// One `key=value` and where it was set (`FILE:LINE`, `-X`, ...). `Debug` hides the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Property {
    /// The key, librdkafka's or the Java client's name.
    pub key: String,
    /// The value as given (`${env:NAME}` and `${file:PATH}` unresolved).
    pub value: String,
    /// Where it was set, for error messages.
    pub origin: String,
}

impl Property {
    /// A property set in `origin`.
    pub fn new(
        key: impl Into<String>,
        value: impl Into<String>,
        origin: impl Into<String>,
    ) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
            origin: origin.into(),
        }
    }

    /// The entries of a properties file (Java `client.properties` or librdkafka `-F` syntax),
    /// in file order, each with origin `PATH:LINE`. Files over 1 MiB are refused.
    pub fn read_file(path: &Path) -> Result<Vec<Property>, PropertyError> {
        let shown = path.display();
        let fault = |origin: String, detail: String| PropertyError {
            key: String::new(),
            origin,
            detail,
        };
        let io = |error: std::io::Error| fault(shown.to_string(), error.to_string());
        let file = std::fs::File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        if size > file_format::MAX_PROPERTIES_FILE as u64 {
            return Err(fault(
                shown.to_string(),
                format!("{size} bytes: larger than 1 MiB"),
            ));
        }
        let bytes = std::fs::read(path).map_err(io)?;
        let parsed = file_format::parse(&bytes).map_err(|error| match error {
            PropertiesFault::Line { line, .. } => {
                fault(format!("{shown}:{line}"), error.to_string())
            }
            PropertiesFault::TooLarge { .. } => fault(shown.to_string(), error.to_string()),
        })?;
        Ok(parsed
            .into_iter()
            .map(|p| Property::new(p.key, p.value, format!("{shown}:{}", p.line)))
            .collect())
    }

    /// Whether the key belongs to another library (`FOREIGN_PREFIXES`).
    pub fn is_foreign(&self) -> bool {
        FOREIGN_PREFIXES.iter().any(|p| self.key.starts_with(p))
    }
}

impl fmt::Debug for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=[redacted] ({})", self.key, self.origin)
    }
}

/// A property that is unknown, unsupported or invalid; a secret's value is never in it.
/// Each client turns it into its own error variant of the same three fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PropertyError {
    /// The property's key (empty when a whole properties file is at fault).
    pub key: String,
    /// Where it was set: `FILE:LINE`, a file, or how it was given.
    pub origin: String,
    /// What is wrong, and how to fix it.
    pub detail: String,
}

impl fmt::Display for PropertyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.origin.is_empty() {
            write!(f, "{}: ", self.origin)?;
        }
        if !self.key.is_empty() {
            write!(f, "property {}: ", self.key)?;
        }
        f.write_str(&self.detail)
    }
}

impl std::error::Error for PropertyError {}

/// The security properties as given, since a later one (`sasl.password` after
/// `sasl.username`) changes what they build. `Debug` shows keys and origins only.
#[derive(Clone, Default)]
pub struct SecurityProperties {
    /// Key, value and origin of each security property, in order.
    entries: Vec<(String, Secret, String)>,
}

impl SecurityProperties {
    /// Keeps `property` if [`SecurityConfig::handles`] its key; whether it did.
    pub fn keep(&mut self, property: &Property) -> bool {
        if !SecurityConfig::handles(&property.key) {
            return false;
        }
        self.entries.push((
            property.key.clone(),
            Secret::new(property.value.clone()),
            property.origin.clone(),
        ));
        true
    }

    /// The [`SecurityConfig`] these properties build; an error names the key at fault and
    /// the origin of its last setting.
    pub fn build(&self) -> Result<SecurityConfig, PropertyError> {
        let pairs = self
            .entries
            .iter()
            .map(|(key, value, _)| (key.as_str(), value.expose()));
        SecurityConfig::from_properties(pairs).map_err(|error| match error {
            crate::Error::Config { property, detail } => PropertyError {
                origin: self
                    .entries
                    .iter()
                    .rev()
                    .find(|(key, _, _)| *key == property)
                    .map_or_else(String::new, |(_, _, origin)| origin.clone()),
                key: property,
                detail,
            },
            other => PropertyError {
                key: String::new(),
                origin: String::new(),
                detail: other.to_string(),
            },
        })
    }
}

impl fmt::Debug for SecurityProperties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys = self.entries.iter().map(|(key, _, origin)| (key, origin));
        f.debug_list().entries(keys).finish()
    }
}

/// The settings every client has, which [`CommonKeys::apply`] fills from `bootstrap.servers`
/// (`metadata.broker.list`), `client.id`, `request.timeout.ms` and `metadata.max.age.ms`
/// (`topic.metadata.refresh.interval.ms`).
pub struct CommonKeys<'a> {
    /// Bootstrap brokers, `host:port` each.
    pub bootstrap: &'a mut Vec<String>,
    /// Connection identity and timeouts.
    pub connection: &'a mut ConnectionSettings,
    /// How often metadata is read again.
    pub metadata_refresh: &'a mut Duration,
}

impl CommonKeys<'_> {
    /// Applies `setting` if it is a common key; whether it was.
    pub fn apply(&mut self, setting: &Setting) -> Result<bool, PropertyError> {
        match setting.key() {
            "bootstrap.servers" | "metadata.broker.list" => {
                *self.bootstrap = parse_bootstrap(setting.value()).map_err(|d| setting.bad(d))?
            }
            "client.id" => self.connection.client_id = setting.value().to_owned(),
            "request.timeout.ms" => self.connection.request_timeout = setting.positive_millis()?,
            "metadata.max.age.ms" | "topic.metadata.refresh.interval.ms" => {
                *self.metadata_refresh = setting.positive_millis()?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Parses a `host:port[,host:port...]` list; the error is the detail, naming the entry.
pub fn parse_bootstrap(list: &str) -> Result<Vec<String>, String> {
    let brokers: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .map(str::to_owned)
        .collect();
    if brokers.is_empty() {
        return Err(format!("{list:?}: expected HOST:PORT[,HOST:PORT...]"));
    }
    for broker in &brokers {
        let port_ok = broker
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !port_ok {
            return Err(format!("{broker:?}: expected HOST:PORT"));
        }
    }
    Ok(brokers)
}

/// What a client's configuration gives the shared loader: where the security, foreign and
/// common keys go, and its own keys.
pub trait PropertyTarget {
    /// The security properties given so far.
    fn security_properties(&mut self) -> &mut SecurityProperties;
    /// Sets the security the security properties built (after a batch that changed them).
    fn set_security(&mut self, security: SecurityConfig);
    /// The properties kept for other libraries.
    fn foreign_properties(&mut self) -> &mut Vec<Property>;
    /// The settings of [`CommonKeys`].
    fn common_keys(&mut self) -> CommonKeys<'_>;
    /// Keys of other clients that a shared properties file carries and that this one accepts
    /// with a warning.
    fn ignored_keys(&self) -> &'static [&'static str];
    /// Applies one of the client's own keys; whether `setting` was one.
    fn apply_own(&mut self, setting: &Setting) -> Result<bool, PropertyError>;
}

/// Applies `properties` to `target` in order, each error naming the key and its origin:
/// security keys, foreign keys, ignored keys, common keys, then the client's own; any other
/// key is refused.
pub fn apply_properties<T: PropertyTarget>(
    target: &mut T,
    properties: impl IntoIterator<Item = Property>,
) -> Result<(), PropertyError> {
    let mut security_changed = false;
    for property in properties {
        if target.security_properties().keep(&property) {
            security_changed = true;
            continue;
        }
        if property.is_foreign() {
            target.foreign_properties().push(property);
            continue;
        }
        let key = property.key.as_str();
        if target.ignored_keys().contains(&key) {
            tracing::warn!(property = key, from = %property.origin, "property not used by krec; ignored");
            continue;
        }
        let setting = Setting(&property);
        if !(target.common_keys().apply(&setting)? || target.apply_own(&setting)?) {
            return Err(setting.bad("unknown or unsupported property".to_owned()));
        }
    }
    if security_changed {
        let built = target.security_properties().build()?;
        target.set_security(built);
    }
    Ok(())
}

/// A property being applied: its value read as the key needs, errors naming key and origin.
/// Only used for non-secret keys, so a value may appear in a message.
pub struct Setting<'a>(pub &'a Property);

impl Setting<'_> {
    /// The key.
    pub fn key(&self) -> &str {
        &self.0.key
    }

    /// The value as given.
    pub fn value(&self) -> &str {
        &self.0.value
    }

    /// An error about this property.
    pub fn bad(&self, detail: String) -> PropertyError {
        PropertyError {
            key: self.0.key.clone(),
            origin: self.0.origin.clone(),
            detail,
        }
    }

    /// An error saying what the value should have been.
    pub fn expected(&self, what: &str) -> PropertyError {
        self.bad(format!("{:?}: expected {what}", self.value()))
    }

    /// The trimmed value; empty means none.
    pub fn optional(&self) -> Option<String> {
        Some(self.value().trim().to_owned()).filter(|v| !v.is_empty())
    }

    /// A duration in milliseconds.
    pub fn millis(&self) -> Result<Duration, PropertyError> {
        let value = self.value();
        value
            .trim()
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| self.bad(format!("{value:?} is not a number of milliseconds")))
    }

    /// A duration in milliseconds, not zero.
    pub fn positive_millis(&self) -> Result<Duration, PropertyError> {
        match self.millis()? {
            Duration::ZERO => Err(self.bad("must be positive".to_owned())),
            millis => Ok(millis),
        }
    }

    /// `true` or `false`.
    pub fn flag(&self) -> Result<bool, PropertyError> {
        match self.value().trim() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(self.expected("true or false")),
        }
    }

    /// A byte count of at least `min`.
    pub fn bytes(&self, min: i32) -> Result<i32, PropertyError> {
        self.int(min, i32::MAX, "a number of bytes")
    }

    /// An integer in `min..=max`; `what` says what it counts.
    pub fn int(&self, min: i32, max: i32, what: &str) -> Result<i32, PropertyError> {
        self.value()
            .trim()
            .parse::<i32>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                let range = if max == i32::MAX {
                    format!("at least {min}")
                } else {
                    format!("{min} to {max}")
                };
                self.expected(&format!("{what}, {range}"))
            })
    }
}
