//! Bytes requested from the allocator on this thread, for the allocation bound of the
//! response targets (on top of `-malloc_limit_mb`, which only sees single allocations).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

pub struct Counting;

thread_local! {
    // Const-initialised so reading it never allocates.
    static BYTES: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards every call unchanged to the system allocator; counting touches only a
// thread-local Cell, which neither allocates nor reenters the allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        BYTES.with(|c| c.set(c.get().saturating_add(layout.size())));
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: ptr came from System.alloc with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        BYTES.with(|c| c.set(c.get().saturating_add(new_size)));
        // SAFETY: ptr came from System with this layout.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Bytes requested so far on this thread.
pub fn allocated() -> usize {
    BYTES.with(Cell::get)
}

/// What decoding `input_len` bytes may request: each element a body announces is there on
/// the wire, so memory grows with the input by at most a structure's size per wire byte.
pub fn bound(input_len: usize) -> usize {
    64 * input_len + (16 << 10)
}
