# ensure_commands cmd:package ... installs (with apt-get, once) the Debian
# package of every command that is not on PATH. Sourced by the scripts.
ensure_commands() {
  local missing=() pair cmd pkg
  for pair in "$@"; do
    cmd=${pair%%:*}; pkg=${pair#*:}
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing ${missing[*]}" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq "${missing[@]}"
  else sudo apt-get update -qq && sudo apt-get install -y -qq "${missing[@]}"; fi
}
