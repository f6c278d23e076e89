//! `krec decode` and the output formats on segment files: golden files from real producers,
//! hostile and corrupt input, streaming, threads, and allocation counts. Needs no broker.
//!
//! One test binary with a module per subject: every test binary links the whole workspace.

#[path = "../support/mod.rs"]
mod support;

mod control;
mod corrupt;
mod errors;
mod fixtures;
mod json_spelling;
mod no_alloc;
mod sample_segment;
mod streaming;
mod threads;
