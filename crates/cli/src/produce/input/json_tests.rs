use proptest::prelude::*;

use super::*;
use crate::format::{ControlMarker, OutputFormat, RecordContext, RecordFields, RecordWriter};

fn origin() -> Origin {
    Origin {
        source: "in.json".into(),
        line: Some(7),
    }
}

fn read(line: &str) -> Result<Option<InputRecord>, InputError> {
    JsonFormat::default().record(line.as_bytes(), origin())
}

/// A record as a Kafka fetch gives it, for `krec consume -J`'s own writer.
#[derive(Clone, Debug)]
struct Fetched {
    offset: i64,
    timestamp: i64,
    partition: i32,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl RecordFields for Fetched {
    fn offset(&self) -> i64 {
        self.offset
    }
    fn timestamp(&self) -> i64 {
        self.timestamp
    }
    fn timestamp_type_name(&self) -> &'static str {
        "create_time"
    }
    fn key(&self) -> Option<&[u8]> {
        self.key.as_deref()
    }
    fn value(&self) -> Option<&[u8]> {
        self.value.as_deref()
    }
    fn header_pairs(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> + '_ {
        self.headers
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
    }
    fn header_value(&self, key: &[u8]) -> Option<Option<&[u8]>> {
        self.header_pairs().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

/// What `krec consume -J` writes for `records`, read back line by line with this reader.
fn round_trip(records: &[Fetched]) -> Vec<InputRecord> {
    let mut out = Vec::new();
    let mut writer = RecordWriter::new(&mut out, OutputFormat::Json);
    for record in records {
        let context = RecordContext::new("source-topic", record.partition);
        assert!(writer.write_record(&context, record).unwrap());
    }
    writer.flush().unwrap();
    drop(writer);
    let mut input = Input::from_reader(
        super::super::InputFormat::Json(JsonFormat::default()),
        "stdin",
        Box::new(std::io::Cursor::new(out)),
        1 << 20,
    );
    let mut read = Vec::new();
    while let Some(record) = input.next_record().unwrap() {
        read.push(record);
    }
    read
}

fn assert_same(fetched: &Fetched, read: &InputRecord) {
    assert_eq!(read.key, fetched.key, "key of {fetched:?}");
    assert_eq!(read.value, fetched.value, "value of {fetched:?}");
    assert_eq!(read.headers, fetched.headers, "headers of {fetched:?}");
    let timestamp = Some(fetched.timestamp).filter(|&t| t != -1);
    assert_eq!(read.timestamp, timestamp, "timestamp of {fetched:?}");
    assert_eq!(read.partition, Some(fetched.partition));
}

fn fetched(key: Option<&[u8]>, value: Option<&[u8]>) -> Fetched {
    Fetched {
        offset: 0,
        timestamp: 1_700_000_000_000,
        partition: 0,
        key: key.map(<[u8]>::to_vec),
        value: value.map(<[u8]>::to_vec),
        headers: Vec::new(),
    }
}

use super::super::Input;

#[test]
fn consume_json_output_reads_back_field_by_field() {
    let awkward = Fetched {
        offset: 9,
        timestamp: 0,
        partition: 5,
        key: Some(b"\xff\xfe not utf-8".to_vec()),
        value: Some(b"\0\x01\"quoted\"\\\n\r\t\x1f \xe2\x82\xac end".to_vec()),
        headers: vec![
            (b"trace".to_vec(), Some(b"abc".to_vec())),
            (b"empty".to_vec(), Some(Vec::new())),
            (b"nil".to_vec(), None),
            (b"trace".to_vec(), Some(b"\xc3\x28".to_vec())),
            (b"\x80binary key".to_vec(), Some(b"\n".to_vec())),
        ],
    };
    let records = [
        awkward,
        fetched(None, None),
        fetched(Some(b""), Some(b"")),
        fetched(Some(b""), None),
        fetched(None, Some(b"")),
        fetched(Some(b"k"), Some(&[0u8; 3])),
        Fetched {
            timestamp: -1,
            partition: 0,
            ..fetched(Some(b"no timestamp"), Some(b"v"))
        },
        Fetched {
            timestamp: i64::MAX,
            partition: i32::MAX,
            ..fetched(
                Some("ключ ☃".as_bytes()),
                Some("{\"json\": [1, 2]}".as_bytes()),
            )
        },
    ];
    let read = round_trip(&records);
    assert_eq!(read.len(), records.len());
    for (index, (fetched, read)) in records.iter().zip(&read).enumerate() {
        assert_same(fetched, read);
        assert_eq!(read.origin.to_string(), format!("stdin:{}", index + 1));
    }
}

fn bytes_strategy() -> impl Strategy<Value = Option<Vec<u8>>> {
    proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40))
}

proptest! {
    #[test]
    fn any_record_consume_writes_reads_back_equal(
        key in bytes_strategy(),
        value in bytes_strategy(),
        headers in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..10), bytes_strategy()), 0..4),
        timestamp in -1i64..i64::MAX,
        partition in 0..i32::MAX,
    ) {
        let record = Fetched { offset: 1, timestamp, partition, key, value, headers };
        let read = round_trip(std::slice::from_ref(&record));
        prop_assert_eq!(read.len(), 1);
        assert_same(&record, &read[0]);
    }
}

#[test]
fn every_field_is_optional_and_unknown_ones_are_ignored() {
    let record = read(r#"{"value":"a"}"#).unwrap().unwrap();
    assert_eq!(record.value.as_deref(), Some(&b"a"[..]));
    assert_eq!(record.key, None);
    assert!(record.headers.is_empty());
    assert_eq!((record.timestamp, record.partition), (None, None));
    assert_eq!(record.origin.to_string(), "in.json:7");
    let empty = read("{}").unwrap().unwrap();
    assert_eq!((empty.key, empty.value), (None, None));
    let ignored = read(
        r#"{"topic":"elsewhere","offset":3,"timestamp_type":"log_append_time","delivery_count":2,"future":{"x":1},"value":null}"#,
    )
    .unwrap()
    .unwrap();
    assert_eq!(ignored.value, None);
    assert!(read("  \t\r").unwrap().is_none(), "a blank line is skipped");
    assert!(read("").unwrap().is_none());
}

#[test]
fn header_flags_follow_each_lines_own_headers() {
    let format = JsonFormat {
        headers: vec![(b"added".to_vec(), None)],
        ..JsonFormat::default()
    };
    let record = format
        .record(br#"{"headers":[["own","1"]]}"#, origin())
        .unwrap()
        .unwrap();
    assert_eq!(
        record.headers,
        [
            (b"own".to_vec(), Some(b"1".to_vec())),
            (b"added".to_vec(), None)
        ]
    );
}

fn error_of(line: &str) -> String {
    read(line).unwrap_err().to_string()
}

#[test]
fn malformed_lines_name_the_line_and_the_field() {
    let cases = [
        (
            r#"{"value":"a""#,
            "in.json:7: malformed JSON: EOF while parsing",
        ),
        ("[1]", "in.json:7: field (line): expected an object"),
        (
            r#"{"key":5}"#,
            "in.json:7: field key: expected null, a string or {\"base64\"",
        ),
        (
            r#"{"value":{"base64":"!!"}}"#,
            "in.json:7: field value: invalid base64",
        ),
        (
            r#"{"value":{"base64":"QQ"}}"#,
            "in.json:7: field value: invalid base64",
        ),
        (
            r#"{"value":{"base64":"QQ==","x":1}}"#,
            "in.json:7: field value: expected null",
        ),
        (
            r#"{"headers":{"a":"b"}}"#,
            "in.json:7: field headers: expected an array",
        ),
        (
            r#"{"headers":[["a"]]}"#,
            "in.json:7: field headers[0]: expected a [key, value] pair",
        ),
        (
            r#"{"headers":[["a","b"],[null,"b"]]}"#,
            "field headers[1][0]: a header key cannot be null",
        ),
        (
            r#"{"headers":[["a",1]]}"#,
            "field headers[0][1]: expected null, a string",
        ),
        (
            r#"{"timestamp":-2}"#,
            "in.json:7: field timestamp: expected ms since the epoch",
        ),
        (r#"{"timestamp":1.5}"#, "field timestamp"),
        (r#"{"timestamp":"1"}"#, "field timestamp"),
        (
            r#"{"partition":-1}"#,
            "in.json:7: field partition: expected a partition number",
        ),
        (r#"{"partition":2147483648}"#, "field partition"),
        (
            r#"{"control":"commit","control_type":1}"#,
            "field control: a control record",
        ),
        (r#"{"value":"\ud800"}"#, "in.json:7: malformed JSON"),
    ];
    for (line, expected) in cases {
        let error = error_of(line);
        assert!(error.contains(expected), "{line}: {error}");
    }
}

#[test]
fn a_control_line_consume_writes_is_refused() {
    let marker = ControlMarker {
        offset: 3,
        timestamp: 1,
        kind: "commit",
        control_type: 1,
        version: 0,
        coordinator_epoch: Some(0),
    };
    let mut out = Vec::new();
    let mut writer = RecordWriter::new(&mut out, OutputFormat::Json).with_print_control(true);
    writer
        .write_control_marker(&RecordContext::new("t", 0), &marker)
        .unwrap();
    writer.flush().unwrap();
    drop(writer);
    let error = JsonFormat::default().record(&out, origin()).unwrap_err();
    assert!(
        matches!(error, InputError::Field { ref field, .. } if field == "control"),
        "{error}"
    );
}

#[test]
fn a_line_too_long_for_any_record_is_refused_with_its_line() {
    let long = format!(
        "{{\"value\":\"{}\"}}\n{{\"value\":\"ok\"}}\n",
        "x".repeat(line_limit(10))
    );
    let mut input = Input::from_reader(
        super::super::InputFormat::Json(JsonFormat::default()),
        "stdin",
        Box::new(std::io::Cursor::new(long.into_bytes())),
        10,
    );
    let error = input.next_record().unwrap_err();
    assert!(
        error.to_string().starts_with(&format!(
            "stdin:1: a JSON line over {} bytes",
            line_limit(10)
        )),
        "{error}"
    );
}

#[test]
fn with_a_schema_format_a_field_is_the_json_document_to_encode() {
    let format = JsonFormat {
        value_documents: true,
        ..JsonFormat::default()
    };
    let line = br#"{"key":"k","value":{"id":1,"tags":["a"]}}"#;
    let record = format.record(line, origin()).unwrap().unwrap();
    assert_eq!(
        record.key.as_deref(),
        Some(b"k".as_slice()),
        "keys stay bytes"
    );
    assert_eq!(
        record.value.as_deref(),
        Some(br#"{"id":1,"tags":["a"]}"#.as_slice())
    );
    let text = format
        .record(br#"{"value":"s"}"#, origin())
        .unwrap()
        .unwrap();
    assert_eq!(
        text.value.as_deref(),
        Some(br#""s""#.as_slice()),
        "a JSON string document"
    );
    let null = format
        .record(br#"{"value":null}"#, origin())
        .unwrap()
        .unwrap();
    assert_eq!(null.value, None, "null stays null");
}

#[test]
fn a_schema_id_marks_its_part_as_written_by_consume() {
    let format = JsonFormat {
        key_documents: true,
        value_documents: true,
        ..JsonFormat::default()
    };
    let decoded = |line: &str| format.record(line.as_bytes(), origin()).unwrap().unwrap();
    let both = decoded(r#"{"key":1,"value":2,"key_schema_id":3,"value_schema_id":4}"#);
    assert_eq!(
        both.decoded,
        DecodedParts {
            key: true,
            value: true
        }
    );
    let value = decoded(r#"{"key":1,"value":2,"value_schema_id":null}"#);
    assert_eq!(
        value.decoded,
        DecodedParts {
            key: false,
            value: true
        }
    );
    let neither = decoded(r#"{"key":1,"value":2}"#);
    assert_eq!(neither.decoded, DecodedParts::default());
    assert_eq!(neither.as_ref().to_owned(), neither, "kept when borrowed");
}

#[test]
fn escapes_are_undone_in_strings_header_strings_and_base64() {
    let record = read(
        r#"{"key":"a\"\\\/\b\f\n\r\tz","value":"\u00e9\ud83d\ude00!","headers":[["h\u0041","\u0000"]]}"#,
    )
    .unwrap()
    .unwrap();
    assert_eq!(record.key.as_deref(), Some(&b"a\"\\/\x08\x0c\n\r\tz"[..]));
    assert_eq!(record.value.as_deref(), Some("é😀!".as_bytes()));
    assert_eq!(record.headers, [(b"hA".to_vec(), Some(vec![0]))]);
    let base64 = read(r#"{"value":{"base64":"\/w\u003d="}}"#)
        .unwrap()
        .unwrap();
    assert_eq!(base64.value.as_deref(), Some(&[0xff][..]));
    for lone in [r#"{"key":"\udc00"}"#, r#"{"headers":[["\ud800x","v"]]}"#] {
        let error = error_of(lone);
        assert!(
            error.starts_with("in.json:7: malformed JSON"),
            "{lone}: {error}"
        );
    }
}

#[test]
fn storage_read_line_after_line_keeps_nothing_of_the_line_before() {
    let format = JsonFormat {
        headers: vec![(b"added".to_vec(), Some(b"x".to_vec()))],
        ..JsonFormat::default()
    };
    let lines = [
        r#"{"key":"k1","value":{"base64":"AAEC"},"headers":[["a","1"],["b",null],["c","3"]],"timestamp":5,"partition":2,"value_schema_id":1}"#,
        r#"{"value":"v2","headers":[["a",null],["b","2"]]}"#,
        r#"{"key":"k3"}"#,
        r#"{"key":5}"#,
        r#"{"headers":[["a","1"],["b","2"],["c",null],["d","4"]]}"#,
    ];
    let mut buf = JsonRecordBuf::default();
    let mut read_again = Vec::new();
    for line in lines {
        match format.read_into(line.as_bytes(), &origin(), &mut buf) {
            Ok(read) => {
                assert!(read);
                read_again.push(buf.record(origin()).to_owned());
            }
            Err(error) => assert!(error.to_string().contains("field key"), "{error}"),
        }
    }
    let fresh: Vec<InputRecord> = (lines.iter())
        .filter_map(|line| format.record(line.as_bytes(), origin()).ok().flatten())
        .collect();
    assert_eq!(read_again.len(), 4);
    assert_eq!(read_again, fresh, "the same as each line read on its own");
    assert_eq!(
        read_again[1].headers,
        [
            (b"a".to_vec(), None),
            (b"b".to_vec(), Some(b"2".to_vec())),
            (b"added".to_vec(), Some(b"x".to_vec()))
        ]
    );
    assert_eq!(
        (read_again[2].key.as_deref(), read_again[2].value.as_deref()),
        (Some(&b"k3"[..]), None)
    );
    assert_eq!(read_again[2].decoded, DecodedParts::default());
}
