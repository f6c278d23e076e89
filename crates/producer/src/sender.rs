//! One sender task per broker, as the Java client's Sender: it owns the broker's connection
//! and drains the ready batches of every partition the broker leads into one Produce request,
//! keeping up to `max.in.flight.requests.per.connection` requests in flight. It waits for
//! whichever comes first: the oldest request's answer (read cancel-safely, so racing it loses
//! nothing), or batches ready while there is room for another request. A broker's quota
//! (`throttle_time_ms`) holds its next request; after an exhausted epoch a sender with nothing
//! in flight asks InitProducerId for the new producer id.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use krec_client::produce::{
    send_produce, send_produce_in_transaction, ProduceAnswer, ProduceError, ProduceErrorKind,
    ProduceInFlight, ProduceParams,
};
use krec_client::producer_id;
use krec_client::transaction::txn_codes::TRANSACTION_ABORTABLE;
use krec_client::Connection;
use krec_client::TopicPartition;

use crate::accumulator::{Request, Sent};
use crate::producer::Shared;

/// The broker's connection and the requests in flight on it, oldest first.
struct Link {
    connection: Option<Connection>,
    in_flight: VecDeque<(ProduceInFlight, Vec<Sent>)>,
    /// The broker throttles this client (a quota) until then: no new request before.
    throttled_until: Option<Instant>,
}

/// The first Produce version whose broker answers at once and leaves the throttling to the
/// client (KIP-219); an older broker delays its answer instead.
const CLIENT_THROTTLES_FROM_VERSION: i16 = 6;

/// Drains and sends for broker `node` until the producer stops (its task is aborted).
pub(crate) async fn run(shared: Arc<Shared>, node: i32) {
    let mut link = Link {
        connection: None,
        in_flight: VecDeque::new(),
        throttled_until: None,
    };
    let max_in_flight = shared.config.max_in_flight.max(1) as usize;
    let max_bytes = shared.config.write.max_record_size;
    loop {
        let work = shared.work.notified();
        tokio::pin!(work);
        work.as_mut().enable();
        let mut wakeup = None;
        let now = Instant::now();
        let throttled = link.throttled_until.filter(|&until| until > now);
        if let Some(until) = throttled {
            wakeup = Some(until);
        } else if link.in_flight.len() < max_in_flight {
            let (request, next) = shared.lock().drain(node, max_bytes, now);
            if let Some(request) = request {
                link.send(&shared, node, request).await;
                continue;
            }
            // InitProducerId goes alone on the connection: after every answer is in.
            if link.in_flight.is_empty() && shared.lock().ask_new_producer_id() {
                link.renew_producer_id(&shared, node).await;
                continue;
            }
            wakeup = next;
        }
        let sleep = async {
            match wakeup {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            answer = link.oldest_answer() => {
                link.take_answer(&shared, answer);
                // A retry, a bump or room for another request may be ready now.
                shared.work.notify_waiters();
            }
            _ = &mut work => {}
            _ = sleep => {}
        }
    }
}

impl Link {
    /// Writes one request (connecting first if needed); a failure sends every batch in
    /// flight again after `retry.backoff.ms`.
    async fn send(&mut self, shared: &Shared, node: i32, request: Request) {
        if self.connection.is_none() {
            match connect(shared, node).await {
                Ok(opened) => self.connection = Some(opened),
                Err(reason) => {
                    tracing::debug!(node, %reason, "no connection for produce");
                    self.lose(shared, request.sent, &reason);
                    tokio::time::sleep(shared.config.retry_backoff).await;
                    return;
                }
            }
        }
        let Some(connection) = self.connection.as_mut() else {
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
        let sent = match shared.transactions.as_ref() {
            None => send_produce(connection, params, &request.topics).await,
            Some(transactions) => {
                let missing = transactions.missing_partitions(&request.topics);
                if !missing.is_empty() {
                    if let Err(error) = transactions.add_partitions(shared, &missing).await {
                        refuse_in_transaction(shared, request, &error);
                        return;
                    }
                }
                let (id, version) = (transactions.id(), transactions.max_produce_version());
                send_produce_in_transaction(connection, params, &request.topics, id, version).await
            }
        };
        match sent {
            Ok(flight) => self.in_flight.push_back((flight, request.sent)),
            Err(error) => {
                let reason = naming_broker(connection.address(), &error);
                self.lose(shared, request.sent, &reason);
            }
        }
    }

    /// InitProducerId for a new producer id once the epoch is exhausted (nothing is in
    /// flight then, on any connection); a passing failure is asked again after
    /// `retry.backoff.ms`, another stops the producer.
    async fn renew_producer_id(&mut self, shared: &Shared, node: i32) {
        let answer = match self.connection.as_mut() {
            Some(connection) => producer_id::init_producer_id(connection, None)
                .await
                .map_err(|error| (producer_id::is_retriable(&error), error.to_string())),
            None => match connect(shared, node).await {
                Ok(mut opened) => {
                    let answer = producer_id::init_producer_id(&mut opened, None).await;
                    self.connection = Some(opened);
                    answer.map_err(|error| (producer_id::is_retriable(&error), error.to_string()))
                }
                Err(reason) => Err((true, reason)),
            },
        };
        match answer {
            Ok(identity) => shared.lock().reset_producer_id(identity),
            Err((true, reason)) => {
                tracing::debug!(node, %reason, "InitProducerId failed; asking again");
                self.connection = None;
                shared.lock().new_producer_id_not_given();
                tokio::time::sleep(shared.config.retry_backoff).await;
            }
            Err((false, reason)) => shared.lock().stop(&format!(
                "InitProducerId for a new producer id (the epoch is exhausted): {reason}"
            )),
        }
        shared.work.notify_waiters();
    }

    /// The oldest request's answer; never resolves while nothing is in flight.
    async fn oldest_answer(&mut self) -> Result<ProduceAnswer, krec_client::Error> {
        match (self.connection.as_mut(), self.in_flight.front()) {
            (Some(connection), Some((flight, _))) => flight.answer(connection).await,
            _ => std::future::pending().await,
        }
    }

    /// Takes in the oldest request's answer; a failed read loses the connection.
    fn take_answer(&mut self, shared: &Shared, answer: Result<ProduceAnswer, krec_client::Error>) {
        let broker = self
            .connection
            .as_ref()
            .map_or_else(String::new, |c| c.address().to_owned());
        match answer {
            Ok(answer) => {
                let Some((_, sent)) = self.in_flight.pop_front() else {
                    return;
                };
                let now = Instant::now();
                let throttle = throttle_end(&answer, now);
                let throttle_time_ms = answer.throttle_time_ms;
                let answers = answer
                    .partitions
                    .into_iter()
                    .map(|p| (p.partition, p.result))
                    .collect();
                let mut state = shared.lock();
                if let Some(until) = throttle {
                    tracing::debug!(%broker, throttle_time_ms, "throttled by a quota");
                    state.throttled(throttle_time_ms);
                    self.throttled_until =
                        Some(self.throttled_until.map_or(until, |t| t.max(until)));
                }
                let followup = state.on_answer(sent, answers, &broker, now);
                drop(state);
                if followup.refresh_metadata {
                    shared.refresh.notify_one();
                }
            }
            Err(error) => {
                tracing::debug!(%broker, %error, "produce failed; the batches go again");
                self.lose(shared, Vec::new(), &naming_broker(&broker, &error));
            }
        }
    }

    /// The connection is gone: every request in flight, then `sent` (not written), go again.
    fn lose(&mut self, shared: &Shared, sent: Vec<Sent>, reason: &str) {
        self.connection = None;
        let now = Instant::now();
        let mut state = shared.lock();
        for (_, earlier) in self.in_flight.drain(..) {
            state.on_lost(earlier, reason, now);
        }
        state.on_lost(sent, reason, now);
        drop(state);
        shared.refresh.notify_one();
    }
}

/// AddPartitionsToTxn failed (Transactions v1): the request's batches fail as if the broker
/// had answered TRANSACTION_ABORTABLE for each, with the coordinator's reason; the
/// transaction is doomed (or the producer stopped) already.
fn refuse_in_transaction(shared: &Shared, request: Request, error: &crate::Error) {
    let answers = request
        .topics
        .iter()
        .flat_map(|topic| {
            topic.partitions.iter().map(|p| {
                let partition = TopicPartition::new(topic.name.clone(), p.partition);
                let refused = ProduceError {
                    partition: partition.clone(),
                    kind: ProduceErrorKind::from_code(TRANSACTION_ABORTABLE),
                    code: TRANSACTION_ABORTABLE,
                    message: Some(error.to_string()),
                    record_errors: Vec::new(),
                    current_leader: None,
                };
                (partition, Err(refused))
            })
        })
        .collect();
    let coordinator = "transaction coordinator";
    let _no_metadata_needed =
        shared
            .lock()
            .on_answer(request.sent, answers, coordinator, Instant::now());
}

/// Until when the broker's quota holds this client's next request (KIP-219: the broker
/// answered at once and mutes the connection for `throttle_time_ms`), if it does.
fn throttle_end(answer: &ProduceAnswer, now: Instant) -> Option<Instant> {
    let throttled = answer.throttle_time_ms > 0 && answer.version >= CLIENT_THROTTLES_FROM_VERSION;
    throttled.then(|| now + Duration::from_millis(answer.throttle_time_ms as u64))
}

async fn connect(shared: &Shared, node: i32) -> Result<Connection, String> {
    let address = shared
        .lock()
        .broker_address(node)
        .ok_or_else(|| format!("broker {node} is not in the metadata"))?;
    Connection::connect(&address, &shared.config.connection)
        .await
        .map_err(|error| naming_broker(&address, &error))
}

/// `error` as a reason that names the broker once (the client's errors mostly name it already).
fn naming_broker(broker: &str, error: &krec_client::Error) -> String {
    let text = error.to_string();
    if text.starts_with("broker ") {
        text
    } else {
        format!("broker {broker}: {text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(version: i16, throttle_time_ms: i32) -> ProduceAnswer {
        ProduceAnswer {
            version,
            throttle_time_ms,
            partitions: Vec::new(),
        }
    }

    #[test]
    fn a_throttled_answer_holds_the_next_request_from_kip_219_on() {
        let now = Instant::now();
        assert_eq!(
            throttle_end(&answer(9, 250), now),
            Some(now + Duration::from_millis(250))
        );
        assert_eq!(throttle_end(&answer(9, 0), now), None, "not throttled");
        assert_eq!(
            throttle_end(&answer(5, 250), now),
            None,
            "before v6 the broker held its answer itself"
        );
    }
}
