//! Tests that need a broker to themselves: they stop, restart or freeze it, or read its
//! broker-wide counters. test.sh runs every test whose path holds `solo::` after the others,
//! one at a time. Two sit with the tests of their subject: the frozen-broker faults
//! (`faults::solo`) and the fetch-session cache count (`fetch_sessions::solo`).

mod corrupt;
mod group_restart;
mod restart;
