//! Response frame buffers reused across requests on one connection.
//!
//! A fetch response is read into one buffer and handed out as `Bytes` slices (the partitions'
//! records), which live on in decode threads after the next fetch has been sent. A fresh
//! allocation per response costs page faults on every page it touches (a large allocation
//! is mapped fresh by the allocator and unmapped again when freed). [`FrameBuffers`] keeps a handle
//! on each buffer it lent out; once every slice of a frame has been dropped, the handle is
//! the buffer's only owner and the next frame is read into the same, already mapped, memory.
//!
//! Bounded: at most [`FrameBuffers::MAX_BUFFERS`] buffers whose capacities add up to at most
//! the configured byte limit, counting buffers still in use. A frame that does not fit gets
//! an ordinary allocation that is freed with its last slice.

use bytes::BytesMut;

/// One buffer it owns: a zero-length handle sharing the allocation of the frame last
/// read into it.
#[derive(Debug)]
struct Pooled {
    handle: BytesMut,
    capacity: usize,
}

/// A buffer to read one frame into, and whether it is kept for reuse afterwards.
#[derive(Debug)]
pub(crate) struct FrameBuffer {
    /// Empty, with capacity for the whole frame.
    pub(crate) buffer: BytesMut,
    /// Its record of this buffer's capacity when it is pooled.
    pooled_capacity: Option<usize>,
}

/// The frame buffers of one connection (see the module docs).
#[derive(Debug)]
pub(crate) struct FrameBuffers {
    buffers: Vec<Pooled>,
    max_bytes: usize,
}

impl FrameBuffers {
    /// Buffers kept per connection: enough for the frames a fetch pipeline holds while the
    /// decode threads catch up; deeper back-pressure falls back to plain allocations.
    pub(crate) const MAX_BUFFERS: usize = 4;

    /// Frame buffers that, in use or idle, hold at most `max_bytes` together.
    pub(crate) fn new(max_bytes: usize) -> Self {
        Self {
            buffers: Vec::new(),
            max_bytes,
        }
    }

    /// The largest frame of which `frames` at once are pooled by a pool of `max_bytes`
    /// (0 when that many can never be).
    pub(crate) fn largest_pooled_frame(max_bytes: usize, frames: usize) -> usize {
        if frames == 0 || frames > Self::MAX_BUFFERS {
            return 0;
        }
        // `take` gives each pooled buffer an eighth of headroom.
        max_bytes / frames / 9 * 8
    }

    /// Bytes of capacity owned (buffers in use included).
    pub(crate) fn pooled_bytes(&self) -> usize {
        self.buffers.iter().map(|b| b.capacity).sum()
    }

    /// Buffers owned (in use included).
    #[cfg(test)]
    pub(crate) fn pooled_buffers(&self) -> usize {
        self.buffers.len()
    }

    /// An empty buffer with room for `size` bytes: a pooled one nobody references any more
    /// when there is one, else a new allocation (pooled when it fits the bounds).
    pub(crate) fn take(&mut self, size: usize) -> FrameBuffer {
        // `try_reclaim` succeeds only when the handle is the allocation's sole owner, i.e.
        // every slice of the frame last read into it has been dropped.
        if let Some(index) = self
            .buffers
            .iter_mut()
            .position(|b| b.capacity >= size && b.handle.try_reclaim(size))
        {
            let Pooled { handle, capacity } = self.buffers.swap_remove(index);
            tracing::trace!(size, capacity, "frame buffer reused");
            return FrameBuffer {
                buffer: handle,
                pooled_capacity: Some(capacity),
            };
        }
        // A free buffer that is too small makes room for a bigger one.
        if let Some(index) = self
            .buffers
            .iter_mut()
            .position(|b| b.capacity < size && b.handle.try_reclaim(b.capacity))
        {
            self.buffers.swap_remove(index);
        }
        // Headroom so that slightly larger frames later still fit; pages past what a frame
        // fills are never touched, so they cost address space, not memory.
        let capacity = size.saturating_add(size / 8);
        let fits = self.buffers.len() < Self::MAX_BUFFERS
            && self.pooled_bytes().saturating_add(capacity) <= self.max_bytes;
        tracing::trace!(
            size,
            pooled = fits,
            in_pool = self.buffers.len(),
            "frame buffer allocated"
        );
        if fits {
            FrameBuffer {
                buffer: BytesMut::with_capacity(capacity),
                pooled_capacity: Some(capacity),
            }
        } else {
            FrameBuffer {
                buffer: BytesMut::with_capacity(size),
                pooled_capacity: None,
            }
        }
    }

    /// Takes the frame read into `frame` out as its own `BytesMut`; a pooled buffer keeps a
    /// handle on the allocation so that the next [`FrameBuffers::take`] can reuse it.
    pub(crate) fn finish(&mut self, frame: FrameBuffer) -> BytesMut {
        let FrameBuffer {
            mut buffer,
            pooled_capacity,
        } = frame;
        let filled = buffer.split();
        if let Some(capacity) = pooled_capacity {
            self.buffers.push(Pooled {
                handle: buffer,
                capacity,
            });
        }
        filled
    }
}

#[cfg(test)]
mod tests {
    use super::FrameBuffers;
    use bytes::BufMut;

    fn read_frame(pool: &mut FrameBuffers, size: usize, fill: u8) -> bytes::Bytes {
        let mut frame = pool.take(size);
        assert!(frame.buffer.is_empty());
        assert!(frame.buffer.capacity() >= size);
        frame.buffer.put_bytes(fill, size);
        pool.finish(frame).freeze()
    }

    #[test]
    fn a_buffer_is_reused_once_its_frame_is_dropped() {
        let mut pool = FrameBuffers::new(64 << 20);
        let first = read_frame(&mut pool, 1 << 20, 1);
        let first_address = first.as_ptr();
        let records = first.slice(100..200);
        drop(first);
        // A slice still alive: the buffer is in use, so a second one is allocated.
        let second = read_frame(&mut pool, 1 << 20, 2);
        assert_ne!(second.as_ptr(), first_address);
        assert_eq!(pool.pooled_buffers(), 2);
        assert!(
            records.iter().all(|&b| b == 1),
            "live data is never overwritten"
        );
        drop(records);
        let third = read_frame(&mut pool, 1 << 20, 3);
        assert_eq!(third.as_ptr(), first_address, "reused the freed buffer");
        assert!(third.iter().all(|&b| b == 3));
        assert!(second.iter().all(|&b| b == 2));
        assert_eq!(pool.pooled_buffers(), 2);
    }

    #[test]
    fn the_pool_stays_within_its_bounds() {
        let mut pool = FrameBuffers::new(3 << 20);
        let mut held = Vec::new();
        for round in 0..10u8 {
            held.push(read_frame(&mut pool, 1 << 20, round));
            assert!(pool.pooled_bytes() <= 3 << 20, "{}", pool.pooled_bytes());
            assert!(pool.pooled_buffers() <= FrameBuffers::MAX_BUFFERS);
        }
        // Frames beyond the bounds were plain allocations; every frame kept its own bytes.
        for (round, frame) in held.iter().enumerate() {
            assert!(frame.iter().all(|&b| b == round as u8), "frame {round}");
        }
    }

    #[test]
    fn frames_of_the_largest_pooled_size_are_all_pooled_at_once() {
        let max = 64 << 20;
        for frames in 1..=FrameBuffers::MAX_BUFFERS {
            let size = FrameBuffers::largest_pooled_frame(max, frames);
            let mut pool = FrameBuffers::new(max);
            let held: Vec<_> = (0..frames)
                .map(|i| read_frame(&mut pool, size, i as u8))
                .collect();
            assert_eq!(
                pool.pooled_buffers(),
                frames,
                "{frames} frames of {size} bytes"
            );
            drop(held);
        }
        assert_eq!(
            FrameBuffers::largest_pooled_frame(max, FrameBuffers::MAX_BUFFERS + 1),
            0
        );
    }

    #[test]
    fn a_free_buffer_too_small_is_replaced() {
        let mut pool = FrameBuffers::new(64 << 20);
        drop(read_frame(&mut pool, 1000, 1));
        let big = read_frame(&mut pool, 1 << 20, 2);
        assert_eq!(pool.pooled_buffers(), 1, "the small one made room");
        assert!(pool.pooled_bytes() >= 1 << 20);
        drop(big);
        let small = read_frame(&mut pool, 500, 3);
        assert_eq!(&small[..], &[3u8; 500][..]);
        assert_eq!(pool.pooled_buffers(), 1);
    }

    #[test]
    fn zero_max_bytes_pools_nothing() {
        let mut pool = FrameBuffers::new(0);
        let frame = read_frame(&mut pool, 4096, 7);
        assert_eq!(pool.pooled_buffers(), 0);
        assert_eq!(&frame[..], &[7u8; 4096][..]);
    }
}
