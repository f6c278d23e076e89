#!/usr/bin/env bash
# The whole test suite: the README's test command, run by CI through .ci/run.
#
# Order, chosen so that nothing waits that need not (2 cores):
#   1. dependencies, rustfmt, `cargo package` of the publishable crates (no compiling);
#   2. the Kerberos KDC (scripts/kdc.sh), the S3 server (scripts/s3.sh) and the OAuth server
#      (scripts/oauth.sh), a second or two each, then the brokers in the background: a single
#      node with Toxiproxy lanes, a secured node (TLS, SASL, GSSAPI against the KDC, OAUTHBEARER
#      against the OAuth server, ACLs) with lanes, the Schema Registry, and a three-node cluster;
#   3. the ship tests built without the gssapi feature (krec version -v drops it), clippy,
#      then one build of every target (tests, benches, examples, and the broker and
#      cluster test binaries, which `cargo test` alone leaves out: `test = false`);
#   4. the broker tests and the cluster tests run as soon as their brokers answer, in the
#      background, while `cargo test` runs every test that needs no broker;
#   5. the benchmark scripts on tiny inputs (`--quick`), to prove they run, not to measure.
# Every broker started here is stopped on exit, failure or Ctrl-C.
#
# Every cargo step but the first of step 3 builds with the features in KREC_CARGO_FEATURES
# (exported for the bench scripts, so that they reuse the same builds): `krec-cli/gssapi`,
# Kerberos, which links the system's MIT krb5 (libkrb5-dev) and so is not a default feature.
#
# Environment given to the broker tests (crates/*/tests/broker) and cluster tests
# (crates/*/tests/cluster):
#   KREC_TEST_BOOTSTRAP          bootstrap string of the single broker (127.0.0.1:PORT)
#   KREC_KAFKA_SH                absolute path of scripts/kafka.sh (topics, Java tools, datadir)
#   KREC_KAFKA_NAME              kafka.sh instance name of that broker
#   KREC_TEST_SECURE_ENV         secure.env of a second, secured single-node broker
#                                (kafka.sh start --secured: listeners, certificates, users;
#                                its OAUTH_ENV is the oauth.env of the OAuth server,
#                                scripts/oauth.sh; its KDC_ENV the kdc.env of the KDC,
#                                scripts/kdc.sh)
#   KREC_TEST_SECURE_NAME        kafka.sh instance name of the secured broker
#   KREC_TEST_PROXY_ENV          proxy.env of the single broker, started with --proxies: lanes
#                                of listeners advertised through Toxiproxy (the fault tests)
#   KREC_TEST_SECURE_PROXY_ENV   proxy.env of the secured broker (SASL_SSL lanes)
#   KREC_TEST_REGISTRY_URL       the Schema Registry (Apicurio) of the broker tests; and
#   KREC_TEST_REGISTRY_HTTPS_URL the same registry over HTTPS (the secured broker's CA)
#   KREC_TEST_PYTHON             the Python with the Confluent serializers (registry.sh python)
#   KREC_TEST_AWS_PYTHON         the Python with AWS's MSK IAM signer and botocore, and
#   KREC_TEST_EC2_METADATA_MOCK  AWS's EC2 metadata mock, for crates/client/tests/msk_iam (aws.sh)
#   KREC_TEST_S3_ENDPOINT        an S3-compatible server (moto, scripts/s3.sh): its URL; clients
#                                take the rest of `s3.sh env` (keys test/test, us-east-1,
#                                AWS_ALLOW_HTTP=true); a bucket is made by an unsigned PUT of
#                                ENDPOINT/BUCKET or by `s3.sh bucket`
#   KREC_TEST_CLUSTER_BOOTSTRAP  bootstrap string of the three-node cluster
#   KREC_TEST_CLUSTER_NAME       kafka.sh instance name of the cluster
#   KREC_TEST_COMPAT_NAMES       kafka.sh instance names of older releases on ZooKeeper
#                                (kafka.sh start --version V; the compat broker test)
# KREC_TEST_INSTANCE (default "test") names the instances, so two checkouts sharing one
# target directory can run the suite at once. KREC_BROKER_TEST_THREADS (default 6) is how many
# broker tests run at once: they mostly wait on the brokers, not on the cores.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO_ROOT="$(pwd)"
KAFKA_SH="$REPO_ROOT/scripts/kafka.sh"
KDC_SH="$REPO_ROOT/scripts/kdc.sh"
REGISTRY_SH="$REPO_ROOT/scripts/registry.sh"
INSTANCE="${KREC_TEST_INSTANCE:-test}"
SECURE_INSTANCE="${INSTANCE}-secure"
# Older releases the compatibility test reads: the oldest Amazon MSK offers, the last on ZooKeeper.
COMPAT_VERSIONS=(2.8.2 3.9.1)
COMPAT_INSTANCES=()
CLUSTER_INSTANCE="${INSTANCE}-cluster"
REGISTRY_INSTANCE="${INSTANCE}-registry"
OAUTH_INSTANCE="${INSTANCE}-oauth"
OAUTH_SH="$REPO_ROOT/scripts/oauth.sh"
# Access tokens live this long, so that a read of a few seconds spans several refreshes.
OAUTH_TOKEN_TTL_S=4
KDC_INSTANCE="${INSTANCE}-kdc"
export KREC_CARGO_FEATURES=krec-cli/gssapi
FEATURES=(--features "$KREC_CARGO_FEATURES")
BROKER_TEST_THREADS="${KREC_BROKER_TEST_THREADS:-6}"
LOGS="$REPO_ROOT/target/test-logs"

section() { printf '\n===== %s (at %dm%02ds) =====\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)); }

started=()
registries=()
oauth_servers=()
kdcs=()
# stop_brokers [KEEP]: stops everything started so far but the kafka.sh instance KEEP. The
# registries and brokers stop all at once: each stop mostly waits for a JVM to shut down.
stop_brokers() {
    local keep="${1:-}" name pid stopping=() kept=()
    for name in "${registries[@]}"; do
        bash "$REGISTRY_SH" stop --name "$name" &
        stopping+=($!)
    done
    registries=()
    for name in "${started[@]}"; do
        if [[ "$name" == "$keep" ]]; then
            kept+=("$name")
            continue
        fi
        bash "$KAFKA_SH" stop --name "$name" &
        stopping+=($!)
    done
    started=("${kept[@]}")
    for pid in "${stopping[@]}"; do wait "$pid" || true; done
    for name in "${oauth_servers[@]}"; do
        bash "$OAUTH_SH" stop --name "$name" || true
    done
    oauth_servers=()
    bash scripts/s3.sh stop --name "$INSTANCE-s3" || true
    # After the brokers, which hold no session with it but log their last words about it.
    for name in "${kdcs[@]}"; do
        bash "$KDC_SH" stop --name "$name" || true
    done
    kdcs=()
}
cleanup() {
    local pid
    for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
    stop_brokers
}
trap cleanup EXIT
trap 'echo "test.sh: interrupted" >&2; exit 130' INT
trap 'echo "test.sh: terminated" >&2; exit 143' TERM

# start_instance NAME BROKERS [START_OPTION...]: starts a kafka.sh instance in the background,
# its log in $LOGS/start-NAME.log and its exit status in $LOGS/start-NAME.status, so that
# `wait_started NAME` works from any subshell. Not called in $(...): `started` must be updated
# in this shell for the trap to see it.
start_instance() {
    local name="$1" brokers="$2"
    shift 2
    # Leftovers of an earlier run that was killed too hard to run its trap.
    bash "$KAFKA_SH" stop --name "$name" >/dev/null
    started+=("$name")
    rm -f "$LOGS/start-$name.status"
    (
        status=0
        bash "$KAFKA_SH" start --name "$name" --brokers "$brokers" --owner-pid $$ "$@" || status=$?
        echo "$status" >"$LOGS/start-$name.status"
    ) >"$LOGS/start-$name.log" 2>&1 &
}
wait_started() {
    local name="$1"
    while [[ ! -s "$LOGS/start-$name.status" ]]; do sleep 0.5; done
    if [[ "$(cat "$LOGS/start-$name.status")" != 0 ]]; then
        cat "$LOGS/start-$name.log" >&2
        echo "test.sh: kafka.sh start --name $name failed" >&2
        return 1
    fi
}

# Writes the executables of the test targets named $1 (one per package that has one) to
# $LOGS/$1.executables, as "MANIFEST_DIR EXECUTABLE" lines. Called after the build step, so it
# compiles nothing; called before the tests start, so it never waits for cargo's lock.
list_test_executables() {
    cargo test --workspace "${FEATURES[@]}" --test "$1" --no-run --message-format=json 2>/dev/null | python3 -c '
import json, os, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and message.get("executable") \
            and message["target"]["name"] == sys.argv[1]:
        print(os.path.dirname(message["manifest_path"]), message["executable"])
' "$1" >"$LOGS/$1.executables"
    [[ -s "$LOGS/$1.executables" ]] || { echo "test.sh: no test target named $1" >&2; exit 1; }
}

# run_tests NAME LIBTEST_ARGS...: runs every test binary named NAME from its package's
# directory, as cargo would, with the given libtest arguments; all of them, even after one
# fails, so that one package's failure hides no other's results.
run_tests() {
    local name="$1" dir exe status=0
    shift
    while read -r dir exe; do
        echo "----- $name: $exe $* (in $dir)"
        (cd "$dir" && "$exe" "$@") || status=1
    done <"$LOGS/$name.executables"
    return "$status"
}

# A clean clone gains nothing from incremental compilation, whose caches only take disk (a CI
# run has failed on a full disk). Nor from our crates' full debug info (Cargo.toml keeps it for
# debugging): line tables still give backtraces their lines, and LLVM writes, and the linker
# copies into every test binary, a fraction of it.
if [[ -n "${CI:-}" ]]; then
    export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
fi
mkdir -p "$LOGS"

section "install dependencies"
bash scripts/install-deps.sh

KREC_TEST_AWS_PYTHON="$(bash scripts/aws.sh python)"
KREC_TEST_EC2_METADATA_MOCK="$(bash scripts/aws.sh metadata-mock)"
export KREC_TEST_AWS_PYTHON KREC_TEST_EC2_METADATA_MOCK

section "cargo fmt --check"
cargo fmt --all -- --check

section "cargo package --no-verify of the crates meant for crates.io"
bash scripts/package-check.sh

section "start the KDC, then the brokers in the background (logs in target/test-logs)"
# The secured broker logs in to the KDC with its keytab as it starts: the KDC comes first.
bash "$KDC_SH" stop --name "$KDC_INSTANCE"
kdcs+=("$KDC_INSTANCE")
KDC_ENV="$(bash "$KDC_SH" start --name "$KDC_INSTANCE" --owner-pid $$)"
# The S3-compatible server of the backup tests (moto, in memory; a fresh one): a second or two.
bash scripts/s3.sh stop --name "$INSTANCE-s3"
KREC_TEST_S3_ENDPOINT="$(bash scripts/s3.sh start --name "$INSTANCE-s3" --owner-pid $$)"
export KREC_TEST_S3_ENDPOINT
# Lanes of proxied listeners for the fault tests (one lane per fault test running at once).
start_instance "$INSTANCE" 1 --proxies 3
# The secured broker validates OAUTHBEARER tokens against the OAuth server: that starts first.
oauth_servers+=("$OAUTH_INSTANCE")
oauth_env="$(bash "$OAUTH_SH" start --name "$OAUTH_INSTANCE" --ttl "$OAUTH_TOKEN_TTL_S" --owner-pid $$)"
start_instance "$SECURE_INSTANCE" 1 --secured --oauth "$oauth_env" --proxies 2 --kdc "$KDC_ENV"
start_instance "$CLUSTER_INSTANCE" 3
for version in "${COMPAT_VERSIONS[@]}"; do
    COMPAT_INSTANCES+=("$INSTANCE-compat-${version//./}")
    start_instance "${COMPAT_INSTANCES[-1]}" 1 --version "$version"
done
# The Schema Registry needs the secured broker's certificate for its HTTPS port.
registries+=("$REGISTRY_INSTANCE")
(
    wait_started "$SECURE_INSTANCE"
    secure_env="$(bash "$KAFKA_SH" secure-env --name "$SECURE_INSTANCE")"
    secure_dir="$(dirname "$(sed -n 's/^CA_PEM=//p' "$secure_env")")"
    bash "$REGISTRY_SH" start --name "$REGISTRY_INSTANCE" \
        --tls-cert "$secure_dir/broker.pem" --tls-key "$secure_dir/broker.key"
) >"$LOGS/start-$REGISTRY_INSTANCE.log" 2>&1 &
registry_pid=$!
# Kafka's Java tools (`kafka.sh tool` and `topic`: hundreds of runs in the broker tests and the
# benchmark scripts) map the classes of one archive (AppCDS) instead of loading them from the
# jars: about half the CPU of each start. The archive is what one tool run loads, dumped at its
# exit as soon as the single broker answers; older releases' tools (the compat brokers: another
# class path) cannot use it and run as before, with the JVM's notice of that silenced.
KAFKA_TOOL_ARCHIVE="$LOGS/kafka-tools.jsa"
KAFKA_TOOL_JVM_OPTS="-Xmx512m -XX:TieredStopAtLevel=1"
rm -f "$KAFKA_TOOL_ARCHIVE"
(
    wait_started "$INSTANCE"
    KREC_KAFKA_TOOL_OPTS="$KAFKA_TOOL_JVM_OPTS -XX:ArchiveClassesAtExit=$KAFKA_TOOL_ARCHIVE" \
        bash "$KAFKA_SH" tool --name "$INSTANCE" org.apache.kafka.tools.TopicCommand \
        --bootstrap-server "{bootstrap}" --list
) >"$LOGS/kafka-tools-archive.log" 2>&1 &
tool_archive_pid=$!

section "krec built without gssapi: the feature and its mechanism leave krec version -v"
# The ship tests compare `krec version -v -J` with the features cargo built them with; here
# without krec-cli/gssapi, later with it. The same selection as the build below, so only the
# krec crates that the feature reaches are compiled twice, and the build below puts the
# gssapi krec back in place before any other test runs it.
cargo test --workspace --test ship

section "cargo clippy"
cargo clippy --workspace "${FEATURES[@]}" --all-targets -- -D warnings
# `--all-targets` leaves out the `test = false` targets: the broker and cluster tests.
cargo clippy --workspace "${FEATURES[@]}" --test broker --test cluster -- -D warnings

section "build every target (tests, benches, examples, broker and cluster tests)"
# Benches are built, not run: the test profile reuses what the tests build, where the bench
# profile (thin LTO, one codegen unit) would rebuild every dependency. Real runs: `cargo bench`.
cargo test --workspace "${FEATURES[@]}" --all-targets --no-run
cargo test --workspace "${FEATURES[@]}" --test broker --test cluster --no-run
# The examples as programs (`--all-targets` above builds them as test harnesses): the broker
# tests run them and check what they print.
cargo build --workspace "${FEATURES[@]}" --examples
list_test_executables broker
list_test_executables cluster

section "broker and cluster tests start in the background"
wait_started "$INSTANCE"
wait_started "$SECURE_INSTANCE"
for name in "${COMPAT_INSTANCES[@]}"; do wait_started "$name"; done
export KREC_TEST_COMPAT_NAMES="${COMPAT_INSTANCES[*]}"
wait "$registry_pid" || { cat "$LOGS/start-$REGISTRY_INSTANCE.log" >&2; exit 1; }
if wait "$tool_archive_pid" && [[ -s "$KAFKA_TOOL_ARCHIVE" ]]; then
    # Every tool from here on; the *Performance tools too (C1 only: short runs here).
    KREC_KAFKA_TOOL_OPTS="$KAFKA_TOOL_JVM_OPTS -XX:SharedArchiveFile=$KAFKA_TOOL_ARCHIVE"
    export KREC_KAFKA_TOOL_OPTS="$KREC_KAFKA_TOOL_OPTS -Xlog:cds=off -Xlog:cds+dynamic=off"
else
    cat "$LOGS/kafka-tools-archive.log" >&2
    echo "test.sh: no class archive for Kafka's tools: they load their classes from the jars" >&2
fi
KREC_TEST_BOOTSTRAP="$(bash "$KAFKA_SH" bootstrap --name "$INSTANCE")"
export KREC_TEST_BOOTSTRAP KREC_KAFKA_SH="$KAFKA_SH" KREC_KAFKA_NAME="$INSTANCE"
KREC_TEST_SECURE_ENV="$(bash "$KAFKA_SH" secure-env --name "$SECURE_INSTANCE")"
export KREC_TEST_SECURE_ENV KREC_TEST_SECURE_NAME="$SECURE_INSTANCE"
KREC_TEST_PROXY_ENV="$(bash "$KAFKA_SH" proxy-env --name "$INSTANCE")"
KREC_TEST_SECURE_PROXY_ENV="$(bash "$KAFKA_SH" proxy-env --name "$SECURE_INSTANCE")"
export KREC_TEST_PROXY_ENV KREC_TEST_SECURE_PROXY_ENV
KREC_TEST_REGISTRY_URL="$(bash "$REGISTRY_SH" url --name "$REGISTRY_INSTANCE")"
KREC_TEST_REGISTRY_HTTPS_URL="$(bash "$REGISTRY_SH" https-url --name "$REGISTRY_INSTANCE")"
KREC_TEST_PYTHON="$(bash "$REGISTRY_SH" python)"
export KREC_TEST_REGISTRY_URL KREC_TEST_REGISTRY_HTTPS_URL KREC_TEST_PYTHON
echo "broker: $KREC_TEST_BOOTSTRAP (instance $INSTANCE)"
echo "secured broker: $KREC_TEST_SECURE_ENV (instance $SECURE_INSTANCE)"
echo "schema registry: $KREC_TEST_REGISTRY_URL"
# The tests under `solo::` stop, restart or freeze a broker: one at a time, after the others.
(
    status=0
    run_tests broker --skip solo:: --test-threads="$BROKER_TEST_THREADS" || status=1
    run_tests broker solo:: --test-threads=1 || status=1
    exit "$status"
) >"$LOGS/broker.log" 2>&1 &
broker_tests=$!
(
    wait_started "$CLUSTER_INSTANCE"
    KREC_TEST_CLUSTER_BOOTSTRAP="$(bash "$KAFKA_SH" bootstrap --name "$CLUSTER_INSTANCE")"
    export KREC_TEST_CLUSTER_BOOTSTRAP KREC_TEST_CLUSTER_NAME="$CLUSTER_INSTANCE"
    echo "cluster: $KREC_TEST_CLUSTER_BOOTSTRAP (instance $CLUSTER_INSTANCE)"
    # They stop and start the cluster's nodes: one at a time.
    run_tests cluster --test-threads=1
) >"$LOGS/cluster.log" 2>&1 &
cluster_tests=$!

section "cargo test (every test that needs no broker)"
cargo test --workspace "${FEATURES[@]}"

failed=()
for lane in broker cluster; do
    pid_var="${lane}_tests"
    section "$lane tests (their log: target/test-logs/$lane.log)"
    status=0
    wait "${!pid_var}" || status=$?
    cat "$LOGS/$lane.log"
    ((status == 0)) || failed+=("$lane")
done
((${#failed[@]} == 0)) || { echo "test.sh: the ${failed[*]} tests failed" >&2; exit 1; }
# The single broker stays: bench-mirror's target (KREC_BENCH_TARGET_BROKER), not started again.
stop_brokers "$INSTANCE"

section "benchmark scripts on tiny inputs (--quick)"
# CI proves the benchmark scripts run, not their speed: each runs its whole pipeline (Java and
# Rust sides, broker, every consumer, report and chart) on a few thousand records, with the
# debug krec the build above made (no release build). They share one broker, secured so that
# bench-consume --tls finds its SASL_SSL listener there too (the others use its PLAINTEXT one;
# SASL sessions outlive the runs: kcat cannot re-authenticate); it starts while bench-decode,
# which needs none, runs. bench-schema starts and stops its own registry.
export KREC_BIN="${CARGO_TARGET_DIR:-$REPO_ROOT/target}/debug/krec" KREC_BENCH_BROKER="$INSTANCE-bench"
export KREC_BENCH_TARGET_BROKER="$INSTANCE"
bash "$KAFKA_SH" stop --name "$KREC_BENCH_BROKER" >/dev/null
started+=("$KREC_BENCH_BROKER")
registries+=("$KREC_BENCH_BROKER")
# Its OAuth server lets bench-consume --tls compare OIDC with SCRAM.
oauth_servers+=("$KREC_BENCH_BROKER-oauth")
bench_oauth_env="$(bash "$OAUTH_SH" start --name "$KREC_BENCH_BROKER-oauth" --owner-pid $$)"
bash "$KAFKA_SH" start --name "$KREC_BENCH_BROKER" --owner-pid $$ --secured --reauth-ms 86400000 \
    --oauth "$bench_oauth_env" >/dev/null &
bench_broker=$!
bench_smoke() {
    local TIMEFORMAT="----- $* --quick: %0R s"
    echo "----- $* --quick"
    time bash "$@" --quick
}
bench_smoke scripts/bench-decode.sh
wait "$bench_broker"
bench_smoke scripts/bench-consume.sh
bench_smoke scripts/bench-consume.sh --tls
bench_smoke scripts/bench-produce.sh
bench_smoke scripts/bench-embed.sh
bench_smoke scripts/bench-questions.sh
bench_smoke scripts/bench-partitions.sh
bench_smoke scripts/bench-group.sh
bench_smoke scripts/bench-share.sh
bench_smoke scripts/bench-metrics.sh
bench_smoke scripts/bench-schema.sh
# Its target broker is the broker tests' single node, kept running for it; the source is the
# shared one.
bench_smoke scripts/bench-mirror.sh
# kafka-backup's rows only if a full run built its driver before (never built here).
bench_smoke scripts/bench-backup.sh
stop_brokers

section "all tests passed"
