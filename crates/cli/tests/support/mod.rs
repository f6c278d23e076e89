//! Helpers shared by the `krec` binary's tests; each test file takes what it needs.
#![allow(dead_code)]

pub mod broker;
pub mod decode;
pub mod faults;
pub mod group;
pub mod metrics;
pub mod process;
pub mod questions;
pub mod secure;
