#!/usr/bin/env bash
# make demo-ha: the scale-out set-up operators run. Two real Hive 3.1.3 metastores (testbed/cmd/hmsbed), one real
# ZooKeeper, three hms-proxy replicas (the real binary, each its own configuration, ports and process) behind HAProxy
# in TCP mode on 127.0.0.1:9083, health-checked on each replica's /readyz (testbed/cmd/hmscluster). The replicas share
# ZooKeeper for synthetic locks and database cache epochs. Prints the endpoints and what to try (kill a replica,
# reload one); Ctrl-C or SIGTERM stops everything.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
CACHE=${HMS_PROXY_CACHE:-$REPO/.cache}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
export HMS_PROXY_CACHE=$CACHE
DEMO=$CACHE/demo-ha
PORT=${HMS_PROXY_DEMO_HA_PORT:-9083}
rm -rf "$DEMO"
mkdir -p "$DEMO/logs"

if [ -z "${JAVA_HOME:-}" ]; then
  for d in /usr/lib/jvm/java-17-openjdk-*; do
    if [ -x "$d/bin/java" ]; then export JAVA_HOME=$d; break; fi
  done
fi
[ -z "${JAVA_HOME:-}" ] || export PATH="$JAVA_HOME/bin:$PATH"
command -v go >/dev/null 2>&1 || { echo "demo-ha: ERROR: 'go' not found on PATH" >&2; exit 1; }

# what the test bed needs (HAProxy and ZooKeeper included), as make test installs it
missing=$(sed -e 's/#.*//' testbed/apt-packages.txt | awk 'NF{print $1}' | while read -r p; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"; done)
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "demo-ha: installing $(echo $missing)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  else
    echo "demo-ha: ERROR: missing Debian packages: $(echo $missing) (sudo apt-get install them)" >&2
    exit 1
  fi
fi

bash testbed/bin/prepare.sh
go build -o "$DEMO/hmsbed" ./testbed/cmd/hmsbed
go build -o "$DEMO/hmscluster" ./testbed/cmd/hmscluster
go build -o "$DEMO/hms-proxy" ./cmd/hms-proxy

BED_PID= CLUSTER_PID=
stop_all() {
  trap - INT TERM EXIT
  echo
  echo "demo-ha: stopping"
  for pid in "$CLUSTER_PID" "$BED_PID"; do
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  echo "demo-ha: stopped"
}
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM
trap 'stop_all' EXIT

wait_for() { # FILE LINE PID WHAT LOG
  for _ in $(seq 1 600); do
    grep -qx "$2" "$1" && return 0
    if ! kill -0 "$3" 2>/dev/null; then
      echo "demo-ha: ERROR: $4 did not start:" >&2; tail -40 "$5" >&2; exit 1
    fi
    sleep 0.5
  done
  echo "demo-ha: ERROR: $4 not ready after 300 s" >&2; tail -40 "$5" >&2; exit 1
}

ENVFILE=$DEMO/metastores.env
: >"$ENVFILE"
"$DEMO/hmsbed" start --hive 3.1.3 --hive 3.1.3 --print-env >"$ENVFILE" 2>"$DEMO/logs/hmsbed.log" &
BED_PID=$!
echo "demo-ha: starting two Hive 3.1.3 metastores..."
wait_for "$ENVFILE" HMS_READY=1 "$BED_PID" "the metastores" "$DEMO/logs/hmsbed.log"
# shellcheck disable=SC1090
source "$ENVFILE"

CLUSTERENV=$DEMO/cluster.env
: >"$CLUSTERENV"
"$DEMO/hmscluster" --binary "$DEMO/hms-proxy" --dir "$DEMO/cluster" --replicas 3 --port "$PORT" --print-env \
  --catalog "catalog1=$HMS_1_URI" --catalog "catalog2=$HMS_2_URI" >"$CLUSTERENV" 2>"$DEMO/logs/hmscluster.log" &
CLUSTER_PID=$!
echo "demo-ha: starting ZooKeeper, three hms-proxy replicas and HAProxy..."
wait_for "$CLUSTERENV" CLUSTER_READY=1 "$CLUSTER_PID" "the cluster" "$DEMO/logs/hmscluster.log"
# shellcheck disable=SC1090
source "$CLUSTERENV"

cat <<INFO

Metastores:  catalog1 $HMS_1_URI   catalog2 $HMS_2_URI
ZooKeeper:   $CLUSTER_ZOOKEEPER  (synthetic locks, database cache epochs)
HAProxy:     $CLUSTER_URI   (config $CLUSTER_HAPROXY_CONFIG)
Replicas:
  r1  $CLUSTER_R1_URI  management $CLUSTER_R1_MGMT  pid $CLUSTER_R1_PID  config $CLUSTER_R1_CONF
  r2  $CLUSTER_R2_URI  management $CLUSTER_R2_MGMT  pid $CLUSTER_R2_PID  config $CLUSTER_R2_CONF
  r3  $CLUSTER_R3_URI  management $CLUSTER_R3_MGMT  pid $CLUSTER_R3_PID  config $CLUSTER_R3_CONF
  (logs next to each config: proxy.log, audit.log)

Try it (in another terminal, from $REPO):
  $DEMO/hmsbed run --client 3.1.3 --uri $CLUSTER_URI ddl --db catalog2__demo_sales
  python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect("$CLUSTER_HAPROXY_SOCKET"); s.sendall(b"show stat\\n"); print(s.makefile().read())' | cut -d, -f1,2,18,37
  kill -KILL $CLUSTER_R2_PID     # HAProxy takes r2 out within ~1 s (/readyz checks every 500 ms, 2 failures)
  curl -s -XPOST $CLUSTER_R1_MGMT/reload    # re-read r1's config (also: kill -HUP $CLUSTER_R1_PID)

Ctrl-C stops everything.
INFO

while kill -0 "$BED_PID" 2>/dev/null && kill -0 "$CLUSTER_PID" 2>/dev/null; do
  sleep 1
done
echo "demo-ha: ERROR: a component exited on its own (see $DEMO/logs/)" >&2
exit 1
