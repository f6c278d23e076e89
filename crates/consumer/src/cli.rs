//! The `krec` subcommands.

pub mod consume;
pub mod decode;
