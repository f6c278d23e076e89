#!/usr/bin/env bash
# Consuming many partitions against a real broker: krec with and without KIP-227 fetch
# sessions on a topic of P partitions (default 1,000), and the same records on 4 partitions.
#
#   scripts/bench-partitions.sh [--records N] [--runs R] [--partitions P] [--rates R[,R...]]
#                               [--tail-seconds S] [--quick] [--stop]
#
#   --records N       records of 100 B in each backlog topic (default 1000000)
#   --runs R          interleaved rounds; medians are reported (default 5)
#   --partitions P    partitions of the many-partition topics (default 1000)
#   --topics T        topics of 10 partitions in the many-topics backlog (default 100)
#   --rates R,...     records/s asked of the producer while krec tails, one tailing window
#                     each (default 500,2000; a loaded machine delivers less: the report
#                     gives the rate reached)
#   --tail-seconds S  length of each tailing window (default 10)
#   --quick           2000 records, 100 partitions, 5 topics, 1 round, 1 s windows, results under
#                     target/bench-partitions/quick (a smoke test: every step runs and every
#                     run reads the full count; stops the broker if it started it)
#   --stop            stop the benchmark broker at the end (kept by default, so a rerun with
#                     the same sizes reuses the topics)
#
# Phases, each run of krec measured by wait4(2) (CPU, peak RSS) and the broker's CPU by its
# process times in /proc/PID/stat over the same window; fetch requests and their bytes come
# from the broker's own RequestMetrics (RequestBytes of Fetch: count and mean, exact), sampled
# over JMX every 250 ms by Kafka's JmxTool for the whole benchmark:
#   backlog  `krec consume -e -f raw` of N records (ProducerPerformance, 100 B values, batches
#            of 64 KiB by the sticky partitioner on both topics): P partitions with sessions,
#            P partitions with -X fetch.sessions=false, 4 partitions; and N records over T
#            topics of 10 partitions (librdkafka's sticky partitioner) read by a fresh group
#            (`-G`, the one way krec reads many topics); one untimed run of each checks the
#            count first.
#   tail     `krec consume -o end` while a producer writes R records/s at random partitions
#            for S seconds (the steady state), for each rate: P partitions with and without
#            sessions; every record written in the window must come out.
#   idle     `krec consume -o end` on an idle topic of P and of 4 partitions for 3 s: peak RSS,
#            whose difference is what each partition costs; and the library's live heap
#            bytes per partition on the same topics (benches/partition_memory.rs).
#
# Environment: KREC_BIN=path benchmarks that krec binary instead of building one;
# KREC_BENCH_BROKER names the broker instance (default bench-partitions), reused if running.
#
# Output: target/bench-partitions/<N>-<P>/runs.tsv (every run), jmx.csv (the samples) and
# report.md (the tables for BENCHMARKS.md).
# shellcheck source=lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"

RECORDS=1000000
RUNS=5
PARTITIONS=1000
TOPICS=100
RATES=500,2000
TAIL_SECONDS=10
QUICK_SETTINGS=(RECORDS=2000 RUNS=1 PARTITIONS=100 TOPICS=5 RATES=500 TAIL_SECONDS=1)
bench_args "--records= --runs= --partitions= --topics= --rates= --tail-seconds= --stop" "$@"
bench_positive_int RECORDS RUNS PARTITIONS TOPICS TAIL_SECONDS

if ((QUICK)); then
    OUT="$REPO_ROOT/target/bench-partitions/quick"
else
    OUT="$REPO_ROOT/target/bench-partitions/$RECORDS-$PARTITIONS"
fi
mkdir -p "$OUT"
RUNS_TSV="$OUT/runs.tsv"
JMX_CSV="$OUT/jmx.csv"

bench_krec
/usr/bin/python3 -c 'import confluent_kafka' 2>/dev/null \
    || die "python3-confluent-kafka is missing (scripts/install-deps.sh installs it)"
IFS=, read -r -a RATE_LIST <<<"$RATES"
# Seconds krec tails before a window opens (to reach the end of every partition), and tails
# an idle topic for its peak RSS.
WARMUP_SECONDS=2
IDLE_SECONDS=3
((QUICK)) && WARMUP_SECONDS=1 && IDLE_SECONDS=1

# --- broker and topics ------------------------------------------------------------------------

bench_broker bench-partitions
DATA_DIR="$("$KAFKA" datadir --name "$BROKER_NAME")"
BROKER_PID="$(cat "$(dirname "$DATA_DIR")/pid")"
JMX_URL="$("$KAFKA" jmx-url --name "$BROKER_NAME")"
SAMPLER_PID=""
# A krec running in the background (tail and idle phases), stopped if the script fails.
BACKGROUND_KREC=""
# shellcheck disable=SC2016 # expanded at exit
bench_on_exit '[[ -z "$SAMPLER_PID" ]] || kill "$SAMPLER_PID" 2>/dev/null'
# shellcheck disable=SC2016
bench_on_exit '[[ -z "$BACKGROUND_KREC" ]] || kill "$BACKGROUND_KREC" 2>/dev/null'

MANY="bp-$RECORDS-p$PARTITIONS"
FEW="bp-$RECORDS-p4"
TAIL_MANY="bp-tail-p$PARTITIONS"
IDLE_MANY="bp-idle-p$PARTITIONS"
IDLE_FEW="bp-idle-p4"
# The many-topics backlog: TOPICS topics of 10 partitions, as one comma-separated list.
MANY_TOPICS=()
for ((t = 0; t < TOPICS; t++)); do MANY_TOPICS+=("bp-$RECORDS-t$TOPICS-$t"); done
MANY_TOPICS_LIST="$(IFS=,; echo "${MANY_TOPICS[*]}")"

KAFKA_PY=(/usr/bin/python3 "$SCRIPT_DIR/bench_partitions_kafka.py")

# Creates the missing topics, then waits until the broker has created every partition's log
# (it does so one by one after a topic exists; producing before that is slow).
create_topics() {
    "${KAFKA_PY[@]}" create "$BOOTSTRAP" "$@"
    local spec topic partitions logs
    for spec in "$@"; do
        topic="${spec%:*}" partitions="${spec##*:}"
        for _ in $(seq 1500); do
            logs="$(find "$DATA_DIR" -maxdepth 1 -name "$topic-*" | wc -l)"
            ((logs == partitions)) && break
            sleep 0.2
        done
        ((logs == partitions)) || die "$topic: $logs of $partitions logs created"
    done
}

fill_topic() {
    local topic="$1" have
    have="$("${KAFKA_PY[@]}" records "$BOOTSTRAP" "$topic")"
    [[ "$have" == "$RECORDS" ]] && return 0
    [[ "$have" == 0 ]] || die "$topic holds $have records, expected 0 or $RECORDS: scripts/kafka.sh stop --name $BROKER_NAME --clean"
    log "filling $topic ($RECORDS records)"
    "$KAFKA" tool --name "$BROKER_NAME" org.apache.kafka.tools.ProducerPerformance \
        --topic "$topic" --num-records "$RECORDS" --record-size 100 --throughput -1 \
        --producer-props "bootstrap.servers={bootstrap}" batch.size=65536 linger.ms=20 acks=1 \
        >"$OUT/produce-$topic.log" 2>&1
    have="$("${KAFKA_PY[@]}" records "$BOOTSTRAP" "$topic")"
    [[ "$have" == "$RECORDS" ]] || die "$topic holds $have records after filling, expected $RECORDS"
}

create_topics "$MANY:$PARTITIONS" "$FEW:4" "$TAIL_MANY:$PARTITIONS" "$IDLE_MANY:$PARTITIONS" "$IDLE_FEW:4"
fill_topic "$MANY"
fill_topic "$FEW"
create_topics "${MANY_TOPICS[@]/%/:10}"
have="$("${KAFKA_PY[@]}" records "$BOOTSTRAP" "${MANY_TOPICS[@]}")"
if [[ "$have" != "$RECORDS" ]]; then
    [[ "$have" == 0 ]] || die "the $TOPICS topics hold $have records, expected 0 or $RECORDS"
    log "filling $TOPICS topics of 10 partitions ($RECORDS records)"
    "${KAFKA_PY[@]}" fill "$BOOTSTRAP" "$RECORDS" "${MANY_TOPICS[@]}"
    have="$("${KAFKA_PY[@]}" records "$BOOTSTRAP" "${MANY_TOPICS[@]}")"
    [[ "$have" == "$RECORDS" ]] || die "the $TOPICS topics hold $have records after filling"
fi

# --- measuring --------------------------------------------------------------------------------

log "sampling the broker's fetch request metrics over JMX"
"$KAFKA" tool --name "$BROKER_NAME" org.apache.kafka.tools.JmxTool --jmx-url "$JMX_URL" \
    --object-name 'kafka.network:type=RequestMetrics,name=RequestBytes,request=Fetch' \
    --reporting-interval 250 >"$JMX_CSV" 2>"$OUT/jmx.log" &
SAMPLER_PID=$!
for _ in $(seq 200); do
    (($(wc -l <"$JMX_CSV") >= 2)) && break
    sleep 0.1
done
(($(wc -l <"$JMX_CSV") >= 2)) || die "JmxTool gave no samples (see $OUT/jmx.log)"

now_ms() { date +%s%3N; }
# CPU ticks (user + system) of a process.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# Lets the sampler record the quiet state before and after each run.
settle() { sleep 0.8; }

printf 'phase\tconfig\tround\trecords\tstart_ms\tend_ms\twall_s\tuser_s\tsys_s\tmax_rss_kb\tbroker_ticks\n' >"$RUNS_TSV"
TICKS_PER_S="$(getconf CLK_TCK)"

# record PHASE CONFIG ROUND RECORDS START END TIMING_FILE BROKER_TICKS
record() {
    local wall user sys rss
    read -r wall user sys rss <"$7"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" \
        "$wall" "$user" "$sys" "$rss" "$8" >>"$RUNS_TSV"
}

backlog_command() {
    case "$1" in
        sessions) echo "$KREC consume -b $BOOTSTRAP -t $MANY -e -f raw" ;;
        full) echo "$KREC consume -b $BOOTSTRAP -t $MANY -e -f raw -X fetch.sessions=false" ;;
        four) echo "$KREC consume -b $BOOTSTRAP -t $FEW -e -f raw" ;;
        topics) echo "$KREC consume -b $BOOTSTRAP -t $MANY_TOPICS_LIST -G bench-partitions-$RANDOM-$RANDOM -e -f raw" ;;
    esac
}

BACKLOG_CONFIGS=(sessions full four topics)
for config in "${BACKLOG_CONFIGS[@]}"; do
    # shellcheck disable=SC2091 # the command line, split into words and run
    got="$($(backlog_command "$config") | wc -l)"
    [[ "$got" == "$RECORDS" ]] || die "backlog $config read $got records, expected $RECORDS"
    log "backlog $config: the check run read all $got records"
done

# Each round runs every configuration, in an order rotated from round to round.
rotated() {
    local round="$1"
    shift
    local items=("$@") n=$#
    for ((i = 0; i < n; i++)); do echo "${items[(i + round) % n]}"; done
}

for ((round = 1; round <= RUNS; round++)); do
    log "backlog: round $round of $RUNS"
    for config in $(rotated "$round" "${BACKLOG_CONFIGS[@]}"); do
        settle
        start="$(now_ms)"
        ticks="$(cpu_ticks "$BROKER_PID")"
        # shellcheck disable=SC2046
        measure --pidfile "$OUT/pid.tmp" "$OUT/time.tmp" $(backlog_command "$config") >/dev/null
        ticks=$(($(cpu_ticks "$BROKER_PID") - ticks))
        record backlog "$config" "$round" "$RECORDS" "$start" "$(now_ms)" "$OUT/time.tmp" "$ticks"
    done
done

# One tailing window: krec at the end of the topic while the producer writes RATE records/s.
tail_window() {
    local config="$1" rate="$2" round="$3" properties=() krec_pid start ticks krec_ticks written got
    [[ "$config" == full ]] && properties=(-X fetch.sessions=false)
    measure --pidfile "$OUT/pid.tmp" "$OUT/time.tmp" "$KREC" consume -b "$BOOTSTRAP" -t "$TAIL_MANY" \
        -o end -f raw "${properties[@]}" >"$OUT/tail.out" &
    local measure_pid=$!
    sleep "$WARMUP_SECONDS"
    krec_pid="$(cat "$OUT/pid.tmp")"
    BACKGROUND_KREC="$krec_pid"
    settle
    start="$(now_ms)"
    ticks="$(cpu_ticks "$BROKER_PID")"
    krec_ticks="$(cpu_ticks "$krec_pid")"
    written="$("${KAFKA_PY[@]}" produce "$BOOTSTRAP" "$TAIL_MANY" "$rate" "$TAIL_SECONDS")"
    # The last records on their way out.
    sleep 1
    krec_ticks=$(($(cpu_ticks "$krec_pid") - krec_ticks))
    ticks=$(($(cpu_ticks "$BROKER_PID") - ticks))
    local end
    end="$(now_ms)"
    kill -TERM "$krec_pid"
    wait "$measure_pid"
    BACKGROUND_KREC=""
    got="$(wc -l <"$OUT/tail.out")"
    [[ "$got" == "$written" ]] || die "tail $config printed $got of the $written records written"
    record tail "$config@$rate" "$round" "$written" "$start" "$end" "$OUT/time.tmp" "$ticks"
    # The window's own CPU of krec (wait4 counts its start and idle seconds too).
    printf 'tail-krec\t%s\t%s\t%s\t%s\t%s\t0\t%s\t0\t0\t0\n' "$config@$rate" "$round" "$written" "$start" \
        "$end" "$(echo "$krec_ticks $TICKS_PER_S" | awk '{ print $1 / $2 }')" >>"$RUNS_TSV"
}

for ((round = 1; round <= RUNS; round++)); do
    for rate in "${RATE_LIST[@]}"; do
        log "tail: round $round of $RUNS ($rate records/s for $TAIL_SECONDS s)"
        for config in $(rotated "$round" sessions full); do
            tail_window "$config" "$rate" "$round"
        done
    done
done

# Peak RSS of krec tailing an idle topic.
for topic in "$IDLE_MANY" "$IDLE_FEW"; do
    measure --pidfile "$OUT/pid.tmp" "$OUT/time.tmp" "$KREC" consume -b "$BOOTSTRAP" -t "$topic" -o end -f raw >/dev/null &
    measure_pid=$!
    sleep "$IDLE_SECONDS"
    BACKGROUND_KREC="$(cat "$OUT/pid.tmp")"
    kill -TERM "$BACKGROUND_KREC"
    wait "$measure_pid"
    BACKGROUND_KREC=""
    partitions=4
    [[ "$topic" == "$IDLE_MANY" ]] && partitions="$PARTITIONS"
    record idle "p$partitions" 1 0 0 0 "$OUT/time.tmp" 0
done
settle

# Live heap bytes per partition of the library on the same idle topics: a program under a
# counting allocator (benches/partition_memory.rs), built as bench-embed.sh builds its own.
if ((QUICK)); then
    MEMORY_BUILD=(cargo test -q --workspace --no-run ${KREC_CARGO_FEATURES:+--features "$KREC_CARGO_FEATURES"})
else
    MEMORY_BUILD=(cargo build -q --release -p krec)
fi
log "building and running benches/partition_memory.rs"
PARTITION_MEMORY_BIN="$(bench_program partition_memory "${MEMORY_BUILD[@]}")"
PARTITION_MEMORY="$("$PARTITION_MEMORY_BIN" "$BOOTSTRAP" "$IDLE_MANY" "$IDLE_FEW")" \
    || die "benches/partition_memory.rs failed"
memory_line='^live bytes: ([0-9]+) with 4 partitions, ([0-9]+) with ([0-9]+): (-?[0-9]+) B per partition$'
[[ "$PARTITION_MEMORY" =~ $memory_line ]] || die "benches/partition_memory.rs printed: $PARTITION_MEMORY"
# Both topics measured, and the per-partition figure is their difference over the extra partitions.
awk -v few="${BASH_REMATCH[1]}" -v many="${BASH_REMATCH[2]}" -v p="${BASH_REMATCH[3]}" -v per="${BASH_REMATCH[4]}" \
    'BEGIN { d = per - (many - few) / (p - 4); exit !(few > 0 && many > 0 && p == '"$PARTITIONS"' && d <= 0.5 && d >= -0.5) }' \
    || die "benches/partition_memory.rs does not add up: $PARTITION_MEMORY"

# --- report -----------------------------------------------------------------------------------

kill "$SAMPLER_PID" 2>/dev/null || true
wait "$SAMPLER_PID" 2>/dev/null || true
SAMPLER_PID=""
{
    echo "Machine: $(machine_line); load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "Versions: $("$KREC" --version 2>/dev/null || echo krec) at $(git -C "$REPO_ROOT" rev-parse --short HEAD); Kafka $(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$REPO_ROOT/scripts/kafka/pom.xml") (one node, scripts/kafka.sh)"
    echo "Command: scripts/bench-partitions.sh --records $RECORDS --runs $RUNS --partitions $PARTITIONS --topics $TOPICS --rates $RATES --tail-seconds $TAIL_SECONDS"
    echo
    /usr/bin/python3 "$SCRIPT_DIR/bench_partitions_report.py" "$RUNS_TSV" "$JMX_CSV" \
        --ticks-per-s "$TICKS_PER_S" --partitions "$PARTITIONS" --rates "$RATES" --topics "$TOPICS" --buffer-mib 256
    echo
    echo "Library memory per partition (benches/partition_memory.rs, $IDLE_MANY against $IDLE_FEW): $PARTITION_MEMORY"
} >"$OUT/report.md"
cat "$OUT/report.md"
log "results in $OUT (report.md, runs.tsv, jmx.csv)"
