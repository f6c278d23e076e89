//! `--on-corrupt stop|skip` of `krec consume` and `krec decode`: the line that reports a
//! skipped batch, and the exit status that says a run skipped something.

use std::fmt;

use krec_batch::{OnCorrupt, Skipped};

/// Exit status of a run that skipped at least one corrupt batch and met no other error
/// (after all output was flushed).
pub const SKIPPED_EXIT_CODE: u8 = 3;

/// Parses `--on-corrupt` (for clap).
pub fn parse_on_corrupt(text: &str) -> Result<OnCorrupt, String> {
    text.parse()
}

/// Where a skipped batch was read from, as its report line names it.
#[derive(Clone, Copy, Debug)]
pub struct SkipSource<'a> {
    /// `decode` or `consume`.
    pub command: &'static str,
    /// The segment file (`krec decode`).
    pub file: Option<&'a str>,
    /// Topic, when known.
    pub topic: Option<&'a str>,
    /// Partition, when known.
    pub partition: Option<i32>,
    /// The fetch offset of the fetch response the batch came in (`krec consume`).
    pub fetch_offset: Option<i64>,
}

/// The report of one skipped batch, one line (README, "Corrupt data"):
///
/// `krec COMMAND: skipped corrupt batch: [file=F ]topic=T partition=P offsets=B..L
/// position=N bytes=S[ fetch_offset=F]: WHAT`
pub fn report_line<E: fmt::Display>(source: &SkipSource<'_>, skipped: &Skipped<E>) -> String {
    let span = &skipped.span;
    let file = source
        .file
        .map(|file| format!("file={file} "))
        .unwrap_or_default();
    let partition = source
        .partition
        .map_or_else(|| "unknown".to_owned(), |p| p.to_string());
    let fetch_offset = source
        .fetch_offset
        .map(|offset| format!(" fetch_offset={offset}"))
        .unwrap_or_default();
    format!(
        "krec {}: skipped corrupt batch: {file}topic={} partition={partition} offsets={}..{} \
         position={} bytes={}{fetch_offset}: {}",
        source.command,
        source.topic.unwrap_or("unknown"),
        span.base_offset,
        span.last_offset,
        span.position,
        span.size,
        skipped.error,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use krec_batch::BatchSpan;

    #[test]
    fn the_report_names_every_coordinate() {
        let skipped = Skipped {
            span: BatchSpan {
                position: 120,
                size: 80,
                base_offset: 7,
                last_offset: 9,
            },
            error: "checksum mismatch",
        };
        let consume = SkipSource {
            command: "consume",
            file: None,
            topic: Some("orders"),
            partition: Some(3),
            fetch_offset: Some(5),
        };
        assert_eq!(
            report_line(&consume, &skipped),
            "krec consume: skipped corrupt batch: topic=orders partition=3 offsets=7..9 \
             position=120 bytes=80 fetch_offset=5: checksum mismatch"
        );
        let decode = SkipSource {
            command: "decode",
            file: Some("a.log"),
            topic: None,
            partition: None,
            fetch_offset: None,
        };
        assert_eq!(
            report_line(&decode, &skipped),
            "krec decode: skipped corrupt batch: file=a.log topic=unknown partition=unknown \
             offsets=7..9 position=120 bytes=80: checksum mismatch"
        );
    }
}
