#!/usr/bin/env bash
# Instructions per batch of one side of the krec-batch decode bench, under callgrind.
#
#   scripts/decode-instructions.sh BINARY SHAPE [SIDE] [BATCHES]
#
# BINARY is a copy of target/release/deps/decode-<hash> (after
# `cargo bench -p krec-batch --bench decode --no-run`); SHAPE a shape's name, such as
# 1x100b-0h-lz4 (it is matched as a substring: one matching several adds them up); SIDE 0 for
# krec (default), 2 for the floor; BATCHES how many copies of the batch one walk decodes
# (default 100, as a fetch response gives them; 1 for a walk of one batch). The binary runs the side 200 and then 400 walks, and the difference divided by
# 200 walks of BATCHES batches is printed: start-up and set-up cancel out. Counts are exact and
# do not depend on the machine's load, so they tell changes of a few instructions apart where
# times cannot (see BENCHMARKS.md, krec-batch, eighth pass). Needs valgrind (Debian package
# `valgrind`); the test suite does not.
set -euo pipefail

binary=$1 shape=$2 side=${3:-0} batches=${4:-100}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

count() {
    KREC_BENCH_INTERLEAVED=$shape KREC_BENCH_ONLY=$side KREC_BENCH_COUNT=$1 \
        KREC_BENCH_BATCHES=$batches \
        valgrind --tool=callgrind --callgrind-out-file="$out" "$binary" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

fewer=$(count 200)
more=$(count 400)
echo "$shape side=$side batches/walk=$batches instructions/batch=$(( (more - fewer) / (200 * batches) ))"
