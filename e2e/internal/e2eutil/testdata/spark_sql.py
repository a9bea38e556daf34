# Runs SQL statements in local SparkSessions with Hive support, one session
# after the other in one JVM, each against the metastore its phase names,
# and prints one JSON line: per phase, per statement its rows (as lists of
# strings) or its error.
#
#   {"warehouse": "/tmp/x", "phases": [{"uri": "thrift://127.0.0.1:9083", "steps": [{"sql": "...", "fetch": true}]}]}
#
# A phase may instead have "conf" (more Spark settings, e.g. an Iceberg REST
# catalog and spark.jars) and "hive": false (no Hive support). A step with
# "save": "name" keeps its first value; later steps' "{name}" is replaced by it.
import json
import sys

from pyspark.sql import SparkSession

from sparkjvm import stop_jvm


cfg = json.loads(sys.argv[1])
out = []
for phase in cfg["phases"]:
    hive = phase.get("hive", True)
    b = (SparkSession.builder.master("local[1]").appName("hms-proxy-e2e")
         .config("spark.sql.catalogImplementation", "hive" if hive else "in-memory")
         .config("spark.sql.warehouse.dir", cfg["warehouse"])
         .config("spark.sql.shuffle.partitions", "1")
         .config("spark.ui.enabled", "false")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.memory", "512m"))
    if hive:
        b = b.config("spark.hadoop.hive.metastore.uris", phase["uri"]).enableHiveSupport()
    for k, v in phase.get("conf", {}).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    res = []
    saved = {}
    try:
        # The metastore this session really talks to, as Hive's client sees it.
        uri = spark.sparkContext._jsc.hadoopConfiguration().get("hive.metastore.uris") if hive else None
        for step in phase["steps"]:
            sql = step["sql"]
            for k, v in saved.items():
                sql = sql.replace("{" + k + "}", v)
            try:
                df = spark.sql(sql)
                fetch = step.get("fetch") or step.get("save")
                rows = [[None if v is None else str(v) for v in r] for r in df.collect()] if fetch else []
                if step.get("save") and rows:
                    saved[step["save"]] = rows[0][0]
                res.append({"sql": sql, "rows": rows})
            except Exception as e:  # the error is the step's result
                res.append({"sql": sql, "error": str(e)[:4000]})
    finally:
        spark.stop()
        SparkSession._instantiatedSession = None
        SparkSession._activeSession = None
    out.append({"uri": uri, "results": res})
print(json.dumps(out), flush=True)
stop_jvm()
