#!/usr/bin/env bash
# A real S3-compatible server for the tests and benchmarks of `krec backup` / `krec restore`:
# moto's server (moto_server, from PyPI, in a venv of its own), in memory, no TLS, on 127.0.0.1.
#
#   s3.sh fetch                             create the venv (cached; idempotent)
#   s3.sh start --name NAME [--owner-pid P] start an instance on a free port, wait until it
#                                           answers, print its URL; an instance of that name
#                                           already answering is kept (its URL printed); with
#                                           --owner-pid, it stops itself once process P is gone
#   s3.sh url --name NAME                   its endpoint URL (http://127.0.0.1:PORT)
#   s3.sh bucket --name NAME BUCKET         create BUCKET there (an existing one is kept)
#   s3.sh env --name NAME                   the client environment below, as KEY=VALUE lines
#   s3.sh check --name NAME                 what the server supports of what a backup needs
#   s3.sh stop --name NAME                  stop it (its buckets go with it)
#   s3.sh python                            the venv's python3 (moto, boto3)
#
# What a client needs (moto accepts any key pair; it checks signatures are well formed only):
#   AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
#   AWS_ENDPOINT_URL=http://127.0.0.1:PORT    boto3/the AWS SDKs; object_store 0.14's
#                                             AmazonS3Builder::from_env reads the same name
#                                             (aliases aws_endpoint_url / aws_endpoint)
#   AWS_ALLOW_HTTP=true                       object_store only: plain HTTP is refused otherwise
# Requests are path-style (http://127.0.0.1:PORT/BUCKET/KEY), object_store's default.
# What moto supports, checked by `s3.sh check` (scripts/s3_check.py, with boto3): PUT with
# If-None-Match: * (412 if the key exists), PUT with If-Match: ETAG (412 if it changed),
# multipart uploads (create, parts, complete, abort; complete with If-None-Match: * too).
# object_store 0.14.2 (AmazonS3Builder::from_env, its defaults) gets the same from it:
# PutMode::Create on an existing key fails with AlreadyExists, PutMode::Update with a stale ETag
# with Precondition, WriteMultipart completes and abort leaves no key.
#
# KREC_S3_HOME (default target/s3) holds the venv and the instances.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOME_DIR="${KREC_S3_HOME:-$REPO_ROOT/target/s3}"
VENV="$HOME_DIR/venv"
# moto's S3 and the Flask of its server, not moto[server]: that extra brings every AWS service's
# dependencies (twice the packages and the install time) for a server of S3 alone.
PYTHON_PACKAGES=("moto[s3]==5.2.5" flask==3.1.3 flask-cors==6.0.5 boto3==1.44.18 botocore==1.44.18)
ACCESS_KEY=test
SECRET_KEY=test
REGION=us-east-1

log() { echo "s3.sh: $*" >&2; }

fetch() {
    local stamp="$VENV/krec-packages"
    if [[ ! -x "$VENV/bin/moto_server" ]] || [[ "$(cat "$stamp" 2>/dev/null)" != "${PYTHON_PACKAGES[*]}" ]]; then
        log "creating the Python venv with ${PYTHON_PACKAGES[*]}"
        rm -rf "$VENV"
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install -q "${PYTHON_PACKAGES[@]}" >&2
        echo "${PYTHON_PACKAGES[*]}" >"$stamp"
    fi
}

instance_dir() { echo "$HOME_DIR/instances/$1"; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# answers PORT: exit 0 iff a moto server answers on PORT (its own API, which needs no signing).
answers() {
    python3 - "$1" <<'PY' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/moto-api/data.json", timeout=1).read()
PY
}

running() {
    local dir
    dir="$(instance_dir "$1")"
    [[ -f "$dir/pid" && -f "$dir/port" ]] && kill -0 "$(cat "$dir/pid")" 2>/dev/null && answers "$(cat "$dir/port")"
}

start() {
    local name="$1" owner="$2" dir port
    dir="$(instance_dir "$name")"
    [[ -x "$VENV/bin/moto_server" ]] || { log "no moto venv: run scripts/s3.sh fetch"; exit 1; }
    if running "$name"; then
        url "$name"
        return 0
    fi
    stop "$name"
    mkdir -p "$dir"
    port="$(free_port)"
    nohup "$VENV/bin/moto_server" -H 127.0.0.1 -p "$port" >"$dir/log" 2>&1 </dev/null &
    echo $! >"$dir/pid"
    echo "$port" >"$dir/port"
    for _ in $(seq 1 150); do
        if answers "$port"; then
            if [[ -n "$owner" ]]; then
                # Stops the server when the owner is gone, even after a SIGKILL that ran no trap.
                setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 2; done; exec bash "$2" stop --name "$3"' \
                    _ "$owner" "$REPO_ROOT/scripts/s3.sh" "$name" </dev/null >/dev/null 2>&1 &
            fi
            url "$name"
            return 0
        fi
        kill -0 "$(cat "$dir/pid")" 2>/dev/null || { log "moto server $name died:"; tail -20 "$dir/log" >&2; exit 1; }
        sleep 0.2
    done
    log "moto server $name did not answer within 30 s"
    stop "$name"
    exit 1
}

url() {
    local file
    file="$(instance_dir "$1")/port"
    [[ -f "$file" ]] || { log "no instance $1: run scripts/s3.sh start --name $1"; exit 1; }
    echo "http://127.0.0.1:$(cat "$file")"
}

client_env() {
    cat <<EOF
AWS_ACCESS_KEY_ID=$ACCESS_KEY
AWS_SECRET_ACCESS_KEY=$SECRET_KEY
AWS_REGION=$REGION
AWS_ENDPOINT_URL=$(url "$1")
AWS_ALLOW_HTTP=true
EOF
}

bucket() {
    local name="$1" bucket="$2"
    [[ -n "$bucket" ]] || { log "bucket needs a BUCKET name"; exit 2; }
    AWS_ACCESS_KEY_ID=$ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SECRET_KEY AWS_REGION=$REGION \
        AWS_ENDPOINT_URL="$(url "$name")" "$VENV/bin/python3" - "$bucket" <<'PY'
import sys, boto3
s3 = boto3.client("s3")
try:
    s3.create_bucket(Bucket=sys.argv[1])
except s3.exceptions.BucketAlreadyOwnedByYou:
    pass
PY
}

check() {
    AWS_ACCESS_KEY_ID=$ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SECRET_KEY AWS_REGION=$REGION \
        AWS_ENDPOINT_URL="$(url "$1")" "$VENV/bin/python3" "$REPO_ROOT/scripts/s3_check.py"
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

command="${1:-}"
shift || true
name=""
owner=""
args=()
while (($#)); do
    case "$1" in
        --name) name="${2:?--name needs a value}"; shift 2 ;;
        --owner-pid) owner="${2:?--owner-pid needs a value}"; shift 2 ;;
        -*) log "unknown option $1"; exit 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
case "$command" in
    fetch) fetch ;;
    python) echo "$VENV/bin/python3" ;;
    start) [[ -n "$name" ]] || { log "start needs --name NAME"; exit 2; }; start "$name" "$owner" ;;
    url | stop | check) [[ -n "$name" ]] || { log "$command needs --name NAME"; exit 2; }; "$command" "$name" ;;
    env) [[ -n "$name" ]] || { log "env needs --name NAME"; exit 2; }; client_env "$name" ;;
    bucket) [[ -n "$name" ]] || { log "bucket needs --name NAME"; exit 2; }; bucket "$name" "${args[0]:-}" ;;
    *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2 ;;
esac
