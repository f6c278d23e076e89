//! cargo run --example decode -- tests/data/kafka-python-v2-none.bin trace
//!
//! Embeds krec-batch to decode a Kafka log segment file (concatenated batches)
//! and looks up one header by name in every record. Without a header name it
//! lists each record's header names.
//!
//! The walk borrows from the file's bytes: records are views into them (or into
//! a pooled decompression buffer), and the first header lookup on a record indexes
//! its headers once.

use std::process::ExitCode;

use krec::batch::{BatchWalk, DecodeConfig};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: cargo run --example decode -- SEGMENT_FILE [HEADER_NAME]");
        return ExitCode::from(2);
    };
    let header_name = args.next();

    let data = match std::fs::read(&path) {
        Ok(data) => data,
        Err(error) => {
            eprintln!("{path}: {error}");
            return ExitCode::FAILURE;
        }
    };
    // The defaults bound every allocation a length in the file could ask for.
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(&data, &config);
    for batch in &mut walk {
        let batch = match batch {
            Ok(batch) => batch,
            Err(error) => {
                eprintln!("{path}: {error}");
                return ExitCode::FAILURE;
            }
        };
        if batch.is_control() {
            continue;
        }
        for record in batch.records() {
            let record = match record {
                Ok(record) => record,
                Err(error) => {
                    eprintln!("{path}: {error}");
                    return ExitCode::FAILURE;
                }
            };
            let key = record.key().map(String::from_utf8_lossy);
            match &header_name {
                Some(name) => {
                    let found = record.headers().get(name.as_bytes());
                    let shown = match found.map(|header| header.value) {
                        None => "(no such header)".to_owned(),
                        Some(None) => "(null)".to_owned(),
                        Some(Some(value)) => String::from_utf8_lossy(value).into_owned(),
                    };
                    println!("offset {} key {key:?}: {name} = {shown}", record.offset());
                }
                None => {
                    let names: Vec<_> = record
                        .headers()
                        .iter()
                        .map(|header| String::from_utf8_lossy(header.key))
                        .collect();
                    println!("offset {} key {key:?}: headers {names:?}", record.offset());
                }
            }
        }
    }
    // A segment holds whole batches only: a cut-off batch at the end is an error.
    if let Err(error) = walk.end_of_file() {
        eprintln!("{path}: {error}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
