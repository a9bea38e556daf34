#!/usr/bin/env bash
# make demo: two real Hive 3.1.3 metastores and one real Hive 4.1.0 metastore (testbed/cmd/hmsbed), then — when
# cmd/hms-proxy exists — the proxy in front of them (configs/examples/demo.properties, listener 127.0.0.1:9083,
# management 127.0.0.1:10083). Prints the endpoints and how to try it; Ctrl-C or SIGTERM stops everything.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
CACHE=${HMS_PROXY_CACHE:-$REPO/.cache}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
export HMS_PROXY_CACHE=$CACHE
DEMO=$CACHE/demo
mkdir -p "$DEMO/logs"

if [ -z "${JAVA_HOME:-}" ]; then
  for d in /usr/lib/jvm/java-17-openjdk-*; do
    if [ -x "$d/bin/java" ]; then export JAVA_HOME=$d; break; fi
  done
fi
[ -z "${JAVA_HOME:-}" ] || export PATH="$JAVA_HOME/bin:$PATH"
command -v go >/dev/null 2>&1 || { echo "demo: ERROR: 'go' not found on PATH" >&2; exit 1; }

bash testbed/bin/prepare.sh
go build -o "$DEMO/hmsbed" ./testbed/cmd/hmsbed

BED_PID= PROXY_PID= HIVE4_URI=
stop_all() {
  trap - INT TERM EXIT
  echo
  echo "demo: stopping"
  if [ -n "$PROXY_PID" ] && kill -0 "$PROXY_PID" 2>/dev/null; then
    kill -TERM "$PROXY_PID" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$PROXY_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$PROXY_PID" 2>/dev/null || true
  fi
  if [ -n "$BED_PID" ] && kill -0 "$BED_PID" 2>/dev/null; then
    kill -TERM "$BED_PID" 2>/dev/null || true
    wait "$BED_PID" 2>/dev/null || true # hmsbed stops its metastores (SIGTERM, then SIGKILL after 15 s)
  fi
  echo "demo: stopped"
}
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM
trap 'stop_all' EXIT

ENVFILE=$DEMO/metastores.env
: >"$ENVFILE"
"$DEMO/hmsbed" start --hive 3.1.3 --hive 3.1.3 --hive 4.1.0 --print-env >"$ENVFILE" 2>"$DEMO/logs/hmsbed.log" &
BED_PID=$!
echo "demo: starting two Hive 3.1.3 metastores and one Hive 4.1.0 metastore..."
for _ in $(seq 1 600); do
  grep -qx 'HMS_READY=1' "$ENVFILE" && break
  if ! kill -0 "$BED_PID" 2>/dev/null; then
    echo "demo: ERROR: the metastores did not start:" >&2
    tail -40 "$DEMO/logs/hmsbed.log" >&2
    exit 1
  fi
  sleep 0.5
done
grep -qx 'HMS_READY=1' "$ENVFILE" || { echo "demo: ERROR: metastores not ready after 300 s" >&2; tail -40 "$DEMO/logs/hmsbed.log" >&2; exit 1; }
# shellcheck disable=SC1090
source "$ENVFILE"

echo
echo "Real Hive metastores (ready in ${HMS_READY_SECONDS} s):"
echo "  catalog1  Hive $HMS_1_VERSION  $HMS_1_URI"
echo "  catalog2  Hive $HMS_2_VERSION  $HMS_2_URI"
echo "  catalog3  Hive $HMS_3_VERSION  $HMS_3_URI"
echo "  (their logs and Derby databases: $HMS_1_DIR, $HMS_2_DIR, $HMS_3_DIR)"

TRY_URI=$HMS_1_URI
if [ -d cmd/hms-proxy ]; then
  TEMPLATE=configs/examples/demo.properties
  [ -f "$TEMPLATE" ] || { echo "demo: ERROR: the proxy's demo configuration $TEMPLATE is missing" >&2; exit 1; }
  go build -o "$DEMO/hms-proxy" ./cmd/hms-proxy
  sed -e "s|@CATALOG1_URI@|$HMS_1_URI|g" -e "s|@CATALOG2_URI@|$HMS_2_URI|g" -e "s|@CATALOG3_URI@|$HMS_3_URI|g" \
    "$TEMPLATE" >"$DEMO/demo.properties"
  if grep -q '@CATALOG[0-9]_URI@' "$DEMO/demo.properties"; then
    echo "demo: ERROR: $TEMPLATE has placeholders this script does not fill" >&2
    exit 1
  fi
  (cd "$DEMO" && exec ./hms-proxy demo.properties) >>"$DEMO/logs/proxy.out" 2>&1 &
  PROXY_PID=$!
  # should this script be killed outright (no trap runs), do not leave the proxy holding 9083
  ( while kill -0 $$ 2>/dev/null; do sleep 1; done; kill -TERM "$PROXY_PID" 2>/dev/null ) </dev/null >/dev/null 2>&1 &
  echo
  echo "demo: starting hms-proxy ($DEMO/demo.properties, from $TEMPLATE)..."
  for _ in $(seq 1 120); do
    (exec 3<>/dev/tcp/127.0.0.1/9083) 2>/dev/null && break
    if ! kill -0 "$PROXY_PID" 2>/dev/null; then
      echo "demo: ERROR: hms-proxy exited:" >&2
      tail -40 "$DEMO/logs/proxy.out" >&2
      exit 1
    fi
    sleep 0.5
  done
  (exec 3<>/dev/tcp/127.0.0.1/9083) 2>/dev/null || { echo "demo: ERROR: hms-proxy does not listen on 127.0.0.1:9083 after 60 s" >&2; tail -40 "$DEMO/logs/proxy.out" >&2; exit 1; }
  TRY_URI=thrift://127.0.0.1:9083
  echo
  echo "hms-proxy:"
  echo "  Thrift      thrift://127.0.0.1:9083"
  # extra front doors of the config (additional-frontends.NAME.port / .frontend-profile)
  HIVE4_URI=
  while IFS='=' read -r key port; do
    name=${key#additional-frontends.}; name=${name%.port}
    profile=$(sed -n "s/^additional-frontends\.$name\.frontend-profile=//p" "$DEMO/demo.properties")
    echo "  Thrift      thrift://127.0.0.1:$port   ($name${profile:+, clients of $profile})"
    [ "$profile" != APACHE_4_1_0 ] || HIVE4_URI=thrift://127.0.0.1:$port
  done < <(grep -E '^additional-frontends\.[A-Za-z0-9_-]+\.port=' "$DEMO/demo.properties" || true)
  REST_PORT=$(sed -n 's/^rest-catalog\.port=//p' "$DEMO/demo.properties")
  if [ -n "$REST_PORT" ]; then
    for _ in $(seq 1 60); do (exec 3<>"/dev/tcp/127.0.0.1/$REST_PORT") 2>/dev/null && break; sleep 0.5; done
    echo "  Iceberg REST http://127.0.0.1:$REST_PORT   (warehouse = a catalog: catalog1, catalog2, catalog3)"
  fi
  echo "  management  http://127.0.0.1:10083/"
  echo "  output      $DEMO/logs/proxy.out (plus the log/audit files named in demo.properties, under $DEMO)"
else
  echo
  echo "(cmd/hms-proxy does not exist yet: no proxy started; the commands below talk to catalog1's metastore)"
fi

echo
echo "Try it (in another terminal, from $REPO) — real Hive Java clients running the test bed's scenarios:"
echo "  $DEMO/hmsbed run --client 3.1.3 --uri $TRY_URI version"
echo "  $DEMO/hmsbed run --client 3.1.3 --uri $TRY_URI ddl --db demo_sales"
if [ -n "$PROXY_PID" ]; then
  echo "  $DEMO/hmsbed run --client 3.1.3 --uri $TRY_URI ddl --db catalog2__demo_sales"
  echo "  $DEMO/hmsbed run --client 3.1.3 --uri $TRY_URI ddl --db catalog3__demo_sales"
  echo "  $DEMO/hmsbed run --client 3.1.3 --uri $TRY_URI lossless --db catalog2__demo_lossless --table events \\"
  echo "      --direct-uri $HMS_2_URI --direct-db demo_lossless"
  if [ -n "$HIVE4_URI" ]; then
    echo "  $DEMO/hmsbed run --client 4.1.0 --uri $HIVE4_URI ddl --db catalog3__demo_sales4"
  fi
fi
echo "  (scenarios: version, ddl, lossless; clients: 3.1.3, 4.1.0 — see docs/testbed.md)"
if [ -n "${REST_PORT:-}" ]; then
  echo
  echo "demo: preparing the Iceberg REST clients (PyIceberg, PySpark, Iceberg's Spark runtime; cached after the first time)..."
  if CLIENTS=$("$DEMO/hmsbed" rest-clients 2>"$DEMO/logs/rest-clients.log"); then
    eval "$CLIENTS"
    WH=file://$DEMO/lake
    mkdir -p "$DEMO/lake"
    echo "Try the Iceberg REST catalog (docs/rest.md) — PyIceberg, on catalog2 (Hive 3.1.3):"
    echo "  $PYICEBERG_PYTHON -c \"from pyiceberg.catalog.rest import RestCatalog; import pyarrow as pa; \\"
    echo "c = RestCatalog('demo', uri='http://127.0.0.1:$REST_PORT', warehouse='catalog2'); \\"
    echo "c.create_namespace_if_not_exists('demo_py', {'location': '$WH/demo_py'}); \\"
    echo "t = c.create_table_if_not_exists('demo_py.events', schema=pa.schema([('id', pa.int64())])); \\"
    echo "t.append(pa.table({'id': [1, 2, 3]})); print(t.scan().to_arrow().to_pylist())\""
    echo "Spark 3.5 with Iceberg's runtime, on catalog3 (Hive 4.1.0):"
    echo "  PATH=$(dirname "$PYSPARK_PYTHON"):\$PATH SPARK_LOCAL_IP=127.0.0.1 pyspark --master 'local[1]' --jars $ICEBERG_SPARK_JAR \\"
    echo "    --conf spark.sql.catalog.demo=org.apache.iceberg.spark.SparkCatalog --conf spark.sql.catalog.demo.type=rest \\"
    echo "    --conf spark.sql.catalog.demo.uri=http://127.0.0.1:$REST_PORT --conf spark.sql.catalog.demo.warehouse=catalog3 \\"
    echo "    --conf spark.ui.enabled=false"
    echo "  >>> spark.sql(\"CREATE NAMESPACE IF NOT EXISTS demo.demo_spark LOCATION '$WH/demo_spark'\")"
    echo "  >>> spark.sql(\"CREATE TABLE IF NOT EXISTS demo.demo_spark.t (id bigint) USING iceberg\"); spark.sql(\"INSERT INTO demo.demo_spark.t VALUES (1)\")"
    echo "  >>> spark.sql(\"SELECT * FROM demo.demo_spark.t\").show(); spark.sql(\"SELECT * FROM demo.demo_spark.t.snapshots\").show()"
  else
    echo "demo: the REST clients could not be prepared (see $DEMO/logs/rest-clients.log); the listener still serves http://127.0.0.1:$REST_PORT"
  fi
fi
echo
echo "Ctrl-C stops everything."

# run until interrupted, or until the metastores or the proxy die
while kill -0 "$BED_PID" 2>/dev/null && { [ -z "$PROXY_PID" ] || kill -0 "$PROXY_PID" 2>/dev/null; }; do
  sleep 1
done
echo "demo: ERROR: a component exited on its own (see $DEMO/logs/)" >&2
exit 1
