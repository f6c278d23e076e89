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

/// One batch's completion, shared by the futures of all its records.
#[derive(Debug)]
pub(crate) struct BatchCompletion {
    topic: Arc<str>,
    partition: i32,
    state: Mutex<State>,
}

#[derive(Debug)]
enum State {
    Pending(Vec<Waker>),
    Done(Result<BatchAck, Error>),
}

impl BatchCompletion {
    pub(crate) fn new(topic: Arc<str>, partition: i32) -> Arc<Self> {
        Arc::new(BatchCompletion {
            topic,
            partition,
            state: Mutex::new(State::Pending(Vec::new())),
        })
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
        let wakers = {
            let mut state = self.lock();
            match &mut *state {
                State::Done(_) => return,
                State::Pending(wakers) => {
                    let wakers = std::mem::take(wakers);
                    *state = State::Done(outcome);
                    wakers
                }
            }
        };
        for waker in wakers {
            waker.wake();
        }
    }

    /// The outcome once there is one; else registers the task to wake (in `slot`, reused
    /// across polls).
    fn poll_outcome(
        &self,
        cx: &mut Context<'_>,
        slot: &mut Option<usize>,
    ) -> Poll<Result<BatchAck, Error>> {
        let mut state = self.lock();
        match &mut *state {
            State::Done(outcome) => Poll::Ready(outcome.clone()),
            State::Pending(wakers) => {
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
        let ack = match this.batch.poll_outcome(cx, &mut this.slot) {
            Poll::Ready(ack) => ack?,
            Poll::Pending => return Poll::Pending,
        };
        let offset = if ack.base_offset < 0 {
            -1
        } else {
            ack.base_offset + i64::from(this.offset_delta)
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
