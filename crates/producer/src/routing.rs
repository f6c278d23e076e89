//! The metadata task: partition leaders for every topic the producer writes to (a missing one
//! created where the brokers allow auto-creation), refreshed every
//! `metadata.max.age.ms`, when a sender saw a leader move or lost its broker, and soon (every
//! `retry.backoff.ms`) while `send` waits for a topic the metadata does not have or records
//! wait for a partition without a leader. It also fails
//! batches past `delivery.timeout.ms` that no sender drains (their partition has no leader).

use std::sync::Arc;
use std::time::{Duration, Instant};

use krec_client::metadata::{MetadataClient, TopicSelection};

use crate::producer::Shared;

/// How often batches without a leader are checked against `delivery.timeout.ms`, at most.
const EXPIRY_CHECK: Duration = Duration::from_secs(1);

/// Refreshes metadata until the producer stops (its task is aborted).
pub(crate) async fn run(shared: Arc<Shared>, mut client: MetadataClient) {
    let max_age = shared.config.metadata_refresh;
    let mut refreshed = Instant::now();
    loop {
        let waiting = {
            let state = shared.lock();
            state.has_unknown_topics() || state.has_leaderless_records()
        };
        let due = refreshed + max_age;
        let tick = if waiting {
            shared.config.retry_backoff
        } else {
            EXPIRY_CHECK.min(due.saturating_duration_since(Instant::now()))
        };
        let asked = tokio::select! {
            _ = shared.refresh.notified() => true,
            _ = tokio::time::sleep(tick) => false,
        };
        shared.lock().expire(Instant::now());
        if asked || waiting || Instant::now() >= due {
            refresh(&shared, &mut client).await;
            refreshed = Instant::now();
        }
    }
}

/// One metadata request for every topic wanted; new brokers get their sender.
pub(crate) async fn refresh(shared: &Arc<Shared>, client: &mut MetadataClient) {
    let topics = shared.lock().wanted_topics();
    // Missing topics are created where the brokers allow it, as the Java producer asks.
    match client
        .fetch_selected(TopicSelection::Creating(&topics))
        .await
    {
        Ok(metadata) => {
            let new_brokers = shared.lock().apply_metadata(&metadata);
            for node in new_brokers {
                shared.spawn_sender(node);
            }
            shared.metadata_version.send_modify(|version| *version += 1);
            shared.work.notify_waiters();
        }
        Err(error) => tracing::warn!(%error, "metadata refresh failed; trying again"),
    }
}
