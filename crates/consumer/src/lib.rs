//! krec-consumer (work in progress).
