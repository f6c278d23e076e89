use clap::Parser;

use super::*;
use crate::produce::input::InputRecord;

#[derive(Debug, Parser)]
struct Line {
    #[command(flatten)]
    args: ProduceArgs,
}

fn parse(line: &[&str]) -> Result<ProduceArgs, clap::Error> {
    let words = ["krec", "-b", "127.0.0.1:9092", "-t", "t"].into_iter();
    Line::try_parse_from(words.chain(line.iter().copied())).map(|line| line.args)
}

fn lines_of(args: &ProduceArgs) -> LineFormat {
    match args.input_format().unwrap() {
        InputFormat::Lines(format) => format,
        other => panic!("expected line input, got {other:?}"),
    }
}

#[test]
fn kcat_letters_mean_what_they_mean_in_kcat() {
    let args = parse(&[
        "-k", "fixed", "-K", "\\t", "-Z", "-D", "\\x1e", "-H", "a=1", "-H", "n", "-H", "e=",
    ])
    .unwrap();
    let format = lines_of(&args);
    assert_eq!(format.delimiter, b"\x1e");
    assert_eq!(format.key_delimiter.as_deref(), Some(&b"\t"[..]));
    assert_eq!(format.fixed_key.as_deref(), Some(&b"fixed"[..]));
    assert!(format.null_empty);
    assert_eq!(
        format.headers,
        [
            (b"a".to_vec(), Some(b"1".to_vec())),
            (b"n".to_vec(), None),
            (b"e".to_vec(), Some(Vec::new()))
        ]
    );
    let plain = lines_of(&parse(&[]).unwrap());
    assert_eq!(plain.delimiter, b"\n");
    assert_eq!(plain.key_delimiter, None);
}

#[test]
fn partition_minus_one_is_the_partitioner() {
    assert_eq!(parse(&[]).unwrap().forced_partition(), None);
    assert_eq!(parse(&["-p", "-1"]).unwrap().forced_partition(), Some(None));
    assert_eq!(
        parse(&["-p", "3"]).unwrap().forced_partition(),
        Some(Some(3))
    );
    assert!(parse(&["-p", "-2"]).is_err());
}

#[test]
fn bad_headers_and_delimiters_are_refused() {
    assert!(parse(&["-H", "=v"]).is_err());
    assert!(parse(&["-H", ""]).is_err());
    let empty = parse(&["-D", ""]).unwrap().input_format().unwrap_err();
    assert_eq!(empty.exit_code(), 2);
    assert!(empty.to_string().contains("must not be empty"), "{empty}");
    let hex = parse(&["-K", "\\xZ"]).unwrap().input_format().unwrap_err();
    assert!(hex.to_string().contains("-K"), "{hex}");
}

#[test]
fn json_input_refuses_the_line_options() {
    for option in [
        &["-K", ":"][..],
        &["-k", "k"],
        &["-Z"],
        &["-l"],
        &["-D", ";"],
    ] {
        let line = [&["-J"][..], option].concat();
        assert!(parse(&line).is_err(), "{option:?}");
    }
    let args = parse(&["-J", "-H", "h=v", "-p", "2"]).unwrap();
    match args.input_format().unwrap() {
        InputFormat::Json(format) => assert_eq!(format.headers.len(), 1),
        other => panic!("expected JSON, got {other:?}"),
    }
}

#[test]
fn files_are_whole_records_unless_read_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::write(&a, b"one\ntwo\n").unwrap();
    std::fs::write(&b, b"three").unwrap();
    let files = [a.to_str().unwrap(), b.to_str().unwrap()];
    let read_all = |extra: &[&str]| -> Vec<InputRecord> {
        let args = parse(&[extra, &files[..]].concat()).unwrap();
        let mut input = args.input(1 << 20).unwrap();
        std::iter::from_fn(|| input.next_record().unwrap()).collect()
    };
    let whole = read_all(&[]);
    let values: Vec<_> = whole.iter().map(|r| r.value.clone().unwrap()).collect();
    assert_eq!(values, [b"one\ntwo\n".to_vec(), b"three".to_vec()]);
    assert_eq!(whole[1].origin.to_string(), files[1]);
    let lines = read_all(&["-l"]);
    let values: Vec<_> = lines.iter().map(|r| r.value.clone().unwrap()).collect();
    assert_eq!(
        values,
        [b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]
    );
    let origins: Vec<_> = lines.iter().map(|r| r.origin.to_string()).collect();
    assert_eq!(
        origins,
        [
            format!("{}:1", files[0]),
            format!("{}:2", files[0]),
            format!("{}:1", files[1])
        ]
    );
}

#[test]
fn a_missing_file_is_named() {
    let args = parse(&["-l", "/nonexistent/input"]).unwrap();
    let error = args.input(100).unwrap().next_record().unwrap_err();
    assert!(
        error.to_string().starts_with("/nonexistent/input: "),
        "{error}"
    );
}

#[test]
fn properties_and_flags_make_the_producer_config() {
    let args = parse(&[
        "-X",
        "linger.ms=20",
        "-X",
        "compression.type=gzip",
        "-z",
        "lz4",
    ])
    .unwrap();
    let config = args.producer_config().unwrap();
    assert_eq!(config.bootstrap, ["127.0.0.1:9092"]);
    assert_eq!(config.linger, std::time::Duration::from_millis(20));
    assert_eq!(
        config.codec.compression(),
        krec_batch::Compression::Lz4,
        "-z wins"
    );
    let bad = parse(&["-X", "group.id=g"])
        .unwrap()
        .producer_config()
        .unwrap_err();
    assert_eq!(bad.exit_code(), 2);
    assert!(bad.to_string().contains("group.id"), "{bad}");
    let codec = parse(&["-z", "brotli"])
        .unwrap()
        .producer_config()
        .unwrap_err();
    assert!(codec.to_string().contains("-z"), "{codec}");
    let registry = parse(&["-X", "schema.registry.url=http://r:8081"]).unwrap();
    assert_eq!(
        registry
            .producer_config()
            .unwrap()
            .foreign_properties()
            .len(),
        1
    );
}

#[test]
fn a_transactional_id_is_refused_as_the_command_runs_no_transactions() {
    let refused = parse(&["-X", "transactional.id=t1"])
        .unwrap()
        .producer_config()
        .unwrap_err();
    assert_eq!(refused.exit_code(), 2);
    assert!(
        refused.to_string().contains("transactional.id"),
        "{refused}"
    );
}
