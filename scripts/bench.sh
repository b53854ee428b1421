#!/usr/bin/env bash
# The headline benchmarks. Each figure comes from `go test -bench`; run this
# on an otherwise idle machine and compare medians (benchstat) across runs.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${BENCH_COUNT:-3}

echo "== event log: durable append, and search on a 100k-event log (sandbox/eventlog)"
go test ./sandbox/eventlog -run '^$' -count "$count" \
  -bench 'BenchmarkAppend$|BenchmarkAppendParallel|BenchmarkAppendOn100k|BenchmarkSearch100k|BenchmarkOpen100k' -benchtime 1s

echo "== start-to-READY of a new local sandbox (cmd/acs)"
go test ./cmd/acs -run '^$' -count "$count" -bench 'BenchmarkStartToReady' -benchtime 20x

echo "== terminal round trip for echo (sandbox/tools/terminal)"
go test ./sandbox/tools/terminal -run '^$' -count "$count" -bench 'BenchmarkEchoRoundTrip' -benchtime 500x
