#!/usr/bin/env bash
# Soak test of network and broker faults (not run in CI; issue 24): a three-node cluster behind
# Toxiproxy (kafka.sh start --brokers 3 --proxies 1), a producer writing numbered records
# without pause, a group of three `krec consume -G` members reading through the proxies, and
# faults cycling for MINUTES (latency with jitter, a bandwidth limit, a slicer, resets in the
# middle of responses, a black hole, a byte limit per connection, the proxies down past the
# session timeout, a node frozen with SIGSTOP). After each fault the time until every record
# acknowledged so far was written out is printed; at the end, a verifier counts records
# produced, written, lost (must be 0) and written twice (rebalances after a fault repeat what
# was not committed yet). The driver is scripts/soak_faults.py.
#
#   bash scripts/soak-faults.sh [--minutes N (default 30)] [--name INSTANCE (default soak)]
#
# KREC_BIN names the krec binary (default: a debug build made here).
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=30
name=soak
while (($#)); do
    case "$1" in
    --minutes) minutes="${2:?}"; shift 2 ;;
    --name) name="${2:?}"; shift 2 ;;
    *) echo "usage: soak-faults.sh [--minutes N] [--name INSTANCE]" >&2; exit 2 ;;
    esac
done
KAFKA_SH="$(pwd)/scripts/kafka.sh"
bash scripts/install-deps.sh
if [[ -z "${KREC_BIN:-}" ]]; then
    cargo build -q -p krec-cli --bin krec
    KREC_BIN="${CARGO_TARGET_DIR:-target}/debug/krec"
fi
work="$(mktemp -d)"
trap 'bash "$KAFKA_SH" stop --name "$name"; echo "soak-faults: outputs in $work" >&2' EXIT
bash "$KAFKA_SH" stop --name "$name"
bash "$KAFKA_SH" start --name "$name" --brokers 3 --proxies 1 --owner-pid $$ >/dev/null
/usr/bin/python3 scripts/soak_faults.py "$KREC_BIN" "$KAFKA_SH" "$name" "$minutes" "$work"
