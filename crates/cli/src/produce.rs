//! `krec produce`: records from standard input or files, written to a topic, with kcat's
//! `-P` letters and meanings, or from JSON lines in the shape `krec consume -J` writes.
//!
//! [`args`](ProduceArgs) turns the flags into an input format and a producer configuration
//! (the client properties through the loader `krec consume` uses); [`input`] reads records,
//! one module per format, each record knowing its `FILE:LINE`; [`run`] sends them and says
//! what became of them; [`schema`] encodes JSON keys and values with Schema Registry
//! schemas.

mod args;
pub mod input;
mod run;
pub mod schema;

pub use args::{HeaderArg, ProduceArgs};
pub use input::{Input, InputError, InputFormat, InputRecord, Origin, RecordRef};
pub use run::run;
