#!/usr/bin/env bash
# Installs (idempotently) what the tests need and checks the toolchain.
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_go="1.26"
have_go=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
if [ -z "$have_go" ]; then
  echo "setup: Go $need_go or newer is required (https://go.dev/dl/)" >&2
  exit 1
fi
if [ "$(printf '%s\n%s\n' "$need_go" "$have_go" | sort -V | head -1)" != "$need_go" ]; then
  echo "setup: Go $need_go or newer is required, found $have_go" >&2
  exit 1
fi

# Debian packages the tests use: java, node and npm run the local AWS
# servers; ip and unshare give the test run its private network namespace;
# openssl makes the local Kubernetes cluster's service-account keys.
. scripts/lib/apt.sh
ensure_commands bash:bash git:git rg:ripgrep chromium:chromium curl:curl java:openjdk-17-jre-headless \
  node:nodejs npm:npm ip:iproute2 unshare:util-linux openssl:openssl

# Module downloads (pinned in go.mod) are cached after the first run; the
# tests run offline.
go mod download
# The local AWS servers (DynamoDB Local, fauxqs).
scripts/aws-services.sh install
echo "setup: ok (go $have_go)"
