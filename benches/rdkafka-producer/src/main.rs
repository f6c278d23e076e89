//! Produces every line of a file as one record with rdkafka's `BaseProducer`,
//! waits for every delivery report, then exits.
//!
//!     rdkafka-producer-bench BOOTSTRAP TOPIC FILE [-H NAME=VALUE]... [-X PROPERTY=VALUE]...
//!     rdkafka-producer-bench --version
//!
//! A line is `KEY<TAB>VALUE` (a line without a tab is a value without a key),
//! as `kcat -P -K '\t' -l FILE` reads it; every record gets the headers of the
//! `-H` options, as kcat's. The file is read line by line (not into memory), so
//! peak RSS is the producer's own. `-X` sets a librdkafka property, as kcat's
//! does; scripts/bench-produce.sh gives every peer the same batching, acks and
//! codec that way. Records go to the partition librdkafka's default
//! partitioner picks for the key (kcat's too).
//!
//! A `ThreadedProducer`: its thread serves delivery reports as they come.
//! When librdkafka's queue is full (`queue.buffering.max.messages` or
//! `.kbytes`) the program waits in steps of 1 ms until there is room, and at
//! the end until no record is outstanding. (Not the crate's `flush`: it polls
//! in steps of 100 ms, each waiting its full 100 ms, which added up to 100 ms
//! to every run.) Then it exits without joining that thread (up to another
//! 100 ms): every record was delivered. It prints `rdkafka-producer-bench: N records delivered` to
//! stderr and exits 0 only when every record was delivered; otherwise it
//! prints the first delivery error and exits 1.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;

/// The crate version Cargo.toml pins.
const RDKAFKA_CRATE: &str = "0.39.0";

/// One wait for room in librdkafka's queue or for the last delivery reports.
const WAIT_STEP: Duration = Duration::from_millis(1);

/// How long the end waits for the last delivery reports.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(120);

/// Counts delivery reports; keeps the first error.
#[derive(Default)]
struct Deliveries {
    delivered: std::sync::atomic::AtomicU64,
    first_error: std::sync::Mutex<Option<String>>,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => {
                self.delivered
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            Err((error, _)) => {
                let mut first = self.first_error.lock().unwrap_or_else(|e| e.into_inner());
                first.get_or_insert_with(|| error.to_string());
            }
        }
    }
}

/// The command line: BOOTSTRAP TOPIC FILE, then `-H` headers and `-X` properties.
struct Args {
    bootstrap: String,
    topic: String,
    file: String,
    headers: Vec<(String, String)>,
    properties: Vec<(String, String)>,
}

fn parse_args(args: &[String]) -> Option<Args> {
    let [bootstrap, topic, file, options @ ..] = args else {
        return None;
    };
    let (mut headers, mut properties) = (Vec::new(), Vec::new());
    for pair in options.chunks(2) {
        let (name, value) = pair.get(1)?.split_once('=')?;
        let entry = (name.to_owned(), value.to_owned());
        match pair[0].as_str() {
            "-H" => headers.push(entry),
            "-X" => properties.push(entry),
            _ => return None,
        }
    }
    Some(Args {
        bootstrap: bootstrap.clone(),
        topic: topic.clone(),
        file: file.clone(),
        headers,
        properties,
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--version") {
        let (_, librdkafka) = rdkafka::util::get_rdkafka_version();
        println!("rdkafka {RDKAFKA_CRATE}, bundled librdkafka {librdkafka}");
        return ExitCode::SUCCESS;
    }
    let Some(args) = parse_args(&args) else {
        eprintln!(
            "usage: rdkafka-producer-bench BOOTSTRAP TOPIC FILE [-H NAME=VALUE]... [-X PROPERTY=VALUE]... | --version"
        );
        return ExitCode::from(2);
    };
    match produce(&args) {
        Ok(records) => {
            eprintln!("rdkafka-producer-bench: {records} records delivered");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("rdkafka-producer-bench: {error}");
            ExitCode::FAILURE
        }
    }
}

fn produce(args: &Args) -> Result<u64, Box<dyn std::error::Error>> {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", &args.bootstrap);
    for (property, value) in &args.properties {
        config.set(property, value);
    }
    let producer: ThreadedProducer<Deliveries> =
        config.create_with_context(Deliveries::default())?;
    let mut headers = OwnedHeaders::new();
    for (name, value) in &args.headers {
        headers = headers.insert(Header {
            key: name,
            value: Some(value.as_bytes()),
        });
    }
    let mut reader = BufReader::with_capacity(64 * 1024, File::open(&args.file)?);
    let mut line = Vec::new();
    let mut sent = 0u64;
    while reader.read_until(b'\n', &mut line)? > 0 {
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let (key, value) = match line.iter().position(|&b| b == b'\t') {
            Some(tab) => (Some(&line[..tab]), &line[tab + 1..]),
            None => (None, &line[..]),
        };
        send_waiting(&producer, &args.topic, key, value, &headers)?;
        sent += 1;
        line.clear();
    }
    let deadline = Instant::now() + FLUSH_TIMEOUT;
    while producer.in_flight_count() > 0 {
        if Instant::now() > deadline {
            let left = producer.in_flight_count();
            return Err(format!("{left} records not delivered in {FLUSH_TIMEOUT:?}").into());
        }
        std::thread::sleep(WAIT_STEP);
    }
    let context = producer.context();
    if let Some(error) = context
        .first_error
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
    {
        return Err(format!("delivery failed: {error}").into());
    }
    let delivered = context.delivered.load(std::sync::atomic::Ordering::Relaxed);
    if delivered != sent {
        return Err(format!("{delivered} of {sent} records delivered").into());
    }
    std::mem::forget(producer);
    Ok(delivered)
}

/// Sends one record, waiting while librdkafka's queue is full.
fn send_waiting(
    producer: &ThreadedProducer<Deliveries>,
    topic: &str,
    key: Option<&[u8]>,
    value: &[u8],
    headers: &OwnedHeaders,
) -> Result<(), KafkaError> {
    loop {
        let mut record = BaseRecord::to(topic)
            .payload(value)
            .headers(headers.clone());
        if let Some(key) = key {
            record = record.key(key);
        }
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                std::thread::sleep(WAIT_STEP);
            }
            Err((error, _)) => return Err(error),
        }
    }
}
