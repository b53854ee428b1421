#!/usr/bin/env bash
# A real local Kubernetes control plane for tests, no Docker, no kubelet:
# etcd 3.6.8, kube-apiserver, kube-controller-manager and kube-scheduler
# v1.36.3 (built from the tools/k8s module) and kwok v0.8.0, which plays the
# kubelet of one fake node (pods on it become Running with a podIP).
#
#   scripts/kube-cluster.sh install   build the binaries into .cache/k8s
#                                     (only the missing ones; idempotent)
#   scripts/kube-cluster.sh start     start the cluster on 127.0.0.1, wait
#                                     until it is ready; prints the variables
#                                     the tests read (eval it)
#   scripts/kube-cluster.sh stop      stop what start started, wait for exit
#                                     (keeps the logs, drops the etcd data)
#
# The first install compiles Kubernetes: 9 to 13 minutes and 2.1 GB of memory
# on 2 cores with a cold Go build cache; after that, start takes seconds.
# Everything listens on 127.0.0.1 only. The admin credential is a bearer
# token (group system:masters) in $run/kubeconfig; kubectl is not needed.
#
# Environment: ACS_KUBE_RUN_DIR (pid files, logs, data; wiped by start),
# ACS_KUBE_ETCD_PORT, ACS_KUBE_ETCD_PEER_PORT, ACS_KUBE_APISERVER_PORT,
# ACS_KUBE_KCM_PORT, ACS_KUBE_SCHEDULER_PORT, ACS_KUBE_KWOK_PORT,
# ACS_KUBE_NODE_NAME.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
k8s_version=v1.36.3
kwok_version=v0.8.0
tools=$root/tools/k8s
cache=$root/.cache/k8s/$k8s_version
bin=$cache/bin
stages=$cache/kwok-stages.yaml
# run holds pid files, logs and the cluster's data; concurrent runs (each in
# its own network namespace) use their own.
run=${ACS_KUBE_RUN_DIR:-$root/.cache/k8s/run}
etcd_port=${ACS_KUBE_ETCD_PORT:-23790}
etcd_peer_port=${ACS_KUBE_ETCD_PEER_PORT:-23800}
api_port=${ACS_KUBE_APISERVER_PORT:-16443}
kcm_port=${ACS_KUBE_KCM_PORT:-16457}
sched_port=${ACS_KUBE_SCHEDULER_PORT:-16459}
kwok_port=${ACS_KUBE_KWOK_PORT:-10247}
node=${ACS_KUBE_NODE_NAME:-kwok-node-0}
toleration=kwok.x-k8s.io/node=fake:NoSchedule
# Components in start order; stop goes the other way.
components=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

log() { echo "kube-cluster: $*" >&2; }
now() { echo "${EPOCHREALTIME/,/.}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# Go commands for the tools module: no workspace, and flags of our own so
# that the caller's GOFLAGS (-mod=vendor, -mod=mod, ...) do not matter.
# go.sum is complete, so -mod=readonly is enough.
tools_go() { (cd "$tools" && GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false" go "$@"); }

installed() {
  local b
  for b in "${components[@]}"; do [ -x "$bin/$b" ] || return 1; done
  [ -s "$stages" ]
}

install() {
  installed && return 0
  mkdir -p "$bin"
  # Builds go to a temporary directory and are renamed into bin/ when
  # complete: an interrupted build never leaves a broken binary. Directories
  # left by killed runs are removed a day later (not at once: another
  # install may be running).
  find "$cache" -maxdepth 1 -name 'tmp.*' -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
  tmp=$(mktemp -d "$cache/tmp.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  local total t0 ldflags
  total=$(now)
  t0=$(now)
  log "downloading the tools/k8s modules"
  tools_go mod download
  log "modules ready in $(since "$t0") s"
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version"
  ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"
  ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
  build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$ldflags"
  build etcd go.etcd.io/etcd/server/v3 "-s -w"
  build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$ldflags"
  build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$ldflags"
  if [ ! -x "$bin/kwok" ]; then
    t0=$(now)
    log "building kwok $kwok_version (go install)"
    # go install pkg@version ignores the current module; run it outside.
    (cd / && GOWORK=off GOFLAGS=-buildvcs=false GOBIN="$tmp" \
      go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$kwok_version")
    mv -f "$tmp/kwok" "$bin/kwok"
    log "kwok built in $(since "$t0") s"
  fi
  if [ ! -s "$stages" ]; then
    # kwok exits with "no stages found" without these; they are part of the
    # kwok module (downloaded by the go install above).
    local src f
    src=$(GOWORK=off go env GOMODCACHE)/sigs.k8s.io/kwok@$kwok_version/kustomize/stage
    if [ ! -d "$src" ]; then
      (cd / && GOWORK=off GOFLAGS= go mod download "sigs.k8s.io/kwok@$kwok_version")
    fi
    for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
        pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
      [ "$f" = node/fast/node-initialize.yaml ] || echo "---"
      cat "$src/$f"
    done > "$tmp/stages.yaml"
    mv -f "$tmp/stages.yaml" "$stages"
  fi
  log "installed in $(since "$total") s: $bin"
}

build() { # name, package, ldflags
  [ -x "$bin/$1" ] && return 0
  local t0
  t0=$(now)
  log "building $1"
  tools_go build -ldflags "$3" -o "$tmp/$1" "$2"
  mv -f "$tmp/$1" "$bin/$1"
  log "$1 built in $(since "$t0") s"
}

# running pid: the process exists and is not a zombie.
running() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# ours pid: running, and one of our binaries (or this script just before it
# execs one): a stale pid file must not make stop signal someone else.
ours() {
  running "$1" || return 1
  case $(readlink "/proc/$1/exe" 2>/dev/null) in "$bin"/*) return 0 ;; esac
  tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -q 'kube-cluster\.sh'
}

launch() { # name, args...
  local name=$1
  shift
  (cd "$run" && exec "$bin/$name" "$@" </dev/null >"$run/$name.log" 2>&1) &
  echo $! > "$run/$name.pid"
}

fail() { # message, component whose log explains it
  log "$1"
  if [ -n "${2:-}" ] && [ -f "$run/$2.log" ]; then
    log "last lines of $run/$2.log:"
    tail -n 40 "$run/$2.log" >&2
  fi
  stop
  exit 1
}

# wait_for what component seconds command...: runs the command every 0.1 s
# until it succeeds; fails early when the component has exited.
wait_for() {
  local what=$1 name=$2 deadline
  deadline=$(( SECONDS + $3 ))
  shift 3
  until "$@"; do
    running "$(cat "$run/$name.pid")" || fail "$name exited while waiting for $what" "$name"
    [ "$SECONDS" -lt "$deadline" ] || fail "timed out waiting for $what" "$name"
    sleep 0.1
  done
}

api() { # curl args for the apiserver: method path [data]
  local method=$1 path=$2
  shift 2
  curl -sS --fail --max-time 10 --cacert "$run/certs/apiserver.crt" \
    -H "Authorization: Bearer $token" -H "Content-Type: application/json" \
    -A kube-cluster.sh -X "$method" "https://127.0.0.1:$api_port$path" "$@"
}

etcd_healthy() { curl -s --max-time 2 "http://127.0.0.1:$etcd_port/health" 2>/dev/null | grep -q '"health":"true"'; }
api_ready() { [ -s "$run/certs/apiserver.crt" ] && [ "$(api GET /readyz 2>/dev/null)" = ok ]; }
healthz() { [ "$(curl -sk --max-time 2 "https://127.0.0.1:$1/healthz" 2>/dev/null)" = ok ]; }
# Ready, and the node lifecycle controller has removed the not-ready taint,
# so that the scheduler places pods on it.
node_ready() {
  local n
  n=$(api GET "/api/v1/nodes/$node" 2>/dev/null | tr -d ' \n') || return 1
  [[ $n == *'"type":"Ready","status":"True"'* && $n != *'"key":"node.kubernetes.io/not-ready"'* ]]
}
default_sa() { api GET /api/v1/namespaces/default/serviceaccounts/default >/dev/null 2>&1; }
port_used() { (: <>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
  local t0 p
  t0=$(now)
  installed || install
  case $run in "" | / | "$root" | "$HOME") log "refusing to use $run as run directory"; exit 1 ;; esac
  [ -d "$run" ] && stop
  for p in "$etcd_port" "$etcd_peer_port" "$api_port" "$kcm_port" "$sched_port" "$kwok_port"; do
    if port_used "$p"; then log "127.0.0.1:$p is in use (another cluster? scripts/kube-cluster.sh stop)"; exit 1; fi
  done
  rm -rf "$run"
  mkdir -p "$run/certs"
  token=$(openssl rand -hex 24)
  echo "$token,acs-admin,acs-admin,\"system:masters\"" > "$run/tokens.csv"
  openssl genrsa -out "$run/sa.key" 2048 2>/dev/null
  openssl rsa -in "$run/sa.key" -pubout -out "$run/sa.pub" 2>/dev/null
  chmod 600 "$run/tokens.csv" "$run/sa.key"
  cat > "$run/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: acs-test
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority: $run/certs/apiserver.crt
users:
- name: acs-admin
  user:
    token: $token
contexts:
- name: acs-test
  context:
    cluster: acs-test
    user: acs-admin
    namespace: default
current-context: acs-test
EOF
  chmod 600 "$run/kubeconfig"

  launch etcd --name default --data-dir "$run/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "default=http://127.0.0.1:$etcd_peer_port" --unsafe-no-fsync
  wait_for "etcd /health" etcd 30 etcd_healthy

  # --endpoint-reconciler-type=none: otherwise it repeats an error about the
  # loopback address of the kubernetes Endpoints. The serving certificate is
  # self-signed into certs/; certs/apiserver.crt is the CA for clients.
  launch kube-apiserver --etcd-servers="http://127.0.0.1:$etcd_port" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" \
    --cert-dir="$run/certs" --token-auth-file="$run/tokens.csv" --authorization-mode=RBAC \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$run/sa.pub" --service-account-signing-key-file="$run/sa.key" \
    --service-cluster-ip-range=10.96.0.0/16 --endpoint-reconciler-type=none --allow-privileged=true
  wait_for "kube-apiserver /readyz" kube-apiserver 60 api_ready

  # nodelifecycle stays enabled: it removes the not-ready taint of the node.
  launch kube-controller-manager --kubeconfig="$run/kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$kcm_port" --cert-dir="$run/kcm-certs" --leader-elect=false \
    --service-account-private-key-file="$run/sa.key" --root-ca-file="$run/certs/apiserver.crt" \
    --controllers='*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route'
  launch kube-scheduler --kubeconfig="$run/kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$sched_port" --cert-dir="$run/scheduler-certs" --leader-elect=false
  launch kwok --kubeconfig="$run/kubeconfig" -c "$stages" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-ip=10.0.0.1 --cidr=10.244.0.0/16 --server-address="127.0.0.1:$kwok_port"

  api POST /api/v1/nodes -o /dev/null -d @- <<EOF || fail "could not create node $node" kube-apiserver
{"apiVersion": "v1", "kind": "Node",
 "metadata": {"name": "$node",
   "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
   "labels": {"type": "kwok", "kubernetes.io/hostname": "$node", "kubernetes.io/os": "linux",
     "kubernetes.io/arch": "amd64", "kubernetes.io/role": "agent", "node-role.kubernetes.io/agent": ""}},
 "spec": {"taints": [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]},
 "status": {
   "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
   "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
   "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "fake"}}}
EOF
  wait_for "kube-scheduler /healthz" kube-scheduler 60 healthz "$sched_port"
  wait_for "kube-controller-manager /healthz" kube-controller-manager 60 healthz "$kcm_port"
  wait_for "node $node to be Ready (kwok) and untainted (kube-controller-manager)" kwok 60 node_ready
  wait_for "the default ServiceAccount (kube-controller-manager)" kube-controller-manager 60 default_sa
  log "ready in $(since "$t0") s (logs in $run)"
  echo "export ACS_TEST_KUBECONFIG=$run/kubeconfig"
  echo "export ACS_TEST_KUBE_NODE_TOLERATION=$toleration"
}

stop() {
  # Controllers and kwok first, then the apiserver, then etcd.
  stop_some kwok kube-scheduler kube-controller-manager
  stop_some kube-apiserver
  stop_some etcd
  # The etcd data (about 60 MB of preallocated WAL) is of no use once etcd
  # is gone; the logs stay.
  rm -rf "$run/etcd"
}

stop_some() { # names...: SIGTERM, up to 20 s to exit, then SIGKILL
  local name pid pids=() left i
  for name in "$@"; do
    [ -f "$run/$name.pid" ] || continue
    pid=$(cat "$run/$name.pid")
    if ours "$pid" && kill "$pid" 2>/dev/null; then pids+=("$pid"); fi
    rm -f "$run/$name.pid"
  done
  for i in $(seq 1 200); do
    left=()
    for pid in "${pids[@]}"; do
      if running "$pid"; then left+=("$pid"); fi
    done
    pids=("${left[@]}")
    [ ${#pids[@]} -gt 0 ] || return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do
    log "pid $pid did not exit in 20 s, killing it"
    kill -9 "$pid" 2>/dev/null || true
  done
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 install|start|stop" >&2; exit 2 ;;
esac
