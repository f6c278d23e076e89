#!/usr/bin/env bash
# What the AWS MSK IAM tests (crates/client/tests/msk_iam.rs) check krec against, since no broker
# outside AWS validates MSK IAM: AWS's own Python signer and botocore in a venv, and AWS's
# EC2 instance metadata mock (IMDSv2) built once from the Go module proxy.
#
#   aws.sh fetch           create the venv and build the mock (cached; idempotent)
#   aws.sh python          the venv's python3 (aws-msk-iam-sasl-signer-python, botocore)
#   aws.sh metadata-mock   the path of the ec2-metadata-mock binary
#
# KREC_AWS_HOME (default target/aws) holds the venv; KREC_EC2_METADATA_MOCK_HOME (default
# ~/.cache/krec/ec2-metadata-mock-VERSION) the mock, named after its version so a bump rebuilds.
set -euo pipefail

EC2_METADATA_MOCK_VERSION=v1.13.0
# botocore pinned too: the signer leaves it open, and the golden tests compare byte for byte.
PYTHON_PACKAGES=(aws-msk-iam-sasl-signer-python==1.0.2 boto3==1.44.8 botocore==1.44.8)
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AWS_HOME="${KREC_AWS_HOME:-$REPO_ROOT/target/aws}"
VENV="$AWS_HOME/venv"
MOCK_HOME="${KREC_EC2_METADATA_MOCK_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/krec/ec2-metadata-mock-$EC2_METADATA_MOCK_VERSION}"
MOCK_BIN="$MOCK_HOME/ec2-metadata-mock"

log() { echo "aws.sh: $*" >&2; }

fetch() {
    local stamp="$VENV/krec-packages"
    if [[ ! -x "$VENV/bin/python3" ]] || [[ "$(cat "$stamp" 2>/dev/null)" != "${PYTHON_PACKAGES[*]}" ]]; then
        log "creating the Python venv with ${PYTHON_PACKAGES[*]}"
        rm -rf "$VENV"
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install -q "${PYTHON_PACKAGES[@]}" >&2
        echo "${PYTHON_PACKAGES[*]}" >"$stamp"
    fi
    if [[ ! -x "$MOCK_BIN" ]]; then
        command -v go >/dev/null || { log "go not found: Go is needed once to build ec2-metadata-mock"; exit 1; }
        log "building ec2-metadata-mock $EC2_METADATA_MOCK_VERSION into $MOCK_HOME"
        local tmp="$MOCK_HOME.tmp.$$"
        rm -rf "$tmp"
        mkdir -p "$tmp"
        # A fresh directory renamed into place: an interrupted build never looks complete.
        GOBIN="$tmp" go install "github.com/aws/amazon-ec2-metadata-mock/cmd/ec2-metadata-mock@$EC2_METADATA_MOCK_VERSION"
        rm -rf "$MOCK_HOME"
        mv "$tmp" "$MOCK_HOME"
    fi
}

case "${1:-}" in
    fetch) fetch ;;
    python) echo "$VENV/bin/python3" ;;
    metadata-mock) echo "$MOCK_BIN" ;;
    *) echo "usage: aws.sh fetch|python|metadata-mock" >&2; exit 2 ;;
esac
