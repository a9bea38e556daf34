#!/usr/bin/env bash
# make test (and .ci/run): on a fresh machine, install what the real-Hive test bed needs, prepare it (Maven
# resolution, driver build, Derby schema templates, all cached), then vet and test every package.
# Runs unattended: no stdin, root or passwordless sudo for the package installs.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
CACHE=${HMS_PROXY_CACHE:-$REPO/.cache}
mkdir -p "$CACHE/logs"

declare -a PHASES=()
phase_start=$SECONDS
phase_done() { PHASES+=("$(printf '%-10s %5ds' "$1" $((SECONDS - phase_start)))"); phase_start=$SECONDS; }
summary() {
  echo "---- make test timing ----"
  printf '  %s\n' "${PHASES[@]}"
  printf '  %-10s %5ds\n' total "$SECONDS"
  # The slowest packages (they run two at a time on two cores: their sum over two is about the test phase) and the
  # slowest tests, from the per-test times the run recorded (docs/testbed.md#where-the-time-goes).
  if [ -s "$CACHE/logs/go-test-report.txt" ]; then
    cat "$CACHE/logs/go-test-report.txt"
  fi
}
trap 'status=$?; summary; exit $status' EXIT

# --- Debian packages ---------------------------------------------------------------------------------------------
mapfile -t PACKAGES < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^[[:space:]]*$/d' testbed/apt-packages.txt)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "test: installing missing Debian packages: ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  else
    echo "test: ERROR: packages missing and no root: run" >&2
    echo "    sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  # Installing must not start services (kadmind, for one, fails its postinst without a realm): tests start their
  # own. policy-rc.d tells invoke-rc.d to leave services alone; only ours is removed afterwards.
  policy_created=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee /usr/sbin/policy-rc.d >/dev/null
    "${SUDO[@]}" chmod 755 /usr/sbin/policy-rc.d
    policy_created=1
  fi
  install_ok=1
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q || install_ok=
  if [ -n "$install_ok" ]; then
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
      || install_ok=
  fi
  [ -z "$policy_created" ] || "${SUDO[@]}" rm -f /usr/sbin/policy-rc.d
  if [ -z "$install_ok" ]; then
    echo "test: ERROR: apt-get could not install: ${missing[*]}" >&2
    exit 1
  fi
fi
phase_done packages

# --- tools the packages do not cover -----------------------------------------------------------------------------
if ! command -v go >/dev/null 2>&1; then
  echo "test: ERROR: 'go' not found; install Go $(sed -n 's/^go //p' go.mod) or newer (https://go.dev/dl/) and put it on PATH" >&2
  exit 1
fi
# Hive runs on the Debian JDK 17; prefer it when the default java is another release.
if [ -z "${JAVA_HOME:-}" ]; then
  for d in /usr/lib/jvm/java-17-openjdk-*; do
    if [ -x "$d/bin/java" ]; then export JAVA_HOME=$d; break; fi
  done
fi
[ -z "${JAVA_HOME:-}" ] || export PATH="$JAVA_HOME/bin:$PATH"

# --- the real-Hive test bed ----------------------------------------------------------------------------------------
bash testbed/bin/prepare.sh
# the Java Ranger engine, the oracle of security/ranger (ranger-plugins-common 2.5.0 from Maven Central)
bash testbed/bin/prepare-ranger.sh
# the Iceberg REST tests' clients and services: Iceberg's compatibility kit, Keycloak, Trino, Spark's Iceberg runtime,
# PyIceberg and PySpark (all from Maven Central and PyPI, cached)
go run ./testbed/cmd/hmsbed prepare-rest
phase_done prepare

# --- Go ----------------------------------------------------------------------------------------------------------
# vet and test both run even if the first fails: one CI run reports everything
status=0
if ! go vet ./...; then
  echo "test: go vet reported problems (above)" >&2
  status=1
fi
phase_done vet
# The packages, longest first: go test starts the test binaries in the order given, two at a time (-p defaults to the
# cores), so the long e2e packages start side by side at once instead of last (./... is alphabetical: e2e/storage, the
# longest, would start after some twenty others and run alone at the end). The order comes from the last run's
# per-package times when the cache has them, else from LONG_POLES; packages neither knows follow alphabetically.
LONG_POLES="e2e/storage e2e/rest e2e/routing e2e/clients e2e/kerberos e2e/compat e2e/policy restcatalog fileio"
MODULE=$(go list -m)
TIMES="$CACHE/logs/go-test-times.tsv"
mapfile -t ORDERED < <(
  {
    if [ -s "$TIMES" ]; then
      awk -F'\t' '$4 == "-" { print $1 "\t" $3 }' "$TIMES" | sort -rn | cut -f2
    fi
    for p in $LONG_POLES; do echo "$MODULE/$p"; done
    go list ./...
  } | awk '!seen[$0]++' | grep -Fxf <(go list ./...)
)
# -json is for the per-test times; testtimes prints the plain output go test shows without it, and keeps the raw
# stream, the times and the report under $CACHE/logs.
[ ${#ORDERED[@]} -gt 0 ] || ORDERED=(./...) # go list failed: go test says why
rm -f "$CACHE/logs/go-test-report.txt"
go build -o "$CACHE/logs/.testtimes" ./testbed/cmd/testtimes
# -timeout is a hang guard per test binary, not a speed target: on an overloaded machine (a burner and other
# engineers' metastores beside the suite, load average 26) e2e/clients and e2e/storage needed more than 25 minutes
# while making progress; CI allows 90 minutes for the whole run.
if ! go test -json -count=1 -timeout 40m "${ORDERED[@]}" 2>&1 | "$CACHE/logs/.testtimes" \
    -log "$CACHE/logs/go-test.log" -json "$CACHE/logs/go-test.json" -times "$TIMES.new" \
    -report "$CACHE/logs/go-test-report.txt"; then
  status=1
fi
[ ! -s "$TIMES.new" ] || mv "$TIMES.new" "$TIMES" # an interrupted run keeps the last whole one
phase_done test
exit $status
