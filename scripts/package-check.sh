#!/usr/bin/env bash
# Checks that the crates meant for crates.io could be published, without compiling anything:
# `cargo package --no-verify` of each checks its metadata, that its path dependencies carry
# versions, and which files it ships (each crate's `include`). The workspace members not
# listed here must say `publish = false`. Run by scripts/test.sh before anything is built.
#
# All in one cargo call: cargo then resolves their dependencies on each other through a local
# registry of the packages it has just made, as crates.io would once they were published in
# order. `--offline` after a `cargo fetch` of the locked dependencies: no index update per crate.
set -euo pipefail
cd "$(dirname "$0")/.."

PUBLISHED=(krec-lz4 krec-batch krec-client krec-consumer krec-producer krec-copy krec-schema krec-cli krec)

cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys
published = set(sys.argv[1:])
wrong = []
for package in json.load(sys.stdin)["packages"]:
    publishable = package["publish"] != []
    if publishable != (package["name"] in published):
        wrong.append(package["name"])
if wrong:
    sys.exit("package-check: publish = false must be set exactly on the members not in "
             "PUBLISHED (scripts/package-check.sh): " + ", ".join(wrong))
' "${PUBLISHED[@]}"

cargo fetch --target "$(rustc -vV | sed -n 's/^host: //p')"
packages=()
for name in "${PUBLISHED[@]}"; do packages+=(-p "$name"); done
# --allow-dirty: this checks the manifests, not whether the work is committed. The tests and
# benches each `include` leaves out are dropped from the packaged manifests, by design: cargo's
# warning about each is filtered out.
output="$(cargo package --offline --no-verify --allow-dirty "${packages[@]}" 2>&1)" || {
    echo "$output" >&2
    exit 1
}
grep -v 'is not included in the published package$' <<<"$output" || true
