#!/usr/bin/env bash
# krec consume --metrics under load: what serving scrapes costs the consume, and how fast
# scrapes are answered while the fetch loops run flat out on the same tokio thread.
#
#   scripts/bench-metrics.sh [--records N] [--runs R] [--partitions P] [--stop]
#
#   --records N     records of 100 B in the topic (default 2000000)
#   --runs R        timed runs of each mode, interleaved (default 5); medians are reported
#   --partitions P  partitions of the topic (default 4)
#   --stop          stop the benchmark broker at the end (kept by default, with its topic)
#
# Modes, the first two a `krec consume -e` of the whole topic into /dev/null:
#   plain    no --metrics
#   scraped  --metrics, with /metrics scraped every 20 ms (fifty times a second, far more often
#            than any Prometheus) for the whole run; every scrape's latency is recorded
#   idle     --metrics on a consumer at the end of the topic (nothing to fetch) for 2 s,
#            scraped the same way: the latency of a scrape with no fetching to compete with
# Wall time and CPU seconds (user + sys) come from wait4(2) on the krec process; the record
# count of one untimed run is checked first.
#
# Environment: KREC_BENCH_BROKER names the broker instance (default bench-metrics);
# KREC_BIN benchmarks that krec binary instead of building one.
# Output: target/bench-metrics/<N>/results.tsv (every run) and report.md.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
KAFKA="$SCRIPT_DIR/kafka.sh"
BROKER_NAME="${KREC_BENCH_BROKER:-bench-metrics}"

RECORDS=2000000
RUNS=5
PARTITIONS=4
STOP=0
while (($#)); do
    case "$1" in
        --records) RECORDS="$2"; shift 2 ;;
        --runs) RUNS="$2"; shift 2 ;;
        --partitions) PARTITIONS="$2"; shift 2 ;;
        --stop) STOP=1; shift ;;
        *) echo "bench-metrics.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

log() { echo "bench-metrics: $*" >&2; }

OUT="$REPO_ROOT/target/bench-metrics/$RECORDS"
mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"

if [[ -n "${KREC_BIN:-}" ]]; then
    KREC="$KREC_BIN"
else
    log "building krec (release)"
    (cd "$REPO_ROOT" && cargo build -q --release -p krec-cli --bin krec)
    KREC="${CARGO_TARGET_DIR:-$REPO_ROOT/target}/release/krec"
fi

if ! "$KAFKA" status --name "$BROKER_NAME" >/dev/null 2>&1; then
    log "starting broker '$BROKER_NAME'"
    "$KAFKA" start --name "$BROKER_NAME" >/dev/null
fi
BOOTSTRAP="$("$KAFKA" bootstrap --name "$BROKER_NAME")"
((STOP)) && trap '"$KAFKA" stop --name "$BROKER_NAME" >/dev/null 2>&1 || true' EXIT

TOPIC="bm-$RECORDS-$PARTITIONS"
end_offsets() {
    { "$KAFKA" tool --name "$BROKER_NAME" org.apache.kafka.tools.GetOffsetShell \
        --bootstrap-server "{bootstrap}" --topic "$TOPIC" 2>/dev/null || true; } \
        | awk -F: '{ sum += $NF } END { print sum + 0 }'
}
filled="$(end_offsets)"
if [[ "$filled" != "$RECORDS" ]]; then
    [[ "$filled" == 0 ]] || { log "$TOPIC holds $filled records, not $RECORDS: stop the broker with --clean"; exit 1; }
    log "filling $TOPIC with $RECORDS records"
    "$KAFKA" topic --name "$BROKER_NAME" create "$TOPIC" --partitions "$PARTITIONS" >/dev/null
    "$KAFKA" tool --name "$BROKER_NAME" org.apache.kafka.tools.ProducerPerformance \
        --topic "$TOPIC" --num-records "$RECORDS" --record-size 100 --throughput -1 \
        --producer-props bootstrap.servers={bootstrap} compression.type=lz4 linger.ms=20 \
        batch.size=262144 >/dev/null
    [[ "$(end_offsets)" == "$RECORDS" ]] || { log "the topic holds $(end_offsets) records"; exit 1; }
fi

# run MODE: one consume of the whole topic; prints "mode wall_s cpu_s scrapes p50_ms p99_ms max_ms".
RUN_PY='
import os, socket, sys, threading, time, urllib.request
mode, krec, bootstrap, topic = sys.argv[1:5]
args = [krec, "consume", "-b", bootstrap, "-t", topic]
args += ["-o", "end"] if mode == "idle" else ["-e"]
if mode != "plain":
    probe = socket.socket(); probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]; probe.close()
    args += ["--metrics", "127.0.0.1:%d" % port]
latencies, done = [], threading.Event()
def scrape():
    url = "http://127.0.0.1:%d/metrics" % port
    while not done.is_set():
        start = time.monotonic()
        try:
            urllib.request.urlopen(url, timeout=5).read()
            latencies.append(time.monotonic() - start)
        except OSError:
            pass  # not listening yet, or gone
        done.wait(0.02)
start = time.monotonic()
pid = os.fork()
if pid == 0:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.execv(krec, args)
scraper = threading.Thread(target=scrape)
if mode != "plain":
    scraper.start()
if mode == "idle":
    time.sleep(2)
    os.kill(pid, 15)
_, status, usage = os.wait4(pid, 0)
wall = time.monotonic() - start
done.set()
if mode != "plain":
    scraper.join()
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit("krec failed: %s" % status)
latencies.sort()
pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else 0
print("%s\t%.3f\t%.3f\t%d\t%.2f\t%.2f\t%.2f" % (mode, wall, usage.ru_utime + usage.ru_stime,
      len(latencies), pick(0.5), pick(0.99), latencies[-1] * 1000 if latencies else 0))
'

count="$("$KREC" consume -b "$BOOTSTRAP" -t "$TOPIC" -e -f '%o\n' | wc -l)"
[[ "$count" == "$RECORDS" ]] || { log "krec wrote $count records, not $RECORDS"; exit 1; }

printf 'mode\twall_s\tcpu_s\tscrapes\tp50_ms\tp99_ms\tmax_ms\n' >"$RESULTS"
for run in $(seq "$RUNS"); do
    for mode in plain scraped idle; do
        line="$(python3 -c "$RUN_PY" "$mode" "$KREC" "$BOOTSTRAP" "$TOPIC")"
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
