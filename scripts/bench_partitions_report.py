#!/usr/bin/env python3
"""The tables of scripts/bench-partitions.sh, from its runs and the broker's JMX samples.

    bench_partitions_report.py RUNS_TSV JMX_CSV --ticks-per-s T --partitions P --buffer-mib B

JMX_CSV holds JmxTool rows of Kafka's RequestBytes histogram for Fetch (a time in ms, then
its attributes); Count and Mean are exact, so Count x Mean is every byte of every fetch
request so far. A run's requests are the difference between the last sample before it and
the first after it (a tailing window: the last samples before its start and before its end).
Medians over the rounds; prints Markdown.
"""

import argparse
import bisect
import csv
import statistics


def read_samples(path):
    """[(time_ms, count, total_bytes)] in time order."""
    with open(path) as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    header_at = next(i for i, line in enumerate(lines) if line.startswith('"time"'))
    header = lines[header_at].strip('"').split('","')
    count_at = next(i for i, name in enumerate(header) if name.endswith(":Count"))
    mean_at = next(i for i, name in enumerate(header) if name.endswith(":Mean"))
    samples = []
    for line in lines[header_at + 1:]:
        values = line.split(",")
        if len(values) != len(header) or not values[0].isdigit():
            continue
        count = int(float(values[count_at]))
        samples.append((int(values[0]), count, count * float(values[mean_at])))
    return samples


class Samples:
    def __init__(self, samples):
        self.samples = samples
        self.times = [s[0] for s in samples]

    def last_before(self, ms):
        at = bisect.bisect_right(self.times, ms) - 1
        if at < 0:
            raise SystemExit(f"no JMX sample before {ms}")
        return self.samples[at]

    def first_after(self, ms):
        at = bisect.bisect_left(self.times, ms)
        if at >= len(self.samples):
            raise SystemExit(f"no JMX sample after {ms}")
        return self.samples[at]


def median(values):
    return statistics.median(values) if values else float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("runs")
    parser.add_argument("jmx")
    parser.add_argument("--ticks-per-s", type=float, required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--rates", required=True)
    parser.add_argument("--topics", type=int, required=True)
    parser.add_argument("--buffer-mib", type=float, required=True)
    args = parser.parse_args()
    samples = Samples(read_samples(args.jmx))
    with open(args.runs) as f:
        runs = list(csv.DictReader(f, delimiter="\t"))

    # (phase, config) -> metric -> [value per round]
    table = {}
    window_cpu = {}
    for run in runs:
        phase, config = run["phase"], run["config"]
        records = int(run["records"])
        if phase == "tail-krec":
            window_cpu.setdefault(config, []).append(float(run["user_s"]) / records * 1e6)
            continue
        metrics = table.setdefault((phase, config), {})
        add = lambda name, value: metrics.setdefault(name, []).append(value)
        add("rss_mib", int(run["max_rss_kb"]) / 1024)
        if phase == "idle":
            continue
        start, end = int(run["start_ms"]), int(run["end_ms"])
        if phase == "tail":
            before, after = samples.last_before(start), samples.last_before(end)
            seconds = (after[0] - before[0]) / 1000
        else:
            before, after = samples.last_before(start), samples.first_after(end + 300)
            seconds = float(run["wall_s"])
        requests = after[1] - before[1]
        add("requests", requests)
        add("bytes_per_request", (after[2] - before[2]) / max(requests, 1))
        add("requests_per_s", requests / max(seconds, 1e-9))
        add("records_per_s", records / max(seconds, 1e-9))
        add("wall_s", float(run["wall_s"]))
        add("records_per_fetch", records / max(requests, 1))
        cpu = float(run["user_s"]) + float(run["sys_s"])
        add("krec_us", cpu / records * 1e6)
        add("broker_us", int(run["broker_ticks"]) / args.ticks_per_s / records * 1e6)
    for config, values in window_cpu.items():
        table[("tail", config)]["krec_us"] = values

    def get(phase, config, name):
        return median(table.get((phase, config), {}).get(name, []))

    p = args.partitions
    rounds = max(len(v.get("wall_s", [])) for v in table.values())
    print(f"Medians of {rounds} interleaved rounds.\n")
    print(f"**Backlog**: `krec consume -e -f raw` of the whole topic.\n")
    print(f"| | {p} partitions, sessions | {p} partitions, `fetch.sessions=false` | 4 partitions, sessions | {args.topics} topics × 10 partitions, `-G` |")
    print("|---|---:|---:|---:|---:|")
    rows = [
        ("fetch requests", "requests", "{:.0f}"),
        ("bytes per fetch request", "bytes_per_request", "{:.0f}"),
        ("fetch requests/s", "requests_per_s", "{:.0f}"),
        ("wall (s)", "wall_s", "{:.2f}"),
        ("krec CPU per record (µs)", "krec_us", "{:.3f}"),
        ("broker CPU per record (µs)", "broker_us", "{:.3f}"),
        ("krec peak RSS (MiB)", "rss_mib", "{:.0f}"),
    ]
    for label, name, form in rows:
        cells = [form.format(get("backlog", c, name)) for c in ("sessions", "full", "four", "topics")]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()
    rates = args.rates.split(",")
    print(f"**Tail**: `krec consume -o end` while a producer writes at random partitions.\n")
    configs = [(mode, rate) for rate in rates for mode in ("sessions", "full")]
    heads = [f"{rate}/s, {'sessions' if mode == 'sessions' else 'full fetches'}" for mode, rate in configs]
    print(f"| {p} partitions | " + " | ".join(heads) + " |")
    print("|---|" + "---:|" * len(configs))
    rows = [
        ("records/s reached", "records_per_s", "{:.0f}"),
        ("fetch requests/s", "requests_per_s", "{:.0f}"),
        ("records per fetch", "records_per_fetch", "{:.0f}"),
        ("bytes per fetch request", "bytes_per_request", "{:.0f}"),
        ("krec CPU per record (µs, the window)", "krec_us", "{:.1f}"),
        ("broker CPU per record (µs)", "broker_us", "{:.0f}"),
        ("krec peak RSS (MiB)", "rss_mib", "{:.0f}"),
    ]
    for label, name, form in rows:
        cells = [form.format(get("tail", f"{mode}@{rate}", name)) for mode, rate in configs]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()
    tail_ratios = {
        rate: get("tail", f"full@{rate}", "bytes_per_request")
        / get("tail", f"sessions@{rate}", "bytes_per_request")
        for rate in rates
    }
    backlog_ratio = get("backlog", "full", "bytes_per_request") / get("backlog", "sessions", "bytes_per_request")
    cpu_ratio = get("backlog", "sessions", "krec_us") / get("backlog", "four", "krec_us")
    topics_ratio = get("backlog", "topics", "krec_us") / get("backlog", "four", "krec_us")
    peak = max(get(phase, config, "rss_mib") for phase, config in table)
    idle_many, idle_few = get("idle", f"p{p}", "rss_mib"), get("idle", "p4", "rss_mib")
    per_partition = (idle_many - idle_few) * 1024 * 1024 / (p - 4)
    verdict = lambda ok: "met" if ok else "**not met**"
    print("| target | measured | |")
    print("|---|---:|---|")
    for rate, ratio in tail_ratios.items():
        print(f"| steady-state request bytes with sessions ≤ 1/20 of full fetches ({rate} records/s) | 1/{ratio:.0f} | {verdict(ratio >= 20)} |")
    print(f"| (backlog, for comparison) | 1/{backlog_ratio:.1f} | |")
    print(f"| krec CPU per record, {p} partitions ≤ 1.3 × 4 partitions | {cpu_ratio:.2f} × | {verdict(cpu_ratio <= 1.3)} |")
    print(f"| (and {args.topics} topics × 10 with `-G`, its group joins and commits included) | {topics_ratio:.2f} × | |")
    print(f"| peak RSS < 100 MiB + buffer budget ({args.buffer_mib:.0f} MiB) | {peak:.0f} MiB | {verdict(peak < 100 + args.buffer_mib)} |")
    print(f"| memory per partition (idle tail, {p} vs 4 partitions) | {per_partition:.0f} B ({idle_many:.1f} vs {idle_few:.1f} MiB) | |")


if __name__ == "__main__":
    main()
