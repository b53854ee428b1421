#!/usr/bin/env bash
# gofmt (must print nothing) and go vet.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*'))
if [ -n "$bad" ]; then
  echo "gofmt would change:" >&2
  echo "$bad" >&2
  exit 1
fi
go vet ./...
echo "lint: ok"
