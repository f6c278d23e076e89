#!/usr/bin/env bash
# Consumer-group benchmark against a real broker:
#   1. throughput: one `krec consume -G` process vs a group of two reading the same backlog
#      (wall time until every record is written out, fresh group each run);
#   2. failover: with records arriving continuously, one of two members is SIGKILLed (or
#      SIGTERMed); the time from the signal until the survivor writes the first record of a
#      partition the dead member owned. Classic range, classic cooperative-sticky, KIP-848.
#
#   scripts/bench-group.sh [--records N] [--runs R] [--partitions P] [--quick] [--stop]
#
#   --records N     backlog records of 200 B, lz4 (default 2000000)
#   --runs R        timed runs of each case (default 3); medians are reported
#   --partitions P  partitions of the topics (default 6)
#   --quick         20000 records, 1 run, failover once per protocol (SIGTERM), 1 s settled:
#                   proves every step works; stops the broker if it started it
#   --stop          stop the benchmark broker at the end
#
# Members run with --session-timeout-ms 6000 and --heartbeat-interval-ms 500 (classic), so a
# SIGKILLed member is noticed after ~6 s; the KIP-848 session timeout of 6 s is the broker's,
# set on every scripts/kafka.sh instance, so any running instance will do.
# Environment: KREC_BIN=path uses that krec binary instead of building one; KREC_BENCH_BROKER
# names the broker instance (default bench-group), reused if running.
# Output: target/bench-group/<N>/results.tsv (every run) and report.md.
# shellcheck source=lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"

RECORDS=2000000
RUNS=3
PARTITIONS=6
# Failover cases of each run (signal, protocol, assignor) and how long (in 0.1 s ticks) the
# victim's assignment must hold still before the kill.
FAILOVER_CASES=(
    "KILL classic range" "KILL classic cooperative-sticky" "KILL consumer range"
    "TERM classic range" "TERM classic cooperative-sticky" "TERM consumer range"
)
SETTLE_TICKS=30
QUICK_SETTINGS=(RECORDS=20000 RUNS=1 SETTLE_TICKS=10)
bench_args "--records= --runs= --partitions= --stop" "$@"
bench_positive_int RECORDS RUNS PARTITIONS
# A smoke test needs each protocol's takeover once; SIGTERM's is the quick one (the member
# leaves the group instead of timing out).
((QUICK)) && FAILOVER_CASES=("TERM classic cooperative-sticky" "TERM consumer range")

OUT="$REPO_ROOT/target/bench-group/$RECORDS"
((QUICK)) && OUT="$REPO_ROOT/target/bench-group/quick"
mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"
: >"$RESULTS"

bench_krec
command -v /usr/bin/python3 >/dev/null || die "/usr/bin/python3 with python3-confluent-kafka is needed (scripts/install-deps.sh)"
bench_broker bench-group
# Members still running when the script stops (a failed run).
# shellcheck disable=SC2016 # expanded at exit
bench_on_exit 'for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done'

now() { date +%s.%N; }

# --- 1. throughput ------------------------------------------------------------------------

BACKLOG="bg-$RECORDS-p$PARTITIONS"
if ! "$KREC" consume -b "$BOOTSTRAP" -t "$BACKLOG" -e -c 1 -f '' >/dev/null 2>&1; then
    log "filling $BACKLOG ($RECORDS records)"
    bash "$KAFKA" topic --name "$BROKER_NAME" create "$BACKLOG" --partitions "$PARTITIONS" >/dev/null
    bash "$KAFKA" tool --name "$BROKER_NAME" org.apache.kafka.tools.ProducerPerformance \
        --topic "$BACKLOG" --num-records "$RECORDS" --record-size 200 --throughput -1 \
        --producer-props "bootstrap.servers={bootstrap}" compression.type=lz4 \
        batch.size=262144 linger.ms=20 acks=1 >"$OUT/produce.log" 2>&1
fi
have="$("$KREC" consume -b "$BOOTSTRAP" -t "$BACKLOG" -e -f '%o\n' | wc -l)"
[[ "$have" == "$RECORDS" ]] || die "$BACKLOG holds $have records, expected $RECORDS"

# Runs `members` krec processes in a fresh group until each has written its partitions
# (-e), prints the wall time and checks that together they wrote every record exactly once.
group_run() {
    local members="$1" protocol="$2" group="bg-$RANDOM-$RANDOM" i start end total
    local args=(consume -b "$BOOTSTRAP" -t "$BACKLOG" -G "$group" -e -f '%p %o\n')
    args+=(--session-timeout-ms 6000 --heartbeat-interval-ms 500 --group-protocol "$protocol")
    start="$(now)"
    for ((i = 0; i < members; i++)); do
        "$KREC" "${args[@]}" >"$OUT/member-$i.out" 2>"$OUT/member-$i.err" &
    done
    wait
    end="$(now)"
    total="$(cat "$OUT"/member-*.out | sort -u | wc -l)"
    [[ "$total" == "$RECORDS" ]] || die "$members members wrote $total distinct records, expected $RECORDS"
    [[ "$(cat "$OUT"/member-*.out | wc -l)" == "$RECORDS" ]] || die "$members members wrote duplicates"
    rm -f "$OUT"/member-*.out
    awk "BEGIN { printf \"%.3f\", $end - $start }"
}

# Untimed: the first group on a broker waits for __consumer_offsets to be created and loaded.
group_run 1 classic >/dev/null
group_run 1 consumer >/dev/null
for ((run = 1; run <= RUNS; run++)); do
    for protocol in classic consumer; do
        for members in 1 2; do
            seconds="$(group_run "$members" "$protocol")"
            log "throughput run $run: $members member(s), $protocol: ${seconds}s"
            printf 'throughput\t%s\t%s\t%s\t%s\n' "$protocol" "$members" "$run" "$seconds" >>"$RESULTS"
        done
    done
done

# --- 2. failover --------------------------------------------------------------------------

PACED='
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "linger.ms": 5})
topic, seconds, rate = sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
start, i = time.time(), 0
while time.time() - start < seconds:
    p.produce(topic, value=b"v%d" % i)
    p.poll(0)
    i += 1
    ahead = start + i / rate - time.time()
    if ahead > 0:
        time.sleep(ahead)
p.flush(30)
'

# Two members, records arriving at 2000/s; kills member 0 with $signal once both own
# partitions; prints seconds from the signal until member 1 writes a record of a partition
# member 0 owned.
failover_run() {
    local signal="$1" protocol="$2" assignor="$3" topic group producer owned pattern start size t
    topic="bf-$RANDOM$RANDOM"
    group="$topic-g"
    bash "$KAFKA" topic --name "$BROKER_NAME" create "$topic" --partitions "$PARTITIONS" >/dev/null
    local args=(consume -b "$BOOTSTRAP" -t "$topic" -G "$group" -f '%p %o\n' -o end)
    args+=(--session-timeout-ms 6000 --heartbeat-interval-ms 500 --commit-interval-ms 1000)
    args+=(--group-protocol "$protocol" --assignor "$assignor")
    /usr/bin/python3 -c "$PACED" "$BOOTSTRAP" "$topic" 40 2000 &
    producer=$!
    RUST_LOG=krec_consumer::group=info "$KREC" "${args[@]}" >"$OUT/f0.out" 2>"$OUT/f0.err" &
    local victim=$!
    RUST_LOG=krec_consumer::group=info "$KREC" "${args[@]}" >"$OUT/f1.out" 2>"$OUT/f1.err" &
    local survivor=$!
    # Settled: the victim's current assignment is half the partitions, for SETTLE_TICKS.
    owned=""
    for ((t = 0; t < 600; t++)); do
        sleep 0.1
        local current
        current="$(sed -n 's/.*partitions \(assigned\|revoked\) partitions=\([^ ]*\).*/\1 \2/p' "$OUT/f0.err" |
            /usr/bin/python3 -c '
import sys
owned = set()
for line in sys.stdin:
    kind, items = line.split()
    parts = {int(i.rsplit("/", 1)[1]) for i in items.split(",") if i}
    owned = owned | parts if kind == "assigned" else owned - parts
print(",".join(str(p) for p in sorted(owned)))')"
        if [[ -n "$current" && "$current" == "$owned" && $(tr ',' '\n' <<<"$current" | wc -l) -eq $((PARTITIONS / 2)) ]]; then
            ((settled += 1))
            ((settled >= SETTLE_TICKS)) && break
        else
            settled=0
            owned="$current"
        fi
    done
    [[ -n "$owned" ]] || die "failover: the group did not settle ($protocol $assignor)"
    pattern="^($(tr ',' '|' <<<"$owned")) "
    size="$(stat -c %s "$OUT/f1.out")"
    start="$(now)"
    kill "-$signal" "$victim"
    local seconds=""
    for ((t = 0; t < 600; t++)); do
        if tail -c +"$((size + 1))" "$OUT/f1.out" | grep -Eq "$pattern"; then
            seconds="$(awk "BEGIN { printf \"%.3f\", $(now) - $start }")"
            break
        fi
        sleep 0.05
    done
    kill "$survivor" "$producer" 2>/dev/null || true
    wait "$survivor" "$producer" "$victim" 2>/dev/null || true
    [[ -n "$seconds" ]] || die "failover: the survivor never took over ($signal $protocol $assignor)"
    echo "$seconds"
}

for ((run = 1; run <= RUNS; run++)); do
    for case in "${FAILOVER_CASES[@]}"; do
        read -r signal protocol assignor <<<"$case"
        settled=0
        seconds="$(failover_run "$signal" "$protocol" "$assignor")"
        label="$protocol"
        [[ "$protocol" == classic ]] && label="classic $assignor"
        log "failover run $run: SIG$signal, $label: ${seconds}s"
        printf 'failover\t%s\tSIG%s\t%s\t%s\n' "$label" "$signal" "$run" "$seconds" >>"$RESULTS"
    done
done

# --- report -------------------------------------------------------------------------------

/usr/bin/python3 - "$RESULTS" "$RECORDS" "$PARTITIONS" >"$OUT/report.md" <<'PY'
import sys, statistics
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
records, partitions = int(sys.argv[2]), sys.argv[3]
print(f"Backlog of {records} records (200 B, lz4), {partitions} partitions; medians of the runs.\n")
print("| protocol | members | wall s (median) | records/s | vs 1 member |")
print("|---|---:|---:|---:|---:|")
for protocol in ("classic", "consumer"):
    single = None
    for members in ("1", "2"):
        times = [float(r[4]) for r in rows if r[0] == "throughput" and r[1] == protocol and r[2] == members]
        if not times:
            continue
        median = statistics.median(times)
        single = single or median
        print(f"| {protocol} | {members} | {median:.2f} | {records / median / 1e6:.2f} M | {single / median:.2f}x |")
print("\nFailover: seconds from the signal to the survivor writing a record of the dead member's partitions.\n")
print("| protocol / assignor | signal | seconds (median) | all runs |")
print("|---|---|---:|---|")
cases = sorted({(r[1], r[2]) for r in rows if r[0] == "failover"})
for label, signal in cases:
    times = [float(r[4]) for r in rows if r[0] == "failover" and r[1] == label and r[2] == signal]
    print(f"| {label} | {signal} | {statistics.median(times):.2f} | {', '.join(f'{t:.2f}' for t in times)} |")
PY
cat "$OUT/report.md"
