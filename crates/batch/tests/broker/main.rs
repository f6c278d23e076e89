//! Kafka's own reader on what krec-batch writes: a segment file of `BatchWriter` batches,
//! every codec, most of them re-stamped (producer fields, and base offsets as the broker
//! assigns them: consecutive) through the shallow copy's seam, read by `org.apache.kafka.tools.DumpLogSegments --deep-iteration
//! --print-data-log`, which must find every batch valid (its CRC) and every record with
//! its offset, timestamp, key, value and header keys.
//!
//! `cargo test` leaves this binary out (`test = false`): it needs the suite's Kafka
//! installation, reached through `scripts/kafka.sh tool` (`krec_testkit::live`). test.sh
//! runs it with the other broker tests; by hand: KREC_TEST_BOOTSTRAP, KREC_KAFKA_SH and
//! KREC_KAFKA_NAME set as for those, then `cargo test -p krec-batch --test broker`.

use krec_batch::{restamp, BatchWriter, Codec, Compression, ProducerFields, WriteConfig};
use krec_testkit::live;

/// One record as written, and as DumpLogSegments should print it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Expected {
    offset: i64,
    timestamp: i64,
    key: Option<String>,
    value: Option<String>,
    header_keys: Vec<String>,
}

/// One batch's header as DumpLogSegments prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ExpectedBatch {
    base_offset: i64,
    count: usize,
    codec: &'static str,
    producer_id: i64,
    base_sequence: i32,
}

const PRODUCER_ID: i64 = 4_000;

/// The records of batch `batch`: keys and values present, null and empty, with headers.
fn records(batch: usize, count: usize) -> Vec<Expected> {
    (0..count)
        .map(|i| Expected {
            offset: 0,
            timestamp: 1_764_000_000_000 + (batch * 1_000 + i) as i64,
            key: (i % 5 != 1).then(|| format!("key-{batch}-{i}")),
            value: match i % 7 {
                2 => None,
                3 => Some(String::new()),
                _ => Some(format!(
                    "value {batch} {i} {}",
                    "lorem ipsum ".repeat(i % 20)
                )),
            },
            header_keys: match i % 3 {
                0 => vec![],
                1 => vec!["traceparent".into()],
                _ => vec!["a".into(), "b".into()],
            },
        })
        .collect()
}

/// A segment of writer batches, one or more per codec, and what it holds.
fn segment() -> (Vec<u8>, Vec<ExpectedBatch>, Vec<Expected>) {
    let mut writer = BatchWriter::new(WriteConfig {
        batch_size: 1 << 20,
        ..WriteConfig::default()
    });
    let (mut bytes, mut batches, mut all) = (Vec::new(), Vec::new(), Vec::new());
    let mut codecs: Vec<Codec> = Compression::ALL.iter().map(|&c| Codec::new(c)).collect();
    codecs.extend([Codec::gzip(9).unwrap(), Codec::zstd(-1).unwrap()]);
    let mut next_offset = 0i64;
    let mut sequence = 0i32;
    for (index, codec) in codecs.into_iter().enumerate() {
        // One large batch: several LZ4 blocks and xerial chunks.
        let count = if index == 3 { 1_500 } else { 40 };
        let mut batch_records = records(index, count);
        writer.reset();
        for record in &mut batch_records {
            let headers: Vec<(&str, Option<&[u8]>)> = record
                .header_keys
                .iter()
                .map(|k| (k.as_str(), Some(&b"header value"[..])))
                .collect();
            let appended = writer
                .try_append(
                    record.timestamp,
                    record.key.as_deref().map(str::as_bytes),
                    record.value.as_deref().map(str::as_bytes),
                    &headers,
                )
                .unwrap();
            assert!(matches!(appended, krec_batch::Append::Appended { .. }));
        }
        let producer = ProducerFields::idempotent(PRODUCER_ID, 0, sequence);
        // The first batch as the writer stamps it; the others written by another producer
        // first, then re-stamped as a mirror would, with offsets as the broker assigns them.
        let batch = if next_offset == 0 {
            writer.finish(producer, codec).unwrap().to_vec()
        } else {
            let other = ProducerFields {
                transactional: true,
                ..ProducerFields::idempotent(7, 3, 99)
            };
            let mut batch = writer.finish(other, codec).unwrap().to_vec();
            restamp(&mut batch, next_offset, producer).unwrap();
            batch
        };
        for (i, record) in batch_records.iter_mut().enumerate() {
            record.offset = next_offset + i as i64;
        }
        bytes.extend_from_slice(&batch);
        batches.push(ExpectedBatch {
            base_offset: next_offset,
            count,
            codec: codec.compression().name(),
            producer_id: PRODUCER_ID,
            base_sequence: sequence,
        });
        next_offset += count as i64;
        sequence += count as i32;
        all.extend(batch_records);
    }
    (bytes, batches, all)
}

/// The value after `name: ` in a DumpLogSegments line, up to the next space.
fn field<'l>(line: &'l str, name: &str) -> &'l str {
    let start = line
        .find(&format!(" {name}: "))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
        + name.len()
        + 3;
    line[start..].split(' ').next().unwrap_or_default()
}

/// A record line: `| offset: N CreateTime: T keySize: K valueSize: V sequence: S
/// headerKeys: [a,b] key: KEY payload: VALUE` (no `key:` for a null key, no `payload:` for a
/// null value).
fn parse_record(line: &str) -> Expected {
    let header_keys = field(line, "headerKeys");
    let keys_end = line.find("headerKeys: [").unwrap() + "headerKeys: ".len() + header_keys.len();
    let rest = &line[keys_end..];
    let (key, value) = match rest.split_once(" payload: ") {
        Some((key_part, value)) => (key_part, Some(value.to_owned())),
        None => (rest, None),
    };
    let key = key.strip_prefix(" key: ").map(str::to_owned);
    let key_size: i64 = field(line, "keySize").parse().unwrap();
    let value_size: i64 = field(line, "valueSize").parse().unwrap();
    assert_eq!(
        key_size,
        key.as_ref().map_or(-1, |k| k.len() as i64),
        "{line}"
    );
    // An empty payload prints as "payload: " at the end of the line.
    let value = if value_size == 0 {
        Some(String::new())
    } else {
        value
    };
    assert_eq!(
        value_size,
        value.as_ref().map_or(-1, |v| v.len() as i64),
        "{line}"
    );
    let header_keys = header_keys.trim_matches(['[', ']']);
    Expected {
        offset: field(line, "| offset")
            .parse()
            .unwrap_or_else(|_| panic!("{line}")),
        timestamp: field(line, "CreateTime").parse().unwrap(),
        key,
        value,
        header_keys: header_keys
            .split(',')
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect(),
    }
}

fn parse_batch(line: &str) -> ExpectedBatch {
    assert!(
        line.contains(" isvalid: true"),
        "Kafka finds the batch invalid: {line}"
    );
    assert!(line.contains(" magic: 2 "), "{line}");
    assert!(line.contains(" isTransactional: false "), "{line}");
    let codec = Compression::ALL
        .iter()
        .map(|c| c.name())
        .find(|&name| name == field(line, "compresscodec"))
        .unwrap_or_else(|| panic!("codec of {line}"));
    ExpectedBatch {
        base_offset: field(&format!(" {line}"), "baseOffset").parse().unwrap(),
        count: field(line, "count").parse().unwrap(),
        codec,
        producer_id: field(line, "producerId").parse().unwrap(),
        base_sequence: field(line, "baseSequence").parse().unwrap(),
    }
}

#[test]
fn kafkas_dump_log_segments_reads_every_batch_the_writer_writes() {
    let broker = live::broker();
    let (bytes, batches, records) = segment();
    let dir = std::env::temp_dir().join(live::unique_name("krec-batch-writer"));
    std::fs::create_dir_all(&dir).unwrap();
    // DumpLogSegments wants a segment file's name: <20-digit base offset>.log.
    let path = dir.join("00000000000000000000.log");
    std::fs::write(&path, &bytes).unwrap();
    let path = path.to_str().unwrap().to_owned();
    let output = broker.tool(
        "org.apache.kafka.tools.DumpLogSegments",
        &["--deep-iteration", "--print-data-log", "--files", &path],
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let (mut read_batches, mut read_records) = (Vec::new(), Vec::new());
    for line in output.lines() {
        if line.starts_with("baseOffset: ") {
            read_batches.push(parse_batch(line));
        } else if line.starts_with("| offset: ") {
            read_records.push(parse_record(&format!(" {line}")));
        } else {
            assert!(
                !line.starts_with("Found") && !line.contains("invalid bytes"),
                "DumpLogSegments complains: {line}"
            );
        }
    }
    assert_eq!(read_batches, batches);
    assert_eq!(read_records.len(), records.len());
    for (read, written) in read_records.iter().zip(&records) {
        assert_eq!(read, written);
    }
}
