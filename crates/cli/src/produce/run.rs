//! Sending what is read: each record is sent as it is read, borrowed from the input (no copy
//! before the producer's batch), and its [`Delivery`] waits in a bounded queue, resolved in
//! order, so that memory stays bounded on any input; failures are counted, the first kept.
//!
//! The reading runs on the command's own thread, the producer's tasks on one runtime worker:
//! a read that waits for standard input never holds up a batch that is due. SIGTERM or Ctrl-C
//! stops the reading; what was read is delivered, then the summary says what became of it.

use std::collections::VecDeque;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use krec_producer::{Delivered, Payload, Producer, ProducerConfig, ProducerRecord, ProducerStats};

use super::input::{Origin, RecordRef};
use super::schema::Encoders;
use super::ProduceArgs;
use crate::Error;

/// Deliveries awaited at most at once: the queue between sending and counting.
const QUEUE_LENGTH: usize = 1 << 14;

/// Runs `krec produce`: exit 0 when every record read was acknowledged, 1 when one was not
/// (or the input or a send failed), 2 for bad arguments.
pub fn run(args: ProduceArgs) -> ExitCode {
    crate::cluster::init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(source) => {
            return report(&Error::Io {
                context: "starting the async runtime".to_owned(),
                source,
            })
        }
    };
    // The registry's HTTP client blocks: the schemas are fetched before the runtime runs.
    let prepared = args.producer_config().and_then(|config| {
        let encoders = args.schema.encoders(&args.topic, &config)?;
        Ok((config, encoders))
    });
    let (config, encoders) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => return report(&error),
    };
    match runtime.block_on(produce(args, config, encoders)) {
        Ok(outcome) if outcome.finish() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(error) => report(&error),
    }
}

fn report(error: &Error) -> ExitCode {
    eprintln!("krec produce: {error}");
    ExitCode::from(error.exit_code())
}

/// What became of the records read, for the summary and the exit status.
#[derive(Debug, Default)]
struct Outcome {
    /// Records handed to the producer.
    sent: u64,
    /// Records whose delivery failed.
    failed: u64,
    /// The first delivery that failed: where its record was read, and why.
    first_failure: Option<(Origin, krec_producer::Error)>,
    /// What stopped the reading early, already naming where (input, send or close).
    stopped_by: Option<String>,
    /// SIGTERM or Ctrl-C stopped the reading.
    interrupted: bool,
    stats: ProducerStats,
}

impl Outcome {
    /// Writes the summary and any error on stderr; whether every record read was
    /// acknowledged.
    fn finish(&self) -> bool {
        let _ = std::io::stdout().flush();
        if let Some(error) = &self.stopped_by {
            eprintln!("krec produce: {error}");
        }
        if let Some((origin, error)) = &self.first_failure {
            eprintln!(
                "krec produce: {} of {} records failed; the first, {origin}: {error}",
                self.failed, self.sent
            );
        }
        eprintln!("krec produce: {}", self.summary());
        let acknowledged = self.stats.records_acknowledged;
        self.failed == 0 && self.stopped_by.is_none() && acknowledged >= self.sent
    }

    /// `N records acknowledged, B bytes in K batches, R retries`, and why it ended early.
    fn summary(&self) -> String {
        let stats = &self.stats;
        let mut text = format!(
            "{} records acknowledged, {} bytes in {} batches, {} retries",
            stats.records_acknowledged,
            stats.bytes_acknowledged,
            stats.batches_acknowledged,
            stats.retries
        );
        if self.interrupted {
            text.push_str(" (interrupted: the records read before were sent)");
        }
        text
    }
}

/// Shared with the task that waits for SIGTERM and Ctrl-C.
#[derive(Debug, Default)]
struct Shutdown {
    /// Stop reading.
    stop: AtomicBool,
    /// Records handed to the producer so far.
    sent: AtomicU64,
    /// A record is being handed to the producer (set before `stop` is checked, so the
    /// signal task either sees it or the reading sees `stop`).
    sending: AtomicBool,
    /// Whoever sets this first writes the summary and ends the process.
    finishing: AtomicBool,
}

/// Connects, sends every record read, awaits their deliveries and closes the producer.
async fn produce(
    args: ProduceArgs,
    config: ProducerConfig,
    encoders: Encoders,
) -> Result<Outcome, Error> {
    let mut input = args.input(config.write.max_record_size)?;
    let producer = Arc::new(Producer::connect(config).await?);
    let shutdown = Arc::new(Shutdown::default());
    watch_signals(&producer, &shutdown)?;
    let progress = args
        .stats
        .map(|seconds| tokio::spawn(print_progress(producer.clone(), seconds)));
    let mut outcome = Outcome::default();
    let mut queue = VecDeque::with_capacity(QUEUE_LENGTH);
    let forced_partition = args.forced_partition();
    let (mut key_buffer, mut value_buffer) = (Vec::new(), Vec::new());
    while !shutdown.stop.load(Ordering::Relaxed) {
        let record = match input.next_borrowed() {
            Ok(Some(record)) => record,
            Ok(None) => break,
            Err(error) => {
                outcome.stopped_by = Some(error.to_string());
                break;
            }
        };
        let origin = record.origin.clone();
        let record = match encoded(&encoders, record, &mut key_buffer, &mut value_buffer) {
            Ok(record) => record,
            Err(error) => {
                outcome.stopped_by = Some(error);
                break;
            }
        };
        // A signal may have come while the reading waited for input.
        shutdown.sending.store(true, Ordering::SeqCst);
        if shutdown.stop.load(Ordering::SeqCst) {
            shutdown.sending.store(false, Ordering::SeqCst);
            break;
        }
        let to_send = producer_record(&args.topic, &record, forced_partition);
        match producer.send(to_send).await {
            Ok(delivery) => {
                queue.push_back((delivery, origin));
                outcome.sent += 1;
                shutdown.sent.store(outcome.sent, Ordering::SeqCst);
            }
            Err(error) => outcome.stopped_by = Some(format!("{origin}: {error}")),
        }
        shutdown.sending.store(false, Ordering::SeqCst);
        if outcome.stopped_by.is_some() {
            break;
        }
        if queue.len() == QUEUE_LENGTH {
            let (delivery, origin) = queue.pop_front().expect("the queue is full");
            outcome.settle(delivery.await, origin);
        }
    }
    while let Some((delivery, origin)) = queue.pop_front() {
        outcome.settle(delivery.await, origin);
    }
    if let Err(error) = producer.close().await {
        outcome
            .stopped_by
            .get_or_insert(format!("closing: {error}"));
    }
    if let Some(progress) = progress {
        progress.abort();
    }
    outcome.interrupted = shutdown.stop.load(Ordering::Relaxed);
    outcome.stats = producer.stats();
    if shutdown.finishing.swap(true, Ordering::SeqCst) {
        // The signal task is writing the summary and ending the process.
        std::future::pending::<()>().await;
    }
    Ok(outcome)
}

impl Outcome {
    fn settle(&mut self, delivered: Result<Delivered, krec_producer::Error>, origin: Origin) {
        if let Err(error) = delivered {
            self.failed += 1;
            self.first_failure.get_or_insert((origin, error));
        }
    }
}

/// `record` with its key and value encoded as `--key-format`/`--value-format` say, into the
/// buffers (reused from record to record); a null stays null.
fn encoded<'a>(
    encoders: &Encoders,
    mut record: RecordRef<'a>,
    key_buffer: &'a mut Vec<u8>,
    value_buffer: &'a mut Vec<u8>,
) -> Result<RecordRef<'a>, String> {
    if let (true, Some(key)) = (encoders.keys(), record.key) {
        encoders.encode_key(key, record.decoded.key, key_buffer, &record.origin)?;
        record.key = Some(key_buffer);
    }
    if let (true, Some(value)) = (encoders.values(), record.value) {
        encoders.encode_value(value, record.decoded.value, value_buffer, &record.origin)?;
        record.value = Some(value_buffer);
    }
    Ok(record)
}

/// The record to send, borrowing `record`'s bytes; `-p` (`forced`) overrides its partition.
/// Built from its parts in one go: the setters would move the whole record once each.
fn producer_record<'a>(
    topic: &'a str,
    record: &RecordRef<'a>,
    forced: Option<Option<i32>>,
) -> ProducerRecord<'a> {
    let headers = (record.headers.iter())
        .map(|(name, value)| (Payload::from(name), value.as_ref().map(Payload::from)));
    ProducerRecord::from_parts(
        topic,
        forced.unwrap_or(record.partition),
        record.timestamp,
        record.key.map(Payload::from),
        record.value.map(Payload::from),
        headers,
    )
}

/// On SIGTERM or Ctrl-C: stop reading, deliver what was sent; if the reading is stuck waiting
/// for input, write the summary from the producer's counters and end the process here.
fn watch_signals(producer: &Arc<Producer>, shutdown: &Arc<Shutdown>) -> Result<(), Error> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate()).map_err(|source| Error::Io {
        context: "listening for SIGTERM".to_owned(),
        source,
    })?;
    let (producer, shutdown) = (producer.clone(), shutdown.clone());
    tokio::spawn(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        shutdown.stop.store(true, Ordering::SeqCst);
        let _ = producer.flush().await;
        // Give the reading a moment to notice, when it is not waiting for input.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        if shutdown.finishing.swap(true, Ordering::SeqCst) {
            return;
        }
        // A record being handed over when the signal came is counted once `send` returns
        // (within max.block.ms); then every record counted is flushed.
        while shutdown.sending.load(Ordering::SeqCst) {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let flushed = producer.flush().await;
        let stats = producer.stats();
        let outcome = Outcome {
            sent: shutdown.sent.load(Ordering::SeqCst),
            failed: stats.records_failed,
            stopped_by: flushed.err().map(|error| format!("flushing: {error}")),
            interrupted: true,
            stats,
            ..Outcome::default()
        };
        std::process::exit(if outcome.finish() { 0 } else { 1 });
    });
    Ok(())
}

/// `--stats`: every `seconds`, what the brokers acknowledged in the interval and in all.
async fn print_progress(producer: Arc<Producer>, seconds: f64) {
    let period = std::time::Duration::from_secs_f64(seconds.clamp(0.01, 86_400.0));
    let mut ticks = tokio::time::interval(period);
    ticks.tick().await;
    let mut last = producer.stats();
    loop {
        ticks.tick().await;
        let now = producer.stats();
        let rate = |now: u64, last: u64| now.saturating_sub(last) as f64 / period.as_secs_f64();
        eprintln!(
            "krec produce: stats: {:.0} records/s {:.2} MB/s, {} records acknowledged",
            rate(now.records_acknowledged, last.records_acknowledged),
            rate(now.bytes_acknowledged, last.bytes_acknowledged) / 1e6,
            now.records_acknowledged
        );
        last = now;
    }
}
