//! `krec backup`: keeps topics in Kafka's own segment format in a directory or an object
//! store, with a manifest, incrementally (krec-copy's pipeline from a cluster to a backup
//! location); this module only reads the flags and reports.

mod args;
mod run;

pub use args::BackupArgs;
pub use run::run;
