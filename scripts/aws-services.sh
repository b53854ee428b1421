#!/usr/bin/env bash
# Local servers that speak the AWS protocols the AWS adapters use, for tests:
#   DynamoDB Local 1.25.1 (the jar inside the npm package
#   amplify-dynamodb-simulator@2.9.30; needs Java) and fauxqs 1.9.2 (SQS, on
#   Node). S3 is gofakes3, in the test process.
#
#   scripts/aws-services.sh install   fetch them into .cache/aws (idempotent)
#   scripts/aws-services.sh start     start both on 127.0.0.1; prints the
#                                     variables the tests read (eval it)
#   scripts/aws-services.sh stop      stop what start started
#
# DynamoDB Local cannot bind to loopback only (it listens on all
# interfaces): scripts/test.sh runs it, with the tests, in a private network
# namespace when it can.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$root/.cache/aws
# run holds pid files and logs; concurrent runs (each in its own network
# namespace) use their own.
run=${ACS_AWS_RUN_DIR:-$dir/run}
ddb_port=${ACS_DDB_PORT:-18001}
sqs_port=${ACS_SQS_PORT:-18013}

install() {
  mkdir -p "$dir"
  if [ ! -f "$dir/dynamodb/DynamoDBLocal.jar" ]; then
    echo "aws-services: fetching DynamoDB Local (amplify-dynamodb-simulator@2.9.30)" >&2
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent amplify-dynamodb-simulator@2.9.30 >/dev/null && tar xzf amplify-dynamodb-simulator-2.9.30.tgz package/emulator)
    rm -rf "$dir/dynamodb"
    mv "$tmp/package/emulator" "$dir/dynamodb"
    rm -rf "$tmp"
  fi
  if [ ! -f "$dir/fauxqs/node_modules/fauxqs/dist/cli.js" ]; then
    echo "aws-services: installing fauxqs@1.9.2" >&2
    mkdir -p "$dir/fauxqs"
    (cd "$dir/fauxqs" && npm install --silent --no-audit --no-fund fauxqs@1.9.2 >/dev/null)
  fi
  # fauxqs hard-codes 0.0.0.0: this preload makes every server it starts
  # listen on 127.0.0.1 only.
  cat > "$dir/force-loopback.cjs" <<'JS'
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (args[0] && typeof args[0] === "object") {
    args[0] = { ...args[0], host: "127.0.0.1" };
  } else if (typeof args[0] === "number") {
    const cb = typeof args[args.length - 1] === "function" ? args.pop() : undefined;
    args = [args[0], "127.0.0.1", ...(cb ? [cb] : [])];
  }
  return listen.apply(this, args);
};
JS
}

wait_http() { # url, what, seconds
  local i
  for i in $(seq 1 $(( $3 * 10 ))); do
    if curl -s -o /dev/null "$1" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "aws-services: $2 did not answer at $1" >&2
  return 1
}

start() {
  install
  mkdir -p "$run"
  (cd "$dir/dynamodb" && exec java -Xmx512m -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
      -inMemory -sharedDb -disableTelemetry -port "$ddb_port" >"$run/dynamodb.log" 2>&1) &
  echo $! > "$run/dynamodb.pid"
  (cd "$dir/fauxqs" && FAUXQS_PORT=$sqs_port exec node --require "$dir/force-loopback.cjs" node_modules/fauxqs/dist/cli.js \
      >"$run/fauxqs.log" 2>&1) &
  echo $! > "$run/fauxqs.pid"
  wait_http "http://127.0.0.1:$sqs_port/health" fauxqs 30
  wait_http "http://127.0.0.1:$ddb_port/" "DynamoDB Local" 60
  echo "export ACS_TEST_DYNAMODB_ENDPOINT=http://127.0.0.1:$ddb_port"
  echo "export ACS_TEST_SQS_ENDPOINT=http://127.0.0.1:$sqs_port"
}

stop() {
  local f
  for f in "$run"/*.pid; do
    [ -f "$f" ] || continue
    kill "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 install|start|stop" >&2; exit 2 ;;
esac
