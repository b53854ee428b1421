#!/usr/bin/env bash
# Runs every test with the local AWS servers (scripts/aws-services.sh), the
# OpenID Connect provider of the sign-in tests (scripts/oidc-provider.sh) and a
# local Kubernetes control plane (scripts/kube-cluster.sh) started for the
# run and stopped after it. As root, the run happens in a private network
# namespace: DynamoDB Local, which listens on every interface, is then
# reachable from nothing but the tests, and the tests cannot reach the
# network. The first run builds Kubernetes (6–13 minutes, then cached in
# .cache/k8s).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/aws-services.sh install
scripts/kube-cluster.sh install
scripts/oidc-provider.sh install
pkgs=${PKGS:-./...}
ACS_AWS_RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/acs-aws-run.XXXXXX")
export ACS_AWS_RUN_DIR
ACS_KUBE_RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/acs-kube-run.XXXXXX")
export ACS_KUBE_RUN_DIR
run='set -euo pipefail
ip link set lo up 2>/dev/null || true
trap "scripts/oidc-provider.sh stop || true; scripts/kube-cluster.sh stop || true; scripts/aws-services.sh stop" EXIT
# env=$(...) rather than eval "$(...)", so that a failed start stops the run.
env=$(scripts/aws-services.sh start); eval "$env"
env=$(scripts/kube-cluster.sh start); eval "$env"
env=$(scripts/oidc-provider.sh start); eval "$env"
export ACS_REQUIRE_CHROMIUM=1 # scripts/setup.sh installs chromium: browser tests fail rather than skip without it
# TESTFLAGS is split into words as xargs splits: quotes group (-run "A B"),
# and | needs none (-run TestA|TestB).
mapfile -t flags < <(printf "%s" "${TESTFLAGS:-}" | xargs -r printf "%s\n")
go test -race -count=1 -timeout 25m "${flags[@]+"${flags[@]}"}" '"$pkgs"
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
  GOPROXY=off exec unshare -n bash -c "$run"
fi
echo "test: no private network namespace (it needs root): DynamoDB Local listens on every interface during the run" >&2
exec bash -c "$run"
