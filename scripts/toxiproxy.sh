#!/usr/bin/env bash
# Shopify's Toxiproxy (a TCP proxy whose faults, "toxics", are set over an HTTP API), for the
# fault tests. scripts/install-deps.sh builds the server once from the Go module proxy.
#
#   scripts/toxiproxy.sh bin                           prints the server binary's path
#   scripts/toxiproxy.sh start --name N [--owner-pid P] starts a server for instance N on a
#                                                      free 127.0.0.1 port; prints its API
#                                                      address (127.0.0.1:PORT); with
#                                                      --owner-pid, stops itself when P exits
#   scripts/toxiproxy.sh stop  --name N
#   scripts/toxiproxy.sh api   --name N                prints the API address
#   scripts/toxiproxy.sh proxy --name N PROXY LISTEN UPSTREAM
#                                                      creates proxy PROXY (LISTEN and
#                                                      UPSTREAM as 127.0.0.1:PORT)
#
# State of instance N lives in $KREC_KAFKA_HOME/N/toxiproxy/ (default target/kafka/N/), next to
# the Kafka instance of the same name that `kafka.sh start --proxies K` runs behind it.
# KREC_TOXIPROXY_HOME (default ~/.cache/krec/toxiproxy-VERSION) holds the binary.
set -euo pipefail

TOXIPROXY_VERSION=v2.5.0
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
KAFKA_HOME="${KREC_KAFKA_HOME:-$REPO_ROOT/target/kafka}"
TOXIPROXY_HOME="${KREC_TOXIPROXY_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/krec/toxiproxy-$TOXIPROXY_VERSION}"
TOXIPROXY_BIN="$TOXIPROXY_HOME/toxiproxy-server"
START_TIMEOUT_S=20

die() {
    echo "toxiproxy.sh: $*" >&2
    exit 1
}

state_dir() { echo "$KAFKA_HOME/$1/toxiproxy"; }

pid_alive() {
    local state
    kill -0 "$1" 2>/dev/null || return 1
    state="$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" || return 1
    [[ -n "$state" && "$state" != Z ]]
}

free_port() {
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# api_call METHOD ADDRESS PATH [JSON]: prints the answer's body; fails on an HTTP error.
api_call() {
    /usr/bin/python3 - "$@" <<'PY'
import sys, urllib.request
method, address, path = sys.argv[1:4]
body = sys.argv[4].encode() if len(sys.argv) > 4 else None
request = urllib.request.Request("http://%s%s" % (address, path), data=body, method=method,
                                 headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, timeout=5) as answer:
        sys.stdout.write(answer.read().decode())
except urllib.error.HTTPError as error:
    sys.exit("toxiproxy.sh: %s %s: HTTP %d %s" % (method, path, error.code, error.read().decode()))
except OSError as error:
    sys.exit("toxiproxy.sh: %s %s: %s" % (method, path, error))
PY
}

cmd_start() {
    local name="$1" owner="$2" dir port pid
    [[ -x "$TOXIPROXY_BIN" ]] || die "$TOXIPROXY_BIN missing (run scripts/install-deps.sh)"
    dir="$(state_dir "$name")"
    if [[ -f "$dir/pid" ]] && pid_alive "$(cat "$dir/pid")"; then
        die "toxiproxy of '$name' is running (pid $(cat "$dir/pid")); stop it first"
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    port="$(free_port)"
    echo "127.0.0.1:$port" >"$dir/api"
    # setsid: a Ctrl-C in the terminal reaches the test script, whose trap stops this in order.
    setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$dir/pid" \
        "$TOXIPROXY_BIN" -host 127.0.0.1 -port "$port" </dev/null >"$dir/server.log" 2>&1 &
    local deadline=$((SECONDS + START_TIMEOUT_S))
    until [[ -s "$dir/pid" ]] && api_call GET "127.0.0.1:$port" /version >/dev/null 2>&1; do
        pid="$(cat "$dir/pid" 2>/dev/null || true)"
        if [[ -n "$pid" ]] && ! pid_alive "$pid"; then
            cat "$dir/server.log" >&2
            die "toxiproxy of '$name' exited during start-up"
        fi
        ((SECONDS < deadline)) || die "toxiproxy of '$name' not answering after ${START_TIMEOUT_S}s"
        sleep 0.1
    done
    if [[ -n "$owner" ]]; then
        # Stops the server when the owner is gone, even after a SIGKILL that ran no trap.
        setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 2; done; exec bash "$2" stop --name "$3"' \
            _ "$owner" "$SCRIPT_DIR/toxiproxy.sh" "$name" </dev/null >/dev/null 2>&1 &
        echo $! >"$dir/watcher.pid"
    fi
    echo "127.0.0.1:$port"
}

cmd_stop() {
    local dir pid
    dir="$(state_dir "$1")"
    if [[ -f "$dir/watcher.pid" ]]; then
        pid="$(cat "$dir/watcher.pid")"
        rm -f "$dir/watcher.pid"
        [[ "$pid" != "$$" ]] && kill -TERM "$pid" 2>/dev/null
    fi
    [[ -f "$dir/pid" ]] || return 0
    pid="$(cat "$dir/pid")"
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 50; i++)); do
        pid_alive "$pid" || break
        sleep 0.1
    done
    pid_alive "$pid" && kill -KILL "$pid" 2>/dev/null
    rm -f "$dir/pid"
    return 0
}

api_of() {
    local f
    f="$(state_dir "$1")/api"
    [[ -f "$f" ]] || die "no toxiproxy for instance '$1' (not started?)"
    cat "$f"
}

main() {
    local cmd="${1:-}" name="" owner=""
    [[ -n "$cmd" ]] || die "usage: toxiproxy.sh bin|start|stop|api|proxy [--name N] [--owner-pid P]"
    shift
    while (($#)); do
        case "$1" in
        --name) name="${2:?--name needs a value}"; shift 2 ;;
        --owner-pid) owner="${2:?--owner-pid needs a value}"; shift 2 ;;
        *) break ;;
        esac
    done
    [[ "$cmd" == bin || "$name" =~ ^[A-Za-z0-9_-]+$ ]] || die "--name N is required (letters, digits, '_', '-')"
    case "$cmd" in
    bin) echo "$TOXIPROXY_BIN" ;;
    start) cmd_start "$name" "$owner" ;;
    stop) cmd_stop "$name" ;;
    api) api_of "$name" ;;
    proxy)
        (($# == 3)) || die "usage: toxiproxy.sh proxy --name N PROXY LISTEN UPSTREAM"
        api_call POST "$(api_of "$name")" /proxies \
            "{\"name\":\"$1\",\"listen\":\"$2\",\"upstream\":\"$3\",\"enabled\":true}" >/dev/null
        ;;
    *) die "unknown command '$cmd'" ;;
    esac
}

main "$@"
