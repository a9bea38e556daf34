#!/usr/bin/env bash
# make bench: side-by-side benchmark of direct Hive Metastore access vs hms-proxy.
#
# Builds the binaries (hms-proxy, the instant backend load fixture, the TCP forwarder and the hms-bench
# driver), runs the Go micro-benchmark of one proxied call, then `hms-bench run`, which starts two real
# Hive 3.1.3 metastores through the test bed and measures everything in one interleaved run.
# Results: bench/results/{results.json,results.md,latency.svg,gobench.txt,profiles/}.
#
# Environment:
#   BENCH_BUDGET   time budget of `hms-bench run` (default 11m, counted from the start: it includes waiting
#                  for the test bed's lock)
#   BENCH_QUICK=1  a short smoke run (fewer, shorter rounds)
#   BENCH_NO_PEER=1  leave out the peers: Waggle Dance 3.13.3 (otherwise its jar is fetched once into
#                  $HMS_PROXY_CACHE/m2 with Maven and its loopback bind shim is built with gcc; when either is
#                  not obtainable the run goes on without it and says why in its notes) and the Java HMS Proxy
#   BENCH_JAVA_PROXY_JAR  the Java HMS Proxy's runnable fat jar, built by the operator outside this repository
#                  (this repository never builds it); unset, the run goes on without that peer and says so
#   BENCH_REPLICAS_BUDGET  time budget of the scale-out phase (`hms-bench replicas`, default 3m): HAProxy over
#                  1, 2 and 3 replicas; BENCH_NO_REPLICAS=1 leaves it out
#   BENCH_RANGER_BUDGET  time budget of the Ranger phase (`hms-bench ranger`, default 3m): 100 users through
#                  hms-proxy with Ranger and the shared caches, with Ranger and no cache, and direct;
#                  results ranger.json and ranger.md; BENCH_NO_RANGER=1 leaves it out
#   HMS_PROXY_CACHE  cache root (default <repo>/.cache); binaries and scratch files go to $CACHE/bench
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
GO=${GO:-go}
CACHE=${HMS_PROXY_CACHE:-$REPO/.cache}
BIN=$CACHE/bench/bin
WORK=$CACHE/bench/work
OUT=$REPO/bench/results
mkdir -p "$BIN" "$OUT/profiles"
rm -rf "$WORK" && mkdir -p "$WORK"

# The metastore JVMs of the benchmark: a production-like JIT (C1+C2), a heap large enough that 64
# concurrent get_partitions of 1,000 partitions do not thrash, and the serial collector (2 cores).
export HMS_PROXY_METASTORE_JVM_OPTS=${HMS_PROXY_METASTORE_JVM_OPTS:--Xms512m -Xmx2g -XX:+UseSerialGC -XX:-UsePerfData}
export HMS_PROXY_CACHE=$CACHE

echo "== build"
for c in hms-proxy hms-instant tcpfwd hms-bench; do
  "$GO" build -o "$BIN/$c" "./cmd/$c"
done

echo "== go micro-benchmark: one proxied call, allocations per call, strict vs lax reading (bench/proxybench)"
{
  "$GO" test -run '^$' -bench 'GetTable' -benchmem -benchtime 3000x -timeout 120s ./bench/proxybench/
  "$GO" test -run '^$' -bench 'GetPartitions' -benchmem -benchtime 100x -timeout 120s ./bench/proxybench/
  "$GO" test -run '^$' -bench 'StrictReading' -benchmem -benchtime 20000x -timeout 120s ./bench/proxybench/
} | tee "$WORK/gobench.txt"
grep '^Benchmark' "$WORK/gobench.txt" > "$OUT/gobench.txt" || true

ARGS=(run -out "$OUT" -work "$WORK" -bin "$BIN" -budget "${BENCH_BUDGET:-11m}" -gobench "$WORK/gobench.txt")
if [ "${BENCH_QUICK:-}" = 1 ]; then ARGS+=(-quick); fi
if [ "${BENCH_NO_PEER:-}" = 1 ]; then ARGS+=(-no-peer); fi
ARGS+=(-java-proxy-jar "${BENCH_JAVA_PROXY_JAR:-}")
echo "== hms-bench ${ARGS[*]}"
"$BIN/hms-bench" "${ARGS[@]}"

if [ "${BENCH_NO_REPLICAS:-}" != 1 ]; then
  RARGS=(replicas -out "$OUT" -work "$WORK" -bin "$BIN" -budget "${BENCH_REPLICAS_BUDGET:-3m}" -commit "$(git rev-parse --short HEAD 2>/dev/null || true)")
  if [ "${BENCH_QUICK:-}" = 1 ]; then RARGS+=(-quick); fi
  echo "== hms-bench ${RARGS[*]}"
  "$BIN/hms-bench" "${RARGS[@]}"
fi

if [ "${BENCH_NO_RANGER:-}" != 1 ]; then
  GARGS=(ranger -out "$OUT" -work "$WORK" -bin "$BIN" -budget "${BENCH_RANGER_BUDGET:-3m}" -commit "$(git rev-parse --short HEAD 2>/dev/null || true)")
  if [ "${BENCH_QUICK:-}" = 1 ]; then GARGS+=(-quick); fi
  echo "== hms-bench ${GARGS[*]}"
  "$BIN/hms-bench" "${GARGS[@]}"
fi
