#!/usr/bin/env bash
# A real Confluent-compatible Schema Registry for the tests and benchmarks: Apicurio Registry
# 2.4.2.Final (its /apis/ccompat/v7 API), built from Maven Central by scripts/registry/pom.xml,
# in-memory storage, no auth, on 127.0.0.1. Also the Python venv with the Confluent serializers.
#
#   registry.sh fetch                  build the registry and the venv (cached; idempotent)
#   registry.sh start --name NAME [--tls-cert PEM --tls-key PEM]
#                                      start an instance on a free port (waits until it answers);
#                                      with a certificate and key, HTTPS on a second free port
#   registry.sh url --name NAME        its Confluent API base URL
#   registry.sh https-url --name NAME  the same over HTTPS (started with --tls-cert)
#   registry.sh stop --name NAME       stop it
#   registry.sh python                 the venv's python3
#
# KREC_REGISTRY_HOME (default target/registry) holds the build, the venv and the instances.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HOME_DIR="${KREC_REGISTRY_HOME:-$REPO_ROOT/target/registry}"
APP_JAR="$HOME_DIR/app/target/quarkus-app/quarkus-run.jar"
VENV="$HOME_DIR/venv"
PYTHON_PACKAGES=("confluent-kafka[avro,json,protobuf]==2.16.1")

log() { echo "registry.sh: $*" >&2; }

fetch() {
    if [[ ! -f "$APP_JAR" ]] || ! cmp -s "$REPO_ROOT/scripts/registry/pom.xml" "$HOME_DIR/app/pom.xml"; then
        log "building Apicurio Registry 2.4.2.Final (first time: about a minute)"
        mkdir -p "$HOME_DIR/app"
        cp "$REPO_ROOT/scripts/registry/pom.xml" "$HOME_DIR/app/pom.xml.new"
        (cd "$HOME_DIR/app" && mv pom.xml.new pom.xml && mvn -B -q package -DskipTests -Dquarkus.package.type=fast-jar) >&2
    fi
    if [[ ! -x "$VENV/bin/python3" ]] || ! "$VENV/bin/python3" -c 'import confluent_kafka, fastavro, google.protobuf, jsonschema' 2>/dev/null; then
        log "creating the Python venv with ${PYTHON_PACKAGES[*]}"
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install -q "${PYTHON_PACKAGES[@]}" >&2
    fi
}

instance_dir() { echo "$HOME_DIR/instances/$1"; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start() {
    local name="$1" dir port tls=()
    dir="$(instance_dir "$name")"
    [[ -f "$APP_JAR" ]] || { log "not built: run scripts/registry.sh fetch"; exit 1; }
    stop "$name"
    mkdir -p "$dir"
    rm -f "$dir/https-port"
    port="$(free_port)"
    if [[ -n "$tls_cert" ]]; then
        [[ -f "$tls_cert" && -f "$tls_key" ]] || { log "--tls-cert and --tls-key need PEM files"; exit 2; }
        free_port >"$dir/https-port"
        tls=(-Dquarkus.http.ssl-port="$(cat "$dir/https-port")"
            -Dquarkus.http.ssl.certificate.files="$tls_cert"
            -Dquarkus.http.ssl.certificate.key-files="$tls_key")
    fi
    # Host and port before -jar: after it Quarkus ignores them.
    nohup java -Xmx256m -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" "${tls[@]}" \
        -jar "$APP_JAR" >"$dir/log" 2>&1 &
    echo $! >"$dir/pid"
    echo "$port" >"$dir/port"
    for _ in $(seq 1 300); do
        if python3 - "$port" <<'PY' 2>/dev/null; then
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/apis/ccompat/v7/schemas/types", timeout=1).read()
PY
            url "$name"
            return 0
        fi
        kill -0 "$(cat "$dir/pid")" 2>/dev/null || { log "registry $name died:"; tail -20 "$dir/log" >&2; exit 1; }
        sleep 0.2
    done
    log "registry $name did not answer within 60 s"; stop "$name"; exit 1
}

url() { echo "http://127.0.0.1:$(cat "$(instance_dir "$1")/port")/apis/ccompat/v7"; }

https_url() {
    local file
    file="$(instance_dir "$1")/https-port"
    [[ -f "$file" ]] || { log "registry $1 was not started with --tls-cert"; exit 1; }
    echo "https://127.0.0.1:$(cat "$file")/apis/ccompat/v7"
}

stop() {
    local dir pid
    dir="$(instance_dir "$1")"
    [[ -f "$dir/pid" ]] || return 0
    pid="$(cat "$dir/pid")"
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/pid"
}

command="${1:-}"; shift || true
name=""
tls_cert=""
tls_key=""
while (($#)); do
    case "$1" in
        --name) name="$2"; shift 2 ;;
        --tls-cert) tls_cert="$(realpath "$2")"; shift 2 ;;
        --tls-key) tls_key="$(realpath "$2")"; shift 2 ;;
        *) log "unknown option $1"; exit 2 ;;
    esac
done
case "$command" in
    fetch) fetch ;;
    python) echo "$VENV/bin/python3" ;;
    start|url|stop) [[ -n "$name" ]] || { log "$command needs --name NAME"; exit 2; }; "$command" "$name" ;;
    https-url) [[ -n "$name" ]] || { log "$command needs --name NAME"; exit 2; }; https_url "$name" ;;
    *) sed -n '2,15p' "$0" >&2; exit 2 ;;
esac
