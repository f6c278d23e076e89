//! The faults, each with how long it is held and what krec must show while and after it.

use super::*;

pub(super) fn latency() -> Scenario {
    Scenario {
        name: "latency",
        fault: Fault::Toxics(vec![
            (
                "latency",
                "downstream",
                json!({"latency": 300, "jitter": 250}),
            ),
            ("latency", "upstream", json!({"latency": 50, "jitter": 50})),
        ]),
        hold: Duration::from_secs(4),
        expect_log: None,
        progress_during: true,
        krec_args: &[],
    }
}

/// Small fetches, so a response crosses a slow link well within the request timeout.
const SMALL_FETCHES: &[&str] = &["--partition-max-bytes", "8192"];

pub(super) fn bandwidth() -> Scenario {
    Scenario {
        name: "bandwidth",
        // KB/s, below the producer's pace: krec falls behind and must catch up afterwards.
        fault: Fault::Toxics(vec![("bandwidth", "downstream", json!({"rate": 24}))]),
        hold: Duration::from_secs(5),
        expect_log: None,
        progress_during: true,
        krec_args: SMALL_FETCHES,
    }
}

pub(super) fn slicer() -> Scenario {
    Scenario {
        name: "slicer",
        // Responses in segments of a few bytes, requests too; delay in microseconds.
        fault: Fault::Toxics(vec![
            (
                "slicer",
                "downstream",
                json!({"average_size": 8, "size_variation": 6, "delay": 20}),
            ),
            (
                "slicer",
                "upstream",
                json!({"average_size": 3, "size_variation": 2, "delay": 100}),
            ),
        ]),
        hold: Duration::from_secs(4),
        expect_log: None,
        progress_during: true,
        krec_args: &[],
    }
}

pub(super) fn reset_peer() -> Scenario {
    Scenario {
        name: "reset_peer",
        // The bandwidth limit keeps a response streaming at every moment (krec is behind),
        // so each reset lands in the middle of one.
        fault: Fault::RepeatedResets(vec![("bandwidth", "downstream", json!({"rate": 32}))]),
        hold: Duration::from_secs(6),
        expect_log: Some("reading a response"),
        progress_during: false,
        krec_args: SMALL_FETCHES,
    }
}

pub(super) fn black_hole() -> Scenario {
    Scenario {
        name: "timeout",
        // timeout 0: data stops, nothing closes, until the toxic goes.
        fault: Fault::Toxics(vec![("timeout", "downstream", json!({"timeout": 0}))]),
        hold: Duration::from_secs(5),
        expect_log: Some("no response to"),
        progress_during: false,
        krec_args: &[],
    }
}

pub(super) fn limit_data() -> Scenario {
    Scenario {
        name: "limit_data",
        // Each connection is closed after this many bytes from the broker.
        fault: Fault::Toxics(vec![("limit_data", "downstream", json!({"bytes": 40000}))]),
        hold: Duration::from_secs(5),
        expect_log: Some("reconnecting"),
        progress_during: true,
        krec_args: SMALL_FETCHES,
    }
}

pub(super) fn disabled() -> Scenario {
    Scenario {
        name: "disabled",
        // Longer than the members' 6 s session timeout. Small fetches keep what a member holds
        // ahead of its writers small next to the records produced meanwhile.
        fault: Fault::Disabled,
        hold: Duration::from_secs(9),
        expect_log: Some("reconnecting"),
        progress_during: false,
        krec_args: SMALL_FETCHES,
    }
}

/// The same with the KIP-848 protocol (the suite's broker sets a 6 s session too, and the
/// member is told it with `--session-timeout-ms`).
pub(super) fn disabled_kip848() -> Scenario {
    Scenario {
        name: "disabled-kip848",
        krec_args: &[
            "--partition-max-bytes",
            "8192",
            "--group-protocol",
            "consumer",
        ],
        ..disabled()
    }
}

pub(super) fn frozen() -> Scenario {
    Scenario {
        name: "sigstop",
        fault: Fault::Frozen,
        hold: Duration::from_secs(5),
        expect_log: Some("no response to"),
        progress_during: false,
        krec_args: &[],
    }
}
