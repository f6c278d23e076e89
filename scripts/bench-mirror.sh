#!/usr/bin/env bash
# Topic copy benchmark between two real brokers: krec mirror vs MirrorMaker 2 (exactly-once off
# and on) vs a kcat pipe, copying the same source topic, one per codec.
#
#   scripts/bench-mirror.sh [--records N] [--runs R] [--partitions P] [--codecs LIST] [--quick]
#                           [--no-mm2] [--fetch] [--stop]
#
#   --records N      records in each source topic, values of 100-300 B (default 1000000)
#   --runs R         timed runs of each tool, interleaved (default 3); medians are reported
#   --partitions P   partitions of each source topic (default 4)
#   --codecs LIST    comma-separated codecs, one source topic each (default lz4,zstd,none)
#   --quick          3000 records, 1 run, results under target/bench-mirror/quick (a smoke
#                    test: every tool measured copies the full count; MirrorMaker 2, whose JVM
#                    and Connect start dominate a smoke run, runs once only, exactly-once on,
#                    first codec, and its start-up is not measured separately; stops the
#                    brokers at the end if it started them)
#   --no-mm2         leave MirrorMaker 2 out (says so in the report)
#   --fetch          fetch MirrorMaker 2's jars (once, cached) and exit
#   --stop           stop both benchmark brokers at the end (kept by default)
#
# Two single-node brokers (scripts/kafka.sh instances): the source, where each codec's topic is
# filled once per script run by `krec produce` (keys, 100-300 B values of words, two headers,
# the Java producer's defaults batch.size=16384 and linger.ms=5; a topic already holding N
# records is reused), and the target, where each run of a tool writes the same topic name (the
# identity replication policy for MirrorMaker 2), deleted before every run. The tools:
#   krec      krec mirror -b SRC -t TOPIC --to DST --name NAME -e (exactly once, batches as
#             they are); measured only if the binary has a `mirror` command
#   mm2       MirrorMaker 2 in dedicated mode (org.apache.kafka.connect.mirror.MirrorMaker,
#             connect-mirror from benches/mirrormaker/pom.xml), one task, this topic only,
#             heartbeats, checkpoints and offset syncs off, the target producer compressing
#             with the codec; JVM options of Kafka's connect-mirror-maker.sh (-Xms256M -Xmx2G,
#             G1). Exactly-once source support off (`mm2`) and on (`mm2-eos`,
#             exactly.once.source.support=enabled). Started per run with a fresh source
#             cluster alias, so no state of an earlier run is reused; the run ends when a
#             read_committed consumer has read N records from the target topic, then MM2
#             gets SIGTERM.
#   kcat      kcat -C -b SRC -t TOPIC -e -f '%k\t%s\n' | kcat -P -b DST -t TOPIC -z CODEC
#             -K '\t' -H trace-id=.. -H source=.. (the headers every source record carries,
#             stated again), linger.ms=5, acks=all, idempotence, murmur2 partitioner.
#             The pipe loses: per-record headers (only constant ones can be restated), the
#             records' timestamps (the copy gets new CreateTimes), null keys and values (they
#             become empty), records whose key holds a tab or whose value a newline, offsets
#             and the source's batches (re-batched, re-compressed); it copies aborted records
#             (read_uncommitted) and knows no position, so a restart repeats or loses records.
# CPU seconds (user + sys) and peak RSS come from wait4(2) (scripts/lib/timer.py) on each
# copying process: krec; the MirrorMaker JVM from its start to its exit after SIGTERM; both
# kcats (CPU summed, peak RSS the sum of both peaks). Records/s is N over the time to the last
# record: krec's and the pipe's process wall time, MM2's from its launch until the consumer
# read N records. MM2's start-up and stop are part of its cost; a full run also measures them
# once per mode (a topic of one record, started, copied, stopped) and reports MM2 net of them.
# After each run the target topic must hold exactly N records (counted by reading them) or the
# run does not count (a --quick run then fails). The order of the tools rotates per round.
#
# Environment: KREC_BIN=path benchmarks that krec binary instead of building one;
# KREC_BENCH_BROKER names the source broker instance (default bench-mirror) and
# KREC_BENCH_TARGET_BROKER the target (default: the source's name with -target), each reused
# if running.
#
# Output: target/bench-mirror/<N>/results.tsv (every run) and report.md.
# shellcheck source=lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"

RECORDS=1000000
RUNS=3
PARTITIONS=4
CODECS=lz4,zstd,none
NO_MM2=0
FETCH=0
QUICK_SETTINGS=(RECORDS=3000 RUNS=1)
bench_args "--records= --runs= --partitions= --codecs= --no-mm2 --fetch --stop" "$@"
bench_positive_int RECORDS RUNS PARTITIONS
IFS=, read -r -a CODEC_LIST <<<"$CODECS"
for codec in "${CODEC_LIST[@]}"; do
    [[ "$codec" =~ ^(none|gzip|snappy|lz4|zstd)$ ]] || usage_error "--codecs: unknown codec '$codec'"
done

# --- MirrorMaker 2's jars ---------------------------------------------------------------------

MM2_POM="$REPO_ROOT/benches/mirrormaker/pom.xml"
MM2_VERSION="$(sed -n 's:.*<mirrormaker.version>\(.*\)</mirrormaker.version>.*:\1:p' "$MM2_POM")"
MM2_LIB="$REPO_ROOT/target/mirrormaker/lib"

# The jars of connect-mirror and its runtime, fetched by Maven once into MM2_LIB; the stamp
# names the pom's hash, so editing the pom (a version bump) fetches again.
mm2_fetch() {
    local stamp tmp
    stamp="$MM2_LIB/.fetched-$(sha256sum "$MM2_POM" | cut -c1-16)"
    [[ -f "$stamp" ]] && return 0
    command -v mvn >/dev/null || die "mvn not found (Maven fetches MirrorMaker 2's jars once)"
    log "fetching MirrorMaker 2 $MM2_VERSION's jars into $MM2_LIB (first run only)"
    tmp="$MM2_LIB.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$(dirname "$MM2_LIB")"
    # A fresh directory renamed into place: an interrupted fetch never looks complete.
    mvn -q -B -Dstyle.color=never -f "$MM2_POM" dependency:copy-dependencies -DoutputDirectory="$tmp" >&2 \
        || { rm -rf "$tmp"; die "mvn dependency:copy-dependencies failed for $MM2_POM"; }
    touch "$tmp/$(basename "$stamp")"
    rm -rf "$MM2_LIB"
    mv "$tmp" "$MM2_LIB"
}
if ((FETCH)); then
    mm2_fetch
    exit 0
fi

# --- tools ------------------------------------------------------------------------------------

if ((QUICK)); then OUT="$REPO_ROOT/target/bench-mirror/quick"; else OUT="$REPO_ROOT/target/bench-mirror/$RECORDS"; fi
mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"
KAFKA_PY=(/usr/bin/python3 "$SCRIPT_DIR/bench_partitions_kafka.py")
MIRROR_PY=(/usr/bin/python3 "$SCRIPT_DIR/bench_mirror_kafka.py")
HEADERS=(-H "trace-id=5f0c2d4e-9a51-4f7b-8c1e-3b2a6d7e8f90" -H "source=bench-mirror")

command -v kcat >/dev/null || die "kcat not found (scripts/install-deps.sh installs it)"
command -v java >/dev/null || die "java not found (the brokers and MirrorMaker 2 need it)"
bench_krec
"$KREC" produce --help >/dev/null 2>&1 || die "$KREC has no \`produce\` command: it fills the source topics"
TOOLS=(kcat)
KREC_NOTE=""
if "$KREC" mirror --help >/dev/null 2>&1; then
    TOOLS=(krec "${TOOLS[@]}")
else
    KREC_NOTE="krec mirror not available: $KREC has no \`mirror\` command ($({ "$KREC" --version 2>/dev/null || echo krec; } | head -1))"
    log "$KREC_NOTE; the peers only"
fi
MM2_NOTE=""
if ((NO_MM2)); then
    MM2_NOTE="MirrorMaker 2 not measured: --no-mm2"
else
    mm2_fetch
    TOOLS+=(mm2 mm2-eos)
    ((QUICK)) && MM2_NOTE="--quick: MirrorMaker 2 runs once (exactly-once on, ${CODEC_LIST[0]} only); its start-up is not measured apart"
fi

# --- brokers and records ----------------------------------------------------------------------

# The target broker: started here unless running (in the background, while the source is
# looked up), and stopped at exit on the terms bench_broker applies to the source: --stop, or a
# --quick run that started it (which also ties it to this script's life: --owner-pid).
TARGET_NAME="${KREC_BENCH_TARGET_BROKER:-${KREC_BENCH_BROKER:-bench-mirror}-target}"
target_started=0
if ! bash "$KAFKA" status --name "$TARGET_NAME" >/dev/null 2>&1; then
    log "starting broker '$TARGET_NAME'"
    owner=()
    ((QUICK)) && owner=(--owner-pid $$)
    bash "$KAFKA" start --name "$TARGET_NAME" "${owner[@]}" >/dev/null &
    target_start=$!
    target_started=1
fi
if ((STOP || (QUICK && target_started))); then
    clean=""
    ((QUICK)) && clean=--clean
    bench_on_exit "bash '$KAFKA' stop --name '$TARGET_NAME' $clean >/dev/null 2>&1"
fi
bench_broker bench-mirror
SOURCE="$BOOTSTRAP"
((target_started)) && { wait "$target_start" || die "the target broker '$TARGET_NAME' did not start"; }
TARGET="$(bash "$KAFKA" bootstrap --name "$TARGET_NAME")"
log "source broker '$BROKER_NAME' at $SOURCE, target broker '$TARGET_NAME' at $TARGET"

# The records of scripts/bench-produce.sh (lib/bench.sh).
PAYLOAD="$REPO_ROOT/target/bench-mirror/records-$RECORDS.txt"
bench_payload_file "$PAYLOAD" "$RECORDS"

# fill_topic TOPIC CODEC COUNT FILE: TOPIC on the source holds the COUNT records of FILE,
# written by krec produce with CODEC (a topic already holding COUNT records is kept).
fill_topic() {
    local topic="$1" codec="$2" count="$3" file="$4" got
    got="$("${KAFKA_PY[@]}" records "$SOURCE" "$topic" 2>/dev/null || echo 0)"
    if [[ "$got" == "$count" ]]; then
        log "source topic $topic: $count records already there"
        return 0
    fi
    "${MIRROR_PY[@]}" delete "$SOURCE" "$topic"
    "${KAFKA_PY[@]}" create "$SOURCE" "$topic:$PARTITIONS"
    log "filling source topic $topic: $count records, $codec"
    "$KREC" produce -b "$SOURCE" -t "$topic" -z "$codec" -K $'\t' "${HEADERS[@]}" -X linger.ms=5 \
        -X batch.size=16384 -X acks=all -l "$file" </dev/null >/dev/null \
        || die "krec produce could not fill $topic"
    got="$("${KAFKA_PY[@]}" records "$SOURCE" "$topic")"
    [[ "$got" == "$count" ]] || die "source topic $topic holds $got records, not $count"
}
source_topic() { echo "bench-mirror-$1-$2-p$PARTITIONS"; }
for codec in "${CODEC_LIST[@]}"; do
    fill_topic "$(source_topic "$codec" "$RECORDS")" "$codec" "$RECORDS" "$PAYLOAD"
done

# --- the tools' runs --------------------------------------------------------------------------

# mm2_properties FILE ALIAS TOPIC CODEC EOS: MirrorMaker 2's configuration for copying TOPIC
# from the source (cluster alias ALIAS, new per run: MM2 keeps its positions in internal
# topics named after it) to the target (alias dst), one task, nothing else replicated.
mm2_properties() {
    local file="$1" alias="$2" topic="$3" codec="$4" eos="$5"
    cat >"$file" <<EOF
clusters = $alias, dst
$alias.bootstrap.servers = $SOURCE
dst.bootstrap.servers = $TARGET
$alias->dst.enabled = true
dst->$alias.enabled = false
$alias->dst.topics = $topic
tasks.max = 1
replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
config.storage.replication.factor = 1
emit.heartbeats.enabled = false
emit.checkpoints.enabled = false
emit.offset-syncs.enabled = false
sync.group.offsets.enabled = false
refresh.groups.enabled = false
sync.topic.acls.enabled = false
sync.topic.configs.enabled = false
dst.producer.compression.type = $codec
dst.exactly.once.source.support = $eos
EOF
}

MM2_PIDFILE="$OUT/mm2.pid"
# A MirrorMaker still running when the script ends (an error, Ctrl-C) is stopped.
bench_on_exit '[[ -s "$MM2_PIDFILE" ]] && kill -TERM "$(cat "$MM2_PIDFILE")" 2>/dev/null'

# mm2_run TIME_OUT TOPIC CODEC EOS COUNT: one MirrorMaker 2 copy of TOPIC's COUNT records;
# writes "wall_s user_s sys_s max_rss_kb" to TIME_OUT, wall_s up to the COUNTth record read
# on the target. Returns 1 if they were not there in time.
mm2_run() {
    local time_out="$1" topic="$2" codec="$3" eos="$4" count="$5" alias started reached status=0 mm2
    alias="src$(date +%s%N | cut -c8-16)"
    mm2_properties "$OUT/mm2.properties" "$alias" "$topic" "$codec" "$eos"
    rm -f "$MM2_PIDFILE"
    started="$(date +%s.%N)"
    measure --pidfile "$MM2_PIDFILE" "$OUT/mm2-time.tmp" java -Xms256M -Xmx2G -server -XX:+UseG1GC \
        -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent \
        -XX:MaxInlineLevel=15 -Djava.awt.headless=true \
        -Dlog4j2.configurationFile="$SCRIPT_DIR/kafka/log4j2-tools.xml" -cp "$MM2_LIB/*" \
        org.apache.kafka.connect.mirror.MirrorMaker "$OUT/mm2.properties" --clusters dst \
        </dev/null >"$OUT/stdout.tmp" 2>"$OUT/stderr.tmp" &
    mm2=$!
    reached="$("${MIRROR_PY[@]}" wait "$TARGET" "$topic" "$count" $((120 + count / 5000)))" || status=1
    while [[ ! -s "$MM2_PIDFILE" ]]; do sleep 0.1; done
    kill -TERM "$(cat "$MM2_PIDFILE")" 2>/dev/null || true
    wait "$mm2" || true
    rm -f "$MM2_PIDFILE"
    # Its Connect topics (offsets, configs, status) are of no later use: gone, not piling up.
    "${MIRROR_PY[@]}" delete "$TARGET" "mm2-offsets.$alias.internal" "mm2-configs.$alias.internal" \
        "mm2-status.$alias.internal" || log "could not delete MirrorMaker 2's topics of $alias"
    local wall user sys rss_kb
    read -r wall user sys rss_kb <"$OUT/mm2-time.tmp"
    ((status == 0)) && wall="$(python3 -c "print('%.3f' % ($reached - $started))")"
    echo "$wall $user $sys $rss_kb" >"$time_out"
    return "$status"
}

# copy_run TOOL TOPIC CODEC RUN TIME_OUT: one copy of the source TOPIC by TOOL into the
# target's TOPIC; the exit status of the copy.
copy_run() {
    local tool="$1" topic="$2" codec="$3" run="$4" time_out="$5" status=0
    case "$tool" in
        krec)
            measure "$time_out" "$KREC" mirror -b "$SOURCE" -t "$topic" --to "$TARGET" \
                --name "bench-mirror-$codec-$run-$$" -e </dev/null >"$OUT/stdout.tmp" 2>"$OUT/stderr.tmp" \
                || status=$?
            ;;
        kcat)
            "${KAFKA_PY[@]}" create "$TARGET" "$topic:$PARTITIONS"
            # Each end timed on its own: wait4 sees one process, and the pipe is two.
            measure "$OUT/kcat-c.tmp" kcat -C -q -b "$SOURCE" -t "$topic" -o beginning -e -f '%k\t%s\n' \
                2>"$OUT/stderr.tmp" </dev/null \
                | measure "$OUT/kcat-p.tmp" kcat -P -q -b "$TARGET" -t "$topic" -z "$codec" -K $'\t' \
                    "${HEADERS[@]}" -X linger.ms=5 -X batch.size=1048576 -X acks=all \
                    -X enable.idempotence=true -X partitioner=murmur2_random >"$OUT/stdout.tmp" 2>>"$OUT/stderr.tmp" \
                || status=$?
            local c p
            read -r -a c <"$OUT/kcat-c.tmp"
            read -r -a p <"$OUT/kcat-p.tmp"
            python3 -c 'import sys; c, p = sys.argv[1:5], sys.argv[5:9]
print("%.3f %.6f %.6f %d" % (max(float(c[0]), float(p[0])), float(c[1]) + float(p[1]), float(c[2]) + float(p[2]), int(c[3]) + int(p[3])))' \
                "${c[@]}" "${p[@]}" >"$time_out"
            ;;
        mm2) mm2_run "$time_out" "$topic" "$codec" disabled "$RECORDS" || status=$? ;;
        mm2-eos) mm2_run "$time_out" "$topic" "$codec" enabled "$RECORDS" || status=$? ;;
        *) die "unknown tool $tool" ;;
    esac
    return "$status"
}

# One timed run of TOOL; appends a line to the results (valid 1 only when the target topic
# then holds exactly the records of the source).
timed_run() {
    local tool="$1" topic="$2" codec="$3" run="$4" status=0 got valid=1
    "${MIRROR_PY[@]}" delete "$TARGET" "$topic"
    copy_run "$tool" "$topic" "$codec" "$run" "$OUT/time.tmp" || status=$?
    read -r wall user sys rss_kb <"$OUT/time.tmp"
    got="$("${MIRROR_PY[@]}" count "$TARGET" "$topic" 2>/dev/null || echo "?")"
    if ((status != 0)) || [[ "$got" != "$RECORDS" ]]; then
        valid=0
        INVALID+=("$tool $codec run $run: exit status $status, $got of $RECORDS records in the target's $topic")
        log "INVALID RUN: $tool copied $got of $RECORDS records to $topic (exit status $status); stderr:"
        tail -n 5 "$OUT/stderr.tmp" >&2
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$codec" "$tool" "$run" "$RECORDS" "$valid" \
        "$wall" "$user" "$sys" "$rss_kb" >>"$RESULTS"
}

# The tools of one round in the order of round $1: rotated by one per round.
round_order() {
    local shift=$(($1 % ${#ROUND_TOOLS[@]}))
    echo "${ROUND_TOOLS[@]:shift}" "${ROUND_TOOLS[@]:0:shift}"
}

printf 'codec\ttool\trun\trecords\tvalid\twall_s\tuser_s\tsys_s\tmax_rss_kb\n' >"$RESULTS"
INVALID=()

# MirrorMaker 2's fixed cost, once per mode: JVM and Connect start, connector start, the copy
# of one record, the stop after SIGTERM.
if ((!NO_MM2 && !QUICK)); then
    one="$(source_topic none 1)"
    printf 'key-0\tone record\n' >"$OUT/one-record.txt"
    fill_topic "$one" none 1 "$OUT/one-record.txt"
    for eos in disabled enabled; do
        log "MirrorMaker 2 start-up cost, exactly-once $eos"
        "${MIRROR_PY[@]}" delete "$TARGET" "$one"
        mm2_run "$OUT/time.tmp" "$one" none "$eos" 1 || die "MirrorMaker 2 did not copy one record (see $OUT/stderr.tmp)"
        tool=mm2
        [[ "$eos" == enabled ]] && tool=mm2-eos
        read -r wall user sys rss_kb <"$OUT/time.tmp"
        printf 'startup\t%s\t1\t1\t1\t%s\t%s\t%s\t%s\n' "$tool" "$wall" "$user" "$sys" "$rss_kb" >>"$RESULTS"
    done
fi

first_codec=1
for codec in "${CODEC_LIST[@]}"; do
    ROUND_TOOLS=()
    for tool in "${TOOLS[@]}"; do
        if ((QUICK)) && [[ "$tool" == mm2 || ("$tool" == mm2-eos && $first_codec == 0) ]]; then continue; fi
        ROUND_TOOLS+=("$tool")
    done
    first_codec=0
    topic="$(source_topic "$codec" "$RECORDS")"
    for ((run = 1; run <= RUNS; run++)); do
        log "$codec: round $run of $RUNS ($(round_order "$run"))"
        read -r -a order <<<"$(round_order "$run")"
        for tool in "${order[@]}"; do timed_run "$tool" "$topic" "$codec" "$run"; done
    done
    "${MIRROR_PY[@]}" delete "$TARGET" "$topic"
done

# --- report -----------------------------------------------------------------------------------

versions() {
    local line
    line="kcat $(kcat -V 2>&1 | awk '/^Version/ { print $2; exit }') (librdkafka $(kcat -V 2>&1 | sed -n 's/.*librdkafka \([0-9.]*\).*/\1/p'))"
    [[ " ${TOOLS[*]} " == *" krec "* ]] && line="$("$KREC" --version 2>/dev/null) at $(git -C "$REPO_ROOT" rev-parse --short HEAD); $line"
    ((NO_MM2)) || line="$line; MirrorMaker 2 (connect-mirror $MM2_VERSION) on $(java -version 2>&1 | head -1)"
    echo "$line; brokers Kafka $(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$SCRIPT_DIR/kafka/pom.xml")"
}
{
    echo "Machine: $(machine_line)"
    echo "Versions: $(versions)"
    echo "Command: scripts/bench-mirror.sh --records $RECORDS --runs $RUNS --partitions $PARTITIONS --codecs $CODECS$( ((QUICK)) && echo ' (--quick)')"
    [[ -n "$KREC_NOTE" ]] && echo "**$KREC_NOTE**"
    [[ -n "$MM2_NOTE" ]] && echo "**$MM2_NOTE**"
    echo
    /usr/bin/python3 - "$RESULTS" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
cpu_of = lambda r: float(r["user_s"]) + float(r["sys_s"])
startup = {r["tool"]: r for r in rows if r["codec"] == "startup"}
if startup:
    print("MirrorMaker 2's fixed cost, measured once per mode on a topic of one record (JVM and")
    print("Connect start, connector start, one record copied, stop after SIGTERM); the mm2 rows")
    print("include it, as a one-off copy pays it; the `net` columns subtract it:\n")
    for tool, r in startup.items():
        print(f"- {tool}: {cpu_of(r):.1f} s CPU, {float(r['wall_s']):.1f} s from launch to the record "
              f"on the target, peak RSS {int(r['max_rss_kb']) / 1024:.0f} MiB")
    print()
order = ["krec", "mm2", "mm2-eos", "kcat"]
groups = {}
for r in rows:
    if r["codec"] != "startup":
        groups.setdefault(r["codec"], {}).setdefault(r["tool"], []).append(r)
names = {"krec": "krec mirror", "mm2": "MirrorMaker 2", "mm2-eos": "MirrorMaker 2, exactly-once",
         "kcat": "kcat -C \\| kcat -P"}
for codec, tools in groups.items():
    stats = {}
    for name, runs in sorted(tools.items(), key=lambda item: order.index(item[0])):
        valid = [r for r in runs if r["valid"] == "1"]
        if not valid:
            stats[name] = None
            continue
        n = int(valid[0]["records"])
        cpu = statistics.median(cpu_of(r) / n * 1e6 for r in valid)
        rate = statistics.median(n / float(r["wall_s"]) for r in valid)
        rss = statistics.median(int(r["max_rss_kb"]) / 1024 for r in valid)
        net = None
        if name in startup:
            s = startup[name]
            net_cpu = statistics.median((cpu_of(r) - cpu_of(s)) / n * 1e6 for r in valid)
            net_rate = statistics.median(n / max(float(r["wall_s"]) - float(s["wall_s"]), 1e-3) for r in valid)
            net = (net_cpu, net_rate)
        stats[name] = (cpu, rate, rss, len(valid), len(runs), n, net)
    n = int(next(iter(tools.values()))[0]["records"])
    krec = stats.get("krec")
    print(f"{codec}, {n} records (medians):\n")
    print("| tool | CPU µs/record | records/s | peak RSS MiB | net of start-up: CPU µs/record, records/s "
          "| krec CPU / this | krec records/s / this | valid runs |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    if "krec" not in stats:
        print("| krec mirror | not available | | | | | | |")
    for name, s in stats.items():
        if s is None:
            print(f"| {names[name]} | no valid run | | | | | | 0/{len(tools[name])} |")
            continue
        cpu, rate, rss, valid, runs, _, net = s
        net_text = f"{net[0]:.2f}, {net[1]:,.0f}" if net else ""
        ratios = f"{krec[0] / cpu:.3f} | {krec[1] / rate:.2f}" if krec and name != "krec" else " | "
        print(f"| {names[name]} | {cpu:.2f} | {rate:,.0f} | {rss:.0f} | {net_text} | {ratios} | {valid}/{runs} |")
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
    log "${#INVALID[@]} runs did not copy the full count (listed in the report)"
    ((QUICK)) && exit 1
fi
exit 0
