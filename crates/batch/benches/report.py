#!/usr/bin/env python3
"""Markdown table for BENCHMARKS.md from a `cargo bench -p krec-batch --bench decode` run.

usage: report.py BENCH_LOG [INTERLEAVED_LOG]
  BENCH_LOG: the bench's stdout (for the ALLOC lines); times come from target/criterion.
  INTERLEAVED_LOG: output of KREC_BENCH_INTERLEAVED= <bench binary> --bench (optional).
"""
import json
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parents[3]
criterion = root / "target" / "criterion"


def mean_ns(group, function):
    path = criterion / group / function / "new" / "estimates.json"
    data = json.loads(path.read_text())
    return data["median"]["point_estimate"]


allocs = {}
sizes = {}
for line in open(sys.argv[1]):
    if line.startswith("ALLOC "):
        _, name, size, krec, kp = line.split()
        allocs[name] = (float(krec), float(kp))
        sizes[name] = int(size)

print("| shape | batch bytes | krec ns/batch | kafka-protocol ns/batch | floor ns/batch | krec Mrec/s | krec GB/s | krec / floor | kafka-protocol / krec | allocs/batch krec | allocs/batch kafka-protocol |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for name in allocs:
    records = int(name.split("x")[0])
    size = 1024 if "x1024b" in name else 100
    k, kp, fl = (mean_ns(name, f) for f in ("krec", "kafka-protocol", "floor"))
    mrec = records / k * 1e3
    # GB/s of record payload handed out (key + value bytes), decompressed.
    payload = records * (size + 12)
    gbs = payload / k
    print(f"| {name} | {sizes[name]} | {k:,.0f} | {kp:,.0f} | {fl:,.0f} | {mrec:.1f} | {gbs:.2f} | {k / fl:.2f} | {kp / k:.1f} | {allocs[name][0]:.0f} | {allocs[name][1]:.0f} |")

if len(sys.argv) > 2:
    print()
    print("| shape | krec ns | kafka-protocol ns | floor ns | krec / floor | kafka-protocol / krec |")
    print("|---|---|---|---|---|---|")
    for line in open(sys.argv[2]):
        if line.startswith("INTERLEAVED "):
            cells = [c.strip() for c in line[len("INTERLEAVED "):].split("|")]
            print("| " + " | ".join(cells) + " |")
