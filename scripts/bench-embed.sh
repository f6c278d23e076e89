#!/usr/bin/env bash
# Embedding benchmark against a real broker: the same program, reading one topic from the
# beginning to the end of every partition and then exiting, written on krec-consumer and on the
# `rdkafka` crate (librdkafka), timed side by side. Targets: krec at most 1/3 of rdkafka's CPU
# per record (issue 32); krec-simple within 5% of krec-fast's (issue 39).
#
#   scripts/bench-embed.sh [--records N] [--runs R] [--partitions P] [--quick] [--build-rdkafka] [--stop]
#
#   --records N      records in the topic (default 1000000): values of 100-200 B of words, lz4
#   --runs R         timed runs of each program, interleaved (default 5); medians are reported
#   --partitions P   partitions of the topic (default 4)
#   --quick          3000 records, 1 run, results under target/bench-embed/quick (a smoke test;
#                    stops the broker at the end if it started it). Uses the test-profile builds
#                    of the krec programs that `cargo test --workspace --all-targets --no-run`
#                    makes (no release build), and never builds the rdkafka crate unless
#                    --build-rdkafka: a build already there is used, else that side is skipped
#   --build-rdkafka  build benches/rdkafka-consumer (a full run always does; the first build
#                    compiles librdkafka: minutes)
#   --stop           stop the benchmark broker at the end (kept by default: reruns reuse the topic)
#
# The programs (each prints `records=N value_bytes=B value_sum=S` to stdout: records read, bytes
# of their values, the sum of every value byte; the script stops unless every program prints
# the same line and N is the topic's record count):
#   rdkafka      benches/rdkafka-consumer --count: a BaseConsumer polled until every partition
#                reported its end (settings in its src/main.rs)
#   krec-fast    benches/embed_fast.rs: krec-consumer's zero-copy path, `chunk.batches()` +
#                `try_for_each_ref` + `records_in_place`
#   krec-simple  benches/embed_simple.rs: the front door as the crate docs show it,
#                `chunk.for_each_record(|record| ..)`
#                Both krec programs are `[[bench]] harness = false` targets of the root package
#                and share everything but that decode path: `Consumer::connect` with the
#                defaults, `assign_topic(.., Beginning)`, `stop_at_end(true)`, a
#                `while let Some(chunk) = consumer.next_chunk()` loop, a current-thread runtime
#
# The topic, be-N-pP-lz4, is filled once by Kafka's ProducerPerformance (Java producer, lz4,
# payloads drawn from target/bench-embed/payloads.txt, batch.size 256 KiB) and reused after.
# CPU (user + sys) and wall time from wait4(2), children included (scripts/lib/timer.py);
# each round runs every program once, the first one rotating between rounds.
#
# Environment: KREC_BENCH_BROKER names the broker instance (default bench-embed), reused if
# running. Output: target/bench-embed/report.md (the table for BENCHMARKS.md), results.tsv
# (every run); --quick: under target/bench-embed/quick/.
# shellcheck source=lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"

RECORDS=1000000
RUNS=5
PARTITIONS=4
BUILD_RDKAFKA=0
QUICK_SETTINGS=(RECORDS=3000 RUNS=1)
bench_args "--records= --runs= --partitions= --build-rdkafka --stop" "$@"
bench_positive_int RECORDS RUNS PARTITIONS

OUT="$REPO_ROOT/target/bench-embed"
((QUICK)) && OUT="$OUT/quick"
mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"

# --- programs ---------------------------------------------------------------------------------

# A full run measures release builds; a smoke run reuses the test-profile builds of the benches
# that `cargo test --workspace --all-targets --no-run` makes (the same command, so the same
# units, with the suite's features from test.sh: nothing to compile after its build step).
if ((QUICK)); then
    BUILD_BENCH=(cargo test -q --workspace --no-run ${KREC_CARGO_FEATURES:+--features "$KREC_CARGO_FEATURES"})
    BUILD_NOTE="test profile"
else
    BUILD_BENCH=(cargo build -q --release -p krec)
    BUILD_NOTE="release"
fi

PROGRAMS=()
declare -A COMMAND_OF=()
# add_bench NAME BENCH: builds the root package's program benches/BENCH.rs and adds it as NAME.
add_bench() {
    local name="$1" bench="$2"
    log "building $name (benches/$bench.rs, $BUILD_NOTE)"
    PROGRAMS+=("$name")
    COMMAND_OF[$name]="$(bench_program "$bench" "${BUILD_BENCH[@]}")"
}

if bench_rdkafka_consumer "$OUT/rdkafka-build.log"; then
    PROGRAMS+=(rdkafka)
    COMMAND_OF[rdkafka]="$RDKAFKA_BIN --count"
    RDKAFKA_VERSION="$("$RDKAFKA_BIN" --version)"
else
    ((QUICK)) || die "no rdkafka consumer: the reference of this benchmark (see $OUT/rdkafka-build.log)"
    RDKAFKA_VERSION="rdkafka: not run"
fi
add_bench krec-fast embed_fast
add_bench krec-simple embed_simple

# --- broker and topic -------------------------------------------------------------------------

bench_broker bench-embed
TOPIC="be-$RECORDS-p$PARTITIONS-lz4"

# Records in a topic: the sum of its partitions' end offsets (0 if it does not exist).
topic_end_offsets() {
    { "$KAFKA" tool --name "$BROKER_NAME" org.apache.kafka.tools.GetOffsetShell \
        --bootstrap-server "{bootstrap}" --topic "$1" 2>/dev/null || true; } \
        | awk -F: '{ sum += $NF } END { print sum + 0 }'
}

# 1000 values of 100-200 B made of words (so lz4 has something to find), one per line.
PAYLOADS="$REPO_ROOT/target/bench-embed/payloads.txt"
if [[ ! -s "$PAYLOADS" ]]; then
    python3 - "$PAYLOADS" <<'EOF'
import random, sys
rng = random.Random(20261203)
words = ["order", "customer", "shipped", "invoice", "pending", "paid", "warehouse", "item",
         "quantity", "price", "EUR", "USD", "berlin", "lisbon", "osaka", "status", "created",
         "updated", "true", "false", "null", "id", "sku", "cart", "session", "region"]
words += ["%x" % rng.getrandbits(32) for _ in range(400)]
with open(sys.argv[1], "w") as out:
    for _ in range(1000):
        size = rng.randint(100, 200)
        parts, length = [], 0
        while length < size:
            parts.append(rng.choice(words))
            length += len(parts[-1]) + 1
        out.write(" ".join(parts)[:size].rstrip() + "\n")
EOF
fi

have="$(topic_end_offsets "$TOPIC")"
if [[ "$have" != "$RECORDS" ]]; then
    [[ "$have" == 0 ]] || die "topic $TOPIC holds $have records, expected 0 or $RECORDS: delete target/kafka/$BROKER_NAME (scripts/kafka.sh stop --name $BROKER_NAME --clean)"
    log "filling $TOPIC ($RECORDS records, lz4, $PARTITIONS partitions)"
    "$KAFKA" topic --name "$BROKER_NAME" create "$TOPIC" --partitions "$PARTITIONS" >/dev/null 2>&1 || true
    "$KAFKA" tool --name "$BROKER_NAME" org.apache.kafka.tools.ProducerPerformance \
        --topic "$TOPIC" --num-records "$RECORDS" --payload-file "$PAYLOADS" --throughput -1 \
        --producer-props "bootstrap.servers={bootstrap}" compression.type=lz4 \
        batch.size=262144 linger.ms=20 acks=1 >"$OUT/produce.log" 2>&1
    have="$(topic_end_offsets "$TOPIC")"
    [[ "$have" == "$RECORDS" ]] || die "topic $TOPIC holds $have records after filling, expected $RECORDS"
fi

# --- runs -------------------------------------------------------------------------------------

((${#PROGRAMS[@]})) || die "no program to run"
# One untimed run of each: every program must print the same line, with the topic's count.
expected=""
for name in "${PROGRAMS[@]}"; do
    got="$(${COMMAND_OF[$name]} "$BOOTSTRAP" "$TOPIC" 2>"$OUT/stderr.tmp")" || {
        cat "$OUT/stderr.tmp" >&2
        die "$name failed on $TOPIC"
    }
    [[ "$got" == "records=$RECORDS "* ]] || die "$name read '$got', expected records=$RECORDS: the benchmark would be invalid"
    [[ -z "$expected" || "$got" == "$expected" ]] || die "$name read '$got', the programs before it '$expected'"
    expected="$got"
    log "  $name: $got"
done

printf 'program\trun\trecords\twall_s\tuser_s\tsys_s\tmax_rss_kb\n' >"$RESULTS"
count=${#PROGRAMS[@]}
for ((run = 1; run <= RUNS; run++)); do
    log "round $run of $RUNS"
    for ((i = 0; i < count; i++)); do
        name="${PROGRAMS[(i + run - 1) % count]}"
        # shellcheck disable=SC2086 # the command is a path and its flags, no quoting inside
        measure "$OUT/time.tmp" ${COMMAND_OF[$name]} "$BOOTSTRAP" "$TOPIC" >"$OUT/stdout.tmp" 2>"$OUT/stderr.tmp" || {
            cat "$OUT/stderr.tmp" >&2
            die "$name failed on $TOPIC"
        }
        [[ "$(cat "$OUT/stdout.tmp")" == "$expected" ]] || die "$name read '$(cat "$OUT/stdout.tmp")' in round $run, expected '$expected'"
        read -r wall user sys rss_kb <"$OUT/time.tmp"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$run" "$RECORDS" "$wall" "$user" "$sys" "$rss_kb" >>"$RESULTS"
    done
done

# --- report -----------------------------------------------------------------------------------

{
    echo "Run of $(date -u '+%Y-%m-%d, %H:%M') UTC; krec at $(git -C "$REPO_ROOT" rev-parse --short HEAD); $RDKAFKA_VERSION"
    echo "Machine: $(machine_line); load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "Command: scripts/bench-embed.sh --records $RECORDS --runs $RUNS --partitions $PARTITIONS"
    echo "Topic: $TOPIC, $RECORDS records ($expected)"
    ((QUICK)) && echo "A smoke run: test-profile krec, a few records; not a measurement."
    echo
    python3 - "$RESULTS" "$QUICK" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
names = list(dict.fromkeys(row["program"] for row in rows))
def median(name, f):
    return statistics.median(f(row) for row in rows if row["program"] == name)
cpu = {n: median(n, lambda r: float(r["user_s"]) + float(r["sys_s"])) for n in names}
wall = {n: median(n, lambda r: float(r["wall_s"])) for n in names}
rss = {n: median(n, lambda r: int(r["max_rss_kb"])) for n in names}
records = int(rows[0]["records"])
runs = max(int(row["run"]) for row in rows)
print(f"Medians of {runs} interleaved run(s):")
print()
print("| program | CPU µs / record | records/s (wall) | CPU / rdkafka's | wall s | peak RSS MiB |")
print("|---|---:|---:|---:|---:|---:|")
for n in names:
    ratio = "%.2f" % (cpu[n] / cpu["rdkafka"]) if "rdkafka" in cpu else "-"
    print(f"| {n} | {cpu[n] / records * 1e6:.3f} | {records / wall[n]:,.0f} | {ratio} | "
          f"{wall[n]:.3f} | {rss[n] / 1024:.0f} |")
# A smoke run's debug builds say nothing about the target.
if "rdkafka" in cpu and sys.argv[2] == "0":
    print()
    for n in names:
        if n.startswith("krec"):
            ratio = cpu[n] / cpu["rdkafka"]
            print(f"- {n}: {ratio:.2f} of rdkafka's CPU per record; target at most 1/3: "
                  + ("met" if ratio <= 1 / 3 else "NOT met"))
if {"krec-fast", "krec-simple"} <= cpu.keys() and sys.argv[2] == "0":
    ratio = cpu["krec-simple"] / cpu["krec-fast"]
    print(f"- krec-simple: {ratio:.3f} of krec-fast's CPU per record; target at most 1.05: "
          + ("met" if ratio <= 1.05 else "NOT met"))
EOF
} >"$OUT/report.md"
cat "$OUT/report.md"
log "results in $OUT (report.md, results.tsv)"
