#!/usr/bin/env python3
"""Interleaved A/B timing of shell commands, by the CPU time of each process.

    python3 scripts/ab.py ROUNDS NAME=COMMAND [NAME=COMMAND ...]

Runs every command once per round, in the order given, ROUNDS rounds, each with its standard
output sent to /dev/null, and prints for each the median CPU milliseconds (user + sys of the
process and its children, from wait4(2), in microseconds) with the minimum and maximum, and the
median wall milliseconds. Interleaving makes load from other processes on a shared machine hit
every command alike; the BENCHMARKS.md tables marked "ab.py" were measured with it.

Example:
    python3 scripts/ab.py 11 \
        "t1=target/release/krec decode --threads 1 -f json seg.log" \
        "t2=target/release/krec decode --threads 2 -f json seg.log"

A command that exits non-zero stops the script: a failing run has no meaningful time.
"""

import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import timer  # noqa: E402  (scripts/lib/timer.py: the wait4 timer of every benchmark script)


def run_once(command):
    """Runs `command` under sh with stdout to /dev/null; returns (CPU ms, wall ms)."""
    usage = timer.run(["sh", "-c", "exec " + command], stdout=os.devnull)
    if usage.exit_code != 0:
        sys.exit(f"ab.py: exit code {usage.exit_code} from: {command}")
    return usage.cpu_s * 1000, usage.wall_s * 1000


def main():
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    commands = []
    for argument in sys.argv[2:]:
        name, sep, command = argument.partition("=")
        if not sep or not command:
            sys.exit(f"ab.py: expected NAME=COMMAND, got {argument!r}")
        commands.append((name, command))
    results = {name: [] for name, _ in commands}
    for _ in range(rounds):
        for name, command in commands:
            results[name].append(run_once(command))
    for name, runs in results.items():
        cpu = sorted(run[0] for run in runs)
        wall = sorted(run[1] for run in runs)
        print(
            f"{name:20s} cpu ms median {statistics.median(cpu):7.1f} "
            f"(min {cpu[0]:6.1f} max {cpu[-1]:6.1f})  "
            f"wall ms median {statistics.median(wall):7.1f}"
        )


if __name__ == "__main__":
    main()
