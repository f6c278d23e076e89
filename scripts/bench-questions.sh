#!/usr/bin/env bash
# Answering questions about a topic, krec against kcat, by CPU time (issue 23):
#   count:  `krec count -b B -t T`  vs  `kcat -C -e -f '%o\n' | wc -l`
#
#   scripts/bench-questions.sh [--records N] [--runs R] [--quick]
#
#   --records N  records in the zstd topic (default 2000000), values of 100-300 B of words
#   --runs R     interleaved timed runs of each command (default 5); medians are reported
#   --quick      20000 records, 1 run: a smoke test that every step runs and every count agrees
#
# The broker is its own kafka.sh instance (KREC_BENCH_BROKER, default bench-questions), kept
# running with its topic so a rerun with the same --records reuses it; --quick stops it.
# CPU is user + sys of each command and its children, from wait4(2) (scripts/ab.py); every
# command's answer is checked against the record count first, so nothing fast and wrong is
# timed. Output: target/bench-questions/<N>/report.md.
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
KAFKA="$SCRIPT_DIR/kafka.sh"
BROKER_NAME="${KREC_BENCH_BROKER:-bench-questions}"
RECORDS=2000000
RUNS=5
QUICK=0
while (($#)); do
    case "$1" in
        --records) RECORDS="$2"; shift 2 ;;
        --runs) RUNS="$2"; shift 2 ;;
        --quick) QUICK=1; RECORDS=20000; RUNS=1; shift ;;
        *) echo "bench-questions.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[[ "$RECORDS" =~ ^[0-9]+$ && "$RECORDS" -ge 1 ]] || { echo "bench-questions.sh: --records must be >= 1" >&2; exit 2; }
log() { echo "bench-questions: $*" >&2; }
die() { log "$*"; exit 1; }

OUT="$REPO_ROOT/target/bench-questions/$RECORDS"
((QUICK)) && OUT="$REPO_ROOT/target/bench-questions/quick"
mkdir -p "$OUT"
command -v kcat >/dev/null || die "kcat not found (scripts/install-deps.sh installs it)"

if [[ -n "${KREC_BIN:-}" ]]; then
    KREC="$KREC_BIN"
else
    log "building krec (release)"
    (cd "$REPO_ROOT" && cargo build -q --release -p krec-cli --bin krec)
    KREC="$REPO_ROOT/target/release/krec"
fi

if ! bash "$KAFKA" status --name "$BROKER_NAME" >/dev/null 2>&1; then
    log "starting broker instance $BROKER_NAME"
    bash "$KAFKA" start --name "$BROKER_NAME" >/dev/null
fi
((QUICK)) && trap 'bash "$KAFKA" stop --name "$BROKER_NAME" --clean >/dev/null 2>&1 || true' EXIT
BOOTSTRAP="$(bash "$KAFKA" bootstrap --name "$BROKER_NAME")"
TOPIC="bq-$RECORDS-zstd"

# krec's own count is checked against kcat's below, and both against RECORDS.
existing="$("$KREC" count -b "$BOOTSTRAP" -t "$TOPIC" 2>/dev/null | awk '$2 == "total" {print $3}' || true)"
if [[ "$existing" != "$RECORDS" ]]; then
    log "filling $TOPIC with $RECORDS records (kcat -P, zstd)"
    bash "$KAFKA" topic --name "$BROKER_NAME" create "$TOPIC" --partitions 4 2>/dev/null || true
    python3 - "$RECORDS" <<'PY' | kcat -P -b "$BOOTSTRAP" -t "$TOPIC" -z zstd -K : \
        -X linger.ms=50 -X batch.num.messages=10000
import random, sys
words = "kafka record batch offset partition broker consumer leader replica segment".split()
rng = random.Random(7)
out = sys.stdout
for i in range(int(sys.argv[1])):
    value = " ".join(rng.choice(words) for _ in range(rng.randint(12, 36)))
    out.write(f"key-{i}:{value}\n")
PY
fi

krec_count="$("$KREC" count -b "$BOOTSTRAP" -t "$TOPIC" | awk '$2 == "total" {print $3}')"
kcat_count="$(kcat -C -b "$BOOTSTRAP" -t "$TOPIC" -e -q -f '%o\n' | wc -l)"
[[ "$krec_count" == "$RECORDS" ]] || die "krec count says $krec_count, not $RECORDS"
[[ "$kcat_count" == "$RECORDS" ]] || die "kcat read $kcat_count records, not $RECORDS"

# The pipeline as a script of its own, so ab.py times kcat and wc together.
printf '%s\n' "kcat -C -b $BOOTSTRAP -t $TOPIC -e -q -f '%o\\n' | wc -l" >"$OUT/kcat-count.sh"
log "timing $RUNS interleaved runs"
python3 "$SCRIPT_DIR/ab.py" "$RUNS" \
    "krec-count=$KREC count -b $BOOTSTRAP -t $TOPIC" \
    "kcat-wc=bash $OUT/kcat-count.sh" \
    | tee "$OUT/ab.txt"

python3 - "$OUT/ab.txt" "$RECORDS" "$RUNS" >"$OUT/report.md" <<'PY'
import re, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+)\s+cpu ms median\s+([\d.]+)", line)
    if m:
        rows[m.group(1)] = float(m.group(2))
krec, kcat = rows["krec-count"], rows["kcat-wc"]
print(f"Counting {int(sys.argv[2]):,} zstd records on 4 partitions, median CPU of {sys.argv[3]} interleaved runs:\n")
print("| command | CPU ms | vs krec |")
print("|---|---:|---:|")
print(f"| `krec count -b B -t T` | {krec:.0f} | 1.0x |")
print(f"| `kcat -C -e -f '%o\\n' \\| wc -l` | {kcat:.0f} | {kcat / krec:.1f}x |")
PY
cat "$OUT/report.md"
