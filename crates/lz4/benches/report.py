#!/usr/bin/env python3
"""Runs the krec-lz4 frame_decode bench and prints the BENCHMARKS.md tables.

Usage (from anywhere in the repository):
    python3 crates/lz4/benches/report.py            # run the bench, then print
    python3 crates/lz4/benches/report.py --no-run   # print from the last run's results

Times are criterion's median per frame; GB/s is decoded bytes per second (10^9) at that median.
The ratio columns come from the bench's paired measurement (the two decoders alternate in short
batches, median of 301 rounds), which is steadier on a shared machine than dividing two medians
taken minutes apart.
"""
import json
import os
import subprocess
import sys

DECODERS = ["krec_pooled", "krec_fresh", "lz4_flex_frame", "lz4_c_frame", "raw_block"]
SIZES = {"100B": 100, "1KiB": 1024, "64KiB": 65536, "1MiB": 1 << 20}


def target_dir(root):
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=root, check=True, capture_output=True, text=True,
    )
    return json.loads(meta.stdout)["target_directory"]


def median_ns(criterion_dir, case, decoder):
    group = "lz4_frame_" + case.replace("/", "_")
    path = os.path.join(criterion_dir, group, decoder, "new", "estimates.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]


def fmt_ns(ns):
    if ns is None:
        return "–"
    if ns >= 100_000:
        return f"{ns / 1000:,.0f} µs"
    if ns >= 10_000:
        return f"{ns / 1000:.1f} µs"
    return f"{ns:,.0f} ns"


def main():
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    target = target_dir(root)
    allocs_path = os.path.join(target, "krec-lz4-bench-allocations.tsv")
    ratios_path = os.path.join(target, "krec-lz4-bench-ratios.tsv")
    if "--no-run" not in sys.argv:
        for path in (allocs_path, ratios_path):
            if os.path.exists(path):
                os.remove(path)
        env = dict(os.environ, KREC_BENCH_ALLOCS=allocs_path, KREC_BENCH_RATIOS=ratios_path)
        subprocess.run(
            ["cargo", "bench", "-p", "krec-lz4", "--bench", "frame_decode"],
            cwd=root, env=env, check=True,
        )
    allocs = {}
    if os.path.exists(allocs_path):
        with open(allocs_path) as f:
            for line in f:
                case, decoder, per_frame = line.rstrip("\n").split("\t")
                allocs[(case, decoder)] = float(per_frame)
    ratios = {}
    if os.path.exists(ratios_path):
        with open(ratios_path) as f:
            for line in f:
                case, comparison, ratio = line.rstrip("\n").split("\t")
                ratios[(case, comparison)] = float(ratio)
    criterion_dir = os.path.join(target, "criterion")

    for row, title in [("java", "Java-client frames (independent 64 KiB blocks, no checksums)"),
                       ("checksums", "Same frames with block and content checksums")]:
        print(f"\n#### {title}\n")
        print("| frame | krec pooled | GB/s | krec fresh buffer | lz4_flex FrameDecoder | lz4 (C) frame "
              "| raw lz4_flex blocks | C ÷ krec (paired) | lz4_flex ÷ krec (paired) | krec ÷ raw (paired) "
              "| allocs/frame: pooled, fresh, lz4_flex, C |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for kind in ["text", "random"]:
            for size_name, size in SIZES.items():
                case = f"{row}/{kind}/{size_name}"
                t = {d: median_ns(criterion_dir, case, d) for d in DECODERS}
                pooled = t["krec_pooled"]
                if pooled is None:
                    continue
                gbps = size / pooled

                def ratio(comparison):
                    value = ratios.get((case, comparison))
                    return "–" if value is None else f"{value:.2f}x"

                a = [allocs.get((case, d)) for d in DECODERS[:4]]
                a_text = ", ".join("–" if x is None else f"{x:g}" for x in a)
                print(f"| {kind} {size_name} | {fmt_ns(pooled)} | {gbps:.2f} | {fmt_ns(t['krec_fresh'])} "
                      f"| {fmt_ns(t['lz4_flex_frame'])} | {fmt_ns(t['lz4_c_frame'])} | {fmt_ns(t['raw_block'])} "
                      f"| {ratio('lz4_c/krec_pooled')} | {ratio('lz4_flex/krec_pooled')} "
                      f"| {ratio('krec_pooled/raw')} | {a_text} |")


if __name__ == "__main__":
    main()
