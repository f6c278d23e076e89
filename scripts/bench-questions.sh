#!/usr/bin/env bash
# Answering questions about a topic, krec against kcat, by CPU time (issue 23):
#   count:   `krec count -b B -t T`  vs  `kcat -C -e -f '%o\n' | wc -l`
#   filter:  `krec consume -e --header trace=needle`  vs  `krec consume -e -J | grep needle`
#            vs  `kcat -C -e -f '%h %s\n' | grep needle` (1 record in 10,000 has that header)
#
#   scripts/bench-questions.sh [--records N] [--runs R] [--compression C] [--quick] [--stop]
#
#   --records N      records in the topic (default 2000000), values of 70-250 B of words, by librdkafka
#   --compression C  the producer's compression.type: zstd (default), lz4, snappy, gzip or none
#   --runs R         interleaved timed runs of each command (default 5); medians are reported
#   --quick          20000 records, 1 run: a smoke test that every step runs and every count
#                    agrees; stops the broker if it started it
#   --stop           stop the benchmark broker at the end
#
# The broker is its own kafka.sh instance (KREC_BENCH_BROKER, default bench-questions), reused
# if running and kept running with its topic, so a rerun with the same --records reuses it.
# CPU is user + sys of each command and its children, from wait4(2) (scripts/ab.py); every
# command's answer is checked against the record count first, so nothing fast and wrong is
# timed. KREC_BIN benchmarks that krec binary instead of building one.
# Output: target/bench-questions/<N>-<C>/report.md.
# shellcheck source=lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"

RECORDS=2000000
RUNS=5
COMPRESSION=zstd
QUICK_SETTINGS=(RECORDS=20000 RUNS=1)
bench_args "--records= --runs= --compression= --stop" "$@"
[[ "$COMPRESSION" =~ ^(zstd|lz4|snappy|gzip|none)$ ]] || usage_error "--compression: zstd, lz4, snappy, gzip or none"
bench_positive_int RECORDS RUNS

OUT="$REPO_ROOT/target/bench-questions/$RECORDS-$COMPRESSION"
((QUICK)) && OUT="$REPO_ROOT/target/bench-questions/quick"
mkdir -p "$OUT"
command -v kcat >/dev/null || die "kcat not found (scripts/install-deps.sh installs it)"

bench_krec
bench_broker bench-questions

TOPIC="bq-$RECORDS-$COMPRESSION-headers"
# krec's own count is checked against kcat's below, and both against RECORDS.
existing="$("$KREC" count -b "$BOOTSTRAP" -t "$TOPIC" 2>/dev/null | awk '$2 == "total" {print $3}' || true)"
if [[ "$existing" != "$RECORDS" ]]; then
    log "filling $TOPIC with $RECORDS records (librdkafka through confluent-kafka, $COMPRESSION)"
    bash "$KAFKA" topic --name "$BROKER_NAME" create "$TOPIC" --partitions 4 2>/dev/null || true
    /usr/bin/python3 - "$RECORDS" "$BOOTSTRAP" "$TOPIC" "$COMPRESSION" <<'PY'
import random, sys
from confluent_kafka import Producer
words = "kafka record batch offset partition broker consumer leader replica segment".split()
rng = random.Random(7)
count, bootstrap, topic, compression = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
p = Producer({"bootstrap.servers": bootstrap, "compression.type": compression, "linger.ms": 50,
              "batch.num.messages": 10000, "queue.buffering.max.messages": 1000000})
for i in range(count):
    value = " ".join(rng.choice(words) for _ in range(rng.randint(12, 36)))
    # One record in 10,000 carries the header the filter looks for.
    headers = [("trace", b"needle" if i % 10000 == 5000 else b"hay-%d" % i)]
    while True:
        try:
            p.produce(topic, key=b"key-%d" % i, value=value.encode(), headers=headers)
            break
        except BufferError:
            p.poll(0.05)
p.flush(120)
PY
fi

krec_count="$("$KREC" count -b "$BOOTSTRAP" -t "$TOPIC" | awk '$2 == "total" {print $3}')"
kcat_count="$(kcat -C -b "$BOOTSTRAP" -t "$TOPIC" -e -q -f '%o\n' | wc -l)"
[[ "$krec_count" == "$RECORDS" ]] || die "krec count says $krec_count, not $RECORDS"
[[ "$kcat_count" == "$RECORDS" ]] || die "kcat read $kcat_count records, not $RECORDS"

# Pipelines as scripts of their own, so ab.py times every process of each together.
printf '%s\n' "kcat -C -b $BOOTSTRAP -t $TOPIC -e -q -f '%o\\n' | wc -l" >"$OUT/kcat-count.sh"
printf '%s\n' "$KREC consume -b $BOOTSTRAP -t $TOPIC -e -J | grep needle" >"$OUT/krec-json-grep.sh"
printf '%s\n' "kcat -C -b $BOOTSTRAP -t $TOPIC -e -q -f '%h %s\\n' | grep needle" >"$OUT/kcat-grep.sh"
needles=$(((RECORDS + 4999) / 10000))
krec_found="$("$KREC" consume -b "$BOOTSTRAP" -t "$TOPIC" -e --header trace=needle -f '%o\n' | wc -l)"
[[ "$krec_found" == "$needles" ]] || die "krec --header found $krec_found records, not $needles"
[[ "$(bash "$OUT/krec-json-grep.sh" | wc -l)" == "$needles" ]] || die "krec -J | grep disagrees"
[[ "$(bash "$OUT/kcat-grep.sh" | wc -l)" == "$needles" ]] || die "kcat | grep disagrees"

log "timing $RUNS interleaved runs"
python3 "$SCRIPT_DIR/ab.py" "$RUNS" \
    "krec-count=$KREC count -b $BOOTSTRAP -t $TOPIC" \
    "kcat-wc=bash $OUT/kcat-count.sh" \
    "krec-header=$KREC consume -b $BOOTSTRAP -t $TOPIC -e --header trace=needle" \
    "krec-json-grep=bash $OUT/krec-json-grep.sh" \
    "kcat-grep=bash $OUT/kcat-grep.sh" \
    | tee "$OUT/ab.txt"

python3 - "$OUT/ab.txt" "$RECORDS" "$RUNS" "$COMPRESSION" >"$OUT/report.md" <<'PY'
import re, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+)\s+cpu ms median\s+([\d.]+)", line)
    if m:
        rows[m.group(1)] = float(m.group(2))
print(f"{int(sys.argv[2]):,} {sys.argv[4]} records on 4 partitions, median CPU ms of {sys.argv[3]} "
      "interleaved runs (scripts/ab.py):\n")
print("| question | command | CPU ms | vs krec |")
print("|---|---|---:|---:|")
def row(question, command, name, base):
    print(f"| {question} | `{command}` | {rows[name]:.0f} | {rows[name] / rows[base]:.1f}x |")
row("count", "krec count -b B -t T", "krec-count", "krec-count")
row("count", "kcat -C -e -f '%o\\n' \\| wc -l", "kcat-wc", "krec-count")
q = "1 in 10,000 by header"
row(q, "krec consume -e --header trace=needle", "krec-header", "krec-header")
row(q, "krec consume -e -J \\| grep needle", "krec-json-grep", "krec-header")
row(q, "kcat -C -e -f '%h %s\\n' \\| grep needle", "kcat-grep", "krec-header")
PY
cat "$OUT/report.md"
