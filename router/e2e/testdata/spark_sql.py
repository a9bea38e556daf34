# Runs SQL statements in one local SparkSession with Hive support against the
# metastore given in the JSON argument, and prints one JSON line: for each
# statement its rows (as lists of strings) or its error.
#
#   {"uri": "thrift://127.0.0.1:9083", "warehouse": "/tmp/x", "steps": [{"sql": "...", "fetch": true}]}
import json
import sys

from pyspark.sql import SparkSession

cfg = json.loads(sys.argv[1])
spark = (SparkSession.builder.master("local[1]").appName("hms-proxy-e2e")
         .config("spark.sql.catalogImplementation", "hive")
         .config("spark.hadoop.hive.metastore.uris", cfg["uri"])
         .config("spark.sql.warehouse.dir", cfg["warehouse"])
         .config("spark.sql.shuffle.partitions", "1")
         .config("spark.ui.enabled", "false")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.memory", "512m")
         .enableHiveSupport().getOrCreate())
out = []
try:
    for step in cfg["steps"]:
        try:
            df = spark.sql(step["sql"])
            rows = [[None if v is None else str(v) for v in r] for r in df.collect()] if step.get("fetch") else []
            out.append({"sql": step["sql"], "rows": rows})
        except Exception as e:  # the error is the step's result
            out.append({"sql": step["sql"], "error": str(e)[:4000]})
finally:
    spark.stop()
print(json.dumps(out))
