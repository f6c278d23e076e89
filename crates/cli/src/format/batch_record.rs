//! The formats over krec-batch's records and control records.

use std::io::{self, Write};

use krec_batch::{ControlKind, ControlRecord, Record, TimestampType};

use super::record::{ControlMarker, RecordContext, RecordFields};
use super::writer::RecordWriter;

impl RecordFields for Record<'_> {
    fn offset(&self) -> i64 {
        Record::offset(self)
    }
    fn timestamp(&self) -> i64 {
        Record::timestamp(self)
    }
    fn timestamp_type_name(&self) -> &'static str {
        timestamp_type_name(Record::timestamp_type(self))
    }
    fn key(&self) -> Option<&[u8]> {
        Record::key(self)
    }
    fn value(&self) -> Option<&[u8]> {
        Record::value(self)
    }
    fn header_pairs(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> + '_ {
        self.headers()
            .iter()
            .map(|header| (header.key, header.value))
    }
    fn header_value(&self, key: &[u8]) -> Option<Option<&[u8]>> {
        self.headers().get(key).map(|header| header.value)
    }
}

/// The JSON word for a timestamp type.
pub(crate) fn timestamp_type_name(timestamp_type: TimestampType) -> &'static str {
    match timestamp_type {
        TimestampType::CreateTime => "create_time",
        TimestampType::LogAppendTime => "log_append_time",
        TimestampType::NoTimestamp => "none",
    }
}

/// Kafka's names for control record types (`ControlRecordType` in the Java
/// client); 2 and up appear in KRaft metadata logs.
fn control_kind_name(kind: ControlKind) -> (&'static str, i16) {
    match kind {
        ControlKind::Abort => ("abort", 0),
        ControlKind::Commit => ("commit", 1),
        ControlKind::Other(code) => (
            match code {
                2 => "leader_change",
                3 => "snapshot_header",
                4 => "snapshot_footer",
                5 => "kraft_version",
                6 => "kraft_voters",
                _ => "unknown",
            },
            code,
        ),
        // ControlKind is non-exhaustive; a kind added later prints as unknown until named here.
        _ => ("unknown", -1),
    }
}

impl From<&ControlRecord> for ControlMarker {
    fn from(control: &ControlRecord) -> Self {
        let (kind, control_type) = control_kind_name(control.kind);
        ControlMarker {
            offset: control.offset,
            timestamp: control.timestamp,
            kind,
            control_type,
            version: control.version,
            coordinator_epoch: control.coordinator_epoch,
        }
    }
}

impl<W: Write> RecordWriter<W> {
    /// Writes one control record (transaction marker), if control records are
    /// printed ([`with_print_control`](RecordWriter::with_print_control)); otherwise does nothing.
    pub fn write_control(
        &mut self,
        ctx: &RecordContext<'_>,
        control: &ControlRecord,
    ) -> io::Result<()> {
        if !self.prints_control() {
            return Ok(());
        }
        self.write_control_marker(ctx, &ControlMarker::from(control))
    }
}

#[cfg(test)]
mod tests {
    use super::control_kind_name;
    use krec_batch::ControlKind;

    #[test]
    fn control_kinds_have_kafka_names_and_numbers() {
        let cases = [
            (ControlKind::Abort, ("abort", 0)),
            (ControlKind::Commit, ("commit", 1)),
            (ControlKind::Other(2), ("leader_change", 2)),
            (ControlKind::Other(6), ("kraft_voters", 6)),
            (ControlKind::Other(77), ("unknown", 77)),
            (ControlKind::Other(-1), ("unknown", -1)),
        ];
        for (kind, expected) in cases {
            assert_eq!(control_kind_name(kind), expected, "{kind:?}");
        }
    }
}
