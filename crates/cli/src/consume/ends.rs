//! Where reading ends: the end of a bounded `-o` range. (`-e` is the consumer's own
//! `stop_at_end`.)

use std::sync::Arc;
use std::time::Duration;

use krec_consumer::{Consumer, PartitionChunk};

use crate::range::{self, RangeEnds, RangeWatch};
use crate::time::now_ms;
use crate::Error;

/// A bounded range: where each partition ends, and the partitions not there yet (none
/// without an end).
#[derive(Debug)]
pub(super) struct Ranges {
    /// Where each partition's range ends; the decode threads read it too.
    pub(super) ends: Arc<RangeEnds>,
    watch: Option<RangeWatch>,
}

impl Ranges {
    pub(super) fn new(ends: Arc<RangeEnds>, watch: Option<RangeWatch>) -> Self {
        Self { ends, watch }
    }

    /// The partition of `chunk`, if the chunk reaches the end of its range. The partition's
    /// name is copied only when this chunk ends its range.
    pub(super) fn passed_by(&self, chunk: &PartitionChunk) -> Option<(String, i32)> {
        let passed = self.watch.is_some()
            && self
                .ends
                .get(chunk.topic(), chunk.partition())
                .and_then(|end| end.offset)
                .is_some_and(|end| chunk.next_offset() >= end);
        passed.then(|| (chunk.topic().to_owned(), chunk.partition()))
    }

    /// The partition has passed its end: it is no longer fetched.
    pub(super) fn close(&mut self, consumer: &mut Consumer, topic: &str, partition: i32) {
        if let Some(watch) = self.watch.as_mut() {
            watch.close(consumer, topic, partition);
        }
    }

    /// Every partition has passed its end (never without an end).
    pub(super) fn is_done(&self) -> bool {
        self.watch.as_ref().is_some_and(RangeWatch::is_done)
    }

    /// The earliest end time not settled yet.
    pub(super) fn settle_at(&self) -> Option<i64> {
        range::next_unsettled(&self.ends)
    }

    /// Fixes the ends whose time has passed, and closes the partitions already past them.
    pub(super) async fn settle(&mut self, consumer: &mut Consumer) -> Result<(), Error> {
        range::settle_passed(consumer, &self.ends).await?;
        if let Some(watch) = self.watch.as_mut() {
            watch.close_reached(consumer, &self.ends);
        }
        Ok(())
    }
}

/// Sleeps until the wall clock reaches `ms` since the epoch, plus a second for records
/// stamped just before it to arrive (forever when there is none).
pub(super) async fn wait_until_ms(ms: Option<i64>) {
    let Some(ms) = ms else {
        return std::future::pending().await;
    };
    let wait = ms.saturating_sub(now_ms()).max(0) as u64 + 1_000;
    tokio::time::sleep(Duration::from_millis(wait)).await;
}
