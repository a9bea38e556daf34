#!/usr/bin/env bash
# Prepares the Apache Ranger oracle in the cache (HMS_PROXY_CACHE, default <repo>/.cache), once:
#   m2/                         Maven's local repository (ranger-plugins-common 2.5.0 and what it needs, from Maven Central)
#   build/ranger-2.5.0/         ranger-oracle.jar (testbed/java/ranger) and lib/ with its runtime jars
#   ready/ranger-2.5.0          marker: hash of what the above is built from; a matching marker = nothing to do
# build/ranger-2.5.0 is a symlink to build/ranger-2.5.0.<hash>, replaced atomically. Shares prepare.sh's file lock.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${HMS_PROXY_CACHE:-$REPO/.cache}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
V=ranger-2.5.0

say() { echo "prepare-ranger: $*"; }
die() { echo "prepare-ranger: ERROR: $*" >&2; exit 1; }
if [ -n "${JAVA_HOME:-}" ]; then export PATH="$JAVA_HOME/bin:$PATH"; fi
for c in java mvn flock sha256sum; do
  command -v "$c" >/dev/null 2>&1 || die "'$c' is not installed (make test installs testbed/apt-packages.txt)"
done

mkdir -p "$CACHE/logs" "$CACHE/ready" "$CACHE/build"
exec 9>"$CACHE/prepare.lock"
flock -w 1800 9 || die "another prepare holds $CACHE/prepare.lock for more than 30 minutes"

hash=$(cd "$REPO" && { cat testbed/java/ranger/pom.xml testbed/bin/prepare-ranger.sh;
                        find testbed/java/ranger/src -type f -name '*.java' | sort | xargs cat; } | sha256sum | cut -c1-16)
marker="$CACHE/ready/$V"
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$hash" ] && [ -f "$CACHE/build/$V/ranger-oracle.jar" ] \
   && [ -n "$(ls -A "$CACHE/build/$V/lib" 2>/dev/null)" ]; then
  say "ready (cached in $CACHE/build/$V)"
  exit 0
fi
tag="$V.$hash"
out="$CACHE/build/$tag"
rm -rf "$out"
log="$CACHE/logs/mvn-$V.log"
say "resolving ranger-plugins-common 2.5.0 from Maven Central and building the oracle (log: $log)"
if ! (cd "$REPO/testbed/java/ranger" && mvn -B -e -U -Dmaven.repo.local="$CACHE/m2" -Dhmsbed.out="$out" \
        -Dhmsbed.lib="$out/lib" package) >"$log" 2>&1; then
  grep -E "Could not (find|resolve|transfer) artifact|COMPILATION ERROR|\.java:\[[0-9]+" "$log" | sort -u | head -15 >&2 || true
  die "Maven could not build the Ranger oracle (full log: $log)"
fi
[ -f "$out/ranger-oracle.jar" ] || die "Maven succeeded but built no ranger-oracle.jar (see $log)"
ln -sfn "$tag" "$CACHE/build/$V.new"
mv -T "$CACHE/build/$V.new" "$CACHE/build/$V"
find "$CACHE/build" -maxdepth 1 -name "$V.*" ! -name "$tag" -mmin +120 -exec rm -rf {} +
echo "$hash" >"$marker.new" && mv -f "$marker.new" "$marker"
say "ready ($(ls "$out/lib" | wc -l) jars)"
