#!/usr/bin/env python3
"""Table of scripts/bench-consume.sh --tls results: medians over the runs of CPU per record
and records/s for krec and kcat over PLAINTEXT and SASL_SSL, and the ratios the issues set
targets for (TLS over plaintext for krec, krec over kcat on TLS, OIDC over SCRAM for krec).

    bench_tls_report.py RESULTS.tsv
"""

import csv
import statistics
import sys
from collections import defaultdict


def main(path):
    runs = defaultdict(list)
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            runs[(row["topic"], row["consumer"])].append(row)

    def median(key):
        rows = runs[key]
        records = int(rows[0]["records"])
        cpu = statistics.median(float(r["user_s"]) + float(r["sys_s"]) for r in rows)
        wall = statistics.median(float(r["wall_s"]) for r in rows)
        return cpu / records * 1e6, records / wall, len(rows)

    print("| topic | consumer | runs | CPU µs/record | records/s | over TLS / plaintext |")
    print("|---|---|---|---|---|---|")
    for topic in sorted({t for t, _ in runs}):
        for consumer in ("krec-raw", "krec-raw-tls", "kcat-raw", "kcat-raw-tls",
                         "krec-raw-scram", "krec-raw-oidc"):
            if (topic, consumer) not in runs:
                continue
            cpu, rate, n = median((topic, consumer))
            ratio = ""
            if consumer.endswith("-tls") or consumer in ("krec-raw-scram", "krec-raw-oidc"):
                plain = consumer.split("-raw")[0] + "-raw"
                ratio = "%.2fx" % (cpu / median((topic, plain))[0])
            print("| %s | %s | %d | %.3f | %.0f | %s |" % (topic, consumer, n, cpu, rate, ratio))
        krec, kcat = median((topic, "krec-raw-tls"))[0], median((topic, "kcat-raw-tls"))[0]
        print("| %s | **krec / kcat CPU over TLS** | | %.2f | | |" % (topic, krec / kcat))
        if (topic, "krec-raw-oidc") in runs:
            oidc, scram = median((topic, "krec-raw-oidc"))[0], median((topic, "krec-raw-scram"))[0]
            print("| %s | **krec OIDC / SCRAM CPU** | | %.2f | | |" % (topic, oidc / scram))


if __name__ == "__main__":
    main(sys.argv[1])
