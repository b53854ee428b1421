#!/usr/bin/env bash
# Runs the AWS CDK CLI, pinned (aws-cdk@2.1148.1, installed from npm into
# .cache/cdk on first use), on the app of cdk.json (go run ./infra):
#
#   scripts/cdk.sh install              install the CLI (idempotent)
#   scripts/cdk.sh synth [cdk args]     build the functions (make lambdas),
#                                       synthesize every stack into cdk.out;
#                                       offline, no AWS account needed
#   scripts/cdk.sh deploy [cdk args]    build the functions, deploy every
#                                       stack (AWS credentials, a bootstrapped
#                                       account: cdk bootstrap)
#   scripts/cdk.sh destroy [cdk args]   delete every stack (the table, bucket
#                                       and secret key are retained)
#   scripts/cdk.sh <other> [args]       any other cdk command
#
# Context goes in cdk args or cdk.json: -c runtimeApiUrl=… (infra/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
version=2.1148.1
dir=.cache/cdk/$version
cdk=$dir/node_modules/.bin/cdk

install() {
  if [ ! -x "$cdk" ]; then
    . scripts/lib/apt.sh
    ensure_commands node:nodejs npm:npm
    echo "cdk: installing aws-cdk@$version" >&2
    mkdir -p "$dir"
    (cd "$dir" && npm install --silent --no-audit --no-fund "aws-cdk@$version" >/dev/null)
  fi
}

# Offline and quiet: no notices, version checks or telemetry.
export CDK_DISABLE_VERSION_CHECK=true CDK_DISABLE_CLI_TELEMETRY=true
# jsii warns loudly about Node versions past their end of life (Debian's
# Node is 20); the app runs on any Node the CLI accepts (>= 18).
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=18,20
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION=1 JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1

cmd=${1:-}
[ -n "$cmd" ] || { echo "usage: $0 install|synth|deploy|destroy|<cdk command> [args]" >&2; exit 2; }
shift
install
case "$cmd" in
  install) ;;
  synth)
    scripts/build-lambdas.sh >/dev/null
    exec "$cdk" synth --quiet --no-notices "$@" ;;
  deploy)
    scripts/build-lambdas.sh >/dev/null
    exec "$cdk" deploy --all --no-notices "$@" ;;
  destroy)
    exec "$cdk" destroy --all --no-notices "$@" ;;
  *)
    exec "$cdk" "$cmd" --no-notices "$@" ;;
esac
