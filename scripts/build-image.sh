#!/usr/bin/env bash
# Builds the sandbox image from sandbox/Dockerfile with the repository root as
# the context, using the first container engine that works: docker (only when
# `docker info` reaches an engine), podman, buildah. Never installs one.
#
#   scripts/build-image.sh                          acs-sandbox:dev (slim)
#   ACS_IMAGE=repo/acs-sandbox:v1 scripts/build-image.sh
#   ACS_IMAGE_TARGET=browser scripts/build-image.sh  with Chromium
#   scripts/build-image.sh --platform linux/arm64    extra args go to the build
#
# Exit status 3: no working container engine.
set -euo pipefail
cd "$(dirname "$0")/.."

image=${ACS_IMAGE:-acs-sandbox:dev}
target=${ACS_IMAGE_TARGET:-}

tried=()
engine=
for cand in docker podman buildah; do
  if ! command -v "$cand" >/dev/null 2>&1; then
    tried+=("$cand (not installed)")
    continue
  fi
  case $cand in
    docker) probe=(docker info) ;;
    podman) probe=(podman info) ;;
    buildah) probe=(buildah info) ;;
  esac
  # A docker client whose engine is unreachable may wait; bound the probe.
  command -v timeout >/dev/null 2>&1 && probe=(timeout 30 "${probe[@]}")
  if "${probe[@]}" >/dev/null 2>&1; then
    engine=$cand
    break
  fi
  tried+=("$cand (installed, but \`$cand info\` failed — is the engine running?)")
done

if [ -z "$engine" ]; then
  {
    echo "build-image: no working container engine; building the image needs one."
    echo "tried:"
    printf '  %s\n' "${tried[@]}"
    echo "Install and start Docker (with BuildKit), Podman or Buildah, then rerun."
  } >&2
  exit 3
fi

args=(-f sandbox/Dockerfile -t "$image")
[ -n "$target" ] && args+=(--target "$target")
args+=("$@")

echo "build-image: $engine building $image${target:+ (target $target)}" >&2
case $engine in
  docker) DOCKER_BUILDKIT=1 docker build "${args[@]}" . ;;
  podman) podman build "${args[@]}" . ;;
  buildah) buildah build "${args[@]}" . ;;
esac
echo "build-image: built $image" >&2
