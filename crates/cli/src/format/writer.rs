//! The record writer: one reused buffer, written out in large chunks.

use std::io::{self, Write};

use super::filter::RecordFilter;
use super::json;
use super::raw::RawFormat;
use super::record::{ControlMarker, RecordContext, RecordFields};
use super::schema::{DecodedRecord, SchemaDecoders};
use super::template::Template;

/// Bytes gathered before one `write_all` to the output: large enough that
/// syscalls are rare, small enough to stay in cache.
const FLUSH_THRESHOLD: usize = 64 * 1024;

/// Which output format records are written in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// One JSON object per line (schema in [`json`](super::json)).
    Json,
    /// A kcat-style template (tokens in [`template`](super::template)).
    Template(Template),
    /// Raw value bytes with delimiters (see [`raw`](super::raw)).
    Raw(RawFormat),
}

/// Writes records to `W` in one [`OutputFormat`].
///
/// Output is buffered internally: call [`flush`](RecordWriter::flush) before
/// writing anything else to the same stream (e.g. an error message) and at the end.
/// Control records are dropped unless [`with_print_control`](RecordWriter::with_print_control)
/// turned them on, so both commands share one policy.
#[derive(Debug)]
pub struct RecordWriter<W: Write> {
    out: W,
    buffer: Vec<u8>,
    format: OutputFormat,
    print_control: bool,
    null_text: Vec<u8>,
    /// Buffered bytes that trigger a write to `out`; `usize::MAX` when gathering.
    flush_threshold: usize,
    /// Records to write; `None`: all of them.
    filter: Option<RecordFilter>,
    /// Decodes Schema Registry keys and values; `None`: bytes are written as they are.
    schema: Option<SchemaDecoders>,
}

impl<W: Write> RecordWriter<W> {
    /// A writer in `format`, hiding control records, printing null keys and values as nothing.
    pub fn new(out: W, format: OutputFormat) -> Self {
        RecordWriter {
            out,
            buffer: Vec::with_capacity(FLUSH_THRESHOLD * 2),
            format,
            print_control: false,
            null_text: Vec::new(),
            flush_threshold: FLUSH_THRESHOLD,
            filter: None,
            schema: None,
        }
    }

    /// Formats into `buffer` (emptied first) and never writes to `out` on its own: for output
    /// gathered in memory (a `krec decode` thread's run), where writing the usual buffer into
    /// a `Vec` would copy every byte a second time. [`RecordWriter::into_buffer`] returns it.
    pub fn gathering_into(mut self, mut buffer: Vec<u8>) -> Self {
        buffer.clear();
        self.buffer = buffer;
        self.flush_threshold = usize::MAX;
        self
    }

    /// The formatted bytes not yet written to `out`: all of them after
    /// [`RecordWriter::gathering_into`].
    pub fn into_buffer(self) -> Vec<u8> {
        self.buffer
    }

    /// Whether control records (transaction markers) are printed.
    pub fn with_print_control(mut self, print_control: bool) -> Self {
        self.print_control = print_control;
        self
    }

    /// What templates and raw output print for a null key, value or header value
    /// (`-Z` sets `NULL`). JSON always writes `null`.
    pub fn with_null_text(mut self, null_text: &[u8]) -> Self {
        self.null_text = null_text.to_vec();
        self
    }

    /// Only records `filter` matches are to be written (see [`RecordWriter::admits`]).
    pub fn with_filter(mut self, filter: Option<RecordFilter>) -> Self {
        self.filter = filter;
        self
    }

    /// Keys and values are decoded by `schema` (from `-s`) before they are written.
    pub fn with_schema(mut self, schema: Option<SchemaDecoders>) -> Self {
        self.schema = schema;
        self
    }

    /// Whether `record` passes the filter: callers ask before counting and writing it, so a
    /// record left out costs no formatting.
    #[inline]
    pub fn admits<R: RecordFields + ?Sized>(&self, record: &R) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|filter| filter.matches(record))
    }

    /// The filter's exact key, if it has one.
    pub fn filter_key(&self) -> Option<&[u8]> {
        self.filter.as_ref().and_then(RecordFilter::key)
    }

    /// True when control records are printed; callers may skip walking them otherwise.
    pub fn prints_control(&self) -> bool {
        self.print_control
    }

    /// The output format.
    pub fn format(&self) -> &OutputFormat {
        &self.format
    }

    /// Writes one data record; false when it was left out instead, undecodable and reported
    /// (`--on-corrupt skip` with a Schema Registry format).
    pub fn write_record<R: RecordFields + ?Sized>(
        &mut self,
        ctx: &RecordContext<'_>,
        record: &R,
    ) -> io::Result<bool> {
        if let Some(schema) = &mut self.schema {
            let Some(parts) = schema.decode(ctx, record)? else {
                return Ok(false);
            };
            let decoded = DecodedRecord { record, parts };
            match &self.format {
                OutputFormat::Json => json::write_decoded_record(&mut self.buffer, ctx, &decoded),
                OutputFormat::Template(template) => {
                    template.render_record(&mut self.buffer, ctx, &decoded, &self.null_text)
                }
                OutputFormat::Raw(raw) => {
                    raw.write_record(&mut self.buffer, &decoded, &self.null_text)
                }
            }
            return self.flush_if_full().map(|()| true);
        }
        match &self.format {
            OutputFormat::Json => json::write_record(&mut self.buffer, ctx, record),
            OutputFormat::Template(template) => {
                template.render_record(&mut self.buffer, ctx, record, &self.null_text)
            }
            OutputFormat::Raw(raw) => raw.write_record(&mut self.buffer, record, &self.null_text),
        }
        self.flush_if_full().map(|()| true)
    }

    /// Writes one control record, if control records are printed; otherwise does nothing.
    pub fn write_control_marker(
        &mut self,
        ctx: &RecordContext<'_>,
        control: &ControlMarker,
    ) -> io::Result<()> {
        if !self.print_control {
            return Ok(());
        }
        match &self.format {
            OutputFormat::Json => json::write_control(&mut self.buffer, ctx, control),
            OutputFormat::Template(template) => {
                template.render_control(&mut self.buffer, ctx, control, &self.null_text)
            }
            // Refused when parsing the options; if built by hand, there is nothing to print.
            OutputFormat::Raw(_) => {}
        }
        self.flush_if_full()
    }

    /// Writes out everything buffered and flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.write_buffer()?;
        self.out.flush()
    }

    /// Flushes, then returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.flush()?;
        Ok(self.out)
    }

    fn flush_if_full(&mut self) -> io::Result<()> {
        if self.buffer.len() >= self.flush_threshold {
            self.write_buffer()?;
        }
        Ok(())
    }

    fn write_buffer(&mut self) -> io::Result<()> {
        if !self.buffer.is_empty() {
            // Clear even on error: a failed write must not be retried with stale bytes.
            let result = self.out.write_all(&self.buffer);
            self.buffer.clear();
            result?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{OutputFormat, RecordWriter, FLUSH_THRESHOLD};
    use crate::format::raw::RawFormat;
    use crate::format::record::tests::TestRecord;
    use crate::format::{ControlMarker, RecordContext, Template};

    const MARKER: ControlMarker = ControlMarker {
        offset: 3,
        timestamp: 4,
        kind: "abort",
        control_type: 0,
        version: 0,
        coordinator_epoch: Some(1),
    };

    #[test]
    fn control_records_only_when_asked() {
        let ctx = RecordContext::new("t", 1);
        let template = OutputFormat::Template(Template::parse("%o:%c\\n").expect("valid"));
        let mut hidden = RecordWriter::new(Vec::new(), template.clone());
        hidden
            .write_control_marker(&ctx, &MARKER)
            .expect("vec write");
        assert!(hidden.into_inner().expect("vec write").is_empty());

        let mut shown = RecordWriter::new(Vec::new(), template).with_print_control(true);
        shown
            .write_control_marker(&ctx, &MARKER)
            .expect("vec write");
        assert_eq!(shown.into_inner().expect("vec write"), b"3:abort\n");
    }

    #[test]
    fn output_is_complete_and_ordered_across_buffer_flushes() {
        let mut writer = RecordWriter::new(Vec::new(), OutputFormat::Raw(RawFormat::default()));
        let count = 3 * FLUSH_THRESHOLD / 8;
        for i in 0..count {
            let record = TestRecord {
                value: Some(format!("{i:07}").into_bytes()),
                ..TestRecord::default()
            };
            writer
                .write_record(&RecordContext::unknown(), &record)
                .expect("vec write");
        }
        let out = writer.into_inner().expect("vec write");
        let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
        assert_eq!(lines.len(), count + 1, "count lines plus the empty tail");
        for (i, line) in lines[..count].iter().enumerate() {
            assert_eq!(*line, format!("{i:07}").as_bytes());
        }
    }

    #[test]
    fn a_gathering_writer_keeps_everything_in_its_buffer() {
        let format = OutputFormat::Raw(RawFormat::default());
        let mut usual = RecordWriter::new(Vec::new(), format.clone());
        let mut gathering =
            RecordWriter::new(Vec::new(), format).gathering_into(b"stale bytes".to_vec());
        for i in 0..3 * FLUSH_THRESHOLD / 8 {
            let record = TestRecord {
                value: Some(format!("{i:07}").into_bytes()),
                ..TestRecord::default()
            };
            for writer in [&mut usual, &mut gathering] {
                writer
                    .write_record(&RecordContext::unknown(), &record)
                    .expect("vec write");
            }
        }
        let (out, gathered) = (gathering.out.clone(), gathering.into_buffer());
        assert!(out.is_empty(), "nothing written out past the threshold");
        assert_eq!(gathered, usual.into_inner().expect("vec write"));
    }

    #[test]
    fn null_text_applies_to_templates() {
        let format = OutputFormat::Template(Template::parse("%k|%s").expect("valid"));
        let mut writer = RecordWriter::new(Vec::new(), format).with_null_text(b"NULL");
        writer
            .write_record(&RecordContext::unknown(), &TestRecord::default())
            .expect("vec write");
        assert_eq!(writer.into_inner().expect("vec write"), b"NULL|NULL");
    }

    #[test]
    fn flush_writes_the_buffer_through_a_borrowed_writer() {
        let mut sink = Vec::new();
        {
            let mut writer = RecordWriter::new(&mut sink, OutputFormat::Json);
            writer
                .write_record(&RecordContext::unknown(), &TestRecord::default())
                .expect("vec write");
            writer.flush().expect("vec write");
        }
        let line: serde_json::Value = serde_json::from_slice(&sink).expect("valid JSON");
        assert_eq!(line["offset"], 0);
    }
}
