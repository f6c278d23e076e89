#!/usr/bin/env bash
# Installs what the test suite needs and a fresh machine of this kind lacks: Debian packages
# (kcat, openssl, Debian's Python Kafka clients and codecs, Prometheus), the rustfmt and clippy
# components, and the Kafka jars. Idempotent: a second run installs nothing and takes well
# under a second (plus one `dpkg -s` per package). Java 17, Maven and Go are assumed present.
set -euo pipefail
cd "$(dirname "$0")/.."

# kcat: kafka.sh's readiness check. openssl: the certificates of `kafka.sh start --secured`.
# Debian's python3 clients and codecs: the broker tests' producers and scripts/fixtures/
# (python3-xxhash only for the magic-0 lz4 fixture). prometheus: `promtool check metrics` and a
# Prometheus server that scrapes `krec consume --metrics` in the broker tests (each test starts
# its own on a free port; the package's own service is not used). krb5-kdc, krb5-admin-server,
# krb5-user: the KDC of scripts/kdc.sh and kinit (their own services are not used);
# libkrb5-dev, clang, libclang-dev: building krec's `gssapi` feature (bindgen over gssapi.h).
# zsh, fish, groff-base, man-db: the ship tests check `krec completions` in each shell and
# render `krec man`'s pages.
APT_PACKAGES=(kcat openssl python3-kafka python3-confluent-kafka python3-lz4 python3-snappy python3-zstandard python3-xxhash prometheus
    krb5-kdc krb5-admin-server krb5-user libkrb5-dev clang libclang-dev zsh fish groff-base man-db)

log() { echo "install-deps: $*" >&2; }

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    # `dpkg -s` also succeeds for removed-but-configured packages; require "install ok installed".
    if [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" != "install ok installed" ]]; then
        missing+=("$pkg")
    fi
done
if ((${#missing[@]})); then
    log "installing Debian packages: ${missing[*]}"
    sudo=()
    ((EUID == 0)) || sudo=(sudo)
    "${sudo[@]}" apt-get update -q
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if command -v rustup >/dev/null; then
    installed="$(rustup component list --installed 2>/dev/null || true)"
    for component in rustfmt clippy; do
        if ! grep -q "^${component}-" <<<"$installed"; then
            log "installing rustup component $component"
            rustup component add "$component"
        fi
    done
else
    for tool in rustfmt cargo-clippy; do
        command -v "$tool" >/dev/null || { log "$tool missing and rustup not available"; exit 1; }
    done
fi

for tool in java mvn; do
    command -v "$tool" >/dev/null || { log "$tool not found: Java 17 and Maven must be installed"; exit 1; }
done
bash scripts/kafka.sh fetch
# MirrorMaker 2's jars (connect-mirror and its Connect runtime), the peer of scripts/bench-mirror.sh.
bash scripts/bench-mirror.sh --fetch
# Apicurio Registry (built from Maven Central) and the venv of the Confluent Python serializers,
# for the Schema Registry tests (broker_schema.rs) and scripts/bench-schema.sh.
bash scripts/registry.sh fetch
# moto's S3-compatible server (a venv), for the backup tests through object storage (scripts/s3.sh).
bash scripts/s3.sh fetch
# AWS's MSK IAM signer and botocore (a venv) and EC2 metadata mock (Go), for the MSK IAM tests.
bash scripts/aws.sh fetch

# Toxiproxy, the fault proxy of the fault tests (scripts/toxiproxy.sh), built once from the Go
# module proxy into a cache directory named after its version, so a version bump rebuilds.
TOXIPROXY_VERSION="$(sed -n 's/^TOXIPROXY_VERSION=//p' scripts/toxiproxy.sh)"
TOXIPROXY_BIN="$(bash scripts/toxiproxy.sh bin)"
if [[ ! -x "$TOXIPROXY_BIN" ]]; then
    command -v go >/dev/null || { log "go not found: Go is needed once to build Toxiproxy"; exit 1; }
    log "building Toxiproxy $TOXIPROXY_VERSION into $(dirname "$TOXIPROXY_BIN")"
    tmp="$(dirname "$TOXIPROXY_BIN").tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    # A fresh directory renamed into place: an interrupted build never looks complete.
    GOBIN="$tmp" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION"
    mv "$tmp/server" "$tmp/toxiproxy-server"
    mkdir -p "$(dirname "$(dirname "$TOXIPROXY_BIN")")"
    rm -rf "$(dirname "$TOXIPROXY_BIN")"
    mv "$tmp" "$(dirname "$TOXIPROXY_BIN")"
fi

# osodevops/kafka-backup's engine is NOT built here: its build takes minutes of the suite's
# twenty. A full scripts/bench-backup.sh run builds it once per version into a cache directory;
# `--quick` uses it only when that build is there.

# Ory Hydra, the OAuth 2 server of the OIDC tests (scripts/oauth.sh), built once from the Go
# module proxy into a cache directory named after its version, like Toxiproxy.
bash scripts/oauth.sh build
