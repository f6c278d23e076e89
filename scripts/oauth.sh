#!/usr/bin/env bash
# A real OAuth 2 / OIDC server for the OAUTHBEARER tests: Ory Hydra, built once from the Go
# module proxy by scripts/install-deps.sh (`oauth.sh build`), on 127.0.0.1.
#
#   scripts/oauth.sh bin                                   prints the hydra binary's path
#   scripts/oauth.sh build                                 builds it if missing
#   scripts/oauth.sh start  --name N [--ttl S] [--owner-pid P]
#                                                          starts server N; prints oauth.env's
#                                                          path; with --owner-pid, stops itself
#                                                          when P exits
#   scripts/oauth.sh stop   --name N
#   scripts/oauth.sh status --name N                       exit 0 iff it is running
#   scripts/oauth.sh env    --name N                       prints the path of oauth.env
#
# The server keeps everything in memory (DSN `memory`), issues JWT access tokens
# (strategies.access_token=jwt, RS256, keys published at the JWKS URL) that live --ttl seconds
# (default 3600: tests that want refreshes ask for a few seconds), and serves its public port
# (token endpoint, JWKS, discovery) over HTTPS only, with a certificate (SANs IP:127.0.0.1,
# DNS:localhost) from its own CA made fresh at each start; the admin port is plain HTTP on
# 127.0.0.1. At start it creates the OAuth clients below and then writes oauth.env, KEY=value
# lines (no quoting, absolute paths):
#   ISSUER                 https://127.0.0.1:PORT/ (the `iss` of every token)
#   TOKEN_URL              the token endpoint, https://127.0.0.1:PORT/oauth2/token
#   JWKS_URL               the signing keys, https://127.0.0.1:PORT/.well-known/jwks.json
#   ADMIN_URL              http://127.0.0.1:PORT (Hydra's admin API)
#   CA_PEM                 the CA of the HTTPS certificate ("CN=krec oauth test CA")
#   TTL_S                  lifetime of an access token, seconds
#   SCOPE                  kafka: the scope the good client may ask for
#   AUDIENCE               kafka-broker: the `aud` of the good clients' tokens
#   OTHER_AUDIENCE         other-service: the `aud` of the other client's tokens
#   CLIENT_ID CLIENT_SECRET              the good client (client_secret_basic, scope kafka)
#   LONG_CLIENT_ID LONG_CLIENT_SECRET    the same, but its tokens live LONG_TTL_S seconds
#   LONG_TTL_S             30 (for a test that takes the endpoint away while a token holds)
#   OTHER_CLIENT_ID OTHER_CLIENT_SECRET  a client allowed only scope `other`, whose tokens are
#                                        for other-service (the wrong-scope/audience cases)
# A token names the client's audience when the request names none (see cmd_build's patch).
# State of server N lives in $KREC_OAUTH_HOME/N/ (default target/oauth/N/); its log is
# hydra.log there. KREC_HYDRA_HOME (default ~/.cache/krec/hydra-VERSION) holds the binary.
set -euo pipefail

HYDRA_VERSION=v2.3.0
# Bumped whenever the build's patch (cmd_build) changes, so that a changed patch rebuilds.
HYDRA_PATCH=p1
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
OAUTH_HOME="${KREC_OAUTH_HOME:-$REPO_ROOT/target/oauth}"
HYDRA_HOME="${KREC_HYDRA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/krec/hydra-$HYDRA_VERSION-$HYDRA_PATCH}"
HYDRA_BIN="$HYDRA_HOME/hydra"
START_TIMEOUT_S=30
SCOPE=kafka
AUDIENCE=kafka-broker
OTHER_AUDIENCE=other-service
LONG_TTL_S=30

die() {
    echo "oauth.sh: $*" >&2
    exit 1
}

state_dir() { echo "$OAUTH_HOME/$1"; }

pid_alive() {
    local state
    kill -0 "$1" 2>/dev/null || return 1
    state="$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" || return 1
    [[ -n "$state" && "$state" != Z ]]
}

free_ports() {
    /usr/bin/python3 -c '
import socket
a, b = socket.socket(), socket.socket()
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])'
}

# Hydra's go.mod replaces its API client with a directory the module zip leaves out, so
# `go install ...@version` refuses it: build a copy of the module whose client comes from the
# module proxy instead (the version its go.mod requires). The sqlite tags give the memory DSN.
# One patch: a client-credentials token names the client's allowed audiences when the request
# names none, as Entra ID, Okta and Keycloak do. Stock Hydra grants only requested audiences
# (an empty `aud`), and neither librdkafka nor the Java client can request one, while Kafka's
# validator refuses an empty `aud`.
cmd_build() {
    [[ -x "$HYDRA_BIN" ]] && return 0
    command -v go >/dev/null || die "go not found: Go is needed once to build Hydra"
    echo "oauth.sh: building Hydra $HYDRA_VERSION into $HYDRA_HOME (first run only)" >&2
    local tmp="$HYDRA_HOME.tmp.$$" src
    rm -rf "$tmp"
    mkdir -p "$tmp"
    src="$(go mod download -json "github.com/ory/hydra/v2@$HYDRA_VERSION" |
        /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
    cp -r "$src" "$tmp/src"
    chmod -R u+w "$tmp/src"
    (
        cd "$tmp/src"
        go mod edit -dropreplace github.com/ory/hydra-client-go/v2
        /usr/bin/python3 - oauth2/handler.go <<'PY'
import sys
path = sys.argv[1]
source = open(path).read()
anchor = """				accessRequest.GrantAudience(audience)
			}
		}
"""
patch = """		if len(accessRequest.GetRequestedAudience()) == 0 {
			for _, audience := range accessRequest.GetClient().GetAudience() {
				accessRequest.GrantAudience(audience)
			}
		}
"""
if source.count(anchor) != 1:
    sys.exit("oauth.sh: the audience patch no longer fits " + path)
open(path, "w").write(source.replace(anchor, anchor + patch))
PY
        GOFLAGS=-mod=mod go build -trimpath -tags sqlite,sqlite_omit_load_extension \
            -ldflags "-X github.com/ory/hydra/v2/driver/config.Version=$HYDRA_VERSION" \
            -o "$tmp/hydra" .
    ) || { rm -rf "$tmp"; die "building Hydra failed"; }
    rm -rf "$tmp/src"
    # A fresh directory renamed into place: an interrupted build never looks complete.
    mkdir -p "$(dirname "$HYDRA_HOME")"
    rm -rf "$HYDRA_HOME"
    mv "$tmp" "$HYDRA_HOME"
}

# The HTTPS certificate of the public port and its own CA, fresh at each start.
gen_tls() {
    local d="$1"
    (
        set -e
        umask 077
        cat >"$d/openssl.cnf" <<EOF
[req]
distinguished_name = dn
prompt = no
[dn]
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
        openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/ca.key" 2>/dev/null
        openssl req -new -x509 -config "$d/openssl.cnf" -extensions ca -key "$d/ca.key" \
            -subj "/CN=krec oauth test CA" -sha256 -days 30 -out "$d/ca.pem"
        openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/server.key" 2>/dev/null
        openssl req -new -config "$d/openssl.cnf" -key "$d/server.key" -subj "/CN=krec oauth test server" \
            -out "$d/server.csr"
        openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
            -set_serial "0x$(openssl rand -hex 16)" -sha256 -days 30 \
            -extfile "$d/openssl.cnf" -extensions server -out "$d/server.pem" 2>/dev/null
        rm -f "$d/server.csr"
        chmod 644 "$d/ca.pem"
    ) || die "generating the certificates in $d failed"
}

# admin_call METHOD ADMIN_URL PATH [JSON]: prints the answer's body; fails on an HTTP error.
admin_call() {
    /usr/bin/python3 - "$@" <<'PY'
import sys, urllib.request
method, base, path = sys.argv[1:4]
body = sys.argv[4].encode() if len(sys.argv) > 4 else None
request = urllib.request.Request(base + path, data=body, method=method,
                                 headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, timeout=5) as answer:
        sys.stdout.write(answer.read().decode())
except urllib.error.HTTPError as error:
    sys.exit("oauth.sh: %s %s: HTTP %d %s" % (method, path, error.code, error.read().decode()))
except OSError as error:
    sys.exit("oauth.sh: %s %s: %s" % (method, path, error))
PY
}

# create_client ADMIN_URL ID SECRET AUTH_METHOD SCOPE AUDIENCES_JSON
create_client() {
    admin_call POST "$1" /admin/clients "$(
        printf '{"client_id":"%s","client_secret":"%s","token_endpoint_auth_method":"%s",' "$2" "$3" "$4"
        printf '"grant_types":["client_credentials"],"response_types":["token"],'
        printf '"scope":"%s","audience":%s}' "$5" "$6"
    )" >/dev/null
}

random_secret() { openssl rand -hex 24; }

cmd_start() {
    local name="$1" ttl="$2" owner="$3" dir pid public admin
    [[ -x "$HYDRA_BIN" ]] || die "$HYDRA_BIN missing (run scripts/install-deps.sh)"
    command -v openssl >/dev/null || die "openssl not found (scripts/install-deps.sh installs it)"
    [[ "$ttl" =~ ^[1-9][0-9]*$ ]] || die "--ttl must be a number of seconds, not '$ttl'"
    dir="$(state_dir "$name")"
    if [[ -f "$dir/pid" ]] && pid_alive "$(cat "$dir/pid")"; then
        die "OAuth server '$name' is running (pid $(cat "$dir/pid")); stop it first"
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    gen_tls "$dir"
    read -r public admin <<<"$(free_ports)"
    local issuer="https://127.0.0.1:$public/" admin_url="http://127.0.0.1:$admin"
    cat >"$dir/hydra.yml" <<EOF
dsn: memory
serve:
  public:
    host: 127.0.0.1
    port: $public
  admin:
    host: 127.0.0.1
    port: $admin
    tls:
      enabled: false
  tls:
    enabled: true
    key:
      path: $dir/server.key
    cert:
      path: $dir/server.pem
urls:
  self:
    issuer: $issuer
    public: $issuer
strategies:
  access_token: jwt
ttl:
  access_token: ${ttl}s
secrets:
  system:
    - $(random_secret)
log:
  level: info
  leak_sensitive_values: false
EOF
    # setsid: a Ctrl-C in the terminal reaches the test script, whose trap stops this in order.
    setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$dir/pid" \
        "$HYDRA_BIN" serve all --config "$dir/hydra.yml" --sqa-opt-out </dev/null >"$dir/hydra.log" 2>&1 &
    local deadline=$((SECONDS + START_TIMEOUT_S))
    until [[ -s "$dir/pid" ]] && admin_call GET "$admin_url" /health/ready >/dev/null 2>&1; do
        pid="$(cat "$dir/pid" 2>/dev/null || true)"
        if [[ -n "$pid" ]] && ! pid_alive "$pid"; then
            tail -n 30 "$dir/hydra.log" >&2
            die "OAuth server '$name' exited during start-up (log: $dir/hydra.log)"
        fi
        ((SECONDS < deadline)) || die "OAuth server '$name' not ready after ${START_TIMEOUT_S}s"
        sleep 0.2
    done
    local secret long_secret other_secret
    secret="$(random_secret)" long_secret="$(random_secret)" other_secret="$(random_secret)"
    create_client "$admin_url" krec-good "$secret" client_secret_basic "$SCOPE" "[\"$AUDIENCE\"]" &&
        create_client "$admin_url" krec-long "$long_secret" client_secret_basic "$SCOPE" "[\"$AUDIENCE\"]" &&
        admin_call PUT "$admin_url" /admin/clients/krec-long/lifespans \
            "{\"client_credentials_grant_access_token_lifespan\":\"${LONG_TTL_S}s\"}" >/dev/null &&
        create_client "$admin_url" krec-other "$other_secret" client_secret_basic other \
            "[\"$OTHER_AUDIENCE\"]" || { cmd_stop "$name"; die "creating the OAuth clients failed"; }
    if [[ -n "$owner" ]]; then
        # Stops the server when the owner is gone, even after a SIGKILL that ran no trap.
        setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 2; done; exec bash "$2" stop --name "$3"' \
            _ "$owner" "$SCRIPT_DIR/oauth.sh" "$name" </dev/null >/dev/null 2>&1 &
        echo $! >"$dir/watcher.pid"
    fi
    cat >"$dir/oauth.env.tmp" <<EOF
ISSUER=$issuer
TOKEN_URL=${issuer}oauth2/token
JWKS_URL=${issuer}.well-known/jwks.json
ADMIN_URL=$admin_url
CA_PEM=$dir/ca.pem
TTL_S=$ttl
SCOPE=$SCOPE
AUDIENCE=$AUDIENCE
OTHER_AUDIENCE=$OTHER_AUDIENCE
CLIENT_ID=krec-good
CLIENT_SECRET=$secret
LONG_CLIENT_ID=krec-long
LONG_CLIENT_SECRET=$long_secret
LONG_TTL_S=$LONG_TTL_S
OTHER_CLIENT_ID=krec-other
OTHER_CLIENT_SECRET=$other_secret
EOF
    # Renamed into place: a reader never sees half a file.
    mv "$dir/oauth.env.tmp" "$dir/oauth.env"
    echo "$dir/oauth.env"
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

cmd_status() {
    local f
    f="$(state_dir "$1")/pid"
    if [[ -f "$f" ]] && pid_alive "$(cat "$f")"; then
        echo "OAuth server '$1': running (pid $(cat "$f"))"
        return 0
    fi
    echo "OAuth server '$1': stopped"
    return 1
}

main() {
    local cmd="${1:-}" name="" ttl=3600 owner=""
    [[ -n "$cmd" ]] || die "usage: oauth.sh bin|build|start|stop|status|env [--name N] [--ttl S] [--owner-pid P]"
    shift
    while (($#)); do
        case "$1" in
        --name) name="${2:?--name needs a value}"; shift 2 ;;
        --ttl) ttl="${2:?--ttl needs a value}"; shift 2 ;;
        --owner-pid) owner="${2:?--owner-pid needs a value}"; shift 2 ;;
        *) die "unknown option '$1'" ;;
        esac
    done
    [[ "$cmd" == bin || "$cmd" == build || "$name" =~ ^[A-Za-z0-9_-]+$ ]] ||
        die "--name N is required (letters, digits, '_', '-')"
    case "$cmd" in
    bin) echo "$HYDRA_BIN" ;;
    build) cmd_build ;;
    start) cmd_start "$name" "$ttl" "$owner" ;;
    stop) cmd_stop "$name" ;;
    status) cmd_status "$name" ;;
    env)
        [[ -f "$(state_dir "$name")/oauth.env" ]] || die "no oauth.env for '$name' (not started?)"
        echo "$(state_dir "$name")/oauth.env"
        ;;
    *) die "unknown command '$cmd'" ;;
    esac
}

main "$@"
