//! The counting allocator: [`CountingAllocator`] forwards every call to [`System`] and counts
//! it, per thread always and process-wide on request, so a test can prove a path allocates
//! nothing (or little) and a bench can report allocations per operation.
//!
//! Which count to read, with `static ALLOCATOR: CountingAllocator` installed:
//!
//! - allocations this thread makes in a call: `ALLOCATOR.during(|| f()).1.allocations`;
//! - bytes this thread requests across an `.await` (on a current-thread runtime):
//!   `(ALLOCATOR.thread() - before).bytes`, with `before = ALLOCATOR.thread()`;
//! - live bytes of the whole process: build it with [`CountingAllocator::with_totals`], then
//!   `(ALLOCATOR.totals() - before).live`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ops::Sub;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};

/// Heap activity counted by a [`CountingAllocator`]: a snapshot, or the difference of two.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Successful `alloc`, `alloc_zeroed` and `realloc` calls.
    pub allocations: u64,
    /// Bytes those calls returned; a `realloc` counts its whole new size.
    pub bytes: u64,
    /// Bytes allocated minus bytes freed. Per thread this counts what the thread freed, even
    /// if another thread allocated it, so it can be negative.
    pub live: i64,
}

impl Counts {
    const ZERO: Counts = Counts {
        allocations: 0,
        bytes: 0,
        live: 0,
    };
}

impl Sub for Counts {
    type Output = Counts;

    /// What happened between two snapshots: `after - before`.
    fn sub(self, before: Counts) -> Counts {
        Counts {
            allocations: self.allocations.wrapping_sub(before.allocations),
            bytes: self.bytes.wrapping_sub(before.bytes),
            live: self.live.wrapping_sub(before.live),
        }
    }
}

thread_local! {
    // Const-initialised, and `Counts` has no destructor: touching it never allocates, never
    // registers a destructor, and works until the thread's very end.
    static THREAD: Cell<Counts> = const { Cell::new(Counts::ZERO) };
}

/// Set by the first counted call: a `CountingAllocator` is the global allocator.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Process-wide counts, for code that allocates on threads the test does not run on.
#[derive(Debug)]
struct Totals {
    allocations: AtomicU64,
    bytes: AtomicU64,
    live: AtomicI64,
}

/// A global allocator that counts what it does. Install it in a test, bench or example:
///
/// ```
/// use krec_testkit::CountingAllocator;
///
/// #[global_allocator]
/// static ALLOCATOR: CountingAllocator = CountingAllocator::new();
///
/// fn main() {
///     let input = vec![1u64, 2, 3];
///     let (sum, counts) = ALLOCATOR.during(|| input.iter().sum::<u64>());
///     assert_eq!((sum, counts.allocations), (6, 0));
/// }
/// ```
///
/// Built with [`new`](Self::new) it counts per thread only: no shared atomics on the
/// allocation path, so a bench's timings move the least. Built with
/// [`with_totals`](Self::with_totals) it also keeps process-wide [`totals`](Self::totals).
#[derive(Debug)]
pub struct CountingAllocator {
    totals: Option<Totals>,
}

impl CountingAllocator {
    /// Counts per thread: read with [`thread`](Self::thread) or [`during`](Self::during).
    pub const fn new() -> Self {
        CountingAllocator { totals: None }
    }

    /// Counts per thread and process-wide (three relaxed atomic adds per call).
    pub const fn with_totals() -> Self {
        CountingAllocator {
            totals: Some(Totals {
                allocations: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
                live: AtomicI64::new(0),
            }),
        }
    }

    /// What this thread has done since it started. Subtract two snapshots for a span.
    ///
    /// Panics if no `CountingAllocator` is the `#[global_allocator]`: every count would stay
    /// zero and an "allocates nothing" test would pass for nothing.
    pub fn thread(&self) -> Counts {
        assert_installed();
        THREAD.with(Cell::get)
    }

    /// What every thread has done since the program started.
    ///
    /// Panics unless built with [`with_totals`](Self::with_totals), or not installed.
    pub fn totals(&self) -> Counts {
        assert_installed();
        let totals = self.totals.as_ref().expect(
            "process-wide counts need `CountingAllocator::with_totals()` as the global allocator",
        );
        Counts {
            allocations: totals.allocations.load(Relaxed),
            bytes: totals.bytes.load(Relaxed),
            live: totals.live.load(Relaxed),
        }
    }

    /// Runs `f`; returns its result and what this thread allocated meanwhile.
    pub fn during<R>(&self, f: impl FnOnce() -> R) -> (R, Counts) {
        let before = self.thread();
        let result = f();
        (result, self.thread() - before)
    }

    /// Counts one call. Never allocates nor panics: it runs inside the allocator.
    fn record(&self, allocations: u64, bytes: usize, live: isize) {
        let (bytes, live) = (bytes as u64, live as i64);
        // Fails only after the thread's storage is gone; that call then goes uncounted.
        let _ = THREAD.try_with(|cell| {
            let counts = cell.get();
            cell.set(Counts {
                allocations: counts.allocations.wrapping_add(allocations),
                bytes: counts.bytes.wrapping_add(bytes),
                live: counts.live.wrapping_add(live),
            });
        });
        if let Some(totals) = &self.totals {
            totals.allocations.fetch_add(allocations, Relaxed);
            totals.bytes.fetch_add(bytes, Relaxed);
            totals.live.fetch_add(live, Relaxed);
        }
        // A load first: a store on every call would bounce the flag's cache line between cores.
        if !INSTALLED.load(Relaxed) {
            INSTALLED.store(true, Relaxed);
        }
    }
}

impl Default for CountingAllocator {
    fn default() -> Self {
        Self::new()
    }
}

fn assert_installed() {
    assert!(
        INSTALLED.load(Relaxed),
        "no CountingAllocator is the #[global_allocator]: nothing is counted"
    );
}

// SAFETY: every method passes its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract, and returns exactly what `System` returned, so callers get the
// contract they asked for. The counting around each call cannot break it: `record` touches
// only a const-initialised thread-local `Cell` without destructor (no allocation, no
// destructor registration, `try_with` instead of a panic) and atomics, and its arithmetic
// wraps, so it never re-enters the allocator and never unwinds out of it (which would be
// undefined behaviour). It reads only sizes, never the memory behind a pointer.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: our caller upholds `alloc`'s contract (a layout of non-zero size).
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            self.record(1, layout.size(), layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            self.record(1, layout.size(), layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        self.record(0, 0, -(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` with `layout`; our caller upholds the rest.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            // Layout sizes fit in isize, so the difference does too.
            self.record(1, new_size, new_size as isize - layout.size() as isize);
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[global_allocator]
    static ALLOCATOR: CountingAllocator = CountingAllocator::with_totals();

    #[test]
    fn counts_allocations_bytes_and_live_bytes_of_this_thread() {
        let (vec, counts) = ALLOCATOR.during(|| {
            let mut vec: Vec<u8> = Vec::with_capacity(100);
            vec.reserve_exact(200);
            std::hint::black_box(vec)
        });
        assert_eq!(counts.allocations, 2, "an alloc and a realloc");
        assert_eq!(counts.bytes, 100 + 200);
        assert_eq!(counts.live, 200);
        let (_, counts) = ALLOCATOR.during(|| drop(vec));
        assert_eq!(
            counts,
            Counts {
                allocations: 0,
                bytes: 0,
                live: -200
            }
        );
    }

    #[test]
    fn totals_see_other_threads() {
        let before = ALLOCATOR.totals();
        let (kept, thread) = ALLOCATOR.during(|| {
            std::thread::spawn(|| std::hint::black_box(vec![0u8; 1 << 20]))
                .join()
                .unwrap()
        });
        let totals = ALLOCATOR.totals() - before;
        assert!(totals.bytes >= 1 << 20, "{totals:?}");
        assert!(thread.bytes < 1 << 20, "{thread:?}");
        drop(kept);
    }
}
