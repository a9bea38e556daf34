# Runs SQL statements in local SparkSessions with Hive support, one session
# after the other in one JVM, each against the metastore its phase names,
# and prints one JSON line: per phase, per statement its rows (as lists of
# strings) or its error.
#
#   {"warehouse": "/tmp/x", "phases": [{"uri": "thrift://127.0.0.1:9083", "steps": [{"sql": "...", "fetch": true}]}]}
import json
import sys

from pyspark.sql import SparkSession

cfg = json.loads(sys.argv[1])
out = []
for phase in cfg["phases"]:
    spark = (SparkSession.builder.master("local[1]").appName("hms-proxy-e2e")
             .config("spark.sql.catalogImplementation", "hive")
             .config("spark.hadoop.hive.metastore.uris", phase["uri"])
             .config("spark.sql.warehouse.dir", cfg["warehouse"])
             .config("spark.sql.shuffle.partitions", "1")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.memory", "512m")
             .enableHiveSupport().getOrCreate())
    res = []
    try:
        # The metastore this session really talks to, as Hive's client sees it.
        uri = spark.sparkContext._jsc.hadoopConfiguration().get("hive.metastore.uris")
        for step in phase["steps"]:
            try:
                df = spark.sql(step["sql"])
                rows = [[None if v is None else str(v) for v in r] for r in df.collect()] if step.get("fetch") else []
                res.append({"sql": step["sql"], "rows": rows})
            except Exception as e:  # the error is the step's result
                res.append({"sql": step["sql"], "error": str(e)[:4000]})
    finally:
        spark.stop()
        SparkSession._instantiatedSession = None
        SparkSession._activeSession = None
    out.append({"uri": uri, "results": res})
print(json.dumps(out))
