//! How a record learns its fate: one completion shared by every record of a batch (no channel
//! or allocation per record), and the record's future, which reads its offset from it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use crate::Error;

/// A batch's answer: where the broker put its first record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BatchAck {
    /// Offset of the first record, -1 when unknown (acks=0, or a duplicate the broker no
    /// longer knows the offset of).
    pub(crate) base_offset: i64,
    /// The broker's append time when the topic keeps LogAppendTime.
    pub(crate) log_append_time: Option<i64>,
}

/// One batch's completion, shared by the futures of all its records. A batch split after
/// MESSAGE_TOO_LARGE completes once every part has, each record with its part's outcome.
#[derive(Debug)]
pub(crate) struct BatchCompletion {
    topic: Arc<str>,
    partition: i32,
    /// For a part of a split batch: that batch, and the offset delta there of the part's
    /// first record.
    whole: Option<(Arc<BatchCompletion>, i32)>,
    state: Mutex<State>,
}

#[derive(Debug)]
enum State {
    /// Waiting; `parts_pending` counts the parts not done yet of a split batch.
    Pending {
        wakers: Vec<Waker>,
        parts_pending: usize,
        parts: Vec<Part>,
    },
    Done(Outcome),
}

/// A batch's outcome: one for every record, or one per part of a split batch.
#[derive(Clone, Debug)]
enum Outcome {
    Whole(Result<BatchAck, Error>),
    /// By the offset delta of each part's first record, ascending.
    Parts(Arc<[Part]>),
}

/// The outcome of the records of a split batch from offset delta `first_delta` on.
#[derive(Clone, Debug)]
struct Part {
    first_delta: i32,
    outcome: Result<BatchAck, Error>,
}

impl BatchCompletion {
    pub(crate) fn new(topic: Arc<str>, partition: i32) -> Arc<Self> {
        Arc::new(BatchCompletion {
            topic,
            partition,
            whole: None,
            state: Mutex::new(State::Pending {
                wakers: Vec::new(),
                parts_pending: 0,
                parts: Vec::new(),
            }),
        })
    }

    /// Splits the batch into parts whose first records are at these offset deltas: the
    /// parts' completions, in order. The batch completes once they all have.
    pub(crate) fn split(self: &Arc<Self>, first_deltas: &[i32]) -> Vec<Arc<BatchCompletion>> {
        if let State::Pending { parts_pending, .. } = &mut *self.lock() {
            *parts_pending += first_deltas.len();
        }
        (first_deltas.iter())
            .map(|&delta| {
                Arc::new(BatchCompletion {
                    topic: self.topic.clone(),
                    partition: self.partition,
                    whole: Some((self.clone(), delta)),
                    state: Mutex::new(State::Pending {
                        wakers: Vec::new(),
                        parts_pending: 0,
                        parts: Vec::new(),
                    }),
                })
            })
            .collect()
    }

    pub(crate) fn topic(&self) -> &Arc<str> {
        &self.topic
    }

    pub(crate) fn partition(&self) -> i32 {
        self.partition
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A waker list or a result cannot be left half-written: a poisoned lock is usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Resolves every record of the batch; the first outcome stays, later ones are ignored
    /// (a batch failed by `Drop` may still be answered by its broker).
    pub(crate) fn complete(&self, outcome: Result<BatchAck, Error>) {
        self.finish(Outcome::Whole(outcome));
    }

    fn finish(&self, outcome: Outcome) {
        let wakers = {
            let mut state = self.lock();
            match &mut *state {
                State::Done(_) => return,
                State::Pending { wakers, .. } => {
                    let wakers = std::mem::take(wakers);
                    *state = State::Done(outcome.clone());
                    wakers
                }
            }
        };
        for waker in wakers {
            waker.wake();
        }
        if let Some((whole, first_delta)) = &self.whole {
            whole.part_done(*first_delta, outcome);
        }
    }

    /// A part's outcome (its deltas from `first_delta` on); the last part completes the batch.
    fn part_done(&self, first_delta: i32, outcome: Outcome) {
        let done = {
            let mut state = self.lock();
            let State::Pending {
                parts_pending,
                parts,
                ..
            } = &mut *state
            else {
                return;
            };
            match outcome {
                Outcome::Whole(outcome) => parts.push(Part {
                    first_delta,
                    outcome,
                }),
                Outcome::Parts(inner) => parts.extend(inner.iter().map(|part| Part {
                    first_delta: first_delta + part.first_delta,
                    outcome: part.outcome.clone(),
                })),
            }
            *parts_pending = parts_pending.saturating_sub(1);
            if *parts_pending > 0 {
                return;
            }
            let mut parts = std::mem::take(parts);
            parts.sort_by_key(|part| part.first_delta);
            parts
        };
        self.finish(Outcome::Parts(done.into()));
    }

    /// The outcome once there is one; else registers the task to wake (in `slot`, reused
    /// across polls).
    fn poll_outcome(&self, cx: &mut Context<'_>, slot: &mut Option<usize>) -> Poll<Outcome> {
        let mut state = self.lock();
        match &mut *state {
            State::Done(outcome) => Poll::Ready(outcome.clone()),
            State::Pending { wakers, .. } => {
                match slot.and_then(|at| wakers.get_mut(at)) {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    Some(waker) => waker.clone_from(cx.waker()),
                    None => {
                        *slot = Some(wakers.len());
                        wakers.push(cx.waker().clone());
                    }
                }
                Poll::Pending
            }
        }
    }
}

/// The future of one record sent: resolves once the broker acknowledged the record's batch
/// ([`Delivered`]) or the batch failed (the [`Error`] says why). Every `Delivery` resolves:
/// on close, on a fatal error and when the producer is dropped too.
#[derive(Debug)]
#[must_use = "a Delivery says whether the record was written"]
pub struct Delivery {
    batch: Arc<BatchCompletion>,
    offset_delta: i32,
    timestamp: i64,
    slot: Option<usize>,
}

impl Delivery {
    pub(crate) fn new(batch: Arc<BatchCompletion>, offset_delta: i32, timestamp: i64) -> Self {
        Delivery {
            batch,
            offset_delta,
            timestamp,
            slot: None,
        }
    }
}

impl Future for Delivery {
    type Output = Result<Delivered, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let (ack, first_delta) = match this.batch.poll_outcome(cx, &mut this.slot) {
            Poll::Ready(Outcome::Whole(ack)) => (ack?, 0),
            Poll::Ready(Outcome::Parts(parts)) => {
                // Parts start at delta 0 and ascend: the last one starting at or before ours.
                let part = (parts.iter().rev())
                    .find(|part| part.first_delta <= this.offset_delta)
                    .ok_or_else(|| Error::Stopped {
                        reason: "a split batch lost the part of the record".to_owned(),
                    })?;
                (part.outcome.clone()?, part.first_delta)
            }
            Poll::Pending => return Poll::Pending,
        };
        let offset = if ack.base_offset < 0 {
            -1
        } else {
            ack.base_offset + i64::from(this.offset_delta - first_delta)
        };
        Poll::Ready(Ok(Delivered {
            topic: this.batch.topic.clone(),
            partition: this.batch.partition,
            offset,
            timestamp: ack.log_append_time.unwrap_or(this.timestamp),
        }))
    }
}

/// Waits for a batch's completion, whatever its outcome (for `flush`).
pub(crate) struct Settled {
    batch: Arc<BatchCompletion>,
    slot: Option<usize>,
}

impl Settled {
    pub(crate) fn new(batch: Arc<BatchCompletion>) -> Self {
        Settled { batch, slot: None }
    }
}

impl Future for Settled {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        this.batch.poll_outcome(cx, &mut this.slot).map(|_| ())
    }
}

/// A record the broker acknowledged: where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivered {
    topic: Arc<str>,
    partition: i32,
    offset: i64,
    timestamp: i64,
}

impl Delivered {
    /// The topic.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The partition.
    pub fn partition(&self) -> i32 {
        self.partition
    }

    /// The record's offset; -1 when the producer cannot know it: with `acks=0` (the broker
    /// does not answer), and for a retried batch the broker reported as a duplicate it no
    /// longer has the offset of (DUPLICATE_SEQUENCE_NUMBER). See [`has_offset`](Self::has_offset).
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// Whether [`offset`](Self::offset) is known.
    pub fn has_offset(&self) -> bool {
        self.offset >= 0
    }

    /// The record's timestamp: the broker's append time when the topic keeps LogAppendTime,
    /// else the one it was sent with.
    pub fn timestamp(&self) -> i64 {
        self.timestamp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(base_offset: i64) -> Result<BatchAck, Error> {
        Ok(BatchAck {
            base_offset,
            log_append_time: None,
        })
    }

    fn poll_settled(future: &mut Pin<&mut Settled>) -> Poll<()> {
        let mut cx = Context::from_waker(Waker::noop());
        future.as_mut().poll(&mut cx)
    }

    #[tokio::test]
    async fn a_split_batch_resolves_each_record_with_its_parts_outcome() {
        let batch = BatchCompletion::new(Arc::from("t"), 0);
        let deliveries: Vec<Delivery> =
            (0..6).map(|d| Delivery::new(batch.clone(), d, 0)).collect();
        // Records 0-2 and 3-5; the second part split again into 3-4 and 5.
        let parts = batch.split(&[0, 3]);
        let inner = parts[1].split(&[0, 2]);
        parts[0].complete(ack(100));
        inner[1].complete(Err(Error::Stopped {
            reason: "refused".to_owned(),
        }));
        let mut settled = std::pin::pin!(Settled::new(batch.clone()));
        assert!(
            poll_settled(&mut settled).is_pending(),
            "a part is still out"
        );
        inner[0].complete(ack(200));
        assert!(poll_settled(&mut settled).is_ready(), "every part is in");
        let mut offsets = Vec::new();
        for delivery in deliveries {
            offsets.push(delivery.await.map(|d| d.offset()).ok());
        }
        assert_eq!(
            offsets,
            [Some(100), Some(101), Some(102), Some(200), Some(201), None]
        );
    }
}
