#!/usr/bin/env bash
# Topic backup and restore benchmark on one real broker: krec backup / krec restore vs
# osodevops/kafka-backup vs kcat into a file and back, the same source topic, one per codec.
#
#   scripts/bench-backup.sh [--records N] [--runs R] [--partitions P] [--codecs LIST] [--quick]
#                           [--build-kafka-backup] [--stop]
#
#   --records N            records in each source topic, values of 100-300 B (default 1000000)
#   --runs R               timed runs of each tool, interleaved (default 3); medians reported
#   --partitions P         partitions of each source topic (default 4)
#   --codecs LIST          comma-separated codecs, one source topic each (default lz4,zstd)
#   --quick                3000 records, 1 run, results under target/bench-backup/quick (a smoke
#                          test; kafka-backup only if already built; stops the broker at the
#                          end if it started it)
#   --build-kafka-backup   build kafka-backup's driver (benches/kafka-backup, once per version,
#                          minutes) and exit; a full run builds it when it is missing
#   --stop                 stop the benchmark broker at the end (kept by default)
#
# The source topic is filled once per script run by `krec produce` (keys, 100-300 B values of
# words, two headers, the Java producer's defaults batch.size=16384 and linger.ms=5; a topic
# already holding N records is kept). Each run of a tool backs the topic up into a fresh
# directory, then restores that backup into a new topic of the same broker (deleted after):
#   krec          krec backup -b B -t TOPIC DIR; krec restore -b B DIR --topic-prefix PREFIX
#                 (batches as fetched, kept in Kafka's segment format; measured only if the
#                 binary has both commands)
#   kafka-backup  osodevops/kafka-backup 0.25.2's engine (kafka-backup-core, the only part of it
#                 on crates.io: its CLI is not published there) run by benches/kafka-backup, a
#                 driver of a few lines, from a YAML file of its own format: a one-shot
#                 backup to a directory (stop_at_current_offsets, compression = the topic's
#                 codec, its other defaults: read_committed, offset headers added) and a
#                 restore with topic_mapping into a topic created beforehand. Its own segment
#                 format: records decoded, re-encoded and compressed again
#   kcat          kcat -C -b B -t TOPIC -o beginning -e -f '%k\t%s\n' > FILE, then
#                 kcat -P -b B -t NEW -K '\t' -z CODEC -l FILE (the headers every source record
#                 carries stated again; linger.ms=5, acks=all, idempotence, murmur2
#                 partitioner). A file of lines loses per-record headers, timestamps, nulls,
#                 records holding a tab or newline, offsets and batches (the restore
#                 re-batches and compresses again)
# A run counts when the tool exits 0 and the restored topic then holds exactly N records
# (counted by a read_committed consumer); the order of the tools rotates per round.
# Reported per tool and phase (medians): MB/s = the source partitions' segment bytes (the
# *.log files under the broker's log.dirs for the topic) / wall time; CPU µs per record and MB
# per CPU second (user + sys of the process, wait4(2): scripts/lib/timer.py); peak RSS; for a
# backup, its bytes on disk / the source segment bytes. Ratios: krec / kafka-backup, krec / kcat.
#
# Environment: KREC_BIN=path benchmarks that krec binary instead of building one;
# KREC_BENCH_BROKER names the broker instance (default bench-backup), reused if running;
# KREC_KAFKA_BACKUP_HOME (default ~/.cache/krec/kafka-backup-VERSION) holds the driver's build.
#
# Output: target/bench-backup/<N>/results.tsv (every run) and report.md.
# shellcheck source=lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"

RECORDS=1000000
RUNS=3
PARTITIONS=4
CODECS=lz4,zstd
BUILD_KAFKA_BACKUP=0
QUICK_SETTINGS=(RECORDS=3000 RUNS=1)
bench_args "--records= --runs= --partitions= --codecs= --build-kafka-backup --stop" "$@"
bench_positive_int RECORDS RUNS PARTITIONS
IFS=, read -r -a CODEC_LIST <<<"$CODECS"
for codec in "${CODEC_LIST[@]}"; do
    [[ "$codec" =~ ^(none|gzip|snappy|lz4|zstd)$ ]] || usage_error "--codecs: unknown codec '$codec'"
done

# --- kafka-backup's driver --------------------------------------------------------------------

KB_MANIFEST="$REPO_ROOT/benches/kafka-backup/Cargo.toml"
KB_VERSION="$(sed -n 's/^kafka-backup-core = "=\(.*\)"$/\1/p' "$KB_MANIFEST")"
KB_HOME="${KREC_KAFKA_BACKUP_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/krec/kafka-backup-$KB_VERSION}"
KB_BIN="$KB_HOME/release/kafka-backup-bench"
# "100+ MB/s throughput", the README of kafka-backup-core: the comparison when not measured here.
KB_PUBLISHED_MB_S=100

# Built once per kafka-backup-core version (the directory is named after it), from crates.io
# only, with the driver's Cargo.lock; the stamp names the hash of the driver's files (a fresh
# clone's mtimes say nothing), so editing them builds again. The build log stays beside it.
kafka_backup_build() {
    local stamp
    stamp="$KB_HOME/.built-$(cat "$KB_MANIFEST" "${KB_MANIFEST%.toml}.lock" "$REPO_ROOT/benches/kafka-backup/src/main.rs" | sha256sum | cut -c1-16)"
    [[ -x "$KB_BIN" && -f "$stamp" ]] && return 0
    log "building kafka-backup-core $KB_VERSION's driver into $KB_HOME (first time: minutes)"
    mkdir -p "$KB_HOME"
    rm -f "$KB_HOME"/.built-*
    CARGO_TARGET_DIR="$KB_HOME" cargo build -q --release --locked --manifest-path "$KB_MANIFEST" \
        >"$KB_HOME/build.log" 2>&1 || {
        tail -20 "$KB_HOME/build.log" >&2
        log "kafka-backup's driver does not build (see $KB_HOME/build.log)"
        return 1
    }
    touch "$stamp"
}
if ((BUILD_KAFKA_BACKUP)); then
    kafka_backup_build || exit 1
    exit 0
fi

# --- tools ------------------------------------------------------------------------------------

if ((QUICK)); then OUT="$REPO_ROOT/target/bench-backup/quick"; else OUT="$REPO_ROOT/target/bench-backup/$RECORDS"; fi
mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"
KAFKA_PY=(/usr/bin/python3 "$SCRIPT_DIR/bench_partitions_kafka.py")
MIRROR_PY=(/usr/bin/python3 "$SCRIPT_DIR/bench_mirror_kafka.py")
HEADERS=(-H "trace-id=5f0c2d4e-9a51-4f7b-8c1e-3b2a6d7e8f90" -H "source=bench-backup")

command -v kcat >/dev/null || die "kcat not found (scripts/install-deps.sh installs it)"
bench_krec
"$KREC" produce --help >/dev/null 2>&1 || die "$KREC has no \`produce\` command: it fills the source topics"
TOOLS=(kcat)
NOTES=()
if "$KREC" backup --help >/dev/null 2>&1 && "$KREC" restore --help >/dev/null 2>&1; then
    TOOLS=(krec "${TOOLS[@]}")
else
    NOTES+=("krec not measured: $KREC has no \`backup\` and \`restore\` commands ($({ "$KREC" --version 2>/dev/null || echo krec; } | head -1))")
    log "${NOTES[-1]}; the peers only"
fi
KB_STATUS="is not built (scripts/bench-backup.sh --build-kafka-backup)"
((QUICK)) || kafka_backup_build || { KB_STATUS="does not build here (see $KB_HOME/build.log)"; KB_BIN=""; }
if [[ -x "$KB_BIN" ]]; then
    TOOLS+=(kafka-backup)
else
    NOTES+=("kafka-backup not measured: its driver $KB_STATUS; its published figure is $KB_PUBLISHED_MB_S+ MB/s (README of kafka-backup-core $KB_VERSION), not measured here")
    log "${NOTES[-1]}"
fi

# --- broker and records -----------------------------------------------------------------------

bench_broker bench-backup
DATADIR="$(bash "$KAFKA" datadir --name "$BROKER_NAME")"
PAYLOAD="$REPO_ROOT/target/bench-backup/records-$RECORDS.txt"
bench_payload_file "$PAYLOAD" "$RECORDS"

# fill_topic TOPIC CODEC: TOPIC holds the records of PAYLOAD, written by krec produce with
# CODEC (a topic already holding them is kept).
fill_topic() {
    local topic="$1" codec="$2" got
    got="$("${KAFKA_PY[@]}" records "$BOOTSTRAP" "$topic" 2>/dev/null || echo 0)"
    if [[ "$got" == "$RECORDS" ]]; then
        log "source topic $topic: $RECORDS records already there"
        return 0
    fi
    "${MIRROR_PY[@]}" delete "$BOOTSTRAP" "$topic"
    "${KAFKA_PY[@]}" create "$BOOTSTRAP" "$topic:$PARTITIONS"
    log "filling source topic $topic: $RECORDS records, $codec"
    "$KREC" produce -b "$BOOTSTRAP" -t "$topic" -z "$codec" -K $'\t' "${HEADERS[@]}" -X linger.ms=5 \
        -X batch.size=16384 -X acks=all -l "$PAYLOAD" </dev/null >/dev/null \
        || die "krec produce could not fill $topic"
    got="$("${KAFKA_PY[@]}" records "$BOOTSTRAP" "$topic")"
    [[ "$got" == "$RECORDS" ]] || die "source topic $topic holds $got records, not $RECORDS"
}
source_topic() { echo "bench-backup-$1-$RECORDS-p$PARTITIONS"; }

# segment_bytes TOPIC: the bytes of its partitions' segment files on the broker (the indexes,
# preallocated, are left out; so are the directories of a deleted topic, TOPIC-P.ID-delete).
segment_bytes() {
    find "$DATADIR" -regextype posix-extended -regex "$DATADIR/$1-[0-9]+/[0-9]+\.log" -printf '%s\n' \
        | awk '{ sum += $1 } END { print sum + 0 }'
}

# --- the tools' runs --------------------------------------------------------------------------

# kafka_backup_config FILE MODE ID DIR TOPIC CODEC [TARGET_TOPIC]: the driver's YAML.
kafka_backup_config() {
    local file="$1" mode="$2" id="$3" dir="$4" topic="$5" codec="$6" target="${7:-}" cluster=source
    [[ "$mode" == restore ]] && cluster=target
    cat >"$file" <<EOF
mode: $mode
backup_id: "$id"
$cluster:
  bootstrap_servers: ["$BOOTSTRAP"]
  topics:
    include: ["$topic"]
storage:
  backend: filesystem
  path: "$dir"
offset_storage:
  db_path: "$dir.offsets.db"
EOF
    if [[ "$mode" == backup ]]; then
        # Its own compression knows none, lz4 and zstd (its default, for gzip and snappy topics).
        [[ "$codec" =~ ^(none|lz4|zstd)$ ]] || codec=zstd
        printf 'backup:\n  compression: %s\n  stop_at_current_offsets: true\n' "$codec" >>"$file"
    else
        printf 'restore:\n  topic_mapping:\n    "%s": "%s"\n' "$topic" "$target" >>"$file"
    fi
}

# backup_run TOOL TOPIC CODEC DIR TIME_OUT: one backup of TOPIC into DIR (a file for kcat).
backup_run() {
    local tool="$1" topic="$2" codec="$3" dir="$4" time_out="$5"
    case "$tool" in
        krec)
            measure "$time_out" "$KREC" backup -b "$BOOTSTRAP" -t "$topic" "$dir" \
                </dev/null >"$OUT/stdout.tmp" 2>"$OUT/stderr.tmp"
            ;;
        kafka-backup)
            mkdir -p "$dir"
            kafka_backup_config "$OUT/kafka-backup.yaml" backup "$(basename "$dir")" "$dir" "$topic" "$codec"
            measure "$time_out" "$KB_BIN" "$OUT/kafka-backup.yaml" </dev/null >"$OUT/stdout.tmp" 2>"$OUT/stderr.tmp"
            ;;
        kcat)
            measure "$time_out" kcat -C -q -b "$BOOTSTRAP" -t "$topic" -o beginning -e -f '%k\t%s\n' \
                </dev/null >"$dir" 2>"$OUT/stderr.tmp"
            ;;
    esac
}

# restore_run TOOL TOPIC CODEC DIR PREFIX TIME_OUT: one restore of DIR's TOPIC into PREFIX+TOPIC.
restore_run() {
    local tool="$1" topic="$2" codec="$3" dir="$4" prefix="$5" time_out="$6"
    [[ "$tool" == krec ]] || "${KAFKA_PY[@]}" create "$BOOTSTRAP" "$prefix$topic:$PARTITIONS"
    case "$tool" in
        krec)
            measure "$time_out" "$KREC" restore -b "$BOOTSTRAP" "$dir" --topic-prefix "$prefix" \
                </dev/null >"$OUT/stdout.tmp" 2>"$OUT/stderr.tmp"
            ;;
        kafka-backup)
            kafka_backup_config "$OUT/kafka-backup.yaml" restore "$(basename "$dir")" "$dir" "$topic" "$codec" "$prefix$topic"
            measure "$time_out" "$KB_BIN" "$OUT/kafka-backup.yaml" </dev/null >"$OUT/stdout.tmp" 2>"$OUT/stderr.tmp"
            ;;
        kcat)
            measure "$time_out" kcat -P -q -b "$BOOTSTRAP" -t "$prefix$topic" -z "$codec" -K $'\t' "${HEADERS[@]}" \
                -X linger.ms=5 -X batch.size=1048576 -X acks=all -X enable.idempotence=true \
                -X partitioner=murmur2_random -l "$dir" </dev/null >"$OUT/stdout.tmp" 2>"$OUT/stderr.tmp"
            ;;
    esac
}

# result PHASE BYTES VALID: appends the run's line (timings from $OUT/time.tmp) to the results.
result() {
    local phase="$1" bytes="$2" valid="$3" wall user sys rss_kb
    read -r wall user sys rss_kb <"$OUT/time.tmp"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$codec" "$tool" "$phase" "$run" "$RECORDS" \
        "$valid" "$wall" "$user" "$sys" "$rss_kb" "$bytes" "$SOURCE_BYTES" >>"$RESULTS"
}

# timed_pair TOOL TOPIC CODEC RUN: a backup then a restore of it; both count (valid 1) only when
# both exit 0 and the restored topic holds exactly the source's records.
timed_pair() {
    local tool="$1" topic="$2" codec="$3" run="$4" dir prefix status=0 got bytes=0 backup_time
    dir="$OUT/backup-$tool-$codec-$run"
    prefix="bb-r$run-$tool-$$-"
    rm -rf "$dir" "$dir.offsets.db"
    backup_run "$tool" "$topic" "$codec" "$dir" "$OUT/time.tmp" || status=$?
    backup_time="$(cat "$OUT/time.tmp")"
    [[ -e "$dir" ]] && bytes="$(du -sb "$dir" | cut -f1)"
    ((status == 0)) && { restore_run "$tool" "$topic" "$codec" "$dir" "$prefix" "$OUT/restore-time.tmp" || status=$?; }
    [[ -s "$OUT/restore-time.tmp" ]] || echo "0 0 0 0" >"$OUT/restore-time.tmp"
    got="$("${MIRROR_PY[@]}" count "$BOOTSTRAP" "$prefix$topic" 2>/dev/null || echo "?")"
    local valid=1
    if ((status != 0)) || [[ "$got" != "$RECORDS" ]]; then
        valid=0
        INVALID+=("$tool $codec run $run: exit status $status, $got of $RECORDS records restored")
        log "INVALID RUN: $tool restored $got of $RECORDS records (exit status $status); stderr:"
        tail -n 5 "$OUT/stderr.tmp" >&2
    fi
    echo "$backup_time" >"$OUT/time.tmp"
    result backup "$bytes" "$valid"
    mv "$OUT/restore-time.tmp" "$OUT/time.tmp"
    result restore 0 "$valid"
    "${MIRROR_PY[@]}" delete "$BOOTSTRAP" "$prefix$topic"
    rm -rf "$dir" "$dir.offsets.db"
}

round_order() {
    local shift=$(($1 % ${#TOOLS[@]}))
    echo "${TOOLS[@]:shift}" "${TOOLS[@]:0:shift}"
}

printf 'codec\ttool\tphase\trun\trecords\tvalid\twall_s\tuser_s\tsys_s\tmax_rss_kb\tout_bytes\tsource_bytes\n' >"$RESULTS"
INVALID=()
for codec in "${CODEC_LIST[@]}"; do
    topic="$(source_topic "$codec")"
    fill_topic "$topic" "$codec"
    SOURCE_BYTES="$(segment_bytes "$topic")"
    log "$topic: $SOURCE_BYTES bytes of segments"
    for ((run = 1; run <= RUNS; run++)); do
        log "$codec: round $run of $RUNS ($(round_order "$run"))"
        read -r -a order <<<"$(round_order "$run")"
        for tool in "${order[@]}"; do
            rm -f "$OUT/restore-time.tmp"
            timed_pair "$tool" "$topic" "$codec" "$run"
        done
    done
done

# --- report -----------------------------------------------------------------------------------

versions() {
    local line
    line="kcat $(kcat -V 2>&1 | awk '/^Version/ { print $2; exit }') (librdkafka $(kcat -V 2>&1 | sed -n 's/.*librdkafka \([0-9.]*\).*/\1/p'))"
    [[ " ${TOOLS[*]} " == *" krec "* ]] && line="$("$KREC" --version 2>/dev/null) at $(git -C "$REPO_ROOT" rev-parse --short HEAD); $line"
    [[ " ${TOOLS[*]} " == *" kafka-backup "* ]] && line="$line; kafka-backup-core $KB_VERSION"
    echo "$line; broker Kafka $(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$SCRIPT_DIR/kafka/pom.xml")"
}
{
    echo "Machine: $(machine_line)"
    echo "Versions: $(versions)"
    echo "Command: scripts/bench-backup.sh --records $RECORDS --runs $RUNS --partitions $PARTITIONS --codecs $CODECS$( ((QUICK)) && echo ' (--quick)')"
    for note in "${NOTES[@]}"; do echo "**$note**"; done
    echo
    published=()
    [[ " ${TOOLS[*]} " == *" kafka-backup "* ]] || published=("$KB_PUBLISHED_MB_S")
    /usr/bin/python3 "$SCRIPT_DIR/bench_backup_report.py" "$RESULTS" "${published[@]}"
    if ((${#INVALID[@]})); then
        echo "Invalid runs (not counted):"
        printf -- '- %s\n' "${INVALID[@]}"
    fi
} >"$OUT/report.md"
cat "$OUT/report.md"
log "results in $OUT (report.md, results.tsv)"
if ((${#INVALID[@]})); then
    log "${#INVALID[@]} runs did not restore the full count (listed in the report)"
    ((QUICK)) && exit 1
fi
exit 0
