#!/usr/bin/env bash
# krec consume --metrics under load: what serving scrapes costs the consume, and how fast
# scrapes are answered while the fetch loops run flat out on the same tokio thread.
#
#   scripts/bench-metrics.sh [--records N] [--runs R] [--partitions P] [--quick] [--stop]
#
#   --records N     records of 100 B in the topic (default 2000000)
#   --runs R        timed runs of each mode, interleaved (default 5); medians are reported
#   --partitions P  partitions of the topic (default 4)
#   --quick         20000 records, 1 run, results under target/bench-metrics/quick: proves
#                   every step works; stops the broker if it started it
#   --stop          stop the benchmark broker at the end (kept by default, with its topic)
#
# Modes, the first two a `krec consume -e` of the whole topic into /dev/null:
#   plain    no --metrics
#   scraped  --metrics, with /metrics scraped every 20 ms (fifty times a second, far more often
#            than any Prometheus) for the whole run; every scrape's latency is recorded
#   idle     --metrics on a consumer at the end of the topic (nothing to fetch) for 2 s,
#            scraped the same way: the latency of a scrape with no fetching to compete with
# Wall time and CPU seconds (user + sys) come from wait4(2) on the krec process (one run:
# scripts/bench_metrics_run.py); the record count of one untimed run is checked first.
#
# Environment: KREC_BENCH_BROKER names the broker instance (default bench-metrics), reused if
# running; KREC_BIN benchmarks that krec binary instead of building one.
# Output: target/bench-metrics/<N>/results.tsv (every run) and report.md.
# shellcheck source=lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"

RECORDS=2000000
RUNS=5
PARTITIONS=4
QUICK_SETTINGS=(RECORDS=20000 RUNS=1)
bench_args "--records= --runs= --partitions= --stop" "$@"
bench_positive_int RECORDS RUNS PARTITIONS

OUT="$REPO_ROOT/target/bench-metrics/$RECORDS"
((QUICK)) && OUT="$REPO_ROOT/target/bench-metrics/quick"
mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"

bench_krec
bench_broker bench-metrics

TOPIC="bm-$RECORDS-$PARTITIONS"
end_offsets() {
    { "$KAFKA" tool --name "$BROKER_NAME" org.apache.kafka.tools.GetOffsetShell \
        --bootstrap-server "{bootstrap}" --topic "$TOPIC" 2>/dev/null || true; } \
        | awk -F: '{ sum += $NF } END { print sum + 0 }'
}
filled="$(end_offsets)"
if [[ "$filled" != "$RECORDS" ]]; then
    [[ "$filled" == 0 ]] || die "$TOPIC holds $filled records, not $RECORDS: stop the broker with --clean"
    log "filling $TOPIC with $RECORDS records"
    "$KAFKA" topic --name "$BROKER_NAME" create "$TOPIC" --partitions "$PARTITIONS" >/dev/null
    "$KAFKA" tool --name "$BROKER_NAME" org.apache.kafka.tools.ProducerPerformance \
        --topic "$TOPIC" --num-records "$RECORDS" --record-size 100 --throughput -1 \
        --producer-props "bootstrap.servers={bootstrap}" compression.type=lz4 linger.ms=20 \
        batch.size=262144 >/dev/null
    [[ "$(end_offsets)" == "$RECORDS" ]] || die "the topic holds $(end_offsets) records"
fi

count="$("$KREC" consume -b "$BOOTSTRAP" -t "$TOPIC" -e -f '%o\n' | wc -l)"
[[ "$count" == "$RECORDS" ]] || die "krec wrote $count records, not $RECORDS"

printf 'mode\twall_s\tcpu_s\tscrapes\tp50_ms\tp99_ms\tmax_ms\n' >"$RESULTS"
for run in $(seq "$RUNS"); do
    for mode in plain scraped idle; do
        line="$(python3 "$SCRIPT_DIR/bench_metrics_run.py" "$mode" "$KREC" "$BOOTSTRAP" "$TOPIC")"
        log "run $run: $line"
        echo "$line" >>"$RESULTS"
    done
done

python3 - "$RESULTS" "$RECORDS" "$PARTITIONS" >"$OUT/report.md" <<'EOF'
import csv, statistics, sys
path, records, partitions = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = list(csv.DictReader(open(path), delimiter="\t"))
print("%d records of 100 B, %s partitions, lz4; medians of %d runs each\n"
      % (records, partitions, len(rows) // 3))
print("| mode | wall s | records/s | CPU s | scrapes per run | scrape p50 ms | p99 ms | max ms |")
print("|---|---|---|---|---|---|---|---|")
for mode in ("plain", "scraped", "idle"):
    mine = [r for r in rows if r["mode"] == mode]
    med = lambda key: statistics.median(float(r[key]) for r in mine)
    wall = med("wall_s")
    cells = ["%.2f" % wall, "%.0f" % (records / wall), "%.2f" % med("cpu_s")]
    if mode == "idle":
        cells = ["-"] * 3
    if mode != "plain":
        cells += ["%.0f" % med("scrapes"), "%.2f" % med("p50_ms"), "%.2f" % med("p99_ms"),
                  "%.2f" % max(float(r["max_ms"]) for r in mine)]
    else:
        cells += ["-"] * 4
    print("| %s | %s |" % (mode, " | ".join(cells)))
EOF
cat "$OUT/report.md"
