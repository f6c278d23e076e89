#!/usr/bin/env bash
# The whole test suite: the README's test command, run by CI through .ci/run.
#
# Static checks, unit/integration tests and bench builds first; then the tests that need a
# real Kafka broker (feature `broker-tests`) against a single-node broker started here, with
# a secured single-node broker (TLS, SASL, ACLs) next to it; then, only if a package declares
# a `cluster-tests` feature, those tests against a three-node cluster. Every broker started
# here is stopped on exit, failure or Ctrl-C. Last, the benchmark scripts run on tiny inputs
# (`--quick`), to prove they work, not to measure.
#
# Environment given to the broker tests:
#   KREC_TEST_BOOTSTRAP          bootstrap string of the single broker (127.0.0.1:PORT)
#   KREC_KAFKA_SH                absolute path of scripts/kafka.sh (topics, Java tools, datadir)
#   KREC_KAFKA_NAME              kafka.sh instance name of that broker
#   KREC_TEST_SECURE_ENV         secure.env of a second, secured single-node broker
#                                (kafka.sh start --secured: listeners, certificates, users)
#   KREC_TEST_SECURE_NAME        kafka.sh instance name of the secured broker
#   KREC_TEST_PROXY_ENV          proxy.env of the single broker, started with --proxies: lanes
#                                of listeners advertised through Toxiproxy (the fault tests)
#   KREC_TEST_SECURE_PROXY_ENV   proxy.env of the secured broker (SASL_SSL lanes)
#   KREC_TEST_REGISTRY_URL       the Schema Registry (Apicurio) of the broker tests; and
#   KREC_TEST_REGISTRY_HTTPS_URL the same registry over HTTPS (the secured broker's CA)
#   KREC_TEST_CLUSTER_BOOTSTRAP  bootstrap string of the three-node cluster (cluster-tests only)
#   KREC_TEST_CLUSTER_NAME       kafka.sh instance name of the cluster (cluster-tests only)
# KREC_TEST_INSTANCE (default "test") names the instances, so two checkouts sharing one
# target directory can run the suite at once.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO_ROOT="$(pwd)"
KAFKA_SH="$REPO_ROOT/scripts/kafka.sh"
INSTANCE="${KREC_TEST_INSTANCE:-test}"
SECURE_INSTANCE="${INSTANCE}-secure"
CLUSTER_INSTANCE="${INSTANCE}-cluster"

section() { printf '\n===== %s (at %dm%02ds) =====\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)); }

started=()
registries=()
stop_brokers() {
    local name
    for name in "${started[@]}"; do
        bash "$KAFKA_SH" stop --name "$name" || true
    done
    started=()
    for name in "${registries[@]}"; do
        bash "$REPO_ROOT/scripts/registry.sh" stop --name "$name" || true
    done
    registries=()
}
trap stop_brokers EXIT
trap 'echo "test.sh: interrupted" >&2; exit 130' INT
trap 'echo "test.sh: terminated" >&2; exit 143' TERM

# Packages whose Cargo.toml declares feature $1, as `-p` package names.
packages_with_feature() {
    local feature="$1" manifest
    for manifest in Cargo.toml crates/*/Cargo.toml; do
        if sed -n '/^\[features\]/,/^\[/p' "$manifest" | grep -Eq "^${feature}[[:space:]]*="; then
            sed -n 's/^name[[:space:]]*=[[:space:]]*"\(.*\)"/\1/p' "$manifest" | head -n 1
        fi
    done
}

# start_instance NAME BROKERS [START_OPTION...]
# Not called in $(...): `started` must be updated in this shell for the trap to see it.
start_instance() {
    local name="$1" brokers="$2"
    shift 2
    # Leftovers of an earlier run that was killed too hard to run its trap.
    bash "$KAFKA_SH" stop --name "$name"
    started+=("$name")
    bash "$KAFKA_SH" start --name "$name" --brokers "$brokers" --owner-pid $$ "$@" >/dev/null
}

# A clean clone gains nothing from incremental compilation, whose caches only take disk; a CI
# run has failed on a full disk. With this and no dependency debug info (Cargo.toml), a clean
# clone's target directory after the whole suite went from 5.1 GB to 2.9 GB.
if [[ -n "${CI:-}" ]]; then
    export CARGO_INCREMENTAL=0
fi

section "install dependencies"
bash scripts/install-deps.sh

section "cargo fmt --check"
cargo fmt --all -- --check

section "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

section "cargo test (no broker)"
cargo test --workspace

section "benches compile (cargo test --benches --no-run)"
# Proves every bench compiles without running it. Built with the test profile, so it reuses
# what `cargo test` just built; the bench profile (thin LTO, one codegen unit) would rebuild
# every dependency and was the slowest step of the suite. Real runs use `cargo bench`.
cargo test --workspace --benches --no-run

mapfile -t broker_packages < <(packages_with_feature broker-tests)
if ((${#broker_packages[@]})); then
    section "broker tests against a single-node Kafka (${broker_packages[*]})"
    # Lanes of proxied listeners for broker_faults (one lane per fault test running at once).
    start_instance "$INSTANCE" 1 --proxies 3
    start_instance "$SECURE_INSTANCE" 1 --secured --proxies 2
    KREC_TEST_BOOTSTRAP="$(bash "$KAFKA_SH" bootstrap --name "$INSTANCE")"
    export KREC_TEST_BOOTSTRAP KREC_KAFKA_SH="$KAFKA_SH" KREC_KAFKA_NAME="$INSTANCE"
    KREC_TEST_SECURE_ENV="$(bash "$KAFKA_SH" secure-env --name "$SECURE_INSTANCE")"
    export KREC_TEST_SECURE_ENV KREC_TEST_SECURE_NAME="$SECURE_INSTANCE"
    KREC_TEST_PROXY_ENV="$(bash "$KAFKA_SH" proxy-env --name "$INSTANCE")"
    KREC_TEST_SECURE_PROXY_ENV="$(bash "$KAFKA_SH" proxy-env --name "$SECURE_INSTANCE")"
    export KREC_TEST_PROXY_ENV KREC_TEST_SECURE_PROXY_ENV
    echo "broker: $KREC_TEST_BOOTSTRAP (instance $INSTANCE)"
    echo "secured broker: $KREC_TEST_SECURE_ENV (instance $SECURE_INSTANCE)"
    # The Schema Registry tests (broker_schema*): Apicurio and the Confluent Python serializers.
    registries+=("$INSTANCE-registry")
    # Also on HTTPS, with the secured broker's certificate (its CA is CA_PEM of secure.env).
    secure_dir="$(dirname "$(sed -n 's/^CA_PEM=//p' "$KREC_TEST_SECURE_ENV")")"
    KREC_TEST_REGISTRY_URL="$(bash "$REPO_ROOT/scripts/registry.sh" start --name "$INSTANCE-registry" \
        --tls-cert "$secure_dir/broker.pem" --tls-key "$secure_dir/broker.key")"
    KREC_TEST_REGISTRY_HTTPS_URL="$(bash "$REPO_ROOT/scripts/registry.sh" https-url --name "$INSTANCE-registry")"
    export KREC_TEST_REGISTRY_HTTPS_URL
    KREC_TEST_PYTHON="$(bash "$REPO_ROOT/scripts/registry.sh" python)"
    export KREC_TEST_REGISTRY_URL KREC_TEST_PYTHON
    echo "schema registry: $KREC_TEST_REGISTRY_URL"
    # Only the broker_* test files, with the same workspace-wide feature set as the step above,
    # so nothing but the package itself is rebuilt and the other tests do not run twice.
    for package in "${broker_packages[@]}"; do
        cargo test --workspace --features "$package/broker-tests" --test 'broker_*'
    done
    stop_brokers
else
    section "broker tests: no package declares a broker-tests feature"
fi

mapfile -t cluster_packages < <(packages_with_feature cluster-tests)
if ((${#cluster_packages[@]})); then
    section "cluster tests against a three-node Kafka (${cluster_packages[*]})"
    start_instance "$CLUSTER_INSTANCE" 3
    KREC_TEST_CLUSTER_BOOTSTRAP="$(bash "$KAFKA_SH" bootstrap --name "$CLUSTER_INSTANCE")"
    export KREC_TEST_CLUSTER_BOOTSTRAP KREC_TEST_CLUSTER_NAME="$CLUSTER_INSTANCE" KREC_KAFKA_SH="$KAFKA_SH"
    echo "cluster: $KREC_TEST_CLUSTER_BOOTSTRAP (instance $CLUSTER_INSTANCE)"
    for package in "${cluster_packages[@]}"; do
        cargo test --workspace --features "$package/cluster-tests" --test 'broker_*'
    done
    stop_brokers
fi

section "benchmark scripts on tiny inputs (--quick)"
# The issue asks CI to prove the benchmark scripts run, not to benchmark: each runs its whole
# pipeline (builds, Java and Rust sides, broker, every consumer, report and chart) on a few
# thousand records. The consume smoke test gets its own broker and stops it.
bash scripts/bench-decode.sh --quick
KREC_BENCH_BROKER="$INSTANCE-bench" bash scripts/bench-consume.sh --quick
KREC_BENCH_BROKER="$INSTANCE-bench" bash scripts/bench-consume.sh --quick --tls
KREC_BENCH_BROKER="$INSTANCE-questions" bash scripts/bench-questions.sh --quick
KREC_BENCH_BROKER="$INSTANCE-bench" bash scripts/bench-partitions.sh --quick

section "all tests passed"
