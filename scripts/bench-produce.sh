#!/usr/bin/env bash
# End-to-end produce benchmark against a real broker: krec produce vs kcat -P (librdkafka), a
# minimal producer on the `rdkafka` crate (bundled librdkafka), a minimal franz-go producer and
# Kafka's ProducerPerformance (the Java producer), on the same records with the same settings.
#
#   scripts/bench-produce.sh [--records N] [--runs R] [--partitions P] [--codecs LIST] [--quick]
#                            [--peers-only] [--build-rdkafka] [--build-franz] [--stop]
#
#   --records N      records of 100-300 B values (default 1000000); the 1 KiB runs send N/2
#   --runs R         timed runs of each producer, interleaved (default 3); medians are reported
#   --partitions P   partitions per topic (default 4)
#   --codecs LIST    comma-separated codecs (default lz4,zstd,none)
#   --quick          3000 records, 1 run, results under target/bench-produce/quick (a smoke
#                    test: every step runs and every producer measured writes the full count;
#                    the Java producer on the first record size and codec only; stops the
#                    broker at the end if it started it)
#   --peers-only     measure the peers only, no krec (says so in the report; builds no krec)
#   --build-rdkafka  build benches/rdkafka-producer in a --quick run too (a full run always
#                    does; --quick otherwise uses a build already there, or runs without it)
#   --build-franz    the same for benches/franz-producer (Go; its modules from the module proxy)
#   --stop           stop the benchmark broker at the end (kept by default)
#
# Every producer reads the same input file, one record per line, KEY<TAB>VALUE, and adds two
# headers (trace-id, source), with linger.ms=5, batch.size=1 MiB, acks=all, idempotence on:
#   krec      krec produce -b B -t T -z CODEC -K '\t' -H .. -H .. -X linger.ms=5
#             -X batch.size=1048576 -X acks=all -X enable.idempotence=true -l FILE
#   kcat      kcat -P, the same flags (Debian's librdkafka)
#   rdkafka   benches/rdkafka-producer (the rdkafka crate, bundled librdkafka), the same -X
#   franz     benches/franz-producer (franz-go; idempotent with acks=all by default)
#   java      ProducerPerformance: it takes no headers and no input file of records: values
#             are drawn at random from the first 10000 values of the file (--payload-file),
#             keys are random integers below 2^20 (--key-distribution random); its JVM start
#             is part of its wall and CPU time
# Each run writes to a topic of its own, created just before the round; after the run the
# topic's end offsets must sum to exactly the records sent, or the run does not count (a
# --quick run then fails). Wall time, CPU seconds (user + sys) and peak RSS come from wait4(2)
# on the producer process, children included (`measure`, scripts/lib/timer.py); the order of
# the producers rotates from round to round. krec is measured only if its binary has a
# `produce` command: otherwise the script and the report say loudly that it was not; the report
# also names each peer left out (not built in a --quick run, a failed build, no go).
#
# Environment: KREC_BIN=path benchmarks that krec binary instead of building one;
# KREC_BENCH_BROKER names the broker instance (default bench-produce), reused if running.
#
# Output: target/bench-produce/<N>/results.tsv (every run) and report.md (the tables pasted
# into BENCHMARKS.md).
# shellcheck source=lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"

RECORDS=1000000
RUNS=3
PARTITIONS=4
CODECS=lz4,zstd,none
PEERS_ONLY=0
BUILD_RDKAFKA=0
BUILD_FRANZ=0
QUICK_SETTINGS=(RECORDS=3000 RUNS=1)
bench_args "--records= --runs= --partitions= --codecs= --peers-only --build-rdkafka --build-franz --stop" "$@"
bench_positive_int RECORDS RUNS PARTITIONS
((RECORDS >= 2)) || usage_error "--records must be >= 2"
IFS=, read -r -a CODEC_LIST <<<"$CODECS"
for codec in "${CODEC_LIST[@]}"; do
    [[ "$codec" =~ ^(none|gzip|snappy|lz4|zstd)$ ]] || usage_error "--codecs: unknown codec '$codec'"
done

if ((QUICK)); then OUT="$REPO_ROOT/target/bench-produce/quick"; else OUT="$REPO_ROOT/target/bench-produce/$RECORDS"; fi
mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"
KAFKA_PY=(/usr/bin/python3 "$SCRIPT_DIR/bench_partitions_kafka.py")
HEADERS=(-H "trace-id=5f0c2d4e-9a51-4f7b-8c1e-3b2a6d7e8f90" -H "source=bench-produce")
LINGER_MS=5
BATCH_BYTES=1048576

# --- producers --------------------------------------------------------------------------------

command -v kcat >/dev/null || die "kcat not found (scripts/install-deps.sh installs it)"
command -v java >/dev/null || die "java not found (the broker and the Java producer need it)"
PEERS=(kcat java)

KREC_NOTE=""
if ((PEERS_ONLY)); then
    KREC_NOTE="krec NOT MEASURED: --peers-only"
else
    bench_krec
    if "$KREC" produce --help >/dev/null 2>&1; then
        PEERS=(krec "${PEERS[@]}")
    else
        KREC_NOTE="krec NOT MEASURED: $KREC has no \`produce\` command ($({ "$KREC" --version 2>/dev/null || echo krec; } | head -1))"
    fi
fi
[[ -n "$KREC_NOTE" ]] && log "$KREC_NOTE; the peers only"

# bench_peer_build NAME BIN BUILD_FLAG BUILD_COMMAND...
# 0 if the peer NAME's executable BIN is usable: a full run builds it (or brings it up to date)
# with BUILD_COMMAND; a --quick run uses a build already there and builds none unless
# BUILD_FLAG is 1, so the suite's smoke run never pays for a build. 1 with a message if not.
bench_peer_build() {
    local name="$1" bin="$2" build="$3"
    shift 3
    if ((QUICK && !build)); then
        if [[ -x "$bin" ]]; then
            log "$name producer: the build already there ($bin; --quick builds none)"
            return 0
        fi
        NOT_MEASURED+=("$name: not built (scripts/$BENCH.sh --build-$name builds it)")
        log "$name producer NOT MEASURED: not built; run scripts/$BENCH.sh --build-$name (a build of minutes)"
        return 1
    fi
    log "building the $name producer (a clean build takes minutes)"
    if ! "$@" >"$OUT/$name-build.log" 2>&1 || [[ ! -x "$bin" ]]; then
        NOT_MEASURED+=("$name: the build failed ($OUT/$name-build.log)")
        log "$name producer NOT MEASURED: it does not build (see $OUT/$name-build.log)"
        return 1
    fi
}
NOT_MEASURED=()
RDKAFKA_BIN="$REPO_ROOT/target/rdkafka-producer/release/rdkafka-producer-bench"
if bench_peer_build rdkafka "$RDKAFKA_BIN" "$BUILD_RDKAFKA" \
    env CARGO_TARGET_DIR="$REPO_ROOT/target/rdkafka-producer" cargo build -q --release \
    --manifest-path "$REPO_ROOT/benches/rdkafka-producer/Cargo.toml"; then
    PEERS+=(rdkafka)
fi
FRANZ_BIN="$REPO_ROOT/target/franz-producer/franz-producer"
if command -v go >/dev/null && bench_peer_build franz "$FRANZ_BIN" "$BUILD_FRANZ" \
    bash -c 'cd "$1/benches/franz-producer" && go build -trimpath -o "$2" .' - "$REPO_ROOT" "$FRANZ_BIN"; then
    PEERS+=(franz)
elif ! command -v go >/dev/null; then
    NOT_MEASURED+=("franz: go not found")
    log "franz producer NOT MEASURED: go not found"
fi

# PRODUCER: the command line of producer $1 writing file $3 (size $4: small or 1k, $5 records)
# to topic $2 with codec $6.
producer_command() {
    local peer="$1" topic="$2" file="$3" size="$4" count="$5" codec="$6"
    local properties=(-X "linger.ms=$LINGER_MS" -X "batch.size=$BATCH_BYTES" -X acks=all -X enable.idempotence=true)
    case "$peer" in
        krec) PRODUCER=("$KREC" produce -b "$BOOTSTRAP" -t "$topic" -z "$codec" -K $'\t' "${HEADERS[@]}"
            "${properties[@]}" -l "$file") ;;
        kcat) PRODUCER=(kcat -P -q -b "$BOOTSTRAP" -t "$topic" -z "$codec" -K $'\t' "${HEADERS[@]}"
            "${properties[@]}" -l "$file") ;;
        rdkafka) PRODUCER=("$RDKAFKA_BIN" "$BOOTSTRAP" "$topic" "$file" "${HEADERS[@]}"
            -X "compression.codec=$codec" "${properties[@]}") ;;
        franz) PRODUCER=("$FRANZ_BIN" -b "$BOOTSTRAP" -t "$topic" -f "$file" -z "$codec"
            -linger-ms "$LINGER_MS" -batch-bytes "$BATCH_BYTES" "${HEADERS[@]}") ;;
        java) PRODUCER=(bash "$KAFKA" tool --name "$BROKER_NAME" org.apache.kafka.tools.ProducerPerformance
            --bootstrap-server "{bootstrap}" --topic "$topic" --num-records "$count" --throughput -1
            --payload-file "$OUT/java-values-$size.txt" --key-distribution random --record-key-range 1048576
            --command-property "compression.type=$codec" "linger.ms=$LINGER_MS" "batch.size=$BATCH_BYTES"
            acks=all enable.idempotence=true) ;;
        *) die "unknown producer $peer" ;;
    esac
}

# --- broker and records -----------------------------------------------------------------------

bench_broker bench-produce

# Values of 100-300 B (small, the records of scripts/bench-consume.sh) or of 1024 B (1k).
SIZES=(small 1k)
declare -A SIZE_RECORDS=([small]="$RECORDS" [1k]=$((RECORDS / 2)))
declare -A SIZE_VALUE_BYTES=([small]="" [1k]=1024)
for size in "${SIZES[@]}"; do
    payload="$REPO_ROOT/target/bench-produce/records-$size-${SIZE_RECORDS[$size]}.txt"
    bench_payload_file "$payload" "${SIZE_RECORDS[$size]}" "${SIZE_VALUE_BYTES[$size]}"
    # ProducerPerformance's values: the first values of the same file, one per line.
    head -n 10000 "$payload" | cut -f2- >"$OUT/java-values-$size.txt"
done

# --- runs -------------------------------------------------------------------------------------

# The producers of one round in the order of round $1: rotated by one per round.
round_order() {
    local shift=$(($1 % ${#ROUND_PEERS[@]}))
    echo "${ROUND_PEERS[@]:shift}" "${ROUND_PEERS[@]:0:shift}"
}

delete_topics() {
    # librdkafka's log lines at exit (an unserved background event) are noise here: stderr dropped.
    /usr/bin/python3 - "$BOOTSTRAP" "$@" 2>/dev/null <<'EOF' || log "could not delete topics $*"
import sys
from confluent_kafka.admin import AdminClient
admin = AdminClient({"bootstrap.servers": sys.argv[1]})
for future in admin.delete_topics(sys.argv[2:], operation_timeout=30).values():
    future.result(60)
EOF
}

# One timed run of producer $1 into topic $2; appends a line to the results (valid 1 only when
# the topic then holds exactly the records sent).
timed_run() {
    local peer="$1" topic="$2" size="$3" codec="$4" run="$5" count="${SIZE_RECORDS[$3]}" status=0 got valid=1
    producer_command "$peer" "$topic" "$REPO_ROOT/target/bench-produce/records-$size-$count.txt" "$size" "$count" "$codec"
    measure "$OUT/time.tmp" "${PRODUCER[@]}" </dev/null >"$OUT/stdout.tmp" 2>"$OUT/stderr.tmp" || status=$?
    read -r wall user sys rss_kb <"$OUT/time.tmp"
    got="$("${KAFKA_PY[@]}" records "$BOOTSTRAP" "$topic" 2>/dev/null || echo "?")"
    if ((status != 0)) || [[ "$got" != "$count" ]]; then
        valid=0
        INVALID+=("$peer $size $codec run $run: exit status $status, $got of $count records in $topic")
        log "INVALID RUN: $peer wrote $got of $count records to $topic (exit status $status); stderr:"
        tail -n 5 "$OUT/stderr.tmp" >&2
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$size" "$codec" "$peer" "$run" "$count" \
        "$valid" "$wall" "$user" "$sys" "$rss_kb" >>"$RESULTS"
}

printf 'size\tcodec\tproducer\trun\trecords\tvalid\twall_s\tuser_s\tsys_s\tmax_rss_kb\n' >"$RESULTS"
INVALID=()
first_pair=1
for size in "${SIZES[@]}"; do
    for codec in "${CODEC_LIST[@]}"; do
        # The JVM's start is most of a smoke run's Java time, the same on every pair: --quick
        # runs it on the first pair only.
        ROUND_PEERS=()
        for peer in "${PEERS[@]}"; do
            ((QUICK && !first_pair)) && [[ "$peer" == java ]] && continue
            ROUND_PEERS+=("$peer")
        done
        first_pair=0
        for ((run = 1; run <= RUNS; run++)); do
            log "$size records, $codec: round $run of $RUNS ($(round_order "$run"))"
            read -r -a order <<<"$(round_order "$run")"
            topics=()
            for peer in "${order[@]}"; do topics+=("bp-$RECORDS-$size-$codec-$peer-$run-$$"); done
            "${KAFKA_PY[@]}" create "$BOOTSTRAP" "${topics[@]/%/:$PARTITIONS}"
            for i in "${!order[@]}"; do timed_run "${order[i]}" "${topics[i]}" "$size" "$codec" "$run"; done
            delete_topics "${topics[@]}"
        done
    done
done

# --- report -----------------------------------------------------------------------------------

versions() {
    local line
    line="kcat $(kcat -V 2>&1 | awk '/^Version/ { print $2; exit }') (librdkafka $(kcat -V 2>&1 | sed -n 's/.*librdkafka \([0-9.]*\).*/\1/p'))"
    [[ " ${PEERS[*]} " == *" krec "* ]] && line="$("$KREC" --version 2>/dev/null) at $(git -C "$REPO_ROOT" rev-parse --short HEAD); $line"
    [[ " ${PEERS[*]} " == *" rdkafka "* ]] && line="$line; $("$RDKAFKA_BIN" --version)"
    [[ " ${PEERS[*]} " == *" franz "* ]] && line="$line; $("$FRANZ_BIN" -version)"
    echo "$line; Kafka $(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$SCRIPT_DIR/kafka/pom.xml")'s producer on $(java -version 2>&1 | head -1)"
}
{
    echo "Machine: $(machine_line)"
    echo "Versions: $(versions)"
    echo "Command: scripts/bench-produce.sh --records $RECORDS --runs $RUNS --partitions $PARTITIONS --codecs $CODECS"
    [[ -n "$KREC_NOTE" ]] && echo "**$KREC_NOTE**"
    ((${#NOT_MEASURED[@]})) && echo "Peers not measured: $(IFS=';'; echo "${NOT_MEASURED[*]}" | sed 's/;/; /g')"
    echo
    /usr/bin/python3 - "$RESULTS" <<'EOF'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t")]
groups = {}
for r in rows:
    groups.setdefault((r["size"], r["codec"]), {}).setdefault(r["producer"], []).append(r)
size_names = {"small": "100-300 B values", "1k": "1 KiB values"}
order = ["krec", "kcat", "rdkafka", "franz", "java"]
for (size, codec), producers in groups.items():
    stats = {}
    for name, runs in sorted(producers.items(), key=lambda item: order.index(item[0])):
        valid = [r for r in runs if r["valid"] == "1"]
        if not valid:
            stats[name] = None
            continue
        records = int(valid[0]["records"])
        cpu = statistics.median((float(r["user_s"]) + float(r["sys_s"])) / records * 1e6 for r in valid)
        rate = statistics.median(records / float(r["wall_s"]) for r in valid)
        rss = statistics.median(int(r["max_rss_kb"]) / 1024 for r in valid)
        stats[name] = (cpu, rate, rss, len(valid), len(runs), records)
    peers = [s for n, s in stats.items() if s and n != "krec"]
    best_cpu = min((s[0] for s in peers), default=None)
    best_rate = max((s[1] for s in peers), default=None)
    records = next((s[5] for s in stats.values() if s), 0)
    print(f"{size_names.get(size, size)}, {codec}, {records} records (medians):\n")
    print("| producer | CPU µs/record | records/s | peak RSS MiB | CPU / best peer | records/s / best peer | valid runs |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    if "krec" not in stats:
        print("| krec | not measured | | | | | |")
    for name, s in stats.items():
        if s is None:
            print(f"| {name} | no valid run | | | | | 0/{len(producers[name])} |")
            continue
        cpu, rate, rss, valid, runs, _ = s
        print(f"| {name} | {cpu:.2f} | {rate:,.0f} | {rss:.0f} | {cpu / best_cpu:.2f} | {rate / best_rate:.2f} | {valid}/{runs} |")
    print()
EOF
    if ((${#INVALID[@]})); then
        echo "Invalid runs (not counted):"
        printf -- '- %s\n' "${INVALID[@]}"
    fi
} >"$OUT/report.md"
cat "$OUT/report.md"
log "results in $OUT (report.md, results.tsv)"
[[ -n "$KREC_NOTE" ]] && log "$KREC_NOTE"
if ((${#INVALID[@]})); then
    log "${#INVALID[@]} runs did not write the full count (listed in the report)"
    ((QUICK)) && exit 1
fi
exit 0
