//! The output options shared by `krec decode` and `krec consume` (flattened into both).

use std::io::Write;

use super::filter::FilterArgs;
use super::raw::RawFormat;
use super::schema::SchemaArgs;
use super::template::{unescape, Template};
use super::writer::{OutputFormat, RecordWriter};
use crate::Error;

/// Output options: `--format`, `--print-control`, `-D`, `-K`, `-Z`, and the record filters.
#[derive(Clone, Debug, Default, PartialEq, Eq, clap::Args)]
pub struct FormatArgs {
    /// Output format: `json` (one object per line, the default), `raw` (values
    /// only), or a kcat-style template such as '%o %k %s\n' (tokens: %s %S %R %k
    /// %K %t %p %o %T %I %h %{h:KEY} %c %%; escapes \n \r \t \\ \xHH).
    #[arg(short = 'f', long = "format", value_name = "FORMAT")]
    pub format: Option<String>,

    /// Same as `--format json` (kcat's `-J`).
    #[arg(short = 'J', long = "json", conflicts_with = "format")]
    pub json: bool,

    /// Also print control records (transaction commit/abort markers).
    #[arg(long = "print-control")]
    pub print_control: bool,

    /// `--format raw`: written after each value (escapes allowed). Default `\n`.
    #[arg(short = 'D', long = "delimiter", value_name = "DELIM")]
    pub delimiter: Option<String>,

    /// `--format raw`: print the key, then this delimiter, before each value.
    #[arg(short = 'K', long = "key-delimiter", value_name = "DELIM")]
    pub key_delimiter: Option<String>,

    /// Print null keys, values and header values as `NULL` instead of nothing
    /// (templates and raw; JSON always writes `null`).
    #[arg(short = 'Z', long = "null-as-text")]
    pub null_as_text: bool,

    /// Which records are written (`--key`, `--header`, `--grep`).
    #[command(flatten)]
    pub filter: FilterArgs,

    /// Schema Registry decoding (`-s`, `-r`).
    #[command(flatten)]
    pub schema: SchemaArgs,
}

impl FormatArgs {
    /// Checks the options and builds the output format.
    pub fn output_format(&self) -> Result<OutputFormat, Error> {
        let name = if self.json {
            "json"
        } else {
            self.format.as_deref().unwrap_or("json")
        };
        let format = match name {
            "json" => OutputFormat::Json,
            "raw" => {
                let mut raw = RawFormat::default();
                if let Some(delimiter) = &self.delimiter {
                    raw.delimiter = unescape("--delimiter", delimiter)?;
                }
                if let Some(key_delimiter) = &self.key_delimiter {
                    raw.key_delimiter = Some(unescape("--key-delimiter", key_delimiter)?);
                }
                OutputFormat::Raw(raw)
            }
            template if template.contains('%') => {
                OutputFormat::Template(Template::parse(template)?)
            }
            other => {
                return Err(Error::InvalidFormat {
                    option: "--format",
                    text: other.to_owned(),
                    position: 0,
                    reason: "expected `json`, `raw`, or a template with `%` tokens".into(),
                })
            }
        };
        if !matches!(format, OutputFormat::Raw(_)) {
            let raw_only = [
                ("--delimiter", &self.delimiter),
                ("--key-delimiter", &self.key_delimiter),
            ];
            if let Some((option, Some(text))) = raw_only.into_iter().find(|(_, v)| v.is_some()) {
                return Err(Error::InvalidFormat {
                    option,
                    text: text.clone(),
                    position: 0,
                    reason: "only used with `--format raw` (templates spell out their delimiters)"
                        .into(),
                });
            }
        }
        if self.print_control && matches!(format, OutputFormat::Raw(_)) {
            return Err(Error::InvalidFormat {
                option: "--format",
                text: "raw".into(),
                position: 0,
                reason: "`--print-control` needs `json` or a template (raw output has no place for markers)"
                    .into(),
            });
        }
        // Builds the shared registry client now, so its errors come before any record.
        self.schema.decoders()?;
        Ok(format)
    }

    /// Builds the record writer these options describe, writing to `out`.
    pub fn writer<W: Write>(&self, out: W) -> Result<RecordWriter<W>, Error> {
        let null_text: &[u8] = if self.null_as_text { b"NULL" } else { b"" };
        Ok(RecordWriter::new(out, self.output_format()?)
            .with_print_control(self.print_control)
            .with_null_text(null_text)
            .with_filter(self.filter.filter()?)
            .with_schema(self.schema.decoders()?))
    }
}

#[cfg(test)]
mod tests {
    use super::FormatArgs;
    use crate::format::raw::RawFormat;
    use crate::format::{OutputFormat, Template};
    use crate::Error;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        format: FormatArgs,
    }

    fn parse(args: &[&str]) -> FormatArgs {
        Cli::try_parse_from(std::iter::once("krec").chain(args.iter().copied()))
            .expect("valid command line")
            .format
    }

    #[test]
    fn formats_from_the_command_line() {
        assert_eq!(
            parse(&[]).output_format().expect("valid"),
            OutputFormat::Json
        );
        assert_eq!(
            parse(&["-J"]).output_format().expect("valid"),
            OutputFormat::Json
        );
        assert_eq!(
            parse(&["--format", "json"]).output_format().expect("valid"),
            OutputFormat::Json
        );
        assert_eq!(
            parse(&["-f", "raw"]).output_format().expect("valid"),
            OutputFormat::Raw(RawFormat::default())
        );
        assert_eq!(
            parse(&["-f", "raw", "-D", "\\x00", "-K", "\\t"])
                .output_format()
                .expect("valid"),
            OutputFormat::Raw(RawFormat {
                delimiter: vec![0],
                key_delimiter: Some(b"\t".to_vec()),
            })
        );
        assert_eq!(
            parse(&["-f", "%o %s\\n"]).output_format().expect("valid"),
            OutputFormat::Template(Template::parse("%o %s\\n").expect("valid"))
        );
    }

    #[test]
    fn contradictory_or_misspelt_options_are_refused() {
        let cases: [(&[&str], &str); 5] = [
            (&["-f", "jsno"], "expected `json`, `raw`"),
            (&["-f", "%q"], "unknown token"),
            (&["-f", "json", "-D", ","], "only used with `--format raw`"),
            (&["-f", "%s", "-K", ","], "only used with `--format raw`"),
            (&["-f", "raw", "--print-control"], "--print-control"),
        ];
        for (args, reason_part) in cases {
            match parse(args).output_format() {
                Err(Error::InvalidFormat { reason, .. }) => {
                    assert!(reason.contains(reason_part), "{args:?}: {reason}")
                }
                other => panic!("{args:?}: expected InvalidFormat, got {other:?}"),
            }
        }
        let conflict = Cli::try_parse_from(["krec", "-J", "-f", "raw"]);
        assert!(conflict.is_err(), "-J and --format together are refused");
    }

    #[test]
    fn writer_carries_control_and_null_settings() {
        let writer = parse(&["--print-control", "-Z", "-f", "%k"])
            .writer(Vec::new())
            .expect("valid");
        assert!(writer.prints_control());
        let writer = parse(&[]).writer(Vec::new()).expect("valid");
        assert!(!writer.prints_control());
    }
}
