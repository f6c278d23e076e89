//! What a running `krec` process uses, as Linux reports it.

/// Peak resident memory of a running process, in bytes (Linux's `VmHWM`).
#[cfg(target_os = "linux")]
pub fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .expect("VmHWM line");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("VmHWM in kB");
    kib * 1024
}
