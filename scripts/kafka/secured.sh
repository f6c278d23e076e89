# shellcheck shell=bash
# `scripts/kafka.sh start --secured`: the parts of a secured instance that a plain one lacks.
# Sourced by kafka.sh (it uses die, log, run_tool); not meant to be run on its own. The
# listeners, files and the secure.env contract are documented in kafka.sh's header.

# Users known to every SASL mechanism (PLAIN through the JAAS config, SCRAM through the
# credentials written at format time, OAUTHBEARER by the unsecured token's `sub`).
SECURE_USERS=(alice bob)
declare -A SECURE_PASSWORDS=([alice]=alice-secret [bob]=bob-secret)
SECURE_SASL_MECHANISMS=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER
# Password of the encrypted PKCS#8 copy of alice's RSA key.
SECURE_KEY_PASSWORD=alice-key-pass
# The only name in the certificate of the SSL_WRONG_HOST listener.
SECURE_WRONG_HOST=wrong.example
# alice may read topics and groups with this prefix; bob may do nothing.
SECURE_ACL_PREFIX=sec-
DEFAULT_REAUTH_MS=4000

# Broker listeners of a secured instance besides PLAINTEXT and CONTROLLER, as name:protocol.
# kafka.sh picks one free port for each, in this order.
SECURE_LISTENERS=(SASL_SSL:SASL_SSL SASL_PLAINTEXT:SASL_PLAINTEXT SSL:SSL
    SASL_PLAIN_ONLY:SASL_PLAINTEXT SSL_WRONG_HOST:SSL)

require_openssl() {
    command -v openssl >/dev/null || die "openssl not found (scripts/install-deps.sh installs it)"
}

# --- certificates ---------------------------------------------------------------------------

# Extensions of every certificate kind; certificates are signed with `-extensions <section>`.
# Leaf certificates carry only digitalSignature: TLS 1.2 (EC)DHE and TLS 1.3 need no other.
write_openssl_conf() {
    cat >"$1" <<EOF
[req]
distinguished_name = dn
prompt = no
[dn]
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[broker]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[wrong_host]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:$SECURE_WRONG_HOST
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
}

# Unencrypted PKCS#8 ("BEGIN PRIVATE KEY"), which is what `openssl genpkey` writes.
gen_ec_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
gen_rsa_key() { openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2>/dev/null; }

random_serial() { echo "0x$(openssl rand -hex 16)"; }

# make_ca CONF KEY SUBJECT OUT: a self-signed CA certificate.
make_ca() {
    openssl req -new -x509 -config "$1" -extensions ca -key "$2" -subj "$3" \
        -sha256 -days 30 -set_serial "$(random_serial)" -out "$4"
}

# sign_cert CONF SECTION CA_CERT CA_KEY KEY SUBJECT OUT
sign_cert() {
    local conf="$1" section="$2" ca_cert="$3" ca_key="$4" key="$5" subject="$6" out="$7"
    openssl req -new -config "$conf" -key "$key" -subj "$subject" -out "$out.csr"
    openssl x509 -req -in "$out.csr" -CA "$ca_cert" -CAkey "$ca_key" -set_serial "$(random_serial)" \
        -sha256 -days 30 -extfile "$conf" -extensions "$section" -out "$out" 2>/dev/null
    rm -f "$out.csr"
}

# Fails unless the first line of FILE is the PEM header of the expected LABEL: the key formats
# are the point of these files, and openssl's defaults have changed between releases.
expect_pem() {
    local file="$1" label="$2"
    [[ "$(head -n 1 "$file")" == "-----BEGIN $label-----" ]] ||
        die "$file: expected a PEM '$label', got '$(head -n 1 "$file")'"
}

# Writes every certificate and key of a secured instance into DIR (fresh ones at each start).
gen_secure_material() {
    local d="$1"
    mkdir -p "$d"
    (
        set -e
        umask 077
        write_openssl_conf "$d/openssl.cnf"
        local c="$d/openssl.cnf"

        gen_ec_key "$d/ca.key"
        make_ca "$c" "$d/ca.key" "/CN=krec test CA" "$d/ca.pem"
        gen_ec_key "$d/other-ca.key"
        make_ca "$c" "$d/other-ca.key" "/CN=krec other CA" "$d/other-ca.pem"
        # Several certificates in one CA file, the real CA last.
        cat "$d/other-ca.pem" "$d/ca.pem" >"$d/ca-bundle.pem"

        # Broker: PEM keystores (key + chain in one file, ssl.keystore.type=PEM).
        gen_ec_key "$d/broker.key"
        sign_cert "$c" broker "$d/ca.pem" "$d/ca.key" "$d/broker.key" "/CN=krec test broker" "$d/broker.pem"
        cat "$d/broker.key" "$d/broker.pem" "$d/ca.pem" >"$d/broker-keystore.pem"
        gen_ec_key "$d/wrong-host.key"
        sign_cert "$c" wrong_host "$d/ca.pem" "$d/ca.key" "$d/wrong-host.key" "/CN=$SECURE_WRONG_HOST" "$d/wrong-host.pem"
        cat "$d/wrong-host.key" "$d/wrong-host.pem" "$d/ca.pem" >"$d/wrong-host-keystore.pem"

        # alice, RSA: the key as PKCS#8, PKCS#1 and encrypted PKCS#8.
        gen_rsa_key "$d/client.key"
        sign_cert "$c" client "$d/ca.pem" "$d/ca.key" "$d/client.key" "/CN=alice" "$d/client.pem"
        openssl rsa -in "$d/client.key" -traditional -out "$d/client-pkcs1.key" 2>/dev/null
        openssl pkcs8 -topk8 -v2 aes-256-cbc -in "$d/client.key" \
            -passout "pass:$SECURE_KEY_PASSWORD" -out "$d/client-encrypted.key"
        # alice, EC: the key as SEC1.
        openssl ecparam -name prime256v1 -genkey -noout -out "$d/client-ec.key"
        sign_cert "$c" client "$d/ca.pem" "$d/ca.key" "$d/client-ec.key" "/CN=alice" "$d/client-ec.pem"

        # Also CN=alice, but signed by the other CA: the broker must refuse it.
        gen_ec_key "$d/foreign-client.key"
        sign_cert "$c" client "$d/other-ca.pem" "$d/other-ca.key" "$d/foreign-client.key" "/CN=alice" "$d/foreign-client.pem"
    ) || die "generating certificates in $d failed"
    expect_pem "$d/client.key" "PRIVATE KEY"
    expect_pem "$d/client-pkcs1.key" "RSA PRIVATE KEY"
    expect_pem "$d/client-encrypted.key" "ENCRYPTED PRIVATE KEY"
    expect_pem "$d/client-ec.key" "EC PRIVATE KEY"
    expect_pem "$d/broker.key" "PRIVATE KEY"
    local f
    for f in ca other-ca broker wrong-host client client-ec foreign-client; do
        expect_pem "$d/$f.pem" CERTIFICATE
    done
}

# --- broker configuration -------------------------------------------------------------------

# `StorageTool format` arguments that write alice's and bob's SCRAM credentials into the
# metadata log, one per user and SCRAM mechanism.
scram_format_args() {
    local user mech
    for user in "${SECURE_USERS[@]}"; do
        for mech in SCRAM-SHA-256 SCRAM-SHA-512; do
            printf '%s\n' --add-scram "$mech=[name=$user,password=${SECURE_PASSWORDS[$user]}]"
        done
    done
}

# sasl_listener_properties LISTENER MECHANISMS REAUTH_MS: the JAAS configuration (one per
# listener and mechanism: the broker has no listener-independent one) and the re-auth limit.
sasl_listener_properties() {
    local l="${1,,}" mechanisms="$2" reauth_ms="$3" user plain_users=""
    for user in "${SECURE_USERS[@]}"; do
        plain_users+=" user_$user=\"${SECURE_PASSWORDS[$user]}\""
    done
    echo "listener.name.$l.sasl.enabled.mechanisms=$mechanisms"
    echo "listener.name.$l.connections.max.reauth.ms=$reauth_ms"
    local mech
    for mech in ${mechanisms//,/ }; do
        case "$mech" in
        PLAIN)
            echo "listener.name.$l.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required$plain_users;"
            ;;
        SCRAM-SHA-*)
            echo "listener.name.$l.${mech,,}.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ;;
        OAUTHBEARER)
            # No sasl.server.callback.handler.class: the broker then validates with
            # OAuthBearerUnsecuredValidatorCallbackHandler (alg "none", principal = `sub`).
            # The login module's own claim is only used if the broker itself logs in.
            echo "listener.name.$l.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"broker\";"
            ;;
        esac
    done
}

# write_security_properties FILE DIR REAUTH_MS [KDC_ENV]: appended to the plain instance's
# server.properties, whose listener lines already name the secured listeners; with KDC_ENV
# (kerberos.sh), GSSAPI too.
write_security_properties() {
    local file="$1" d="$2" reauth_ms="$3" kdc_env="${4:-}"
    {
        cat <<EOT

# --- secured instance (kafka.sh start --secured) ---
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
# PLAINTEXT and CONTROLLER connections are ANONYMOUS: the inter-broker listener, the
# controller and the admin tools (topics, ACLs, kcat producers) must not need ACLs.
super.users=User:ANONYMOUS

# TLS, shared by SASL_SSL and SSL; SSL_WRONG_HOST overrides the keystore below.
ssl.keystore.type=PEM
ssl.keystore.location=$d/broker-keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$d/ca.pem
# A client certificate's subject CN=alice is principal User:alice.
ssl.principal.mapping.rules=RULE:^CN=([^,]+).*\$/\$1/,DEFAULT
listener.name.ssl.ssl.client.auth=required
listener.name.ssl_wrong_host.ssl.client.auth=none
listener.name.ssl_wrong_host.ssl.keystore.type=PEM
listener.name.ssl_wrong_host.ssl.keystore.location=$d/wrong-host-keystore.pem

EOT
        local l
        for l in SASL_SSL SASL_PLAINTEXT; do
            sasl_listener_properties "$l" "$(kerberos_mechanisms "$l" "$SECURE_SASL_MECHANISMS" "$kdc_env")" "$reauth_ms"
        done
        sasl_listener_properties SASL_PLAIN_ONLY PLAIN "$reauth_ms"
        oauth_listener_properties "$reauth_ms"
        [[ -z "$kdc_env" ]] || kerberos_properties "$kdc_env"
    } >>"$file"
}

# --- after start ----------------------------------------------------------------------------

# create_acls BOOTSTRAP: alice may consume (Read+Describe topics, Read groups) under the
# prefix; bob gets no ACL at all. Returns once the broker's authorizer lists them, so that a
# test starting right after start cannot see them missing.
create_acls() {
    local bootstrap="$1" out deadline
    # --consumer is exactly Read and Describe on the topics plus Read on the group.
    run_tool org.apache.kafka.tools.AclCommand --bootstrap-server "$bootstrap" --add \
        --allow-principal User:alice "${ACL_EXTRA_PRINCIPALS[@]/#/--allow-principal=}" --consumer \
        --topic "$SECURE_ACL_PREFIX" --group "$SECURE_ACL_PREFIX" --resource-pattern-type prefixed \
        >/dev/null || return 1
    deadline=$((SECONDS + 30))
    while :; do
        out="$(run_tool org.apache.kafka.tools.AclCommand --bootstrap-server "$bootstrap" --list \
            --principal User:alice)" || return 1
        if [[ "$(grep -c 'principal=User:alice' <<<"$out")" == 3 ]]; then
            return 0
        fi
        ((SECONDS < deadline)) || { log "ACLs not listed after 30s: $out"; return 1; }
        sleep 0.5
    done
}

# write_secure_env FILE DIR REAUTH_MS KDC_ENV LISTENER=PORT...: the file tests read (see
# kafka.sh); KDC_ENV may be empty (no Kerberos).
write_secure_env() {
    local file="$1" d="$2" reauth_ms="$3" kdc_env="$4" entry
    shift 4
    {
        for entry in "$@"; do
            echo "${entry%%=*}=127.0.0.1:${entry#*=}"
        done
        cat <<EOT
CA_PEM=$d/ca.pem
CA_BUNDLE_PEM=$d/ca-bundle.pem
OTHER_CA_PEM=$d/other-ca.pem
CLIENT_CERT_PEM=$d/client.pem
CLIENT_KEY_PKCS8=$d/client.key
CLIENT_KEY_PKCS1=$d/client-pkcs1.key
CLIENT_KEY_ENCRYPTED=$d/client-encrypted.key
CLIENT_KEY_PASSWORD=$SECURE_KEY_PASSWORD
CLIENT_EC_CERT_PEM=$d/client-ec.pem
CLIENT_KEY_SEC1=$d/client-ec.key
FOREIGN_CLIENT_CERT_PEM=$d/foreign-client.pem
FOREIGN_CLIENT_KEY=$d/foreign-client.key
WRONG_HOST_NAME=$SECURE_WRONG_HOST
ALICE_USER=alice
ALICE_PASSWORD=${SECURE_PASSWORDS[alice]}
BOB_USER=bob
BOB_PASSWORD=${SECURE_PASSWORDS[bob]}
SASL_MECHANISMS=$SECURE_SASL_MECHANISMS
ACL_PREFIX=$SECURE_ACL_PREFIX
REAUTH_MS=$reauth_ms
EOT
        [[ -z "$OAUTH_ENV_FILE" ]] || echo "OAUTH_ENV=$OAUTH_ENV_FILE"
        [[ -z "$kdc_env" ]] || echo "KDC_ENV=$kdc_env"
    } >"$file.tmp"
    # Renamed into place: a reader never sees half a file.
    mv "$file.tmp" "$file"
}

# --- OAuth listeners (start --secured --oauth ENVFILE) --------------------------------------

# The oauth.env of scripts/oauth.sh the broker validates tokens against; empty: no OAuth.
OAUTH_ENV_FILE=""
# Principals (besides alice) given alice's ACLs: the OAuth clients that read.
ACL_EXTRA_PRINCIPALS=()

# oauth_value KEY: a value of the OAuth server's env file.
oauth_value() {
    local value
    value="$(sed -n "s/^$1=//p" "$OAUTH_ENV_FILE")"
    [[ -n "$value" ]] || die "$OAUTH_ENV_FILE has no $1 (not written by scripts/oauth.sh start?)"
    echo "$value"
}

# use_oauth ENVFILE: adds the OAuth listener, validated against the server of ENVFILE.
use_oauth() {
    [[ -f "$1" ]] || die "--oauth $1: no such file (the oauth.env of scripts/oauth.sh start)"
    OAUTH_ENV_FILE="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
    SECURE_LISTENERS+=(SASL_OAUTH:SASL_SSL)
    ACL_EXTRA_PRINCIPALS=("User:$(oauth_value CLIENT_ID)" "User:$(oauth_value LONG_CLIENT_ID)")
}

# JVM options of the broker: Kafka fetches only URLs this property allows (JWKS here).
oauth_jvm_options() {
    [[ -n "$OAUTH_ENV_FILE" ]] || return 0
    echo "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=$(oauth_value JWKS_URL),$(oauth_value TOKEN_URL)"
}

# The OAuth listener: OAUTHBEARER only, each token's signature checked against the server's
# JWKS (fetched over HTTPS trusting its CA, given as JAAS ssl.* options), its issuer and its
# audience AUDIENCE. The validator class is named: Kafka 4.1's default (DefaultJwtValidator)
# was found to accept a token whose signature is wrong. The broker's own login (which it does
# although it never uses the token) takes the unsecured token of the JAAS `sub`.
oauth_listener_properties() {
    local reauth_ms="$1" l=sasl_oauth
    [[ -n "$OAUTH_ENV_FILE" ]] || return 0
    cat <<EOT

# --- OAuth listener (kafka.sh start --secured --oauth $OAUTH_ENV_FILE) ---
listener.name.$l.sasl.enabled.mechanisms=OAUTHBEARER
listener.name.$l.connections.max.reauth.ms=$reauth_ms
listener.name.$l.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler
listener.name.$l.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker" ssl.truststore.type="PEM" ssl.truststore.location="$(oauth_value CA_PEM)";
listener.name.$l.sasl.oauthbearer.jwt.validator.class=org.apache.kafka.common.security.oauthbearer.BrokerJwtValidator
listener.name.$l.sasl.oauthbearer.jwks.endpoint.url=$(oauth_value JWKS_URL)
listener.name.$l.sasl.oauthbearer.expected.issuer=$(oauth_value ISSUER)
listener.name.$l.sasl.oauthbearer.expected.audience=$(oauth_value AUDIENCE)
EOT
}
