#!/usr/bin/env bash
# CPU per record decoding Schema Registry values: an Avro topic (ten fields, about 200 B per
# value) and a Protobuf topic, written by the Confluent Python serializers into a real broker
# with a real registry (Apicurio). Compares, per record: krec printing raw bytes, krec decoding
# (-s value=avro|protobuf, as -J and as raw JSON text), and the Confluent Python deserializer
# printing JSON lines. Every consumer writes to /dev/null; CPU is user + sys from wait4(2).
#
#   scripts/bench-schema.sh [--records N] [--runs R] [--quick] [--stop]
#
#   --records N  records per topic (default 200000)
#   --runs R     timed runs of each consumer (default 3); medians are reported
#   --quick      2000 records, 1 run, results under target/bench-schema/quick: proves every
#                step works; stops the broker and the registry if it started them
#   --stop       stop the benchmark broker and registry at the end
#
# KREC_BENCH_BROKER names the broker (default bench-schema), KREC_BENCH_REGISTRY the registry
# instance (default: the broker's name), each reused if running; KREC_BIN benchmarks that krec
# instead of building one; KREC_BENCH_RUN_ID reuses the topics an earlier run filled (their id
# is in their names).
# Output: target/bench-schema/<N>/report.md (pasted into BENCHMARKS.md).
# shellcheck source=lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"
REGISTRY="$SCRIPT_DIR/registry.sh"

RECORDS=200000
RUNS=3
QUICK_SETTINGS=(RECORDS=2000 RUNS=1)
bench_args "--records= --runs= --stop" "$@"
bench_positive_int RECORDS RUNS
OUT="$REPO_ROOT/target/bench-schema/$RECORDS"
((QUICK)) && OUT="$REPO_ROOT/target/bench-schema/quick"
mkdir -p "$OUT"

bench_krec
bash "$REGISTRY" fetch
bench_broker bench-schema
REGISTRY_NAME="${KREC_BENCH_REGISTRY:-$BROKER_NAME}"
# The registry as the broker: reused if it answers, else started (and stopped by --quick).
stop_registry="bash \"\$REGISTRY\" stop --name \"$REGISTRY_NAME\" >/dev/null 2>&1"
if ! REGISTRY_URL="$(bash "$REGISTRY" url --name "$REGISTRY_NAME" 2>/dev/null)" ||
    ! curl -sf "$REGISTRY_URL/schemas/types" >/dev/null 2>&1; then
    log "starting registry '$REGISTRY_NAME'"
    ((QUICK || STOP)) && bench_on_exit "$stop_registry"
    REGISTRY_URL="$(bash "$REGISTRY" start --name "$REGISTRY_NAME")"
elif ((STOP)); then
    bench_on_exit "$stop_registry"
fi
PYTHON="$(bash "$REGISTRY" python)"

# The registry keeps schemas in memory: topics are filled again whenever it is new.
run_id="${KREC_BENCH_RUN_ID:-$(date +%s)}"
for kind in avro protobuf; do
    topic="bs-$RECORDS-$kind-$run_id"
    declare "TOPIC_$kind=$topic"
    # KREC_BENCH_RUN_ID: reuse the topics of that earlier run (same registry instance).
    [[ -n "${KREC_BENCH_RUN_ID:-}" ]] && continue
    bash "$KAFKA" topic --name "$BROKER_NAME" create "$topic" --partitions 1 --replication-factor 1 >/dev/null
    log "filling $topic with $RECORDS records"
    "$PYTHON" "$REPO_ROOT/crates/cli/tests/support/schema_producer.py" "$BOOTSTRAP" "$REGISTRY_URL" "$topic" "bench-$kind" "$RECORDS"
done

# consumer NAME KIND: the command line of one consumer.
consumer() {
    local name="$1" kind="$2" topic
    topic="TOPIC_$kind"; topic="${!topic}"
    case "$name" in
        krec-raw) echo "$KREC consume -b $BOOTSTRAP -t $topic -e --threads 1 -f raw" ;;
        krec-json) echo "$KREC consume -b $BOOTSTRAP -t $topic -e --threads 1 -J" ;;
        krec-decode-raw) echo "$KREC consume -b $BOOTSTRAP -t $topic -e --threads 1 -f raw -s value=$kind -r $REGISTRY_URL" ;;
        krec-decode-json) echo "$KREC consume -b $BOOTSTRAP -t $topic -e --threads 1 -J -s value=$kind -r $REGISTRY_URL" ;;
        python) echo "$PYTHON $SCRIPT_DIR/bench_schema_python.py $BOOTSTRAP $REGISTRY_URL $topic $kind $RECORDS" ;;
    esac
}
CONSUMERS=(krec-raw krec-json krec-decode-raw krec-decode-json python)

for kind in avro protobuf; do
    for name in "${CONSUMERS[@]}"; do
        # Raw Avro and Protobuf bytes hold newlines: krec-json reads the same records.
        [[ "$name" == krec-raw ]] && continue
        # shellcheck disable=SC2091 # the command line, split into words and run
        lines="$($(consumer "$name" "$kind") | wc -l)"
        [[ "$lines" == "$RECORDS" ]] || die "$name on $kind printed $lines lines, not $RECORDS"
    done
done
topic="TOPIC_avro"; value_bytes="$("$KREC" consume -b "$BOOTSTRAP" -t "${!topic}" -e -f '%S\n' | awk '{s+=$1} END {printf "%.0f", s/NR}')"

: >"$OUT/results.tsv"
for _ in $(seq 1 "$RUNS"); do
    for kind in avro protobuf; do
        for name in "${CONSUMERS[@]}"; do
            # shellcheck disable=SC2046
            measure "$OUT/one" $(consumer "$name" "$kind") >/dev/null
            read -r _ user sys _ <"$OUT/one"
            printf '%s\t%s\t%s\n' "$kind" "$name" "$(awk "BEGIN { print $user + $sys }")" >>"$OUT/results.tsv"
        done
    done
done

python3 - "$OUT/results.tsv" "$RECORDS" "$value_bytes" >"$OUT/report.md" <<'PY'
import statistics, sys
path, records, value_bytes = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cpu = {}
for line in open(path):
    kind, name, seconds = line.split("\t")
    cpu.setdefault((kind, name), []).append(float(seconds))
med = {key: statistics.median(values) for key, values in cpu.items()}
print(f"{records} records per topic, one partition, lz4; Avro values average {value_bytes} B. "
      "Median CPU (user + sys) of each whole process, children included.\n")
print("| topic | consumer | CPU s | µs CPU / record | records / CPU-second |")
print("|---|---|---:|---:|---:|")
names = {"krec-raw": "krec `-f raw` (bytes, no decoding)", "krec-json": "krec `-J` (bytes, no decoding)",
         "krec-decode-raw": "krec `-f raw -s value=K`", "krec-decode-json": "krec `-J -s value=K`",
         "python": "Confluent Python deserializer + json.dumps"}
for (kind, name), seconds in med.items():
    print(f"| {kind} | {names[name].replace('K', kind) if 'K' in names[name] else names[name]} | {seconds:.2f} | "
          f"{seconds / records * 1e6:.2f} | {records / seconds:,.0f} |")
print()
for kind in ("avro", "protobuf"):
    python, decode, raw = med[(kind, "python")], med[(kind, "krec-decode-json")], med[(kind, "krec-raw")]
    print(f"- {kind}: krec `-J -s` does {python / decode:.1f}x the Python deserializer's records per "
          f"CPU-second; decoding costs {med[(kind, 'krec-decode-raw')] / raw:.2f}x the CPU of printing raw bytes "
          f"(`-J`: {decode / med[(kind, 'krec-json')]:.2f}x).")
PY
cat "$OUT/report.md"
