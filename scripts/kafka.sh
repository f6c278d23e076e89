#!/usr/bin/env bash
# A real Apache Kafka 4.x broker (KRaft) on 127.0.0.1, assembled from the Maven Central jars;
# or, with --version, an older release on ZooKeeper.
#
#   scripts/kafka.sh fetch      [--version V]
#   scripts/kafka.sh start      [--name N] [--brokers 1|3] [--owner-pid P]
#                               [--secured [--reauth-ms MS] [--oauth ENVFILE] [--kdc ENVFILE]]
#                               [--proxies K]
#                               [--version V]
#                                                           prints the bootstrap string; with
#                                                           --owner-pid, stops itself when P exits
#   scripts/kafka.sh stop       [--name N] [--clean]
#   scripts/kafka.sh stop-node  [--name N] --node K            SIGTERM one node (leader change)
#   scripts/kafka.sh start-node [--name N] --node K            restart it on its old data
#   scripts/kafka.sh topic      [--name N] create TOPIC [--partitions P] [--replication-factor R]
#                                                 [--config k=v ...]
#   scripts/kafka.sh tool       [--name N] <java-main-class> [args...]
#   scripts/kafka.sh datadir    [--name N] [--node K]          prints that node's log.dirs
#   scripts/kafka.sh bootstrap  [--name N]                     prints the bootstrap string
#   scripts/kafka.sh secure-env [--name N]                     prints the path of secure.env
#   scripts/kafka.sh status     [--name N]                     exit 0 iff every node is running
#   scripts/kafka.sh jmx-url    [--name N] [--node K]          that node's JMX service URL
#   scripts/kafka.sh pid        [--name N] [--node K]          that node's broker pid (SIGSTOP)
#   scripts/kafka.sh proxy-env  [--name N]                     prints the path of proxy.env
#
# --version V: the release pom.xml names (the default, KRaft), or 2.8.x..3.9.x: one plain node
# on its own ZooKeeper (scripts/kafka/legacy.sh, jars in target/kafka/lib-V); later commands
# on that instance use its version by themselves.
#
# Each named instance keeps its state in target/kafka/<name>/ (default name: "default"), so
# several brokers can run side by side; ports are picked free at start. Node K sits in rack
# `rack-K` (broker.rack) with the rack-aware replica selector (KIP-392), so a client giving
# client.rack may be sent to a follower; each node serves JMX (no auth) on its own port, read
# with e.g. `kafka.sh tool org.apache.kafka.tools.JmxTool --jmx-url "$(kafka.sh jmx-url)" ...`. In `tool` arguments
# the literal word {bootstrap} is replaced by the instance's bootstrap string.
#
# Secured instance (`start --secured`, one node): besides PLAINTEXT (the bootstrap string,
# inter-broker and admin listener: its ANONYMOUS principal is a super user, so `topic`, `tool`
# and kcat producers work as on a plain instance) and CONTROLLER, it serves, each on its own
# 127.0.0.1 port and advertised as such:
#   SASL_SSL         SASL mechanisms PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (and GSSAPI
#                    with --kdc)
#   SASL_PLAINTEXT   the same mechanisms
#   SSL              mutual TLS (ssl.client.auth=required); a certificate CN=alice is User:alice
#   SASL_PLAIN_ONLY  protocol SASL_PLAINTEXT, PLAIN only (for "mechanism not enabled")
#   SSL_WRONG_HOST   protocol SSL, no client auth; its certificate, from the same CA, names
#                    only DNS:wrong.example (for the host-name-mismatch test)
#   SASL_OAUTH       only with --oauth ENVFILE (the oauth.env of scripts/oauth.sh start):
#                    protocol SASL_SSL, OAUTHBEARER only, tokens validated by Kafka itself
#                    (OAuthBearerValidatorCallbackHandler with BrokerJwtValidator): signature
#                    against the OAuth server's JWKS (fetched over HTTPS, its CA_PEM trusted),
#                    `iss` = its ISSUER, `aud` must hold its AUDIENCE; `sub` is the principal
#                    (the OAuth client id). The broker JVM gets
#                    -Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=JWKS_URL,TOKEN_URL.
#                    The clients CLIENT_ID and LONG_CLIENT_ID get alice's ACLs.
# Users alice/alice-secret and bob/bob-secret exist for PLAIN and both SCRAMs; OAUTHBEARER uses
# Kafka's unsecured validator (an unsigned JWT, alg "none"; its `sub` is the principal).
# StandardAuthorizer, allow.everyone.if.no.acl.found=false; the only ACLs (prefixed): User:alice
# may Read and Describe topics `sec-*` and Read groups `sec-*`; bob has none (his requests get
# TOPIC_AUTHORIZATION_FAILED). SASL sessions expire after connections.max.reauth.ms = MS
# (default 4000): clients must re-authenticate (KIP-368) or are disconnected; Debian's kcat
# (librdkafka 2.0.2) does not, so a kcat on a SASL listener is cut off after MS. Certificates
# and keys are made fresh at every start with openssl, in <instance>/secure/.
# With `--kdc ENVFILE` (the kdc.env of a running scripts/kdc.sh KDC, which must be serving
# before the broker starts: the broker logs in with its keytab), SASL_SSL and SASL_PLAINTEXT
# also offer GSSAPI: the broker is BROKER_PRINCIPAL (kafka/127.0.0.1@KREC.TEST) with
# BROKER_KEYTAB, sasl.kerberos.service.name=kafka, and its JVM reads the KDC's krb5.conf
# (-Djava.security.krb5.conf). Kafka's DEFAULT principal mapping drops the realm, so the
# Kerberos principal alice@KREC.TEST is User:alice, under the ACLs below.
# The instance directory then holds secure.env, KEY=value lines (no quoting, absolute paths):
#   PLAINTEXT SASL_SSL SASL_PLAINTEXT SSL SASL_PLAIN_ONLY SSL_WRONG_HOST
#                            each listener as 127.0.0.1:PORT
#   CA_PEM                   the CA ("CN=krec test CA") of every broker and client certificate
#   CA_BUNDLE_PEM            two certificates: the other CA, then CA_PEM's
#   OTHER_CA_PEM             an unrelated CA ("CN=krec other CA")
#   CLIENT_CERT_PEM          alice's RSA certificate (CN=alice, by CA_PEM)
#   CLIENT_KEY_PKCS8         its key, unencrypted PKCS#8 (BEGIN PRIVATE KEY)
#   CLIENT_KEY_PKCS1         the same key as PKCS#1 (BEGIN RSA PRIVATE KEY)
#   CLIENT_KEY_ENCRYPTED     the same key as encrypted PKCS#8 (BEGIN ENCRYPTED PRIVATE KEY,
#                            PBES2 aes-256-cbc), password CLIENT_KEY_PASSWORD
#   CLIENT_KEY_PASSWORD
#   CLIENT_EC_CERT_PEM       alice's EC (P-256) certificate, CN=alice, by CA_PEM
#   CLIENT_KEY_SEC1          its key as SEC1 (BEGIN EC PRIVATE KEY)
#   FOREIGN_CLIENT_CERT_PEM  CN=alice, but by OTHER_CA_PEM: the SSL listener refuses it
#   FOREIGN_CLIENT_KEY       its key, PKCS#8
#   WRONG_HOST_NAME          wrong.example, the only name in SSL_WRONG_HOST's certificate
#   ALICE_USER ALICE_PASSWORD BOB_USER BOB_PASSWORD
#   SASL_MECHANISMS          PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER
#   ACL_PREFIX               sec-
#   REAUTH_MS                connections.max.reauth.ms of the SASL listeners (0: none)
#   SASL_OAUTH OAUTH_ENV     with --oauth only: that listener, and the oauth.env it trusts
#   KDC_ENV                  with --kdc only: the kdc.env given (principals, keytabs, krb5.conf)
# secure.env is written last, once the ACLs are in place. The broker certificate has the SANs
# IP:127.0.0.1 and DNS:localhost. Broker-side, SASL authentications and re-authentications
# are logged (DEBUG lines let through by log4j2-broker.xml) to node1/broker.log.
#
# Proxied instance (`start --proxies K`, for the fault tests): a Toxiproxy server
# (scripts/toxiproxy.sh, state in <instance>/toxiproxy/) runs in front of the instance, and
# every node serves K more listeners PROXY1..PROXYK (protocol PLAINTEXT, or SASL_SSL with the
# mechanisms and users above on a --secured instance), each on its own port but ADVERTISED at
# the address of its Toxiproxy proxy `proxyI-nodeK`, whose upstream is that port. A client
# bootstrapped through lane I gets lane I's proxy addresses in metadata, so its fetches,
# metadata and group coordinator all pass through the proxies of that lane; inter-broker,
# controller and admin traffic (PLAINTEXT) do not. Lanes are independent: a fault on one lane
# leaves the others alone. The instance directory then holds proxy.env, KEY=value lines:
#   TOXIPROXY_API            127.0.0.1:PORT of Toxiproxy's HTTP API
#   PROTOCOL                 security protocol of the lanes (PLAINTEXT or SASL_SSL)
#   LANES                    K
#   LANE<I>                  bootstrap string of lane I (every node's proxy address)
#   LANE<I>_PROXIES          Toxiproxy proxy names of lane I, in node order
# `stop` stops the Toxiproxy server too; it sends SIGCONT first, so a node frozen with SIGSTOP
# (by a test, through `kafka.sh pid`) still stops.
#
# Environment: KREC_KAFKA_HOME (default <repo>/target/kafka) moves all state and the jars;
# KREC_KAFKA_HEAP (default 512m) is the heap of each broker JVM; KREC_KAFKA_TOOL_OPTS replaces
# the JVM options of `tool` (default -Xmx512m, plus C1-only JIT except for *Performance tools).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
KAFKA_CONF_DIR="$SCRIPT_DIR/kafka"
# shellcheck source=kafka/secured.sh
source "$KAFKA_CONF_DIR/secured.sh"
# shellcheck source=kafka/kerberos.sh
source "$KAFKA_CONF_DIR/kerberos.sh"
# shellcheck source=kafka/legacy.sh
source "$KAFKA_CONF_DIR/legacy.sh"
KAFKA_HOME="${KREC_KAFKA_HOME:-$REPO_ROOT/target/kafka}"
KAFKA_LIB="$KAFKA_HOME/lib"
# The release pom.xml names: what every instance runs unless started with --version.
DEFAULT_KAFKA_VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$KAFKA_CONF_DIR/pom.xml")"
# Broker and tool logging: log4j2 for 4.x, log4j 1 for the older releases (legacy.sh).
LEGACY=0
BROKER_HEAP="${KREC_KAFKA_HEAP:-512m}"
# Seconds to wait for a node to serve, and for a node to exit after SIGTERM.
START_TIMEOUT_S=120
STOP_TIMEOUT_S=45

die() {
    echo "kafka.sh: $*" >&2
    exit 1
}
log() { echo "kafka.sh: $*" >&2; }

# --- jars -----------------------------------------------------------------------------------

# The stamp names the pom's hash, so editing the pom (a version bump) refetches.
fetch_stamp() {
    echo "$KAFKA_LIB/.fetched-$(sha256sum "$KAFKA_CONF_DIR/pom.xml" | cut -c1-16)"
}

cmd_fetch() {
    if ((LEGACY)); then
        legacy_fetch "$KAFKA_VERSION"
        return
    fi
    local stamp
    stamp="$(fetch_stamp)"
    [[ -f "$stamp" ]] && return 0
    command -v mvn >/dev/null || die "mvn not found (Maven is needed once to fetch the Kafka jars)"
    mkdir -p "$KAFKA_HOME"
    # Two test runs starting at once on a fresh tree: one fetches, the other waits for it.
    exec 9>"$KAFKA_HOME/.fetch.lock"
    flock 9
    [[ -f "$stamp" ]] && { exec 9>&-; return 0; }
    log "fetching Kafka jars into $KAFKA_LIB (first run only)"
    local tmp="$KAFKA_LIB.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$KAFKA_HOME"
    # A fresh directory, renamed into place, so an interrupted fetch never looks complete.
    (cd "$KAFKA_CONF_DIR" && mvn -q -B -Dstyle.color=never dependency:copy-dependencies -DoutputDirectory="$tmp") >&2 \
        || { rm -rf "$tmp"; die "mvn dependency:copy-dependencies failed"; }
    local bindings
    bindings="$(find "$tmp" -name 'log4j-slf4j*-impl-*.jar' -o -name 'slf4j-reload4j-*.jar' \
        -o -name 'logback-classic-*.jar' | wc -l)"
    [[ "$bindings" == 1 ]] || { rm -rf "$tmp"; die "expected exactly one SLF4J binding in the jars, found $bindings"; }
    touch "$tmp/.fetched-$(sha256sum "$KAFKA_CONF_DIR/pom.xml" | cut -c1-16)"
    rm -rf "$KAFKA_LIB"
    mv "$tmp" "$KAFKA_LIB"
    exec 9>&-
}

require_jars() {
    if ((LEGACY)); then
        legacy_fetch "$KAFKA_VERSION"
        return
    fi
    [[ -f "$(fetch_stamp)" ]] || cmd_fetch
}

# Runs a Kafka Java tool with the tools' logging (WARN to stderr, stdout left to the tool).
run_tool() {
    require_jars
    local opts
    if [[ -n "${KREC_KAFKA_TOOL_OPTS:-}" ]]; then
        read -r -a opts <<<"$KREC_KAFKA_TOOL_OPTS"
    elif [[ "$1" == *Performance ]]; then
        # Throughput tools (ProducerPerformance, ConsumerPerformance) get the full JIT, as
        # in Kafka's own kafka-*-perf-test.sh.
        opts=(-Xmx512m)
    else
        # C1 only: most tools live a second or two, and this cuts their start-up time.
        opts=(-Xmx512m -XX:TieredStopAtLevel=1)
    fi
    local logging="-Dlog4j2.configurationFile=$KAFKA_CONF_DIR/log4j2-tools.xml"
    ((LEGACY)) && logging="$(legacy_logging)"
    local java_cmd=(java "${opts[@]}" -Djava.awt.headless=true "$logging"
        -cp "$KAFKA_LIB/*" "$@")
    if ((${TOOL_REPLACES_SHELL:-0})); then
        # `kafka.sh tool`: the JVM takes this process's place, so whoever started kafka.sh
        # (a test holding a long-running ConsoleConsumer) stops the tool by signalling that pid.
        exec "${java_cmd[@]}"
    fi
    "${java_cmd[@]}"
}

# --- instance state -------------------------------------------------------------------------

instance_dir() { echo "$KAFKA_HOME/$1"; }
node_dir() { echo "$(instance_dir "$1")/node$2"; }

node_count() {
    local f
    f="$(instance_dir "$1")/brokers"
    [[ -f "$f" ]] || die "no instance named '$1' (run: scripts/kafka.sh start --name $1)"
    cat "$f"
}

node_pid() {
    local f
    f="$(node_dir "$1" "$2")/pid"
    [[ -f "$f" ]] && cat "$f"
}

# True while the process exists and is not a zombie (an exited broker whose parent, init
# here, has not reaped it yet still answers kill -0).
pid_alive() {
    local state
    kill -0 "$1" 2>/dev/null || return 1
    # The state follows the command name, which is in parentheses and may hold spaces.
    state="$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" || return 1
    [[ -n "$state" && "$state" != Z ]]
}

node_running() {
    local pid
    pid="$(node_pid "$1" "$2")" || return 1
    [[ -n "$pid" ]] && pid_alive "$pid"
}

# Prints N distinct free TCP ports on 127.0.0.1. All sockets are held open until every port
# is chosen, so the N ports differ; another process could still take one before the broker
# binds it, which start reports as a failed start.
free_ports() {
    local n="$1" py
    for py in /usr/bin/python3 python3; do
        command -v "$py" >/dev/null && break
    done
    "$py" - "$n" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# write_server_properties NAME NODE NODES BROKER_PORT CONTROLLER_PORT VOTERS [EXTRA_LISTENERS
# EXTRA_PROTOCOL_MAP [EXTRA_ADVERTISED]]: the extra (secured, proxied) listeners, as
# "NAME://127.0.0.1:PORT,..." and "NAME:PROTOCOL,...", are served next to PLAINTEXT and
# advertised as EXTRA_ADVERTISED (default: as served).
write_server_properties() {
    local name="$1" node="$2" nodes="$3" broker_port="$4" controller_port="$5" voters="$6"
    local extra_listeners="${7:+,$7}" extra_map="${8:+,$8}" extra_advertised="${9:-${7:-}}"
    extra_advertised="${extra_advertised:+,$extra_advertised}"
    local rf=1 min_isr=1
    if ((nodes > 1)); then
        rf=$nodes
        min_isr=2
    fi
    cat >"$(node_dir "$name" "$node")/server.properties" <<EOF
# Generated by scripts/kafka.sh for instance '$name', node $node of $nodes.
process.roles=broker,controller
node.id=$node
# Static quorum: every node is a voter; formatted without --standalone.
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$broker_port,CONTROLLER://127.0.0.1:$controller_port$extra_listeners
advertised.listeners=PLAINTEXT://127.0.0.1:$broker_port$extra_advertised
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT$extra_map
log.dirs=$(node_dir "$name" "$node")/data
# One rack per node: a consumer with client.rack=rack-K fetches from node K (KIP-392).
broker.rack=rack-$node
replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector

num.partitions=1
default.replication.factor=$rf
# Tests create their topics explicitly; a typo must not create a topic silently.
auto.create.topics.enable=false
# Time retention compares record timestamps with the clock: tests that produce records with
# fixed old timestamps would see them deleted a few minutes later. Instances are short-lived.
log.retention.ms=-1
# The log cleaner looks for dirty compacted logs every second (default 15 s), so a test waits
# seconds, not tens of them, for compaction. Only topics with cleanup.policy=compact feel it.
log.cleaner.backoff.ms=1000

offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$min_isr
transaction.state.log.num.partitions=1
# A transaction past its timeout is aborted within a second (default: checked every 10 s).
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$min_isr
# One share-group state partition, as for offsets: the default 50 are created and loaded at a
# share group's first use, a burst the tests running beside it would feel.
share.coordinator.state.topic.num.partitions=1
# A classic consumer group starts at once instead of after 3 s.
group.initial.rebalance.delay.ms=0
# KIP-848 consumer groups: session and heartbeat are set by the broker; short ones let the
# group tests see a killed member replaced in seconds (defaults 45 s and 5 s).
group.consumer.min.session.timeout.ms=6000
group.consumer.session.timeout.ms=6000
group.consumer.min.heartbeat.interval.ms=500
group.consumer.heartbeat.interval.ms=1000

num.network.threads=3
num.io.threads=8
EOF
}

launch_node() {
    local name="$1" node="$2" dir
    dir="$(node_dir "$name" "$node")"
    node_running "$name" "$node" && die "node $node of '$name' is already running (pid $(node_pid "$name" "$node"))"
    # A stale pid file (a node that crashed) must not pass for the new process.
    rm -f "$dir/pid"
    local jmx_port logging="-Dlog4j2.configurationFile=$KAFKA_CONF_DIR/log4j2-broker.xml" kerberos_options extra_opts=()
    jmx_port="$(cat "$dir/jmx-port")"
    ((LEGACY)) && logging="$(legacy_logging)"
    read -r -a kerberos_options <<<"$(kerberos_jvm_options "$(instance_dir "$name")")"
    # JVM options the secured part asks for (secured.sh: oauth_jvm_options).
    if [[ -s "$(instance_dir "$name")/jvm-options" ]]; then
        read -r -a extra_opts <"$(instance_dir "$name")/jvm-options" || true
    fi
    # setsid: a Ctrl-C in the terminal goes to the test script, whose trap stops the broker
    # in order; the broker's output goes to a file so that $(kafka.sh start) returns.
    setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$dir/pid" \
        java -Xms256m -Xmx"$BROKER_HEAP" -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
        -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent \
        -XX:MaxInlineLevel=15 -Djava.awt.headless=true "${extra_opts[@]}" \
        -Dcom.sun.management.jmxremote.port="$jmx_port" -Dcom.sun.management.jmxremote.rmi.port="$jmx_port" \
        -Dcom.sun.management.jmxremote.authenticate=false -Dcom.sun.management.jmxremote.ssl=false \
        -Dcom.sun.management.jmxremote.host=127.0.0.1 -Djava.rmi.server.hostname=127.0.0.1 \
        "$logging" "${kerberos_options[@]}" -cp "$KAFKA_LIB/*" kafka.Kafka "$dir/server.properties" \
        </dev/null >"$dir/broker.log" 2>&1 &
    local i
    for ((i = 0; i < 50; i++)); do
        [[ -s "$dir/pid" ]] && return 0
        sleep 0.1
    done
    die "node $node of '$name' did not start a process"
}

# Waits until the node has logged "Kafka Server started" (KafkaRaftServer.startup end), or on
# ZooKeeper "[KafkaServer id=K] started".
wait_node_started() {
    local name="$1" node="$2" dir deadline
    dir="$(node_dir "$name" "$node")"
    deadline=$((SECONDS + START_TIMEOUT_S))
    while ! grep -Eq 'Kafka Server started|KafkaServer id=[0-9]+\] started' "$dir/broker.log" 2>/dev/null; do
        if ! node_running "$name" "$node"; then
            tail -n 40 "$dir/broker.log" >&2
            die "node $node of '$name' exited during start-up (log: $dir/broker.log)"
        fi
        ((SECONDS < deadline)) || { tail -n 40 "$dir/broker.log" >&2; die "node $node of '$name' not started after ${START_TIMEOUT_S}s"; }
        sleep 0.3
    done
}

# Waits until a metadata request through the bootstrap answers with `want` live brokers.
wait_metadata() {
    local bootstrap="$1" want="$2" deadline out
    command -v kcat >/dev/null || die "kcat not found (scripts/install-deps.sh installs it)"
    deadline=$((SECONDS + START_TIMEOUT_S))
    while :; do
        if out="$(kcat -L -b "$bootstrap" -m 5 2>/dev/null)" &&
            grep -Eq "^ ${want} brokers:" <<<"$out"; then
            return 0
        fi
        ((SECONDS < deadline)) || die "metadata from $bootstrap does not list $want brokers after ${START_TIMEOUT_S}s"
        sleep 0.5
    done
}

stop_nodes() {
    local name="$1"
    shift
    local node pid deadline pids=()
    # SIGTERM to all at once: a controlled shutdown needs the controller quorum, which a
    # one-by-one stop would lose before the last node finishes.
    for node in "$@"; do
        if node_running "$name" "$node"; then
            pid="$(node_pid "$name" "$node")"
            # A node frozen by SIGSTOP would not act on SIGTERM until continued.
            kill -CONT "$pid" 2>/dev/null || true
            kill -TERM "$pid" 2>/dev/null || true
            pids+=("$node:$pid")
        fi
    done
    deadline=$((SECONDS + STOP_TIMEOUT_S))
    local entry
    for entry in "${pids[@]}"; do
        node="${entry%%:*}"
        pid="${entry#*:}"
        while pid_alive "$pid" && ((SECONDS < deadline)); do
            sleep 0.2
        done
        if pid_alive "$pid"; then
            log "node $node of '$name' (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT_S}s: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            local waited
            for ((waited = 0; waited < 100; waited++)); do
                pid_alive "$pid" || break
                sleep 0.1
            done
        fi
        rm -f "$(node_dir "$name" "$node")/pid"
    done
}

bootstrap_of() {
    local f
    f="$(instance_dir "$1")/bootstrap"
    [[ -f "$f" ]] || die "no bootstrap for instance '$1' (not started?)"
    cat "$f"
}

# --- commands -------------------------------------------------------------------------------

# One try at formatting and starting an instance on freshly picked ports. Returns 2 when a
# port was taken between picking and binding (worth another try), 1 on any other failure.
# With SECURED=1 (one node only) the node also serves the secured listeners; REAUTH_MS is
# their connections.max.reauth.ms. PROXIES lanes of proxied listeners (see the header).
try_start() {
    local name="$1" nodes="$2" secured="$3" reauth_ms="$4" proxies="$5" kdc_env="$6" dir
    dir="$(instance_dir "$name")"
    bash "$SCRIPT_DIR/toxiproxy.sh" stop --name "$name"
    rm -rf "$dir"
    mkdir -p "$dir"

    local ports secure_count=$((secured ? ${#SECURE_LISTENERS[@]} : 0))
    read -r -a ports <<<"$(free_ports $((3 * nodes + secure_count + 2 * proxies * nodes)))"
    local voters="" bootstrap="" k
    for ((k = 1; k <= nodes; k++)); do
        voters+="${voters:+,}$k@127.0.0.1:${ports[2 * k - 1]}"
        bootstrap+="${bootstrap:+,}127.0.0.1:${ports[2 * k - 2]}"
    done

    # Secured: the listeners after PLAINTEXT and CONTROLLER, each on its own port.
    local extra_listeners="" extra_map="" env_ports=("PLAINTEXT=${ports[0]}") format_args=() entry
    if ((secured)); then
        k=2
        for entry in "${SECURE_LISTENERS[@]}"; do
            extra_listeners+="${extra_listeners:+,}${entry%%:*}://127.0.0.1:${ports[k]}"
            extra_map+="${extra_map:+,}$entry"
            env_ports+=("${entry%%:*}=${ports[k]}")
            k=$((k + 1))
        done
        gen_secure_material "$dir/secure"
        oauth_jvm_options >"$dir/jvm-options"
        [[ -z "$kdc_env" ]] || echo "$kdc_env" >"$dir/kdc-env"
        mapfile -t format_args < <(scram_format_args)
    fi
    if ((proxies)); then
        start_proxies "$name" "$nodes" "$secured" "$proxies" "${ports[@]:2*nodes+secure_count:2*proxies*nodes}" ||
            return 1
    fi

    local cluster_id
    cluster_id="$(run_tool kafka.tools.StorageTool random-uuid)"
    for ((k = 1; k <= nodes; k++)); do
        mkdir -p "$(node_dir "$name" "$k")"
        # JMX ports come after every listener port.
        echo "${ports[${#ports[@]} - k]}" >"$(node_dir "$name" "$k")/jmx-port"
        local served="$extra_listeners" advertised="$extra_listeners" map="$extra_map" lane
        for ((lane = 1; lane <= proxies; lane++)); do
            served+="${served:+,}PROXY$lane://$(lane_address "$dir" "$lane" "$k" upstream)"
            advertised+="${advertised:+,}PROXY$lane://$(lane_address "$dir" "$lane" "$k" listen)"
            map+="${map:+,}PROXY$lane:$( ((secured)) && echo SASL_SSL || echo PLAINTEXT)"
        done
        write_server_properties "$name" "$k" "$nodes" "${ports[2 * k - 2]}" "${ports[2 * k - 1]}" "$voters" \
            "$served" "$map" "$advertised"
        if ((secured)); then
            write_security_properties "$(node_dir "$name" "$k")/server.properties" "$dir/secure" "$reauth_ms" "$kdc_env"
            for ((lane = 1; lane <= proxies; lane++)); do
                sasl_listener_properties "PROXY$lane" "$SECURE_SASL_MECHANISMS" "$reauth_ms" \
                    >>"$(node_dir "$name" "$k")/server.properties"
            done
        fi
        if ! run_tool kafka.tools.StorageTool format -t "$cluster_id" "${format_args[@]}" \
            -c "$(node_dir "$name" "$k")/server.properties" >"$(node_dir "$name" "$k")/format.log" 2>&1; then
            cat "$(node_dir "$name" "$k")/format.log" >&2
            log "formatting node $k of '$name' failed"
            return 1
        fi
    done
    echo "$nodes" >"$dir/brokers"
    echo "$cluster_id" >"$dir/cluster-id"
    echo "$bootstrap" >"$dir/bootstrap"

    for ((k = 1; k <= nodes; k++)); do
        (launch_node "$name" "$k") || return 1
    done
    local ok=1
    for ((k = 1; k <= nodes; k++)); do
        (wait_node_started "$name" "$k") || { ok=0; break; }
    done
    ((ok)) && { (wait_metadata "$bootstrap" "$nodes") || ok=0; }
    if ((ok && secured)); then
        if (create_acls "$bootstrap"); then
            write_secure_env "$dir/secure.env" "$dir/secure" "$reauth_ms" "$kdc_env" "${env_ports[@]}"
        else
            log "creating the ACLs of '$name' failed"
            ok=0
        fi
    fi
    if ((!ok)); then
        local all=()
        for ((k = 1; k <= nodes; k++)); do all+=("$k"); done
        stop_nodes "$name" "${all[@]}"
        bash "$SCRIPT_DIR/toxiproxy.sh" stop --name "$name"
        if grep -qs 'Address already in use' "$dir"/node*/broker.log; then
            return 2
        fi
        return 1
    fi
    return 0
}

# start_proxies NAME NODES SECURED LANES PORT...: starts the instance's Toxiproxy and, for each
# lane I and node K, proxy `proxyI-nodeK` from a listen port to the node's PROXYI port (the
# ports in pairs, upstream then listen, lane by lane, node by node); writes proxy.env.
start_proxies() {
    local name="$1" nodes="$2" secured="$3" lanes="$4" dir api lane k i=0
    shift 4
    local ports=("$@")
    dir="$(instance_dir "$name")"
    api="$(bash "$SCRIPT_DIR/toxiproxy.sh" start --name "$name")" || return 1
    local env=("TOXIPROXY_API=$api" "PROTOCOL=$( ((secured)) && echo SASL_SSL || echo PLAINTEXT)" "LANES=$lanes")
    for ((lane = 1; lane <= lanes; lane++)); do
        local bootstrap="" names=""
        for ((k = 1; k <= nodes; k++)); do
            local upstream="127.0.0.1:${ports[i]}" listen="127.0.0.1:${ports[i + 1]}"
            i=$((i + 2))
            echo "$upstream $listen" >"$dir/lane$lane-node$k"
            bash "$SCRIPT_DIR/toxiproxy.sh" proxy --name "$name" "proxy$lane-node$k" "$listen" "$upstream" ||
                return 1
            bootstrap+="${bootstrap:+,}$listen"
            names+="${names:+,}proxy$lane-node$k"
        done
        env+=("LANE$lane=$bootstrap" "LANE${lane}_PROXIES=$names")
    done
    printf '%s\n' "${env[@]}" >"$dir/proxy.env"
}

# lane_address DIR LANE NODE upstream|listen: an address start_proxies recorded.
lane_address() {
    local pair
    read -r -a pair <"$1/lane$2-node$3"
    if [[ "$4" == upstream ]]; then echo "${pair[0]}"; else echo "${pair[1]}"; fi
}

# Stops the instance when the process `owner` is gone, even if it died by SIGKILL and
# never ran its trap: brokers must not outlive the test run that started them.
start_watcher() {
    local name="$1" owner="$2" dir
    dir="$(instance_dir "$name")"
    kill -0 "$owner" 2>/dev/null || die "--owner-pid $owner is not a running process"
    setsid bash -c 'echo $$ >"$4"
        while st="$(sed "s/.*) //" "/proc/$1/stat" 2>/dev/null | cut -c1)" && [[ -n "$st" && "$st" != Z ]]; do
            sleep 2
        done
        exec bash "$2" stop --name "$3"' \
        _ "$owner" "$SCRIPT_DIR/kafka.sh" "$name" "$dir/watcher.pid" </dev/null >"$dir/watcher.log" 2>&1 &
    local i
    for ((i = 0; i < 50; i++)); do
        [[ -s "$dir/watcher.pid" ]] && return 0
        sleep 0.1
    done
    die "the watcher of '$name' did not start"
}

stop_watcher() {
    local f pid
    f="$(instance_dir "$1")/watcher.pid"
    [[ -f "$f" ]] || return 0
    pid="$(cat "$f")"
    rm -f "$f"
    # The watcher itself ends by exec-ing `kafka.sh stop`: do not signal ourselves.
    [[ "$pid" != "$$" ]] && kill -TERM "$pid" 2>/dev/null
    return 0
}

cmd_start() {
    local name="$1" nodes="$2" owner="$3" secured="$4" reauth_ms="$5" proxies="$6" kdc_env="$7"
    [[ "$nodes" == 1 || "$nodes" == 3 ]] || die "--brokers must be 1 or 3, not '$nodes'"
    [[ "$proxies" =~ ^[0-9]$ ]] || die "--proxies must be a number of lanes 0..9, not '$proxies'"
    if ((secured)); then
        ((nodes == 1)) || die "--secured runs one node only"
        require_openssl
    fi
    if [[ -n "$kdc_env" ]]; then
        ((secured)) || die "--kdc needs --secured"
        kdc_env="$(realpath "$kdc_env")"
        check_kdc_env "$kdc_env"
    fi
    [[ "$reauth_ms" =~ ^[0-9]+$ ]] || die "--reauth-ms must be a number of milliseconds, not '$reauth_ms'"
    if ((LEGACY)); then
        ((nodes == 1 && !secured && proxies == 0)) ||
            die "--version $KAFKA_VERSION runs one plain node: no --brokers 3, --secured or --proxies"
    fi
    require_jars
    local dir
    dir="$(instance_dir "$name")"
    if [[ -f "$dir/brokers" ]]; then
        local k
        for ((k = 1; k <= $(cat "$dir/brokers"); k++)); do
            node_running "$name" "$k" && die "instance '$name' is running; stop it first (scripts/kafka.sh stop --name $name)"
        done
    fi
    stop_watcher "$name"
    local attempt rc
    for attempt in 1 2 3; do
        rc=0
        if ((LEGACY)); then
            legacy_start "$name" "$KAFKA_VERSION" || rc=$?
        else
            try_start "$name" "$nodes" "$secured" "$reauth_ms" "$proxies" "$kdc_env" || rc=$?
        fi
        ((rc == 2)) || break
        log "a port picked for '$name' was taken meanwhile; retrying with new ports"
    done
    ((rc == 0)) || die "instance '$name' failed to start; logs in $dir/node*/broker.log"
    [[ -z "$owner" ]] || start_watcher "$name" "$owner"
    local bootstrap
    bootstrap="$(cat "$dir/bootstrap")"
    if ((secured)); then
        log "instance '$name' (secured) serving at $bootstrap (PLAINTEXT); listeners and files in $dir/secure.env"
    else
        local kind="$nodes node(s)"
        ((LEGACY)) && kind="Kafka $KAFKA_VERSION on ZooKeeper"
        log "instance '$name' ($kind) serving at $bootstrap"
    fi
    echo "$bootstrap"
}

cmd_stop() {
    local name="$1" clean="$2" dir n k
    dir="$(instance_dir "$name")"
    stop_watcher "$name"
    if [[ -f "$dir/brokers" ]]; then
        n="$(cat "$dir/brokers")"
        local all=()
        for ((k = 1; k <= n; k++)); do all+=("$k"); done
        stop_nodes "$name" "${all[@]}"
    fi
    legacy_stop_zookeeper "$name"
    bash "$SCRIPT_DIR/toxiproxy.sh" stop --name "$name"
    ((clean)) && rm -rf "$dir"
    return 0
}

check_node() {
    local name="$1" node="$2" n
    [[ -n "$node" ]] || die "--node K is required"
    n="$(node_count "$name")"
    [[ "$node" =~ ^[0-9]+$ ]] && ((node >= 1 && node <= n)) || die "--node must be 1..$n, not '$node'"
}

cmd_start_node() {
    local name="$1" node="$2"
    check_node "$name" "$node"
    launch_node "$name" "$node"
    if ! (wait_node_started "$name" "$node"); then
        stop_nodes "$name" "$node"
        die "node $node of '$name' failed to restart"
    fi
    wait_metadata "$(bootstrap_of "$name")" "$(node_count "$name")"
}

cmd_topic() {
    local name="$1"
    shift
    [[ "${1:-}" == create ]] || die "usage: kafka.sh topic [--name N] create TOPIC [--partitions P] [--replication-factor R] [--config k=v ...]"
    shift
    local topic="${1:?topic name missing}"
    shift
    local partitions=1 rf
    rf="$(node_count "$name")"
    local configs=()
    while (($#)); do
        case "$1" in
        --partitions) partitions="$2"; shift 2 ;;
        --replication-factor) rf="$2"; shift 2 ;;
        --config) configs+=(--config "$2"); shift 2 ;;
        *) die "topic create: unknown option '$1'" ;;
        esac
    done
    local command=org.apache.kafka.tools.TopicCommand
    ((LEGACY)) && command="$(legacy_topic_command)"
    run_tool "$command" --bootstrap-server "$(bootstrap_of "$name")" \
        --create --topic "$topic" --partitions "$partitions" --replication-factor "$rf" \
        "${configs[@]}" >&2
}

cmd_tool() {
    local name="$1" named="$2"
    shift 2
    (($#)) || die "usage: kafka.sh tool [--name N] <java-main-class> [args...]"
    local args=() a bootstrap=""
    for a in "$@"; do
        if [[ "$a" == *"{bootstrap}"* ]]; then
            ((named)) || die "{bootstrap} in tool arguments needs --name"
            [[ -n "$bootstrap" ]] || bootstrap="$(bootstrap_of "$name")"
            a="${a//\{bootstrap\}/$bootstrap}"
        fi
        args+=("$a")
    done
    TOOL_REPLACES_SHELL=1 run_tool "${args[@]}"
}

cmd_status() {
    local name="$1" n k rc=0
    n="$(node_count "$name")"
    for ((k = 1; k <= n; k++)); do
        if node_running "$name" "$k"; then
            echo "node $k: running (pid $(node_pid "$name" "$k"))"
        else
            echo "node $k: stopped"
            rc=1
        fi
    done
    return $rc
}

# Sets KAFKA_VERSION, LEGACY and KAFKA_LIB: the version asked for (fetch, start), else the one
# the instance was started with, else pom.xml's.
select_version() {
    local cmd="$1" name="$2" version="$3" recorded
    recorded="$(instance_dir "$name")/version"
    if [[ -z "$version" && "$cmd" != start && "$cmd" != fetch && -f "$recorded" ]]; then
        version="$(cat "$recorded")"
    fi
    KAFKA_VERSION="${version:-$DEFAULT_KAFKA_VERSION}"
    [[ "$KAFKA_VERSION" == "$DEFAULT_KAFKA_VERSION" ]] && return 0
    is_legacy_version "$KAFKA_VERSION" ||
        die "--version $KAFKA_VERSION: kafka.sh runs $DEFAULT_KAFKA_VERSION (pom.xml) or a release 2.8.x..3.9.x"
    LEGACY=1
    KAFKA_LIB="$(legacy_lib "$KAFKA_VERSION")"
}

main() {
    local cmd="${1:-}"
    [[ -n "$cmd" ]] || die "usage: kafka.sh fetch|start|stop|stop-node|start-node|topic|tool|datadir|bootstrap|secure-env|status|jmx-url|pid|proxy-env [options]"
    shift
    local name=default named=0 brokers=1 node="" clean=0 owner="" secured=0 reauth_ms=$DEFAULT_REAUTH_MS proxies=0 oauth="" kdc_env="" rest=()
    local version=""
    # Options common to all commands may come anywhere before the command's own arguments;
    # `tool` passes everything after the main class through untouched.
    while (($#)); do
        case "$1" in
        --name) name="${2:?--name needs a value}"; named=1; shift 2 ;;
        --brokers) brokers="${2:?--brokers needs a value}"; shift 2 ;;
        --node) node="${2:?--node needs a value}"; shift 2 ;;
        --clean) clean=1; shift ;;
        --owner-pid) owner="${2:?--owner-pid needs a value}"; shift 2 ;;
        --secured) secured=1; shift ;;
        --reauth-ms) reauth_ms="${2:?--reauth-ms needs a value}"; shift 2 ;;
        --oauth) oauth="${2:?--oauth needs a value}"; shift 2 ;;
        --proxies) proxies="${2:?--proxies needs a value}"; shift 2 ;;
        --kdc) kdc_env="${2:?--kdc needs a value}"; shift 2 ;;
        --version) version="${2:?--version needs a value}"; shift 2 ;;
        *)
            rest=("$@")
            break
            ;;
        esac
    done
    [[ "$name" =~ ^[A-Za-z0-9_-]+$ ]] || die "--name may use letters, digits, '_', '-' only"
    [[ "$name" != lib* ]] || die "--name lib... is taken by the jars directories"
    select_version "$cmd" "$name" "$version"
    if [[ -n "$oauth" ]]; then
        ((secured)) || die "--oauth needs --secured"
        use_oauth "$oauth"
    fi
    case "$cmd" in
    fetch) cmd_fetch ;;
    start) cmd_start "$name" "$brokers" "$owner" "$secured" "$reauth_ms" "$proxies" "$kdc_env" ;;
    stop) cmd_stop "$name" "$clean" ;;
    stop-node)
        check_node "$name" "$node"
        stop_nodes "$name" "$node"
        ;;
    start-node) cmd_start_node "$name" "$node" ;;
    topic) cmd_topic "$name" "${rest[@]}" ;;
    tool) cmd_tool "$name" "$named" "${rest[@]}" ;;
    datadir)
        check_node "$name" "${node:-1}"
        echo "$(node_dir "$name" "${node:-1}")/data"
        ;;
    bootstrap) bootstrap_of "$name" ;;
    secure-env)
        [[ -f "$(instance_dir "$name")/secure.env" ]] ||
            die "no secure.env for instance '$name' (not started with --secured?)"
        echo "$(instance_dir "$name")/secure.env"
        ;;
    status) cmd_status "$name" ;;
    pid)
        check_node "$name" "${node:-1}"
        node_running "$name" "${node:-1}" || die "node ${node:-1} of '$name' is not running"
        node_pid "$name" "${node:-1}"
        ;;
    proxy-env)
        [[ -f "$(instance_dir "$name")/proxy.env" ]] ||
            die "no proxy.env for instance '$name' (not started with --proxies?)"
        echo "$(instance_dir "$name")/proxy.env"
        ;;
    jmx-url)
        check_node "$name" "${node:-1}"
        echo "service:jmx:rmi:///jndi/rmi://127.0.0.1:$(cat "$(node_dir "$name" "${node:-1}")/jmx-port")/jmxrmi"
        ;;
    *) die "unknown command '$cmd'" ;;
    esac
}

main "$@"
