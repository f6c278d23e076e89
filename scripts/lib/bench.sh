# shellcheck shell=bash
# What every scripts/bench-*.sh shares, sourced first thing:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"
#
# Sets: SCRIPT_DIR (scripts/), REPO_ROOT, KAFKA (scripts/kafka.sh), BENCH (the script's name
# without .sh, for messages), QUICK=0, STOP=0; sets `set -euo pipefail`. Defines:
#
#   log MESSAGE / die MESSAGE     to stderr, prefixed with the script's name (die exits 1;
#                                 usage_error MESSAGE exits 2, for a bad command line)
#   bench_args SPEC "$@"          the flags (below)
#   bench_krec                    KREC: $KREC_BIN, or a release build of krec made here
#   bench_rdkafka_consumer LOG    RDKAFKA_BIN: benches/rdkafka-consumer's release build, or ""
#   bench_program BENCH CARGO...  builds benches/BENCH.rs (a program) with the cargo command
#                                 CARGO... and prints its executable's path
#   bench_broker DEFAULT [START_OPTION...]
#                                 BROKER_NAME, BOOTSTRAP: a kafka.sh broker, started if needed
#   bench_on_exit COMMAND         run COMMAND (a string, eval'd) when the script exits
#   bench_payload_file FILE COUNT [VALUE_BYTES]
#                                 COUNT records as KEY<TAB>VALUE lines in FILE (kept if it has
#                                 them), values of words, 100-300 B or VALUE_BYTES each
#   measure [--pidfile F] OUT COMMAND...
#                                 the wait4 timer (scripts/lib/timer.py): "wall_s user_s sys_s
#                                 max_rss_kb" of COMMAND into OUT
#   machine_line                  one line: cores, CPU model, RAM, kernel
#
# Environment every script reads: KREC_BIN (the krec binary to benchmark; default: build a
# release one), KREC_BENCH_BROKER (the kafka.sh instance to use; default: the script's own).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
KAFKA="$SCRIPT_DIR/kafka.sh"
BENCH_LIB="$SCRIPT_DIR/lib"
BENCH_SCRIPT="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
BENCH="$(basename "$0" .sh)"
QUICK=0
STOP=0

log() { echo "$BENCH: $*" >&2; }
die() {
    log "$*"
    exit 1
}
# A bad command line: exit status 2, as for any command.
usage_error() {
    log "$* (see --help)"
    exit 2
}

# --- flags ------------------------------------------------------------------------------------

# bench_args SPEC "$@"
# SPEC lists the script's own flags, space-separated: `--records=` takes a value, `--tls` is a
# switch; each sets the variable named after it (--tail-seconds= sets TAIL_SECONDS, --tls sets
# TLS=1). Every script also takes --quick (QUICK=1, then the assignments in the array
# QUICK_SETTINGS, so flags after --quick override them), --stop (STOP=1) where SPEC lists it,
# and -h/--help (prints the script's header comment).
bench_args() {
    local spec=" $1 " flag var
    shift
    while (($#)); do
        flag="$1"
        var="${flag#--}"
        var="${var//-/_}"
        var="${var^^}"
        case "$flag" in
            -h | --help)
                bench_usage
                exit 0
                ;;
            --quick)
                QUICK=1
                local setting
                for setting in "${QUICK_SETTINGS[@]}"; do declare -g "$setting"; done
                ;;
            --*)
                if [[ "$spec" == *" $flag= "* ]]; then
                    (($# >= 2)) || usage_error "$flag needs a value"
                    declare -g "$var=$2"
                    shift
                elif [[ "$spec" == *" $flag "* ]]; then
                    declare -g "$var=1"
                else
                    usage_error "unknown argument $flag"
                fi
                ;;
            *) usage_error "unknown argument $flag" ;;
        esac
        shift
    done
}
QUICK_SETTINGS=()

# The script's header: its comment lines after the shebang, up to the first other line.
bench_usage() {
    awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$BENCH_SCRIPT"
}

# bench_positive_int VAR...: each variable (set by its flag) holds an integer >= 1.
bench_positive_int() {
    local var flag
    for var in "$@"; do
        flag="${var,,}"
        [[ "${!var}" =~ ^[0-9]+$ && "${!var}" -ge 1 ]] || usage_error "--${flag//_/-} must be an integer >= 1, not '${!var}'"
    done
}

# --- exit -------------------------------------------------------------------------------------

# Commands run at exit, newest first, then the broker stop (bench_broker); one failing does
# not keep the others from running.
BENCH_ON_EXIT=()
bench_on_exit() { BENCH_ON_EXIT=("$1" "${BENCH_ON_EXIT[@]}"); }
bench_exit() {
    local code=$? command
    for command in "${BENCH_ON_EXIT[@]}"; do eval "$command" || true; done
    if [[ -n "${BENCH_STOP_BROKER:-}" ]]; then
        # A smoke run's broker was only ever for this run: its data goes too.
        local clean=()
        ((QUICK)) && clean=(--clean)
        bash "$KAFKA" stop --name "$BENCH_STOP_BROKER" "${clean[@]}" >/dev/null 2>&1 || true
    fi
    return "$code"
}
trap bench_exit EXIT
# A Ctrl-C or kill still runs the EXIT trap (stopping what the script started).
trap 'exit 130' INT
trap 'exit 143' TERM

# --- krec -------------------------------------------------------------------------------------

bench_krec() {
    if [[ -n "${KREC_BIN:-}" ]]; then
        KREC="$KREC_BIN"
    else
        log "building krec (release)"
        (cd "$REPO_ROOT" && cargo build -q --release -p krec-cli --bin krec)
        KREC="${CARGO_TARGET_DIR:-$REPO_ROOT/target}/release/krec"
    fi
    [[ -x "$KREC" ]] || die "no krec binary at $KREC"
}

# --- programs under benches/ -----------------------------------------------------------------

# bench_program BENCH CARGO...
# Builds the root package's bench target BENCH (benches/BENCH.rs, a program: harness = false)
# with CARGO... (`cargo build --release -p krec` for a measurement, `cargo test --workspace
# --no-run` to reuse the suite's test-profile builds) and prints its executable, whose name
# (target/*/deps/BENCH-<hash>) only cargo's JSON messages tell.
bench_program() {
    local bench="$1" exe
    shift
    exe="$(cd "$REPO_ROOT" && "$@" --bench "$bench" --message-format=json-render-diagnostics \
        | python3 -c '
import json, sys
name = sys.argv[1]
paths = [m["executable"] for m in map(json.loads, sys.stdin)
         if m.get("reason") == "compiler-artifact" and m["target"]["name"] == name and m.get("executable")]
print(paths[-1] if paths else "")' "$bench")" || die "building benches/$bench.rs failed"
    [[ -n "$exe" && -x "$exe" ]] || die "cargo named no executable for benches/$bench.rs"
    echo "$exe"
}

# --- the rdkafka crate's consumer ------------------------------------------------------------

# bench_rdkafka_consumer BUILD_LOG
# RDKAFKA_BIN: the release build of benches/rdkafka-consumer (the `rdkafka` crate with its
# bundled librdkafka, linked statically; its own workspace and target directory). A full run
# builds it or brings it up to date (a clean build runs librdkafka's ./configure and make:
# about 6 min on 2 busy cores); a --quick run builds nothing unless BUILD_RDKAFKA=1 (the
# script's --build-rdkafka), so the test suite's smoke runs never pay for that build: it uses
# a build already there, or none. Returns 1 with RDKAFKA_BIN="" when there is none or the
# build failed (the output of the build is in BUILD_LOG).
bench_rdkafka_consumer() {
    local build_log="$1"
    RDKAFKA_BIN="$REPO_ROOT/target/rdkafka-consumer/release/rdkafka-consumer-bench"
    if ((QUICK && !${BUILD_RDKAFKA:-0})); then
        if [[ -x "$RDKAFKA_BIN" ]]; then
            log "rdkafka consumer: the build already there ($RDKAFKA_BIN; --quick builds none)"
            return 0
        fi
        log "rdkafka consumer not built: run scripts/$BENCH.sh --build-rdkafka (a build of minutes); without it here"
        RDKAFKA_BIN=""
        return 1
    fi
    log "building the rdkafka consumer (benches/rdkafka-consumer; a clean build takes minutes)"
    if ! CARGO_TARGET_DIR="$REPO_ROOT/target/rdkafka-consumer" cargo build -q --release \
        --manifest-path "$REPO_ROOT/benches/rdkafka-consumer/Cargo.toml" >"$build_log" 2>&1; then
        log "the rdkafka consumer does not build (see $build_log)"
        RDKAFKA_BIN=""
        return 1
    fi
}

# --- broker -----------------------------------------------------------------------------------

# bench_broker DEFAULT [START_OPTION...]
# BROKER_NAME is $KREC_BENCH_BROKER, or DEFAULT. A running instance of that name is reused as
# it is (the test suite starts one for all its smoke runs), so reruns keep their topics and
# only the first pays the start; otherwise it is started here with START_OPTIONs, and stopped
# at exit if --stop or --quick was given (a smoke test leaves nothing running that it started).
# Sets BROKER_NAME and BOOTSTRAP.
bench_broker() {
    BROKER_NAME="${KREC_BENCH_BROKER:-$1}"
    shift
    if ! bash "$KAFKA" status --name "$BROKER_NAME" >/dev/null 2>&1; then
        log "starting broker '$BROKER_NAME'"
        bash "$KAFKA" start --name "$BROKER_NAME" "$@" >/dev/null
        ((QUICK)) && STOP=1
    fi
    ((STOP)) && BENCH_STOP_BROKER="$BROKER_NAME"
    BOOTSTRAP="$(bash "$KAFKA" bootstrap --name "$BROKER_NAME")"
    log "broker '$BROKER_NAME' at $BOOTSTRAP"
}

# bench_broker_secured NAME: exit 0 iff instance NAME was started with --secured.
bench_broker_secured() {
    bash "$KAFKA" secure-env --name "$1" >/dev/null 2>&1
}

# --- records ----------------------------------------------------------------------------------

# bench_payload_file FILE COUNT [VALUE_BYTES]
# The records of the benchmarks that produce their own: keys key-N, values of words (so codecs
# have something to find) of 100-300 B, or of VALUE_BYTES each; one seed everywhere, so every
# script's file of COUNT records holds the same lines. A file already holding COUNT lines is
# kept; a new one is written beside it and renamed into place.
bench_payload_file() {
    local file="$1" count="$2" value_bytes="${3:-}"
    [[ -f "$file" ]] && [[ "$(wc -l <"$file")" == "$count" ]] && return 0
    log "writing $count records to $file"
    mkdir -p "$(dirname "$file")"
    python3 - "$file" "$count" "$value_bytes" <<'PY'
import random, sys
path, count, value_bytes = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = random.Random(20261130)
words = ["order", "customer", "shipped", "invoice", "pending", "paid", "warehouse", "item",
         "quantity", "price", "EUR", "USD", "berlin", "lisbon", "osaka", "status", "created",
         "updated", "true", "false", "null", "id", "sku", "cart", "session", "region"]
words += ["%x" % rng.getrandbits(32) for _ in range(400)]
with open(path + ".tmp", "w") as out:
    for i in range(count):
        size = int(value_bytes) if value_bytes else rng.randint(100, 300)
        parts, length = [], 0
        while length < size:
            w = rng.choice(words)
            parts.append(w)
            length += len(w) + 1
        out.write("key-%d\t%s\n" % (rng.randrange(1 << 20), " ".join(parts)[:size]))
PY
    mv "$file.tmp" "$file"
}

# --- measuring --------------------------------------------------------------------------------

# Any python3 will do (standard library only); /usr/bin/python3 is always there.
measure() { /usr/bin/python3 "$BENCH_LIB/timer.py" "$@"; }

machine_line() {
    echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(free -g | awk '/Mem:/ { print $2 }') GiB RAM; $(uname -sr)"
}
