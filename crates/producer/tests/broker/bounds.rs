//! The producer's bounds: an unknown topic, a record too large, no room in `buffer.memory`.
