#!/usr/bin/env python3
"""Tables and chart of scripts/bench-consume.sh results.

    bench_chart.py RESULTS.tsv SCALING.tsv [--chart OUT.png]

Prints Markdown tables (medians over the runs, ratios against krec) to stdout and, with
--chart, draws records per CPU-second for each consumer and topic (needs matplotlib).
Standard library only apart from the chart.
"""

import argparse
import csv
import math
import statistics
import sys
from collections import defaultdict

# The consumer krec is compared with, for each krec output format.
PEERS = {
    "krec-raw": ["kcat-raw", "rdkafka-raw", "java"],
    "krec-json": ["kcat-json"],
}
LABELS = {
    "krec-raw": "krec consume -f raw",
    "krec-json": "krec consume -J",
    "kcat-raw": "kcat -f '%s\\n'",
    "kcat-json": "kcat -J",
    "rdkafka-raw": "rdkafka crate (BaseConsumer)",
    "java": "Java ConsumerPerformance (no output)",
}


def read_tsv(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def medians(rows, key_fields):
    """Median wall, CPU (user + sys) and peak RSS per key."""
    groups = defaultdict(list)
    for row in rows:
        groups[tuple(row[f] for f in key_fields)].append(row)
    result = {}
    for key, runs in groups.items():
        records = int(runs[0]["records"])
        wall = statistics.median(float(r["wall_s"]) for r in runs)
        cpu = statistics.median(float(r["user_s"]) + float(r["sys_s"]) for r in runs)
        rss = statistics.median(int(r["max_rss_kb"]) for r in runs) / 1024
        result[key] = {
            "records": records,
            "runs": len(runs),
            "wall": wall,
            "cpu": cpu,
            "rss_mib": rss,
            "records_per_s": records / wall if wall > 0 else float("inf"),
            "cpu_per_million": cpu / records * 1e6,
            "records_per_cpu_s": records / cpu if cpu > 0 else float("inf"),
        }
    return result


def consumer_table(stats, topics, consumers):
    lines = [
        "| topic | consumer | records | wall s | records/s | CPU s per M records | peak RSS MiB | runs |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for topic in topics:
        for consumer in consumers:
            s = stats.get((topic, consumer))
            if s is None:
                continue
            lines.append(
                f"| {topic} | {LABELS.get(consumer, consumer)} | {s['records']} | {s['wall']:.2f} | "
                f"{s['records_per_s']:,.0f} | {s['cpu_per_million']:.2f} | {s['rss_mib']:.0f} | {s['runs']} |"
            )
    return lines


def ratio(numerator, denominator):
    # Tiny (--quick) runs can measure 0.00 s of CPU: no ratio then.
    if denominator == 0 or denominator == float("inf"):
        return "n/a"
    return f"{numerator / denominator:.2f}"


def ratio_table(stats, topics):
    lines = [
        "| topic | krec vs | CPU per record: krec / peer | records/s: krec / peer |",
        "|---|---|---:|---:|",
    ]
    for topic in topics:
        for krec, peers in PEERS.items():
            mine = stats.get((topic, krec))
            if mine is None:
                continue
            for peer in peers:
                theirs = stats.get((topic, peer))
                if theirs is None:
                    continue
                cpu_ratio = ratio(mine["cpu_per_million"], theirs["cpu_per_million"])
                speed_ratio = ratio(mine["records_per_s"], theirs["records_per_s"])
                lines.append(f"| {topic} | {LABELS[peer]} ({LABELS[krec]}) | {cpu_ratio} | {speed_ratio} |")
    return lines


def scaling_table(rows):
    stats = medians(rows, ["workload", "threads"])
    workloads = sorted({key[0] for key in stats})
    lines = [
        "| workload | records | 1 thread: wall s / CPU s | 2 threads: wall s / CPU s | speed-up (wall 1 / wall 2) | peak RSS MiB (1 / 2) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for workload in workloads:
        one, two = stats.get((workload, "1")), stats.get((workload, "2"))
        if one is None or two is None:
            continue
        lines.append(
            f"| {workload} | {one['records']} | {one['wall']:.2f} / {one['cpu']:.2f} | "
            f"{two['wall']:.2f} / {two['cpu']:.2f} | {ratio(one['wall'], two['wall'])} | "
            f"{one['rss_mib']:.0f} / {two['rss_mib']:.0f} |"
        )
    return lines


def draw_chart(stats, topics, consumers, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 0.8 / max(1, len(consumers))
    figure, axes = plt.subplots(figsize=(11, 5.5))
    for i, consumer in enumerate(consumers):
        values = [stats.get((t, consumer), {}).get("records_per_cpu_s", 0) / 1e6 for t in topics]
        # A --quick run can measure no CPU at all: draw nothing rather than infinity.
        values = [v if math.isfinite(v) else 0 for v in values]
        positions = [t + (i - (len(consumers) - 1) / 2) * width for t in range(len(topics))]
        bars = axes.bar(positions, values, width, label=LABELS.get(consumer, consumer))
        axes.bar_label(bars, fmt="%.2f", fontsize=7, padding=2)
    axes.set_xticks(range(len(topics)))
    axes.set_xticklabels([t.split("-", 2)[-1] for t in topics])
    axes.set_xlabel(
        "topic (values of 100-300 B by codec; 1k = 1 KiB values, uncompressed; "
        "single = one record per batch)"
    )
    axes.set_ylabel("million records per CPU-second (higher is better)")
    records = next(iter(stats.values()))["records"] if stats else 0
    axes.set_title(f"Consuming a topic end to end: records per CPU-second (user + sys), median; {records:,} records")
    axes.legend(fontsize=8)
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("scaling")
    parser.add_argument("--chart")
    args = parser.parse_args()

    rows = read_tsv(args.results)
    stats = medians(rows, ["topic", "consumer"])
    topics = list(dict.fromkeys(r["topic"] for r in rows))
    consumers = list(dict.fromkeys(r["consumer"] for r in rows))
    out = []
    out.append("Medians of the interleaved runs; CPU = user + sys of the consumer process (and its children).")
    out.append("")
    out += consumer_table(stats, topics, consumers)
    out.append("")
    out.append("Ratios (below 1 means krec uses less CPU per record; above 1 means krec is faster):")
    out.append("")
    out += ratio_table(stats, topics)
    out.append("")
    out.append("Scaling on cores (krec, medians):")
    out.append("")
    out += scaling_table(read_tsv(args.scaling))
    print("\n".join(out))
    if args.chart:
        draw_chart(stats, topics, consumers, args.chart)
        print(f"\nChart: {args.chart}", file=sys.stderr)


if __name__ == "__main__":
    main()
