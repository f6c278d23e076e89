#!/usr/bin/env bash
# Share-group benchmark against a real broker: one `krec consume --share-group` member and
# Kafka's ShareConsumerPerformance (the Java KafkaShareConsumer, same jars) each read the same
# backlog in a fresh share group, interleaved run by run. Both acknowledge every record
# (krec ACCEPTs after writing; the Java consumer acknowledges implicitly on its next poll).
#
#   scripts/bench-share.sh [--records N] [--runs R] [--partitions P] [--quick] [--stop]
#
#   --records N     backlog records of 200 B, lz4 (default 1000000)
#   --runs R        timed runs of each consumer (default 3); medians are reported
#   --partitions P  partitions of the topic (default 3)
#   --quick         20000 records, 1 run: proves every step works; stops the broker if it
#                   started it
#   --stop          stop the benchmark broker at the end
#
# Each run's group starts at the log start: `share.auto.offset.reset=earliest` is set on it
# before the timed command (a share group otherwise starts at the log end).
# Environment: KREC_BIN=path uses that krec binary instead of building one; KREC_BENCH_BROKER
# names the broker instance (default bench-share), reused if running.
# Output: target/bench-share/<N>/results.tsv (every run) and report.md.
# shellcheck source=lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"

RECORDS=1000000
RUNS=3
PARTITIONS=3
QUICK_SETTINGS=(RECORDS=20000 RUNS=1)
bench_args "--records= --runs= --partitions= --stop" "$@"
bench_positive_int RECORDS RUNS PARTITIONS

OUT="$REPO_ROOT/target/bench-share/$RECORDS"
((QUICK)) && OUT="$REPO_ROOT/target/bench-share/quick"
mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"
printf 'consumer\trun\trecords\twall_s\tuser_s\tsys_s\tmax_rss_kb\n' >"$RESULTS"

bench_krec
bench_broker bench-share

BACKLOG="bs-$RECORDS-p$PARTITIONS"
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

# A new share group that starts at the log start (a JVM start, outside the timed command).
fresh_group() {
    local group="bs-$RANDOM$RANDOM"
    bash "$KAFKA" tool --name "$BROKER_NAME" org.apache.kafka.tools.ConfigCommand \
        --bootstrap-server "{bootstrap}" --alter --entity-type groups --entity-name "$group" \
        --add-config share.auto.offset.reset=earliest >/dev/null 2>&1 ||
        die "could not set share.auto.offset.reset on $group"
    echo "$group"
}

consumer_command() {
    local consumer="$1" group="$2"
    case "$consumer" in
        krec) echo "$KREC consume -b $BOOTSTRAP --share-group $group -t $BACKLOG -c $RECORDS -f raw" ;;
        java) echo "$KAFKA tool --name $BROKER_NAME org.apache.kafka.tools.ShareConsumerPerformance --bootstrap-server {bootstrap} --topic $BACKLOG --num-records $RECORDS --group $group --timeout 60000" ;;
        *) die "unknown consumer $consumer" ;;
    esac
}

# Untimed: each consumer reads everything once and the count is checked, so that a timed run
# cannot be fast by reading less.
check_count() {
    local consumer="$1" command got
    command="$(consumer_command "$consumer" "$(fresh_group)")"
    if [[ "$consumer" == java ]]; then
        # A CSV heading and one line of figures: the count is its data.consumed.in.nMsg field.
        got="$(eval "$command" 2>/dev/null | awk -F', *' '
            column { print $column; exit }
            { for (i = 1; i <= NF; i++) if ($i == "data.consumed.in.nMsg") column = i }')"
    else
        got="$(eval "$command" 2>/dev/null | wc -l)"
    fi
    [[ "$got" == "$RECORDS" ]] || die "$consumer read $got records, expected $RECORDS: the benchmark would be invalid"
    log "$consumer read all $got records"
}

timed_run() {
    local consumer="$1" run="$2" command
    command="$(consumer_command "$consumer" "$(fresh_group)")"
    if ! measure "$OUT/time.tmp" bash -c "$command" >/dev/null 2>"$OUT/stderr.tmp"; then
        cat "$OUT/stderr.tmp" >&2
        die "$consumer failed"
    fi
    read -r wall user sys rss_kb <"$OUT/time.tmp"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$consumer" "$run" "$RECORDS" "$wall" "$user" "$sys" \
        "$rss_kb" >>"$RESULTS"
    log "run $run: $consumer ${wall}s wall, ${user}s user, ${sys}s sys"
}

check_count krec
check_count java
for ((run = 1; run <= RUNS; run++)); do
    # Interleaved, the first one alternating: the noisy machine's drift falls on both.
    if ((run % 2)); then order=(krec java); else order=(java krec); fi
    for consumer in "${order[@]}"; do timed_run "$consumer" "$run"; done
done

/usr/bin/python3 - "$RESULTS" "$PARTITIONS" >"$OUT/report.md" <<'PY'
import sys, statistics
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])][1:]
partitions = sys.argv[2]
records = int(rows[0][2])
print(f"{records} records (200 B, lz4) on {partitions} partitions, one share-group member each,"
      " every record acknowledged; medians of interleaved runs (CPU = user + sys).\n")
print("| consumer | wall s | records/s | CPU s | CPU µs/record | max RSS MiB |")
print("|---|---:|---:|---:|---:|---:|")
cpu = {}
for consumer in ("krec", "java"):
    mine = [r for r in rows if r[0] == consumer]
    wall = statistics.median(float(r[3]) for r in mine)
    cpu[consumer] = statistics.median(float(r[4]) + float(r[5]) for r in mine)
    rss = statistics.median(int(r[6]) for r in mine) / 1024
    print(f"| {consumer} | {wall:.2f} | {records / wall:,.0f} | {cpu[consumer]:.2f} |"
          f" {cpu[consumer] / records * 1e6:.2f} | {rss:.0f} |")
print(f"\nkrec's CPU per record is {cpu['krec'] / cpu['java']:.2f} of Java's"
      f" ({cpu['java'] / cpu['krec']:.1f}x less).")
PY
cat "$OUT/report.md"
