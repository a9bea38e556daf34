#!/usr/bin/env bash
# Measures the time to "all metastores ready" (2 x Hive 3.1.3 + 1 x Hive 4.1.0) from a cold cache (a new, empty
# HMS_PROXY_CACHE: everything downloaded from Maven Central, driver built, schemas created) and from the warm
# cache that run leaves behind. Numbers for docs/testbed.md#measured-time-to-all-metastores-ready-2--313--1--410.
# Usage: measure.sh [WARM-RUNS]   (default 3); the cold cache is removed at the end.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
WARM_RUNS=${1:-3}
if [ -z "${JAVA_HOME:-}" ]; then
  for d in /usr/lib/jvm/java-17-openjdk-*; do
    if [ -x "$d/bin/java" ]; then export JAVA_HOME=$d; break; fi
  done
fi
[ -z "${JAVA_HOME:-}" ] || export PATH="$JAVA_HOME/bin:$PATH"

COLD=$(mktemp -d /tmp/hmsbed-cold-cache.XXXXXX)
trap 'rm -rf "$COLD"' EXIT
BIN=$COLD/hmsbed-bin
go build -o "$BIN" ./testbed/cmd/hmsbed

now() { date +%s.%N; }
ready() { # ready LABEL: prepare + start 2x3.1.3 + 1x4.1.0, report the wall time until all answer Thrift
  local t0 t1
  t0=$(now)
  HMS_PROXY_CACHE=$COLD bash testbed/bin/prepare.sh >"$COLD/prepare-$1.log" 2>&1 \
    || { cat "$COLD/prepare-$1.log" >&2; exit 1; }
  HMS_PROXY_CACHE=$COLD "$BIN" start --hive 3.1.3 --hive 3.1.3 --hive 4.1.0 --exit-when-ready \
    2>"$COLD/start-$1.log" >/dev/null || { cat "$COLD/start-$1.log" >&2; exit 1; }
  t1=$(now)
  printf '%-6s all metastores ready after %6.1f s   (%s; %s)\n' "$1" "$(echo "$t1 - $t0" | bc)" \
    "$(grep -h 'ready in' "$COLD/prepare-$1.log" | sed 's/^prepare: //' | paste -sd ';' -)" \
    "$(sed -n 's/^hmsbed: all 3 metastores ready \(.*\) after start.*/metastores \1/p' "$COLD/start-$1.log")"
}

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg), $(java -version 2>&1 | head -1)"
ready cold
for i in $(seq 1 "$WARM_RUNS"); do ready "warm$i"; done
echo "cold cache size: $(du -sh "$COLD" | cut -f1)"
