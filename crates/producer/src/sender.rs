//! One sender task per broker, as the Java client's Sender: it owns the broker's connection
//! and drains the ready batches of every partition the broker leads into one Produce request.
//!
//! Requests go out one at a time today (`produce` waits for its answer); the loop keeps the
//! shape a pipeline needs (drain when there is room, take the oldest answer), so sending up to
//! `max.in.flight.requests.per.connection` is a change here alone.

use std::sync::Arc;
use std::time::Instant;

use krec_client::produce::{produce, ProduceParams};
use krec_client::Connection;

use crate::accumulator::Request;
use crate::producer::Shared;

/// Drains and sends for broker `node` until the producer stops (its task is aborted).
pub(crate) async fn run(shared: Arc<Shared>, node: i32) {
    let mut connection: Option<Connection> = None;
    let max_bytes = shared.config.write.max_record_size;
    loop {
        let work = shared.work.notified();
        tokio::pin!(work);
        work.as_mut().enable();
        let (request, wakeup) = shared.lock().drain(node, max_bytes, Instant::now());
        let Some(request) = request else {
            match wakeup {
                Some(at) => {
                    tokio::select! {
                        _ = &mut work => {}
                        _ = tokio::time::sleep_until(at.into()) => {}
                    }
                }
                None => work.await,
            }
            continue;
        };
        send(&shared, node, &mut connection, request).await;
        // A retry, a bump or room for another broker's batch may be ready now.
        shared.work.notify_waiters();
    }
}

/// Sends one request and takes in its answer; a connection that fails is dropped and the
/// batches are sent again after `retry.backoff.ms`.
async fn send(shared: &Shared, node: i32, connection: &mut Option<Connection>, request: Request) {
    if connection.is_none() {
        match connect(shared, node).await {
            Ok(opened) => *connection = Some(opened),
            Err(reason) => {
                tracing::debug!(node, %reason, "no connection for produce");
                shared.lock().on_lost(request.sent, &reason, Instant::now());
                shared.refresh.notify_one();
                tokio::time::sleep(shared.config.retry_backoff).await;
                return;
            }
        }
    }
    let Some(open) = connection.as_mut() else {
        return;
    };
    let params = ProduceParams {
        acks: shared.acks,
        timeout_ms: shared
            .config
            .connection
            .request_timeout
            .as_millis()
            .min(i32::MAX as u128) as i32,
    };
    let answer = produce(open, params, &request.topics).await;
    let broker = open.address().to_owned();
    match answer {
        Ok(answer) => {
            let answers = answer
                .partitions
                .into_iter()
                .map(|p| (p.partition, p.result))
                .collect();
            let followup = shared
                .lock()
                .on_answer(request.sent, answers, &broker, Instant::now());
            if followup.refresh_metadata {
                shared.refresh.notify_one();
            }
        }
        Err(error) => {
            tracing::debug!(node, %error, "produce failed; the batches go again");
            *connection = None;
            let reason = format!("broker {broker}: {error}");
            shared.lock().on_lost(request.sent, &reason, Instant::now());
            shared.refresh.notify_one();
        }
    }
}

async fn connect(shared: &Shared, node: i32) -> Result<Connection, String> {
    let address = shared
        .lock()
        .broker_address(node)
        .ok_or_else(|| format!("broker {node} is not in the metadata"))?;
    Connection::connect(&address, &shared.config.connection)
        .await
        .map_err(|error| format!("broker {address}: {error}"))
}
