//! The arguments of `krec produce`, with kcat's `-P` letters and meanings, and what they say
//! before anything connects: the input format, the producer's configuration.

use std::path::PathBuf;
use std::str::FromStr;

use krec_client::client_properties::Property;
use krec_producer::ProducerConfig;

use super::input::json::JsonFormat;
use super::input::lines::{parse_delimiter, LineFormat};
use super::input::{Input, InputFormat};
use super::schema::ProduceSchemaArgs;
use crate::cluster::ClusterArgs;
use crate::Error;

/// Arguments of `krec produce` (kcat's `-P` letters and meanings).
#[derive(Debug, clap::Args)]
pub struct ProduceArgs {
    /// Brokers and client properties (the producer's: acks, linger.ms, batch.size,
    /// compression.type, enable.idempotence, max.request.size, ...).
    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// The topic to write to.
    #[arg(short = 't', long = "topic", value_name = "TOPIC")]
    pub topic: String,

    /// Write every record to this partition; `-1` (as in kcat) lets the partitioner choose,
    /// also for `-J` lines that name a partition. Default: a `-J` line's partition, else
    /// the partitioner (murmur2 of the key, as the Java client; or `partitioner`).
    #[arg(
        short = 'p',
        long = "partition",
        value_name = "N",
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(i32).range(-1..)
    )]
    pub partition: Option<i32>,

    /// The key of every record that has none of its own (none found by -K).
    #[arg(short = 'k', long = "key", value_name = "KEY")]
    pub key: Option<String>,

    /// Split each record at the first DELIM into key and value (`\t`, `\x1f` escapes, as -D);
    /// a record without it is all value.
    #[arg(short = 'K', long = "key-delimiter", value_name = "DELIM")]
    pub key_delimiter: Option<String>,

    /// A header on every record (repeatable, in order): `name=value`, or `name` for a null
    /// value.
    #[arg(short = 'H', long = "header", value_name = "NAME=VALUE")]
    pub headers: Vec<HeaderArg>,

    /// Compression: none, gzip, snappy, lz4 or zstd (or `compression.type`).
    #[arg(short = 'z', long = "compression", value_name = "CODEC")]
    pub compression: Option<String>,

    /// Send an empty key or value found by -K as null (an empty value: a tombstone).
    #[arg(short = 'Z', long = "null-empty")]
    pub null_empty: bool,

    /// Read each FILE line by line (-D), one record per line, instead of one record per FILE.
    #[arg(short = 'l', long = "lines")]
    pub lines: bool,

    /// Records are separated by DELIM: `\n` (default), `\t`, `\r`, `\\` and `\xHH` stand for
    /// their bytes. Empty records are skipped.
    #[arg(short = 'D', long = "delimiter", value_name = "DELIM")]
    pub delimiter: Option<String>,

    /// Read JSON lines as `krec consume -J` writes them: key, value, headers, timestamp and
    /// partition, every field optional; binary data as `{"base64": "..."}`. With
    /// --value-format avro, a line with value_schema_id (`krec consume -J -s`) is read in
    /// krec's JSON mapping (unions untagged, bytes base64), any other in Avro's JSON encoding.
    #[arg(
        short = 'J',
        long = "json",
        conflicts_with_all = ["key", "key_delimiter", "null_empty", "lines", "delimiter"]
    )]
    pub json: bool,

    /// Every S seconds (default 1), records and MB acknowledged per second and in all, on
    /// stderr.
    #[arg(long = "stats", value_name = "SECONDS", num_args = 0..=1, default_missing_value = "1")]
    pub stats: Option<f64>,

    /// Keys and values as JSON documents encoded with Schema Registry schemas.
    #[command(flatten)]
    pub schema: ProduceSchemaArgs,

    /// Files to read instead of standard input: each one record, or with -l or -J one per
    /// line.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// One `-H name=value` (or `name`, a null value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderArg {
    /// The header's name.
    pub name: String,
    /// Its value; `None` for null.
    pub value: Option<String>,
}

impl FromStr for HeaderArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (name, value) = match text.split_once('=') {
            Some((name, value)) => (name, Some(value.to_owned())),
            None => (text, None),
        };
        if name.is_empty() {
            return Err("expected NAME=VALUE, or NAME for a null value".to_owned());
        }
        Ok(HeaderArg {
            name: name.to_owned(),
            value,
        })
    }
}

impl ProduceArgs {
    /// How the input is read, checked before anything is read.
    pub fn input_format(&self) -> Result<InputFormat, Error> {
        let headers = self
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.as_bytes().to_vec(),
                    h.value.as_ref().map(|v| v.as_bytes().to_vec()),
                )
            })
            .collect();
        if self.json {
            return Ok(InputFormat::Json(JsonFormat {
                headers,
                key_documents: self.schema.key_format.is_some(),
                value_documents: self.schema.value_format.is_some(),
            }));
        }
        let delimiter = |what: &'static str, text: &str| {
            let bytes =
                parse_delimiter(text).map_err(|detail| Error::InvalidArgument { what, detail })?;
            if bytes.is_empty() {
                return Err(Error::InvalidArgument {
                    what,
                    detail: "the delimiter must not be empty".to_owned(),
                });
            }
            Ok(bytes)
        };
        Ok(InputFormat::Lines(LineFormat {
            delimiter: delimiter("-D", self.delimiter.as_deref().unwrap_or("\\n"))?,
            key_delimiter: match &self.key_delimiter {
                Some(text) => Some(delimiter("-K", text)?),
                None => None,
            },
            fixed_key: self.key.as_ref().map(|key| key.as_bytes().to_vec()),
            null_empty: self.null_empty,
            headers,
        }))
    }

    /// The records to send, each at most `limit` bytes (`max.request.size`).
    pub fn input(&self, limit: usize) -> Result<Input, Error> {
        let whole_files = !self.lines && !self.json;
        Ok(Input::new(
            self.input_format()?,
            self.files.clone(),
            whole_files,
            limit,
        ))
    }

    /// The partition `-p` imposes: `None` when not given (a record's own, or the
    /// partitioner's), `Some(None)` for `-p -1` (the partitioner's).
    pub fn forced_partition(&self) -> Option<Option<i32>> {
        self.partition.map(|p| Some(p).filter(|&p| p >= 0))
    }

    /// The producer's settings: `$KREC_CONFIG`, `-F`, `-X` through the properties loader
    /// `krec consume` uses, then `-b` and `-z`, which win.
    pub fn producer_config(&self) -> Result<ProducerConfig, Error> {
        let brokers_flag = self.cluster.brokers.is_some();
        let mut properties: Vec<Property> = self
            .cluster
            .client
            .properties()?
            .into_iter()
            .filter(|p| !(brokers_flag && crate::properties::is_bootstrap_key(&p.key)))
            .collect();
        if let Some(brokers) = &self.cluster.brokers {
            properties.push(Property::new("bootstrap.servers", brokers, "-b"));
        }
        if let Some(codec) = &self.compression {
            properties.push(Property::new("compression.type", codec, "-z"));
        }
        let config = ProducerConfig::new(Vec::new())
            .apply_properties(properties)
            .map_err(Error::from)?;
        // The library's transactions need init/begin/commit around the sends; this command
        // has none, so a transactional id would fail every send.
        if config.transactional_id.is_some() {
            return Err(Error::InvalidArgument {
                what: "transactional.id",
                detail: "krec produce writes without transactions (idempotent); remove \
                         transactional.id from the properties"
                    .to_owned(),
            });
        }
        if config.bootstrap.is_empty() {
            return Err(Error::InvalidArgument {
                what: "brokers",
                detail: "give -b HOST:PORT or bootstrap.servers in the properties".to_owned(),
            });
        }
        Ok(config)
    }
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
