#!/usr/bin/env bash
# Prepares the storage servers of the test bed in the cache (HMS_PROXY_CACHE, default <repo>/.cache), once:
#   storage/hdfs.<hash>/     hmsbed-hdfs.jar (testbed/java/hdfs: Hadoop's mini cluster launcher) and lib/ (its jars)
#   storage/s3proxy.<hash>/  lib/: s3proxy 2.6.0 and its dependencies
#   storage/hivefs.<hash>/   lib/: what a Hive 3.1.3 metastore needs for s3a:// (hadoop-aws, the AWS SDK bundle)
#   storage/icebergspark.<hash>/ lib/: Iceberg's Spark 3.5 runtime (Spark's Iceberg REST client and HadoopFileIO)
#   storage/<name>           symlink to the current build (a rebuild never pulls jars from under a running server)
# Everything comes from Maven Central. Usage: prepare-storage.sh [NAME...] (default all four). Safe to run
# concurrently (file lock); testbed/hdfs.go and testbed/s3.go run it on first use.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${HMS_PROXY_CACHE:-$REPO/.cache}
mkdir -p "$CACHE/logs" "$CACHE/storage"
CACHE=$(cd "$CACHE" && pwd)
NAMES=("$@")
[ ${#NAMES[@]} -gt 0 ] || NAMES=(hdfs s3proxy hivefs icebergspark)

say() { echo "prepare-storage: $*"; }
die() { echo "prepare-storage: ERROR: $*" >&2; exit 1; }
if [ -n "${JAVA_HOME:-}" ]; then export PATH="$JAVA_HOME/bin:$PATH"; fi
for c in java mvn flock sha256sum; do
  command -v "$c" >/dev/null 2>&1 || die "'$c' is not installed (make test installs testbed/apt-packages.txt)"
done

exec 9>"$CACHE/storage/.lock"
flock -w 1800 9 || die "another prepare-storage.sh holds $CACHE/storage/.lock for more than 30 minutes"

build() { # build NAME
  local name=$1 pom="testbed/java/$1" hash
  [ -f "$REPO/$pom/pom.xml" ] || die "unknown storage server '$name' (no $pom/pom.xml)"
  hash=$(cd "$REPO" && { cat "$pom/pom.xml" testbed/bin/prepare-storage.sh;
                          find "$pom" -type f -name '*.java' | sort | xargs -r cat; } | sha256sum | cut -c1-16)
  local out="$CACHE/storage/$name.$hash"
  if [ -f "$out/ready" ] && [ "$(readlink "$CACHE/storage/$name" 2>/dev/null)" = "$name.$hash" ]; then
    say "$name: ready (cached in $out)"
    return 0
  fi
  local t0=$SECONDS log="$CACHE/logs/mvn-storage-$name.log"
  rm -rf "$out"
  say "$name: resolving jars from Maven Central (log: $log)"
  if ! (cd "$REPO/$pom" && mvn -B -e -U -Dmaven.repo.local="$CACHE/m2" -Dhmsbed.out="$out" -Dhmsbed.lib="$out/lib" \
          package) >"$log" 2>&1; then
    grep -E "Could not (find|resolve|transfer)|ERROR" "$log" | head -15 >&2 || true
    die "$name: Maven failed (log: $log)"
  fi
  [ -n "$(ls -A "$out/lib" 2>/dev/null)" ] || die "$name: Maven copied no jars to $out/lib (log: $log)"
  touch "$out/ready"
  ln -sfn "$name.$hash" "$CACHE/storage/$name.new"
  mv -T "$CACHE/storage/$name.new" "$CACHE/storage/$name"
  find "$CACHE/storage" -maxdepth 1 -name "$name.*" ! -name "$name.$hash" -mmin +120 -exec rm -rf {} +
  say "$name: ready in $((SECONDS - t0)) s ($(ls "$out/lib" | wc -l) jars)"
}

for n in "${NAMES[@]}"; do build "$n"; done
