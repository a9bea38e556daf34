#!/usr/bin/env bash
# Prepares the real-Hive test bed in the cache (HMS_PROXY_CACHE, default <repo>/.cache), once:
#   m2/               Maven's local repository (everything comes from Maven Central)
#   lib/<version>/    runtime jars of the metastore and of the client (mvn dependency:copy-dependencies)
#   build/<version>/  hmsbed-driver.jar (the scenario driver compiled against that Hive) and the unpacked schema scripts
#   home/<version>/   METASTORE_HOME for Hive's schema tool (scripts/metastore/upgrade/derby)
#   derby/<version>/  metastore_db: a Derby database initialised by Hive's own schema tool, copied for every metastore
#   ready/<version>   marker: hash of everything the above is built from; matching marker = nothing to do
#   ready/<version>.<hash>.done   that build is complete: published again, never rebuilt, when checkouts sharing the
#                     cache take turns (their driver sources differ)
# Each <kind>/<version> is a symlink to <kind>/<version>.<hash>: a rebuild never pulls files from under a running
# JVM (other builds are removed two hours after a prepare last used them; each prepare touches its own).
# Usage: prepare.sh [VERSION...]   (default: 3.1.3 4.1.0). Safe to run concurrently (file lock).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${HMS_PROXY_CACHE:-$REPO/.cache}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(3.1.3 4.1.0)

say() { echo "prepare: $*"; }
die() { echo "prepare: ERROR: $*" >&2; exit 1; }

# --- tools -------------------------------------------------------------------------------------------------------
if [ -n "${JAVA_HOME:-}" ]; then export PATH="$JAVA_HOME/bin:$PATH"; fi
need() { # need COMMAND DEBIAN-PACKAGE
  command -v "$1" >/dev/null 2>&1 && return 0
  echo "prepare: ERROR: '$1' is not installed. Install it with:" >&2
  echo "    sudo apt-get update && sudo apt-get install -y $2" >&2
  echo "  (make test installs everything listed in testbed/apt-packages.txt by itself)" >&2
  exit 3
}
need java openjdk-17-jdk-headless
need javac openjdk-17-jdk-headless
need mvn maven
need flock util-linux
need sha256sum coreutils
java_major=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
case "$java_major" in
  1.*|9|1[0-6]) die "java $java_major is too old: Hive 4.1.0 needs Java 17 (sudo apt-get install -y openjdk-17-jdk-headless)";;
esac
if ! getent hosts "$(hostname)" >/dev/null 2>&1; then
  say "WARNING: this machine's hostname '$(hostname)' does not resolve; Hive's transaction handler needs it (add it to /etc/hosts)"
fi

mkdir -p "$CACHE/logs" "$CACHE/ready"
exec 9>"$CACHE/prepare.lock"
if ! flock -w 1800 9; then die "another prepare.sh holds $CACHE/prepare.lock for more than 30 minutes"; fi

# --- helpers -----------------------------------------------------------------------------------------------------
jvm_flags() { grep -v -e '^\s*#' -e '^\s*$' "$REPO/testbed/jvm/$1.flags"; }

# explain a Maven failure: which artifact, what cause (from the build log)
maven_failed() { # maven_failed VERSION POM LOG
  echo "prepare: ERROR: Maven could not build the Hive $1 test bed ($2)." >&2
  local causes
  causes=$(grep -E "Could not (find|resolve|transfer) artifact|Failed to read artifact descriptor|Could not resolve dependencies|Non-resolvable|Failed to collect dependencies|Unknown host|Connection (refused|timed out)|COMPILATION ERROR|\.java:\[[0-9]+" "$3" \
    | sed -e 's/^\[ERROR\] *//' | grep -v -E '^(Caused by:|org\.apache\.maven\.|at )' | sort -u | head -15 || true)
  if [ -n "$causes" ]; then
    echo "prepare: cause (artifact and reason as Maven reports them):" >&2
    echo "$causes" | sed 's/^/    /' >&2
  else
    grep -E '^\[ERROR\]' "$3" | head -15 | sed 's/^/    /' >&2 || true
  fi
  echo "prepare: full Maven log: $3" >&2
  exit 1
}

schema_tool() { # schema_tool VERSION LIB HOME DERBY CLASS ARGS...
  local v=$1 lib=$2 home=$3 derby=$4 cls=$5; shift 5
  local -a flags
  mapfile -t flags < <(jvm_flags "$v")
  METASTORE_HOME="$home" java -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "${flags[@]}" \
    -Dderby.stream.error.file="$CACHE/logs/derby-schematool-$v.log" \
    -cp "$lib/*" "$cls" -dbType derby \
    -url "jdbc:derby:;databaseName=$derby/metastore_db;create=true" \
    -driver org.apache.derby.jdbc.EmbeddedDriver -userName APP -passWord mine "$@"
}

# publish KIND VERSION TAG: point KIND/VERSION at KIND/TAG with an atomic rename, so processes that are starting
# metastores from the previous build never see a half-built or deleted folder
publish() {
  local kind=$1 v=$2 tag=$3
  if [ -e "$CACHE/$kind/$v" ] && [ ! -L "$CACHE/$kind/$v" ]; then
    rm -rf "${CACHE:?}/$kind/$v" # a plain folder from an older layout
  fi
  ln -sfn "$tag" "$CACHE/$kind/$v.new"
  mv -T "$CACHE/$kind/$v.new" "$CACHE/$kind/$v"
  touch "$CACHE/$kind/$tag"
  # other builds: kept two hours after a prepare last used them (touch_build), for the processes still using them
  find "$CACHE/$kind" -maxdepth 1 -name "$v.*" ! -name "$tag" -mmin +120 -exec rm -rf {} +
}

# forget_removed VERSION: drop the completion marks of builds publish's clean-up removed
forget_removed() {
  local f t
  for f in "$CACHE/ready/$1".*.done; do
    [ -e "$f" ] || continue
    t=${f##*/}
    [ -d "$CACHE/lib/${t%.done}" ] || rm -f "$f"
  done
}

# touch_build TAG: this build was used now (the age publish's clean-up goes by)
touch_build() {
  local kind
  for kind in lib build home derby; do
    [ ! -d "$CACHE/$kind/$1" ] || touch "$CACHE/$kind/$1"
  done
}

prepare_version() {
  local v=$1 pom schema_class expect_schema
  case "$v" in
    3.1.3) pom=testbed/java/hive3; schema_class=org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool; expect_schema=3.1.0;;
    4.1.0) pom=testbed/java/hive4; schema_class=org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool; expect_schema=4.1.0;;
    *) die "unknown Hive version '$v' (known: 3.1.3 4.1.0)";;
  esac
  local hash
  hash=$(cd "$REPO" && { cat "$pom/pom.xml" testbed/bin/prepare.sh testbed/sql/*.sql;
                          find testbed/java/driver -type f -name '*.java' | sort | xargs cat; } | sha256sum | cut -c1-16)
  local marker="$CACHE/ready/$v" tag="$v.$hash"
  local out="$CACHE/build/$tag" lib="$CACHE/lib/$tag" home="$CACHE/home/$tag" derby="$CACHE/derby/$tag"
  local complete="$CACHE/ready/$tag.done"
  if [ -f "$marker" ] && [ "$(cat "$marker")" = "$hash" ] && [ -f "$CACHE/build/$v/hmsbed-driver.jar" ] \
     && [ -d "$CACHE/derby/$v/metastore_db" ] && [ -n "$(ls -A "$CACHE/lib/$v/" 2>/dev/null)" ]; then
    touch_build "$tag"
    say "Hive $v: ready (cached in $CACHE)"
    echo "prepare: tag $v $tag" # testbed.Prepare pins this build for its process
    return 0
  fi
  # This build is complete, but another checkout (other driver sources) published its own since: publish this one
  # again. Rebuilding it would first delete the folders that running JVMs of this checkout still load classes
  # from (a HiveServer2 then fails its next statement with NoSuchFileException on a jar).
  if [ -f "$complete" ] && [ -f "$out/hmsbed-driver.jar" ] && [ -d "$derby/metastore_db" ] \
     && [ -n "$(ls -A "$lib/" 2>/dev/null)" ]; then
    for kind in lib build home derby; do publish "$kind" "$v" "$tag"; done
    echo "$hash" >"$marker.new" && mv -f "$marker.new" "$marker"
    forget_removed "$v"
    say "Hive $v: ready (build $tag published again)"
    echo "prepare: tag $v $tag" # testbed.Prepare pins this build for its process
    return 0
  fi
  local t0=$SECONDS
  rm -f "$complete"
  rm -rf "$out" "$lib" "$home" "$derby"
  mkdir -p "$CACHE/build" "$CACHE/lib" "$CACHE/home" "$CACHE/derby"

  say "Hive $v: resolving jars from Maven Central and building the driver (log: $CACHE/logs/mvn-$v.log)"
  # -U: re-ask Maven Central about artifacts an earlier (e.g. offline) run failed to find, instead of trusting
  # the cached failure for a day
  if ! (cd "$REPO/$pom" && mvn -B -e -U -Dmaven.repo.local="$CACHE/m2" -Dhmsbed.out="$out" -Dhmsbed.lib="$lib" \
          package) >"$CACHE/logs/mvn-$v.log" 2>&1; then
    maven_failed "$v" "$pom/pom.xml" "$CACHE/logs/mvn-$v.log"
  fi
  [ -f "$out/hmsbed-driver.jar" ] || die "Hive $v: Maven succeeded but built no driver jar (see $CACHE/logs/mvn-$v.log)"
  if [ "$v" = 4.1.0 ] && [ -z "$(ls -A "$out/hs2" 2>/dev/null)" ]; then
    die "Hive $v: Maven succeeded but copied no HiveServer2 jars to $out/hs2 (see $CACHE/logs/mvn-$v.log)"
  fi

  # METASTORE_HOME for the schema tool: the Derby scripts from the published bin tarball
  local scripts
  scripts=$(find "$out/scripts" -type d -path '*/scripts/metastore/upgrade/derby' | head -1)
  [ -n "$scripts" ] || die "Hive $v: no scripts/metastore/upgrade/derby in the unpacked bin tarball ($out/scripts)"
  mkdir -p "$home/scripts/metastore/upgrade"
  cp -r "$scripts" "$home/scripts/metastore/upgrade/derby"

  say "Hive $v: creating the Derby schema with Hive's schema tool (log: $CACHE/logs/schematool-$v.log)"
  mkdir -p "$derby"
  : >"$CACHE/logs/schematool-$v.log"
  if [ "$v" = 4.1.0 ]; then
    # Only the 4.0.1 bin tarball (schema 4.0.0) is published: initialise 4.0.0 with the 4.1.0 tool, then let the
    # tool apply the 4.0.0 -> 4.1.0 change (testbed/sql/upgrade-4.0.0-to-4.1.0.derby.sql).
    cp "$REPO/testbed/sql/upgrade-4.0.0-to-4.1.0.derby.sql" "$home/scripts/metastore/upgrade/derby/"
    grep -qx '4.0.0-to-4.1.0' "$home/scripts/metastore/upgrade/derby/upgrade.order.derby" \
      || echo '4.0.0-to-4.1.0' >>"$home/scripts/metastore/upgrade/derby/upgrade.order.derby"
    schema_tool "$v" "$lib" "$home" "$derby" "$schema_class" -initSchemaTo 4.0.0 >>"$CACHE/logs/schematool-$v.log" 2>&1 \
      && schema_tool "$v" "$lib" "$home" "$derby" "$schema_class" -upgradeSchemaFrom 4.0.0 >>"$CACHE/logs/schematool-$v.log" 2>&1 \
      || { tail -40 "$CACHE/logs/schematool-$v.log" >&2; die "Hive $v: schema tool failed (log: $CACHE/logs/schematool-$v.log)"; }
  else
    schema_tool "$v" "$lib" "$home" "$derby" "$schema_class" -initSchema >>"$CACHE/logs/schematool-$v.log" 2>&1 \
      || { tail -40 "$CACHE/logs/schematool-$v.log" >&2; die "Hive $v: schema tool failed (log: $CACHE/logs/schematool-$v.log)"; }
  fi
  local info
  info=$(schema_tool "$v" "$lib" "$home" "$derby" "$schema_class" -info 2>&1 | tee -a "$CACHE/logs/schematool-$v.log" \
    | sed -n 's/^Metastore schema version:[[:space:]]*//p')
  [ "$info" = "$expect_schema" ] || die "Hive $v: schema tool reports schema version '$info', expected $expect_schema (log: $CACHE/logs/schematool-$v.log)"

  for kind in lib build home derby; do publish "$kind" "$v" "$tag"; done
  : >"$complete"
  echo "$hash" >"$marker.new" && mv -f "$marker.new" "$marker"
  forget_removed "$v"
  say "Hive $v: ready in $((SECONDS - t0)) s ($(ls "$lib" | wc -l) jars, schema $info)"
  echo "prepare: tag $v $tag" # testbed.Prepare pins this build for its process
}

for v in "${VERSIONS[@]}"; do
  prepare_version "$v"
done
