#!/usr/bin/env python3
"""Interleaved A/B of krec-batch decode bench binaries, shape by shape.

    python3 scripts/decode_ab.py ROUNDS FILTER BATCHES BINARY [BINARY ...]

Each round runs every BINARY once in the decode bench's interleaved mode
(`KREC_BENCH_INTERLEAVED=FILTER KREC_BENCH_BATCHES=BATCHES BINARY --bench`), so machine load
hits all of them alike; prints, per shape and binary, the medians over the rounds of krec's ns
per batch, the floor's, and krec / floor (the median of the per-round ratios). kafka-protocol
is not run (`KREC_BENCH_NO_PEER`): it took most of each run's time.

A binary is a copy of `target/release/deps/decode-<hash>` saved after
`cargo bench -p krec-batch --bench decode --no-run` on each version compared (the next build
overwrites that path, hence the copy). FILTER is a substring of the shape names, such as
`1x100b-0h`; BATCHES is how many copies of the batch one walk decodes (1, or 100 for a walk
like a fetch response's).
"""
import collections
import os
import statistics
import subprocess
import sys


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    rounds, shape_filter, batches = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    binaries = sys.argv[4:]
    seen = collections.defaultdict(lambda: collections.defaultdict(list))
    env = dict(os.environ, KREC_BENCH_INTERLEAVED=shape_filter, KREC_BENCH_BATCHES=batches,
               KREC_BENCH_NO_PEER="1")
    for _ in range(rounds):
        for binary in binaries:
            out = subprocess.run([binary, "--bench"], env=env, capture_output=True,
                                 text=True, check=True).stdout
            for line in out.splitlines():
                if not line.startswith("INTERLEAVED"):
                    continue
                fields = [f.strip() for f in line.split("|")]
                shape = fields[0].split()[1]
                seen[shape][binary].append((float(fields[1]), float(fields[3])))
    for shape, by_binary in seen.items():
        cells = []
        for binary in binaries:
            runs = by_binary[binary]
            krec = statistics.median(k for k, _ in runs)
            floor = statistics.median(f for _, f in runs)
            ratio = statistics.median(k / f for k, f in runs)
            cells.append(f"{os.path.basename(binary)} {krec:.1f}/{floor:.1f}={ratio:.2f}")
        print(shape, " | ".join(cells))


if __name__ == "__main__":
    main()
