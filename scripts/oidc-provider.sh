#!/usr/bin/env bash
# The OpenID Connect provider of the browser sign-in tests: the npm package
# oidc-provider@9.13.3 (on Node), run by scripts/oidc-provider.mjs.
#
#   scripts/oidc-provider.sh install   fetch it into .cache/oidc (idempotent)
#   scripts/oidc-provider.sh start     start it on 127.0.0.1; prints the
#                                      variable the tests read (eval it)
#   scripts/oidc-provider.sh stop      stop what start started
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$root/.cache/oidc
run=${ACS_OIDC_RUN_DIR:-${ACS_AWS_RUN_DIR:-$dir/run}}
port=${ACS_OIDC_PORT:-18020}

install() {
  if [ ! -f "$dir/node_modules/oidc-provider/package.json" ] ||
     ! grep -q '"version": "9.13.3"' "$dir/node_modules/oidc-provider/package.json"; then
    echo "oidc-provider: installing oidc-provider@9.13.3" >&2
    mkdir -p "$dir"
    (cd "$dir" && npm install --silent --no-audit --no-fund oidc-provider@9.13.3 >/dev/null)
  fi
}

start() {
  install
  mkdir -p "$run"
  # Node resolves oidc-provider from the script's directory: run a copy
  # next to the installed package.
  cp "$root/scripts/oidc-provider.mjs" "$dir/oidc-provider.mjs"
  (cd "$dir" && exec node oidc-provider.mjs "$port" >"$run/oidc-provider.log" 2>&1) &
  echo $! > "$run/oidc-provider.pid"
  local i
  for i in $(seq 1 300); do
    if curl -s -o /dev/null "http://127.0.0.1:$port/.well-known/openid-configuration" 2>/dev/null; then
      echo "export ACS_TEST_OIDC_ISSUER=http://127.0.0.1:$port"
      return 0
    fi
    sleep 0.1
  done
  echo "oidc-provider: did not answer at http://127.0.0.1:$port (log: $run/oidc-provider.log)" >&2
  cat "$run/oidc-provider.log" >&2 || true
  return 1
}

stop() {
  local f=$run/oidc-provider.pid
  if [ -f "$f" ]; then
    kill "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  fi
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 install|start|stop" >&2; exit 2 ;;
esac
