//! `krec consume`: read topics (names, or patterns followed as topics come and go) from a
//! Kafka cluster and write their records out, alone, as a member of a consumer group (`-G`),
//! or as a member of a share group (`--share-group`), all through one loop.
//!
//! The network side runs on one tokio thread (the consumer's fetch loops); decoding and
//! formatting run on decode threads, one per core by default, each owning whole partitions so
//! that output is in offset order per partition.

mod args;
mod config;
mod ends;
mod run_loop;
mod share;
mod sink;
mod source;

pub use args::{ConsumeArgs, GroupArgs, MonitoringArgs};

use std::io::Write;
use std::process::ExitCode;

use crate::corrupt::SKIPPED_EXIT_CODE;
use crate::properties::registry_properties;
use crate::range::OffsetRange;
use crate::time::now_ms;
use crate::Error;
use source::Source;

/// Runs `krec consume`.
pub fn run(args: ConsumeArgs) -> ExitCode {
    crate::cluster::init_logging();
    let runtime = match tokio::runtime::Builder::new_current_thread()
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
    // Shares its skip counter with the writers' copies.
    let schema = args.format.schema.clone();
    match runtime.block_on(consume(args)) {
        Ok(batches) => {
            let records = schema.records_skipped();
            if batches + records == 0 {
                return ExitCode::SUCCESS;
            }
            let _ = std::io::stdout().flush();
            if batches > 0 {
                eprintln!("krec consume: {batches} corrupt batches skipped");
            }
            if records > 0 {
                eprintln!("krec consume: {records} undecodable records skipped");
            }
            ExitCode::from(SKIPPED_EXIT_CODE)
        }
        // The reader went away (`krec consume ... | head`): stopping is what it asked for.
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(error) => report(&error),
    }
}

fn report(error: &Error) -> ExitCode {
    let _ = std::io::stdout().flush();
    eprintln!("krec consume: {}", error.with_flags());
    ExitCode::from(error.exit_code())
}

/// Consumes as `args` say; the number of corrupt batches skipped.
async fn consume(args: ConsumeArgs) -> Result<u64, Error> {
    let config = args.consumer_config(args.cluster.config()?)?;
    let range = OffsetRange::parse(&args.offset, now_ms())?;
    let idle_timeout = args.idle_timeout()?;
    // Check the format and the topics before touching the network.
    args.format
        .schema
        .set_properties(&registry_properties(&config));
    args.format
        .schema
        .set_on_corrupt(args.on_corrupt, "consume");
    args.format.output_format()?;
    let share_group = args.group.share_group.as_deref();
    // The topics, checked before anything connects.
    match share_group {
        Some(_) => share::check_args(&args)?,
        None => _ = args.subscription()?,
    }
    if args.count == Some(0) {
        return Ok(0);
    }
    let endpoint = match &args.monitoring.metrics {
        Some(address) => Some(crate::metrics_server::bind(address).await?),
        None => None,
    };
    // Only for the lag, which a share group (no positions) does not have.
    let read_committed = config.read_committed;
    let source = match share_group {
        Some(group) => Source::share(config, group, &args.topic_entries()).await?,
        None => read_from(&args, config, args.subscription()?, range).await?,
    };
    run_loop::consume_from(&args, source, endpoint, idle_timeout, read_committed).await
}

/// Assigns what `-t` and `-p` name (over `range`), or joins the consumer group `-G` names.
async fn read_from(
    args: &ConsumeArgs,
    mut config: krec_consumer::ConsumerConfig,
    subscription: krec_consumer::TopicSubscription,
    range: OffsetRange,
) -> Result<Source, Error> {
    let from_properties = Some(config.group.group_id.clone()).filter(|id| !id.is_empty());
    let group_id = args.group.group_id.clone().or(from_properties);
    if range.end.is_some() && (group_id.is_some() || subscription.has_patterns()) {
        return Err(Error::InvalidArgument {
            what: "offset",
            detail: "a range with an end reads named topics without a group (-G) or pattern"
                .to_owned(),
        });
    }
    match group_id {
        Some(group) => {
            let given_start = (!args.offset.is_empty()).then_some(range.start);
            args.apply_group(&group, given_start, &mut config)?;
            Source::join(config, args.exit_at_end).await
        }
        None => Source::assign(args, config, subscription, range).await,
    }
}
