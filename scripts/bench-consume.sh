#!/usr/bin/env bash
# End-to-end consume benchmark against a real broker: krec consume vs kcat (librdkafka), Kafka's
# ConsumerPerformance (the Java consumer) and a minimal consumer on the `rdkafka` crate; then
# krec's scaling on cores (consume and decode with 1 and 2 threads).
#
#   scripts/bench-consume.sh [--records N] [--runs R] [--partitions P] [--quick] [--stop]
#
#   --records N     records per topic of 100-300 B values (default 2000000); the 1 KiB topic gets N/2
#   --runs R        timed runs of each consumer, interleaved (default 3); medians are reported
#   --partitions P  partitions per topic (default 4)
#   --quick         3000 records, 1 run, results under target/bench-consume/quick (a smoke test:
#                   checks that every step runs and every consumer reads the full count; stops
#                   the broker at the end if it started it)
#   --fill-only     start the broker and fill the topics, then exit
#   --scaling-only  skip the consumer comparison (keeps the last results.tsv), measure scaling only
#   --build-rdkafka build benches/rdkafka-consumer in a --quick run too (a full run always does;
#                   --quick otherwise uses a build already there, or runs without it)
#   --stop          stop the benchmark broker at the end (it is kept by default, so a rerun with
#                   the same --records reuses the topics)
#   --tls           TLS instead: a secured broker (kafka.sh --secured: KREC_BENCH_BROKER if that
#                   instance runs secured, else instance <broker>-tls), the lz4 and uncompressed
#                   topics read by krec and kcat over PLAINTEXT and over SASL_SSL (PLAIN),
#                   and by krec over SASL_SSL with SCRAM-SHA-512 and with OAUTHBEARER tokens
#                   from an OAuth server (OIDC, when the broker has the SASL_OAUTH listener
#                   of `kafka.sh start --secured --oauth`; a broker started here gets one),
#                   interleaved; report in target/bench-consume/<N>-tls/
#
# Topics (filled once per record count, reused after):
#   bc-N-lz4, bc-N-zstd, bc-N-none  values of 100-300 B of words, a key, 2 headers; by kcat -P
#   bc-N-1k                         1 KiB values, no compression; by Kafka's ProducerPerformance
#   bc-N-single                     N/5 of the same records, uncompressed, one record per batch
#                                   (kcat -P with batch.num.messages=1, as a producer with
#                                   linger.ms=0 on a quiet topic writes them)
# Every consumer writes to /dev/null in the timed runs; before them, one untimed run of each
# consumer per topic writes into `wc -l` and must show the full record count, or the script
# stops (a consumer that reads less would look faster). Wall time, CPU seconds (user + sys)
# and peak RSS come from wait4(2) on the consumer process, children included (`measure`,
# scripts/lib/timer.py).
#
# Environment: KREC_BIN=path benchmarks that krec binary instead of building one;
# KREC_BENCH_BROKER names the broker instance (default bench-consume), reused if running.
#
# Output: target/bench-consume/<N>/results.tsv (every run), report.md (the tables pasted into
# BENCHMARKS.md) and the chart docs/bench-consume.png (full runs only).
# shellcheck source=lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"

RECORDS=2000000
RUNS=3
PARTITIONS=4
FILL_ONLY=0
SCALING_ONLY=0
TLS=0
QUICK_SETTINGS=(RECORDS=3000 RUNS=1)
BUILD_RDKAFKA=0
bench_args "--records= --runs= --partitions= --fill-only --scaling-only --stop --tls --build-rdkafka" "$@"
bench_positive_int RECORDS RUNS PARTITIONS
((RECORDS >= 2)) || usage_error "--records must be >= 2"

if ((QUICK)); then
    OUT="$REPO_ROOT/target/bench-consume/quick"
    CHART="$OUT/bench-consume.png"
else
    OUT="$REPO_ROOT/target/bench-consume/$RECORDS"
    CHART="$REPO_ROOT/docs/bench-consume.png"
fi
((TLS)) && OUT="$OUT-tls"
mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"
SCALING="$OUT/scaling.tsv"

# --- tools ------------------------------------------------------------------------------------

need_apt() {
    local command="$1" package="$2"
    command -v "$command" >/dev/null && return 0
    log "installing $package"
    if [[ $(id -u) == 0 ]]; then apt-get install -y -q "$package" >&2; else sudo apt-get install -y -q "$package" >&2; fi
}
need_apt kcat kcat
command -v java >/dev/null || die "java not found (the broker and the Java consumer need it)"
# The chart: matplotlib for whichever python has it, else installed for the PATH python3.
CHART_PYTHON=""
for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c 'import matplotlib' 2>/dev/null; then CHART_PYTHON="$candidate"; break; fi
done
if [[ -z "$CHART_PYTHON" ]]; then
    log "installing matplotlib for python3"
    python3 -m pip install -q matplotlib >&2 && CHART_PYTHON=python3
fi

bench_krec

# Built by a full run (minutes, once: librdkafka is compiled); --quick uses a build already
# there and builds none unless --build-rdkafka. Without it, the comparison runs without it.
RDKAFKA_BIN=""
if ! ((TLS)); then
    bench_rdkafka_consumer "$OUT/rdkafka-build.log" || log "benchmarking without the rdkafka consumer"
fi

# --- broker and topics ------------------------------------------------------------------------

if ((TLS)); then
    # The secured broker: the named instance itself if it runs secured (the test suite gives
    # one secured broker to all its smoke runs), else a secured instance of its own.
    KREC_BENCH_BROKER="${KREC_BENCH_BROKER:-bench-consume}"
    if ! { bash "$KAFKA" status --name "$KREC_BENCH_BROKER" && bench_broker_secured "$KREC_BENCH_BROKER"; } >/dev/null 2>&1; then
        KREC_BENCH_BROKER="$KREC_BENCH_BROKER-tls"
    fi
    # Sessions outlive the run: Debian's kcat (librdkafka 2.0.2) cannot re-authenticate.
    # A broker started here validates OIDC tokens of an OAuth server that ends with this run.
    oauth_args=()
    if ! bash "$KAFKA" status --name "$KREC_BENCH_BROKER" >/dev/null 2>&1; then
        oauth_args=(--oauth "$(bash "$SCRIPT_DIR/oauth.sh" start --name "$KREC_BENCH_BROKER-oauth" --owner-pid $$)")
    fi
    bench_broker bench-consume-tls --secured --reauth-ms 86400000 "${oauth_args[@]}"
else
    bench_broker bench-consume
fi

SMALL_TOPICS=(lz4 zstd none)
((TLS)) && SMALL_TOPICS=(lz4 none)
TOPICS=()
for codec in "${SMALL_TOPICS[@]}"; do TOPICS+=("bc-$RECORDS-$codec"); done
TOPICS+=("bc-$RECORDS-1k" "bc-$RECORDS-single")
TOPICS_ALL=("${TOPICS[@]}")
LARGE_RECORDS=$((RECORDS / 2))
SINGLE_RECORDS=$((RECORDS / 5))

expected_count() {
    case "$1" in
        *-1k) echo "$LARGE_RECORDS" ;;
        *-single) echo "$SINGLE_RECORDS" ;;
        *) echo "$RECORDS" ;;
    esac
}

# Records in a topic: the sum of its partitions' end offsets.
topic_end_offsets() {
    # A topic that does not exist yet has none (the tool fails).
    { "$KAFKA" tool --name "$BROKER_NAME" org.apache.kafka.tools.GetOffsetShell \
        --bootstrap-server "{bootstrap}" --topic "$1" 2>/dev/null || true; } \
        | awk -F: '{ sum += $NF } END { print sum + 0 }'
}

fill_topic() {
    local topic="$1" codec="$2" count="$3"
    local have
    have="$(topic_end_offsets "$topic")"
    if [[ "$have" == "$count" ]]; then
        return 0
    fi
    [[ "$have" == 0 ]] || die "topic $topic holds $have records, expected 0 or $count: delete target/kafka/$BROKER_NAME (scripts/kafka.sh stop --name $BROKER_NAME --clean)"
    log "filling $topic ($count records, $codec)"
    "$KAFKA" topic --name "$BROKER_NAME" create "$topic" --partitions "$PARTITIONS" >/dev/null 2>&1 || true
    if [[ "$topic" == *-single ]]; then
        head -n "$count" "$PAYLOAD" | kcat -P -b "$BOOTSTRAP" -t "$topic" -K $'\t' -z "$codec" \
            -H "trace-id=5f0c2d4e-9a51-4f7b-8c1e-3b2a6d7e8f90" -H "source=bench-consume" \
            -X linger.ms=0 -X batch.num.messages=1 -X queue.buffering.max.messages=1000000
    elif [[ "$topic" == *-1k ]]; then
        "$KAFKA" tool --name "$BROKER_NAME" org.apache.kafka.tools.ProducerPerformance \
            --topic "$topic" --num-records "$count" --record-size 1024 --throughput -1 \
            --producer-props "bootstrap.servers={bootstrap}" compression.type="$codec" \
            batch.size=262144 linger.ms=20 acks=1 >"$OUT/produce-$topic.log" 2>&1
    else
        kcat -P -b "$BOOTSTRAP" -t "$topic" -K $'\t' -z "$codec" \
            -H "trace-id=5f0c2d4e-9a51-4f7b-8c1e-3b2a6d7e8f90" -H "source=bench-consume" \
            -X linger.ms=20 -X batch.num.messages=10000 -X queue.buffering.max.messages=1000000 \
            -X queue.buffering.max.kbytes=1048576 -l "$PAYLOAD"
    fi
    have="$(topic_end_offsets "$topic")"
    [[ "$have" == "$count" ]] || die "topic $topic holds $have records after filling, expected $count"
}

PAYLOAD="$REPO_ROOT/target/bench-consume/payload-$RECORDS.txt"
bench_payload_file "$PAYLOAD" "$RECORDS"
for codec in "${SMALL_TOPICS[@]}"; do fill_topic "bc-$RECORDS-$codec" "$codec" "$RECORDS"; done
if ((TLS)); then
    TOPICS=()
    for codec in "${SMALL_TOPICS[@]}"; do TOPICS+=("bc-$RECORDS-$codec"); done
else
    fill_topic "bc-$RECORDS-1k" none "$LARGE_RECORDS"
    fill_topic "bc-$RECORDS-single" none "$SINGLE_RECORDS"
fi
((FILL_ONLY)) && { log "topics filled"; exit 0; }

# TLS: the same consumers over SASL_SSL (PLAIN, as alice, who may read every topic here: the
# secured broker's ACLs allow her the sec- prefix only, so the topics are granted below).
if ((TLS)); then
    SECURE_ENV="$("$KAFKA" secure-env --name "$BROKER_NAME")"
    SASL_SSL="$(sed -n 's/^SASL_SSL=//p' "$SECURE_ENV")"
    CA_PEM="$(sed -n 's/^CA_PEM=//p' "$SECURE_ENV")"
    PASSWORD="$(sed -n 's/^ALICE_PASSWORD=//p' "$SECURE_ENV")"
    OAUTH_ENV="$(sed -n 's/^OAUTH_ENV=//p' "$SECURE_ENV")"
    principals=(--allow-principal User:alice)
    if [[ -n "$OAUTH_ENV" ]]; then
        oauth() { sed -n "s/^$1=//p" "$OAUTH_ENV"; }
        SASL_OAUTH="$(sed -n 's/^SASL_OAUTH=//p' "$SECURE_ENV")"
        principals+=(--allow-principal "User:$(oauth CLIENT_ID)")
        OIDC_PROPS="-X security.protocol=SASL_SSL -X ssl.ca.location=$CA_PEM -X sasl.mechanisms=OAUTHBEARER -X sasl.oauthbearer.method=oidc -X sasl.oauthbearer.client.id=$(oauth CLIENT_ID) -X sasl.oauthbearer.client.secret=$(oauth CLIENT_SECRET) -X sasl.oauthbearer.token.endpoint.url=$(oauth TOKEN_URL) -X sasl.oauthbearer.scope=$(oauth SCOPE) -X https.ca.location=$(oauth CA_PEM)"
    else
        log "the secured broker has no SASL_OAUTH listener (started without --oauth): no OIDC runs"
    fi
    "$KAFKA" tool --name "$BROKER_NAME" org.apache.kafka.tools.AclCommand --bootstrap-server "{bootstrap}" \
        --add "${principals[@]}" --operation Read --operation Describe \
        --topic "bc-$RECORDS-" --resource-pattern-type prefixed >/dev/null
    SASL_PROPS="-X security.protocol=SASL_SSL -X sasl.mechanisms=PLAIN -X sasl.username=alice -X sasl.password=$PASSWORD -X ssl.ca.location=$CA_PEM"
    SCRAM_PROPS="-X security.protocol=SASL_SSL -X sasl.mechanisms=SCRAM-SHA-512 -X sasl.username=alice -X sasl.password=$PASSWORD -X ssl.ca.location=$CA_PEM"
fi

# --- consumers --------------------------------------------------------------------------------

# The command line of one consumer on one topic. Each writes every record's value (raw) or a
# JSON object per record (json) to stdout; ConsumerPerformance writes nothing per record.
CONSUMERS=(krec-raw kcat-raw krec-json kcat-json java)
[[ -n "$RDKAFKA_BIN" ]] && CONSUMERS+=(rdkafka-raw)
((TLS)) && CONSUMERS=(krec-raw kcat-raw krec-raw-tls kcat-raw-tls krec-raw-scram)
((TLS)) && [[ -n "${OAUTH_ENV:-}" ]] && CONSUMERS+=(krec-raw-oidc)

consumer_command() {
    local consumer="$1" topic="$2" count
    count="$(expected_count "$topic")"
    case "$consumer" in
        krec-raw) echo "$KREC consume -b $BOOTSTRAP -t $topic -e -f raw" ;;
        krec-json) echo "$KREC consume -b $BOOTSTRAP -t $topic -e -J" ;;
        krec-raw-t1) echo "$KREC consume -b $BOOTSTRAP -t $topic -e -f raw --threads 1" ;;
        krec-raw-t2) echo "$KREC consume -b $BOOTSTRAP -t $topic -e -f raw --threads 2" ;;
        kcat-raw) echo "kcat -C -q -b $BOOTSTRAP -t $topic -o beginning -e -f '%s\\n'" ;;
        krec-raw-tls) echo "$KREC consume -b $SASL_SSL -t $topic -e -f raw $SASL_PROPS" ;;
        kcat-raw-tls) echo "kcat -C -q -b $SASL_SSL -t $topic -o beginning -e -f '%s\\n' $SASL_PROPS" ;;
        krec-raw-scram) echo "$KREC consume -b $SASL_SSL -t $topic -e -f raw $SCRAM_PROPS" ;;
        krec-raw-oidc) echo "$KREC consume -b $SASL_OAUTH -t $topic -e -f raw $OIDC_PROPS" ;;
        kcat-json) echo "kcat -C -q -b $BOOTSTRAP -t $topic -o beginning -e -J" ;;
        rdkafka-raw) echo "$RDKAFKA_BIN $BOOTSTRAP $topic" ;;
        java) echo "$KAFKA tool --name $BROKER_NAME org.apache.kafka.tools.ConsumerPerformance --bootstrap-server {bootstrap} --topic $topic --messages $count --group bench-\$RANDOM --timeout 60000" ;;
        *) die "unknown consumer $consumer" ;;
    esac
}

# Runs one command with its output counted, and fails unless the count is the topic's.
check_count() {
    local consumer="$1" topic="$2" expected got command
    expected="$(expected_count "$topic")"
    command="$(consumer_command "$consumer" "$topic")"
    if [[ "$consumer" == java ]]; then
        # ConsumerPerformance prints a CSV heading and one line (after a deprecation warning on
        # stdout in Kafka 4.4): the count is the line's data.consumed.in.nMsg field.
        got="$(eval "$command" 2>/dev/null | awk -F', *' '
            column { print $column; exit }
            { for (i = 1; i <= NF; i++) if ($i == "data.consumed.in.nMsg") column = i }')"
    else
        got="$(eval "$command" 2>/dev/null | wc -l)"
    fi
    [[ "$got" == "$expected" ]] || die "$consumer read $got records of $topic, expected $expected: the benchmark would be invalid"
    log "  $consumer read all $got records of $topic"
}

# One timed run into /dev/null; appends a line to the results file.
timed_run() {
    local file="$1" consumer="$2" topic="$3" run="$4" command timing
    command="$(consumer_command "$consumer" "$topic")"
    timing="$OUT/time.tmp"
    if ! measure "$timing" bash -c "$command" >/dev/null 2>"$OUT/stderr.tmp"; then
        cat "$OUT/stderr.tmp" >&2
        die "$consumer failed on $topic"
    fi
    read -r wall user sys rss_kb <"$timing"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$topic" "$consumer" "$run" "$(expected_count "$topic")" \
        "$wall" "$user" "$sys" "$rss_kb" >>"$file"
}

((SCALING_ONLY)) && [[ -f "$RESULTS" ]] && TOPICS=()
((${#TOPICS[@]})) && printf 'topic\tconsumer\trun\trecords\twall_s\tuser_s\tsys_s\tmax_rss_kb\n' >"$RESULTS"
for topic in "${TOPICS[@]}"; do
    # The Java consumer's JVM start is most of a smoke run's time, and its path is the same on
    # every topic: --quick runs it on the first topic only.
    topic_consumers=()
    for consumer in "${CONSUMERS[@]}"; do
        ((QUICK)) && [[ "$consumer" == java && "$topic" != "${TOPICS[0]}" ]] && continue
        topic_consumers+=("$consumer")
    done
    log "topic $topic: checking every consumer reads the full count"
    for consumer in "${topic_consumers[@]}"; do check_count "$consumer" "$topic"; done
    for ((run = 1; run <= RUNS; run++)); do
        log "topic $topic: round $run of $RUNS"
        for consumer in "${topic_consumers[@]}"; do timed_run "$RESULTS" "$consumer" "$topic" "$run"; done
    done
done

if ((TLS)); then
    python3 "$SCRIPT_DIR/bench_tls_report.py" "$RESULTS" >"$OUT/report.md"
    cat "$OUT/report.md"
    log "results in $OUT (report.md, results.tsv)"
    exit 0
fi

# --- scaling on cores -------------------------------------------------------------------------

printf 'workload\tthreads\trun\trecords\twall_s\tuser_s\tsys_s\tmax_rss_kb\n' >"$SCALING"
SCALE_TOPIC="bc-$RECORDS-lz4"
log "scaling: krec consume --threads 1 and 2 on $SCALE_TOPIC ($PARTITIONS partitions)"
for consumer in krec-raw-t1 krec-raw-t2; do check_count "$consumer" "$SCALE_TOPIC"; done
# The two thread counts alternate which goes first, so neither always runs right after the other.
thread_order() { if (($1 % 2)); then echo 1 2; else echo 2 1; fi; }
for ((run = 1; run <= RUNS; run++)); do
    for threads in $(thread_order "$run"); do
        command="$(consumer_command "krec-raw-t$threads" "$SCALE_TOPIC")"
        measure "$OUT/time.tmp" bash -c "$command" >/dev/null 2>/dev/null
        read -r wall user sys rss_kb <"$OUT/time.tmp"
        printf 'consume %s raw\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$SCALE_TOPIC" "$threads" "$run" "$RECORDS" \
            "$wall" "$user" "$sys" "$rss_kb" >>"$SCALING"
    done
done

# Decode-bound: the broker's own segment files of all four topics in one run (every codec,
# both value sizes), decoded to values and to JSON. Both thread counts read the files the same
# way (runs of whole batches into reused buffers, --run-bytes), so the ratio measures cores, not
# read strategies; the files are in the page cache (read by the count checks just before), so
# reading is a small serial part.
DATA_DIR="$("$KAFKA" datadir --name "$BROKER_NAME")"
segments=()
for topic in "${TOPICS_ALL[@]}"; do
    mapfile -t topic_segments < <(find "$DATA_DIR" -path "*/$topic-*" -name '*.log' | sort)
    ((${#topic_segments[@]})) || die "no segment files of $topic under $DATA_DIR"
    segments+=("${topic_segments[@]}")
done
all_records=$((3 * RECORDS + LARGE_RECORDS + SINGLE_RECORDS))
for format in raw json; do
    for threads in 1 2; do
        got="$("$KREC" decode --threads "$threads" -f "$format" "${segments[@]}" | wc -l)"
        [[ "$got" == "$all_records" ]] || die "krec decode --threads $threads -f $format read $got records, expected $all_records"
    done
    log "scaling: krec decode -f $format --threads 1 and 2 on the segments of all topics"
    for ((run = 1; run <= RUNS; run++)); do
        for threads in $(thread_order "$run"); do
            measure "$OUT/time.tmp" \
                "$KREC" decode --threads "$threads" -f "$format" "${segments[@]}" >/dev/null
            read -r wall user sys rss_kb <"$OUT/time.tmp"
            printf 'decode all topics %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$format" "$threads" "$run" \
                "$all_records" "$wall" "$user" "$sys" "$rss_kb" >>"$SCALING"
        done
    done
done

# --- report -----------------------------------------------------------------------------------

{
    echo "Machine: $(machine_line)"
    echo "Versions: $("$KREC" --version 2>/dev/null || echo krec) at $(git -C "$REPO_ROOT" rev-parse --short HEAD); kcat $(kcat -V 2>&1 | awk '/^Version/ { print $2; exit }'), librdkafka $(pkg-config --modversion rdkafka 2>/dev/null); $(java -version 2>&1 | head -1)"
    echo "Command: scripts/bench-consume.sh --records $RECORDS --runs $RUNS --partitions $PARTITIONS"
    echo
} >"$OUT/report.md"
if [[ -n "$CHART_PYTHON" ]]; then
    "$CHART_PYTHON" "$SCRIPT_DIR/bench_chart.py" "$RESULTS" "$SCALING" --chart "$CHART" >>"$OUT/report.md"
else
    python3 "$SCRIPT_DIR/bench_chart.py" "$RESULTS" "$SCALING" >>"$OUT/report.md"
    log "no matplotlib: tables only, no chart"
fi
cat "$OUT/report.md"
log "results in $OUT (report.md, results.tsv, scaling.tsv)"
