//! Finished batches' buffers, kept for the next batches whatever thread drops them.
//!
//! A finished batch leaves its writer with its buffer, and a `PooledBuf` dropped goes back to
//! the pool of the thread that drops it: the sender's, when the broker acknowledges it. When
//! `send` runs on another thread (the CLI reads and sends on its own thread), its writers would
//! start every batch in a new allocation, grown and zeroed page by page. Here the buffer comes
//! back to the producer instead, and the thread that finishes the next batch takes it.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use krec_batch::PooledBuf;

/// Buffers kept at most, as many as a thread's buffer pool keeps; a batch dropped beyond that
/// frees its buffer.
const MAX_KEPT: usize = 8;

/// The producer's spare batch buffers.
#[derive(Debug)]
pub(crate) struct SpareBuffers {
    kept: Mutex<Vec<PooledBuf>>,
    /// Larger buffers are freed: a batch of `batch.size` grows its buffer to twice that at most.
    max_capacity: usize,
}

impl SpareBuffers {
    pub(crate) fn new(batch_size: usize) -> Self {
        SpareBuffers {
            kept: Mutex::new(Vec::new()),
            max_capacity: batch_size.saturating_mul(2),
        }
    }

    /// The finished batch as `Bytes` whose buffer comes back here when its last clone drops.
    pub(crate) fn share(self: &Arc<Self>, batch: PooledBuf) -> Bytes {
        Bytes::from_owner(Returning {
            batch: Some(batch),
            home: self.clone(),
        })
    }

    /// Hands a kept buffer to the calling thread's pool, where the writer finishing a batch
    /// on this thread takes its next buffer from (`BatchWriter::finish_owned`).
    pub(crate) fn lend_to_this_thread(&self) {
        let spare = self.lock().pop();
        drop(spare);
    }

    fn keep(&self, batch: PooledBuf) {
        if batch.capacity() > self.max_capacity {
            return;
        }
        let mut kept = self.lock();
        if kept.len() < MAX_KEPT {
            kept.push(batch);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PooledBuf>> {
        // A Vec of buffers is whole whatever a panicking holder did.
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The owner behind a finished batch's `Bytes`.
struct Returning {
    batch: Option<PooledBuf>,
    home: Arc<SpareBuffers>,
}

impl AsRef<[u8]> for Returning {
    fn as_ref(&self) -> &[u8] {
        self.batch.as_deref().unwrap_or_default()
    }
}

impl Drop for Returning {
    fn drop(&mut self) {
        if let Some(batch) = self.batch.take() {
            self.home.keep(batch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch dropped on another thread comes back to the thread that lends next: the
    /// writer's next buffer is the old one, already as large, not a new allocation.
    #[test]
    fn a_batch_dropped_elsewhere_comes_back_to_the_lending_thread() {
        let spares = Arc::new(SpareBuffers::new(1 << 20));
        let mut batch = PooledBuf::take();
        batch.extend_from_slice(&[7; 4096]);
        let capacity = batch.capacity();
        let bytes = spares.share(batch);
        assert_eq!(&bytes[..], &[7; 4096][..]);
        std::thread::spawn(move || drop(bytes)).join().unwrap();
        spares.lend_to_this_thread();
        let next = PooledBuf::take();
        assert!(next.is_empty());
        assert_eq!(next.capacity(), capacity);
    }
}
