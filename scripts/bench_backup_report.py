#!/usr/bin/env python3
"""The tables of scripts/bench-backup.sh's report.md, from its results.tsv (one line per run
and phase): per codec, per tool and phase, the medians of the valid runs, and krec's ratios.

    bench_backup_report.py RESULTS_TSV [PUBLISHED_MB_S]

PUBLISHED_MB_S, given when kafka-backup was not measured: its published figure, to which krec's
MB/s is then compared instead (said as such in the cell).
"""

import csv
import statistics
import sys

ORDER = ["krec", "kafka-backup", "kcat"]
NAMES = {"krec": "krec", "kafka-backup": "kafka-backup (osodevops)", "kcat": "kcat"}
PEERS = ["kafka-backup", "kcat"]


def medians(runs):
    """Medians of one tool's valid runs of one phase, or None without any."""
    valid = [r for r in runs if r["valid"] == "1"]
    if not valid:
        return None
    records = int(valid[0]["records"])
    source = int(valid[0]["source_bytes"])
    cpu = [float(r["user_s"]) + float(r["sys_s"]) for r in valid]
    return {
        "mb_s": statistics.median(source / 1e6 / float(r["wall_s"]) for r in valid),
        "cpu_us": statistics.median(c / records * 1e6 for c in cpu),
        "mb_cpu_s": statistics.median(source / 1e6 / max(c, 1e-6) for c in cpu),
        "rss_mib": statistics.median(int(r["max_rss_kb"]) / 1024 for r in valid),
        "out_ratio": statistics.median(int(r["out_bytes"]) / max(source, 1) for r in valid),
        "valid": len(valid),
    }


def ratio(krec, other, key):
    if not krec or not other or not other[key]:
        return ""
    return f"{krec[key] / other[key]:.2f}"


def main(path, published=None):
    rows = list(csv.DictReader(open(path), delimiter="\t"))
    groups = {}
    for r in rows:
        groups.setdefault(r["codec"], {}).setdefault(r["phase"], {}).setdefault(r["tool"], []).append(r)
    for codec, phases in groups.items():
        first = next(iter(next(iter(phases.values())).values()))[0]
        print(f"{codec}, {first['records']} records, {int(first['source_bytes']):,} bytes of source segments "
              f"(medians; MB/s = source segment bytes / wall time):\n")
        print("| phase | tool | MB/s | CPU µs/record | MB per CPU s | peak RSS MiB | output / source bytes "
              "| krec/kafka-backup MB/s, MB per CPU s | krec/kcat MB/s, MB per CPU s | valid runs |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for phase in ("backup", "restore"):
            tools = phases.get(phase, {})
            stats = {tool: medians(runs) for tool, runs in tools.items()}
            krec = stats.get("krec")
            for tool in sorted(tools, key=ORDER.index):
                s = stats[tool]
                if s is None:
                    print(f"| {phase} | {NAMES[tool]} | no valid run | | | | | | | 0/{len(tools[tool])} |")
                    continue
                out = f"{s['out_ratio']:.3f}" if phase == "backup" else ""
                cells = []
                for peer in PEERS:
                    if tool == "krec" and peer in stats:
                        other = stats[peer]
                        cells.append(f"{ratio(krec, other, 'mb_s')}, {ratio(krec, other, 'mb_cpu_s')}")
                    elif tool == "krec" and peer == "kafka-backup" and published:
                        cells.append(f"{krec['mb_s'] / published:.2f} of its published {published:g} MB/s")
                    else:
                        cells.append("")
                print(f"| {phase} | {NAMES[tool]} | {s['mb_s']:.1f} | {s['cpu_us']:.2f} | {s['mb_cpu_s']:.1f} "
                      f"| {s['rss_mib']:.0f} | {out} | {cells[0]} | {cells[1]} | {s['valid']}/{len(tools[tool])} |")
        print()


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) == 3 else None)
