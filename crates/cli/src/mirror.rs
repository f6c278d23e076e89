//! `krec mirror`: copies topics from one cluster to another as they are, exactly once
//! (krec-copy's pipeline with a cluster at each end); this module only reads the flags and
//! reports.

mod args;
mod metrics;
mod run;

pub use args::MirrorArgs;
pub use run::run;
