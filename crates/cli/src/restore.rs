//! `krec restore`: writes a backup's topics back into a cluster, exactly once (krec-copy's
//! pipeline from a backup to a cluster); this module only reads the flags and reports.

mod args;
mod run;

pub use args::RestoreArgs;
pub use run::run;
