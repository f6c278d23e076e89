//! Schema Registry values (kcat's `-s` and `-r`): keys and values in the Confluent wire
//! format decoded to JSON text by krec-schema before a format writes them.
//!
//! `-J` writes a decoded key or value as a JSON value and adds `key_schema_id` /
//! `value_schema_id`; templates (`%s`, `%k`) and raw output print its compact JSON text.
//! Filters (`--key`, `--grep`) still see the bytes on the wire. Under `--on-corrupt skip` a
//! record that does not decode is reported on stderr and left out, not written as bytes.

use std::io;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use krec_batch::OnCorrupt;
use krec_schema::{RegistryConfig, SchemaFormat, SchemaRegistry, ValueDecoder};

use super::record::{RecordContext, RecordFields};
use crate::Error;

/// The properties read here (`-X`, `-F`, `$KREC_CONFIG`), with the Confluent clients' names.
const PROPERTIES: &[&str] = &[
    "schema.registry.url",
    "schema.registry.basic.auth.user.info",
    "basic.auth.user.info",
    "basic.auth.credentials.source",
    "schema.registry.basic.auth.credentials.source",
    "schema.registry.ssl.ca.location",
    "schema.registry.request.timeout.ms",
    "schema.registry.max.retries",
    "schema.registry.retry.backoff.ms",
];

/// Whether `key` is a Schema Registry property (handled here, not by the Kafka client).
pub fn is_registry_property(key: &str) -> bool {
    PROPERTIES.contains(&key)
}

/// Schema Registry properties as given, with where each came from; `Debug` hides the
/// credentials.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RegistryProperties {
    entries: Vec<(String, String, String)>,
}

impl RegistryProperties {
    /// Adds `key=value`, set in `origin` (`-X`, `FILE:LINE`).
    pub fn push(&mut self, key: &str, value: &str, origin: &str) {
        self.entries
            .push((key.to_owned(), value.to_owned(), origin.to_owned()));
    }
}

impl std::fmt::Debug for RegistryProperties {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.entries
                    .iter()
                    .map(|(key, _, origin)| format!("{key} ({origin})")),
            )
            .finish()
    }
}

/// One `-s`: `avro` (keys and values), `value=avro`, `key=protobuf`, ...
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchemaSpec {
    key: bool,
    value: bool,
    format: SchemaFormat,
}

impl FromStr for SchemaSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (key, value, name) = match text.split_once('=') {
            Some(("key", name)) => (true, false, name),
            Some(("value", name)) => (false, true, name),
            Some((other, _)) => return Err(format!("`{other}`: expected key= or value=")),
            None => (true, true, text),
        };
        Ok(SchemaSpec {
            key,
            value,
            format: name.parse()?,
        })
    }
}

/// `-s` and `-r`, flattened into the output options of `krec consume` and `krec decode`.
#[derive(Clone, Debug, Default, PartialEq, Eq, clap::Args)]
pub struct SchemaArgs {
    /// Decode Schema Registry (Confluent wire format) values and keys to JSON:
    /// `value=avro`, `key=protobuf`, `json` (JSON Schema), `avro` for both (repeatable).
    #[arg(short = 's', value_name = "[key=|value=]avro|protobuf|json")]
    pub schema: Vec<SchemaSpec>,

    /// Schema Registry URL(s), comma-separated (else `-X schema.registry.url`);
    /// `https://USER:PASSWORD@host` gives basic auth.
    #[arg(short = 'r', long = "schema-registry", value_name = "URL")]
    pub registry_url: Option<String>,

    /// The properties and the registry built from them, shared by every clone (one cache).
    #[arg(skip)]
    shared: Shared,
}

#[derive(Clone, Debug, Default)]
struct Shared(Arc<Mutex<SharedState>>);

#[derive(Debug, Default)]
struct SharedState {
    properties: RegistryProperties,
    registry: Option<Arc<SchemaRegistry>>,
    /// Set under `--on-corrupt skip`: undecodable records are reported and counted here.
    skips: Option<Arc<RecordSkips>>,
}

/// Records left out because they did not decode, and the command that reports them.
#[derive(Debug)]
struct RecordSkips {
    command: &'static str,
    count: AtomicU64,
}

impl PartialEq for Shared {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}
impl Eq for Shared {}

impl SchemaArgs {
    /// Takes the Schema Registry properties of `-X`/`-F`; call before the first writer.
    pub fn set_properties(&self, properties: &RegistryProperties) {
        self.state().properties = properties.clone();
    }

    /// Under [`OnCorrupt::Skip`], a record that does not decode is reported on stderr as
    /// `krec COMMAND: ...` and left out; call before the first writer.
    pub fn set_on_corrupt(&self, on_corrupt: OnCorrupt, command: &'static str) {
        self.state().skips = (on_corrupt == OnCorrupt::Skip).then(|| {
            Arc::new(RecordSkips {
                command,
                count: AtomicU64::new(0),
            })
        });
    }

    /// How many records were left out because they did not decode.
    pub fn records_skipped(&self) -> u64 {
        let state = self.state();
        state
            .skips
            .as_ref()
            .map_or(0, |skips| skips.count.load(Ordering::Relaxed))
    }

    /// The decoders for one writer, `None` without `-s`. The registry client is built on the
    /// first call and shared; its errors (no URL, bad property) come from that call.
    pub fn decoders(&self) -> Result<Option<SchemaDecoders>, Error> {
        let (mut key, mut value) = (None, None);
        for spec in &self.schema {
            if spec.key {
                key = Some(spec.format);
            }
            if spec.value {
                value = Some(spec.format);
            }
        }
        if key.is_none() && value.is_none() {
            return Ok(None);
        }
        let registry = self.registry()?;
        let decoder = |format: Option<SchemaFormat>| {
            format.map(|format| ValueDecoder::new(registry.clone(), format))
        };
        Ok(Some(SchemaDecoders {
            key: decoder(key),
            value: decoder(value),
            key_json: Vec::new(),
            value_json: Vec::new(),
            skips: self.state().skips.clone(),
        }))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, SharedState> {
        self.shared.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The registry client, built on the first call from the properties and `-r`, then
    /// shared (`krec produce`'s encoders use it too).
    pub(crate) fn registry(&self) -> Result<Arc<SchemaRegistry>, Error> {
        let mut state = self.state();
        if let Some(registry) = &state.registry {
            return Ok(registry.clone());
        }
        let config = registry_config(&state.properties, self.registry_url.as_deref())?;
        let registry =
            Arc::new(SchemaRegistry::new(config).map_err(|e| Error::SchemaSetup(Box::new(e)))?);
        state.registry = Some(registry.clone());
        Ok(registry)
    }
}

/// The registry settings from the properties, `-r` winning over `schema.registry.url`.
fn registry_config(
    properties: &RegistryProperties,
    url_flag: Option<&str>,
) -> Result<RegistryConfig, Error> {
    let mut config = RegistryConfig::default();
    let mut urls = None;
    let mut user_info = None;
    for (key, value, origin) in &properties.entries {
        let bad = |detail: String| Error::Property {
            property: key.clone(),
            source_name: origin.clone(),
            detail,
        };
        let number = || {
            value
                .trim()
                .parse::<u64>()
                .map_err(|_| bad(format!("{value:?} is not a whole number")))
        };
        match key.as_str() {
            "schema.registry.url" => urls = Some(value.clone()),
            "schema.registry.basic.auth.user.info" | "basic.auth.user.info" => {
                user_info = Some(value.clone())
            }
            "basic.auth.credentials.source" | "schema.registry.basic.auth.credentials.source" => {
                if !matches!(value.trim(), "USER_INFO" | "URL") {
                    return Err(bad("only USER_INFO and URL are supported".into()));
                }
            }
            "schema.registry.ssl.ca.location" => config.ca_file = Some(value.into()),
            "schema.registry.request.timeout.ms" => {
                config.request_timeout = Duration::from_millis(number()?.max(1))
            }
            "schema.registry.max.retries" => {
                config.max_retries = u32::try_from(number()?).unwrap_or(u32::MAX)
            }
            "schema.registry.retry.backoff.ms" => {
                config.retry_backoff = Duration::from_millis(number()?)
            }
            _ => return Err(bad("not a Schema Registry property".into())),
        }
    }
    let urls = url_flag
        .map(str::to_owned)
        .or(urls)
        .ok_or_else(|| Error::InvalidArgument {
            what: "-s",
            detail: "needs a Schema Registry: give -r URL or -X schema.registry.url=URL".into(),
        })?;
    config
        .set_urls(&urls)
        .map_err(|e| Error::SchemaSetup(Box::new(e)))?;
    if user_info.is_some() {
        config.basic_auth = user_info;
    }
    Ok(config)
}

/// One writer's decoders and the JSON text of the record being written.
#[derive(Debug)]
pub struct SchemaDecoders {
    key: Option<ValueDecoder>,
    value: Option<ValueDecoder>,
    key_json: Vec<u8>,
    value_json: Vec<u8>,
    skips: Option<Arc<RecordSkips>>,
}

/// A decoded key or value: its JSON text (`None` for null on the wire) and schema id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DecodedPart<'a> {
    pub(crate) json: Option<&'a [u8]>,
    pub(crate) schema_id: Option<u32>,
}

/// What was decoded of one record: `None` for a part written as bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DecodedParts<'a> {
    pub(crate) key: Option<DecodedPart<'a>>,
    pub(crate) value: Option<DecodedPart<'a>>,
}

impl SchemaDecoders {
    /// Decodes the record's key and value as configured; `None`: the record did not decode,
    /// was reported and is to be left out (`--on-corrupt skip`). The error (an `io::Error`
    /// around [`RecordSchemaError`], as the writers return I/O errors) names the record.
    pub(crate) fn decode<R: RecordFields + ?Sized>(
        &mut self,
        ctx: &RecordContext<'_>,
        record: &R,
    ) -> io::Result<Option<DecodedParts<'_>>> {
        let decoded = decode_part(&mut self.key, record.key(), &mut self.key_json)
            .map_err(|source| (source, "key"))
            .and_then(|key_id| {
                decode_part(&mut self.value, record.value(), &mut self.value_json)
                    .map(|value_id| (key_id, value_id))
                    .map_err(|source| (source, "value"))
            });
        let (key_id, value_id) = match decoded {
            Ok(ids) => ids,
            Err((source, part)) => {
                let skippable = source.is_in_the_value();
                let error = record_error(ctx, record, part, source);
                return match &self.skips {
                    Some(skips) if skippable => skips.report(error).map(|()| None),
                    _ => Err(io::Error::other(error)),
                };
            }
        };
        let part = |decoder: &Option<ValueDecoder>, bytes: Option<&[u8]>, json, id| {
            decoder.as_ref().map(|_| DecodedPart {
                json: bytes.map(|_| json),
                schema_id: id,
            })
        };
        Ok(Some(DecodedParts {
            key: part(&self.key, record.key(), &self.key_json[..], key_id),
            value: part(&self.value, record.value(), &self.value_json[..], value_id),
        }))
    }
}

impl RecordSkips {
    /// One line on stderr, written before the record's offset can be committed.
    fn report(&self, error: RecordSchemaError) -> io::Result<()> {
        let line = format!(
            "krec {}: skipped undecodable record: {error}\n",
            self.command
        );
        io::Write::write_all(&mut io::stderr().lock(), line.as_bytes())?;
        self.count.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

fn decode_part(
    decoder: &mut Option<ValueDecoder>,
    bytes: Option<&[u8]>,
    json: &mut Vec<u8>,
) -> Result<Option<u32>, krec_schema::Error> {
    json.clear();
    match (decoder, bytes) {
        (Some(decoder), Some(bytes)) => decoder.decode(bytes, json).map(Some),
        _ => Ok(None),
    }
}

/// A key or value that its schema could not decode, and the record it belongs to.
#[derive(Debug, thiserror::Error)]
#[error("topic {} partition {} offset {offset}: {part}: {source}",
    topic.as_deref().unwrap_or("unknown"),
    partition.map_or_else(|| "unknown".to_owned(), |p| p.to_string()))]
pub struct RecordSchemaError {
    /// The record's topic, when known.
    pub topic: Option<String>,
    /// The record's partition, when known.
    pub partition: Option<i32>,
    /// The record's offset.
    pub offset: i64,
    /// `key` or `value`.
    pub part: &'static str,
    /// What krec-schema found (it names the schema id).
    #[source]
    pub source: krec_schema::Error,
}

fn record_error<R: RecordFields + ?Sized>(
    ctx: &RecordContext<'_>,
    record: &R,
    part: &'static str,
    source: krec_schema::Error,
) -> RecordSchemaError {
    RecordSchemaError {
        topic: ctx.topic.map(str::to_owned),
        partition: ctx.partition,
        offset: record.offset(),
        part,
        source,
    }
}

/// A record whose decoded parts replace its key and value bytes, for templates and raw.
pub(crate) struct DecodedRecord<'a, R: ?Sized> {
    pub(crate) record: &'a R,
    pub(crate) parts: DecodedParts<'a>,
}

impl<R: RecordFields + ?Sized> RecordFields for DecodedRecord<'_, R> {
    fn offset(&self) -> i64 {
        self.record.offset()
    }
    fn timestamp(&self) -> i64 {
        self.record.timestamp()
    }
    fn timestamp_type_name(&self) -> &'static str {
        self.record.timestamp_type_name()
    }
    fn key(&self) -> Option<&[u8]> {
        match self.parts.key {
            Some(part) => part.json,
            None => self.record.key(),
        }
    }
    fn value(&self) -> Option<&[u8]> {
        match self.parts.value {
            Some(part) => part.json,
            None => self.record.value(),
        }
    }
    fn header_pairs(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> + '_ {
        self.record.header_pairs()
    }
    fn header_value(&self, key: &[u8]) -> Option<Option<&[u8]>> {
        self.record.header_value(key)
    }
}

#[cfg(test)]
mod tests {
    use super::{registry_config, RegistryProperties, SchemaSpec};
    use krec_schema::SchemaFormat;

    #[test]
    fn specs_name_the_part_and_the_format() {
        let spec: SchemaSpec = "value=protobuf".parse().unwrap();
        assert_eq!(
            (spec.key, spec.value, spec.format),
            (false, true, SchemaFormat::Protobuf)
        );
        let spec: SchemaSpec = "avro".parse().unwrap();
        assert_eq!((spec.key, spec.value), (true, true));
        assert!("headers=avro".parse::<SchemaSpec>().is_err());
        assert!("value=thrift".parse::<SchemaSpec>().is_err());
    }

    #[test]
    fn properties_build_the_registry_config_and_hide_the_password() {
        let mut properties = RegistryProperties::default();
        properties.push("schema.registry.url", "http://a:1", "-X");
        properties.push("schema.registry.basic.auth.user.info", "u:s3cret", "-X");
        properties.push("schema.registry.request.timeout.ms", "1500", "-X");
        properties.push("schema.registry.max.retries", "0", "-X");
        assert!(!format!("{properties:?}").contains("s3cret"));
        let config = registry_config(&properties, None).unwrap();
        assert_eq!(config.urls, ["http://a:1"]);
        assert_eq!(config.basic_auth.as_deref(), Some("u:s3cret"));
        assert_eq!(config.request_timeout.as_millis(), 1500);
        assert_eq!(config.max_retries, 0);
        let flagged = registry_config(&properties, Some("http://b:2")).unwrap();
        assert_eq!(flagged.urls, ["http://b:2"]);
        assert!(registry_config(&RegistryProperties::default(), None).is_err());
        properties.push("schema.registry.max.retries", "many", "-X");
        assert!(registry_config(&properties, None).is_err());
    }
}
