#!/usr/bin/env bash
# The headline benchmarks. Each figure comes from `go test -bench`; run this
# on an otherwise idle machine and compare medians (benchstat) across runs.
# Each run's output is kept in $BENCH_OUT (default: a temporary directory,
# removed at exit); at the end, internal/benchtable prints one summary table:
# each headline figure's median, its goal, and its ratio to this machine's
# floors (internal/floor) measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${BENCH_COUNT:-3}
if [ -n "${BENCH_OUT:-}" ]; then
  out=$BENCH_OUT
  mkdir -p "$out"
  rm -f "$out"/[0-9][0-9].txt
else
  out=$(mktemp -d "${TMPDIR:-/tmp}/acs-bench.XXXXXX")
fi
runs=0
# summary prints the table at exit, also when a benchmark failed (its
# figures then read "not run"), and keeps the exit status.
summary() {
  status=$?
  if [ "$runs" -gt 0 ]; then
    echo
    echo "== summary"
    go run ./internal/benchtable/cmd "$out"/[0-9][0-9].txt || status=1
  fi
  if [ -z "${BENCH_OUT:-}" ]; then
    rm -rf "$out"
  fi
  exit "$status"
}
trap summary EXIT
# bench runs `go test` with its arguments and keeps a copy of its output.
bench() {
  runs=$((runs + 1))
  go test "$@" | tee "$out/$(printf %02d "$runs").txt"
}

echo "== floors of this machine: spawn a small Go HTTP server to its first 200, append and fsync 1 KiB (internal/floor)"
bench ./internal/floor -run '^$' -count "$count" -bench 'BenchmarkSpawnToFirst200|BenchmarkFsync1KiB' -benchtime 200x

echo "== event log: durable append, search, open and reopen to the first search on a 100k-event log (sandbox/eventlog)"
bench ./sandbox/eventlog -run '^$' -count "$count" \
  -bench 'BenchmarkAppend$|BenchmarkAppendParallel|BenchmarkAppendOn100k|BenchmarkSearch100k|BenchmarkOpen100k|BenchmarkReopenFirstSearch100k' -benchtime 1s

echo "== body search, first page, 3 matches, on 1k, 10k and 100k events: flat means bounded (sandbox/eventlog, shared/boltstore)"
bench ./sandbox/eventlog -run '^$' -count "$count" -bench 'BenchmarkSearchBody' -benchtime 200x
bench ./shared/boltstore -run '^$' -count "$count" -bench 'BenchmarkSearchEventsBody' -benchtime 200x

echo "== start-to-READY, with the time of each step: a new local sandbox (warm pool, and without), a running one reused, and one with a clone (cmd/acs)"
bench ./cmd/acs -run '^$' -count "$count" -bench 'BenchmarkStartToReady' -benchtime 20x

echo "== terminal round trip for echo (sandbox/tools/terminal)"
bench ./sandbox/tools/terminal -run '^$' -count "$count" -bench 'BenchmarkEchoRoundTrip' -benchtime 500x

echo "== agent loop overhead per step, excluding the LLM (sandbox/agent)"
bench ./sandbox/agent -run '^$' -count "$count" -bench 'BenchmarkLoopOverheadPerStep' -benchtime 300x

echo "== agent server RSS, idle and with 20 conversations (cmd/acs)"
bench ./cmd/acs -run '^$' -count "$count" -bench 'BenchmarkAgentServerRSS' -benchtime 1x

echo "== WebSocket fan-out: 10k events to 10 subscribers (sandbox/agentserver)"
bench ./sandbox/agentserver -run '^$' -count "$count" -bench 'BenchmarkSocketFanout' -benchtime 3x

echo "== webhook delivery latency after a durable append (sandbox/webhook)"
bench ./sandbox/webhook -run '^$' -count "$count" -bench 'BenchmarkDeliveryLatency' -benchtime 200x

echo "== conversation start-up cost of each extension: create + first message (sandbox/agentserver)"
bench ./sandbox/agentserver -run '^$' -count "$count" -bench 'BenchmarkConversationStartup' -benchtime 20x

echo "== browser: Chromium cold start to first navigation, and a warm navigation (sandbox/tools/browser)"
bench ./sandbox/tools/browser -run '^$' -count "$count" -bench 'BenchmarkFirstAction|BenchmarkNavigate' -benchtime 5x

echo "== secret masking throughput (sandbox/secrets)"
bench ./sandbox/secrets -run '^$' -count "$count" -bench 'BenchmarkMask' -benchtime 1s

echo "== V1 reads at 10k conversations: GET 100 by ids, search page, title search, count (shared/api)"
bench ./shared/api -run '^$' -count "$count" -bench 'BenchmarkV1At10k' -benchtime 2s

echo "== event ingestion through the webhook, batches of 50 (shared/api)"
bench ./shared/api -run '^$' -count "$count" -bench 'BenchmarkWebhookIngestion' -benchtime 2s

echo "== strict JSON parse of objects with many keys, ns/key (events/strictjson): flat means linear"
bench ./events/strictjson -run '^$' -count "$count" -bench 'BenchmarkParseManyKeys' -benchtime 1s

echo "== Kubernetes: create to RUNNING, warm-pool hit and no pool (shared/kubesandbox, local kwok cluster)"
scripts/kube-cluster.sh install
ACS_KUBE_RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/acs-kube-bench.XXXXXX")
export ACS_KUBE_RUN_DIR
(
  trap 'scripts/kube-cluster.sh stop >/dev/null 2>&1 || true' EXIT
  env=$(scripts/kube-cluster.sh start); eval "$env"
  bench ./shared/kubesandbox -run '^$' -count "$count" -bench 'BenchmarkCreateToRunning' -benchtime 10x
)
