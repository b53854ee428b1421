#!/usr/bin/env bash
# Builds every Lambda function of functions/ for provided.al2023 on arm64:
# dist/lambda/<name>/bootstrap and dist/lambda/<name>.zip (the bootstrap at
# the archive's root, executable), and prints each binary's size.
#
#   scripts/build-lambdas.sh              every function
#   scripts/build-lambdas.sh get_me ...   only these (route names or
#                                         authorizer/provisioner/reconciler)
#   GOARCH=amd64 scripts/build-lambdas.sh for x86_64 functions
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/apt.sh
ensure_commands zip:zip

arch=${GOARCH:-arm64}
out=dist/lambda
mkdir -p "$out"

# The route functions are generated from the route table (go generate
# ./functions; a test fails when they are stale).
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  names=(authorizer provisioner reconciler)
  for d in functions/routes/*/; do names+=("$(basename "$d")"); done
fi

total=0
for name in "${names[@]}"; do
  if [ -d "functions/$name" ]; then pkg="./functions/$name"
  elif [ -d "functions/routes/$name" ]; then pkg="./functions/routes/$name"
  else echo "build-lambdas: no function named $name" >&2; exit 2; fi
  dir="$out/$name"
  mkdir -p "$dir"
  CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -tags lambda.norpc -trimpath \
    -ldflags "-s -w" -o "$dir/bootstrap" "$pkg"
  chmod 755 "$dir/bootstrap"
  rm -f "$out/$name.zip"
  (cd "$dir" && zip -q -X "../$name.zip" bootstrap)
  size=$(stat -c %s "$dir/bootstrap")
  total=$((total + size))
  awk -v n="$name" -v b="$size" -v z="$(stat -c %s "$out/$name.zip")" \
    'BEGIN { printf "%-34s %6.1f MB  (zip %5.1f MB)\n", n, b / 1048576, z / 1048576 }'
done
echo "build-lambdas: ${#names[@]} functions ($arch) in $out, $((total / 1048576)) MB of binaries"
