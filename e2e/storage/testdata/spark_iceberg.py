# Runs SQL statements in one local SparkSession whose catalog "rest" is Iceberg's REST catalog at the proxy
# (Iceberg's Spark runtime; data files written with its HadoopFileIO), optionally with Hive support against a
# metastore URI (the session catalog, for plain Hive tables), and prints one JSON line: per statement its rows
# (lists of strings) or its error.
#
#   {"jar": "...iceberg-spark-runtime.jar", "uri": "http://127.0.0.1:PORT", "warehouse": "cat", "local": "/tmp/x",
#    "hive_uri": "thrift://..." (optional), "hadoop": {"fs.defaultFS": "..."},
#    "kerberos": {"principal": "alice@R", "keytab": "/k"} (optional),
#    "steps": [{"sql": "...", "fetch": true}]}
import json
import os
import sys

from pyspark.sql import SparkSession

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "e2eutil", "testdata"))
from sparkjvm import stop_jvm  # noqa: E402  (e2eutil's Spark helpers)


cfg = json.loads(sys.argv[1])
b = (SparkSession.builder.master("local[1]").appName("hms-proxy-storage-e2e")
     .config("spark.jars", cfg["jar"])
     .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
     .config("spark.sql.catalog.rest", "org.apache.iceberg.spark.SparkCatalog")
     .config("spark.sql.catalog.rest.type", "rest")
     .config("spark.sql.catalog.rest.uri", cfg["uri"])
     .config("spark.sql.catalog.rest.warehouse", cfg["warehouse"])
     .config("spark.sql.catalog.rest.io-impl", "org.apache.iceberg.hadoop.HadoopFileIO")
     .config("spark.sql.warehouse.dir", cfg["local"])
     .config("spark.sql.shuffle.partitions", "1")
     .config("spark.ui.enabled", "false")
     .config("spark.driver.bindAddress", "127.0.0.1")
     .config("spark.driver.host", "127.0.0.1")
     .config("spark.driver.memory", "512m"))
if cfg.get("hive_uri"):
    b = b.config("spark.sql.catalogImplementation", "hive").config("spark.hadoop.hive.metastore.uris", cfg["hive_uri"])
for k, v in cfg.get("hadoop", {}).items():
    b = b.config("spark.hadoop." + k, v)
if cfg.get("hive_uri"):
    b = b.enableHiveSupport()
spark = b.getOrCreate()
res = []
try:
    krb = cfg.get("kerberos")
    if krb:
        # Hadoop's client in this JVM logs in from the keytab: HadoopFileIO then reaches the Kerberized HDFS.
        ugi = spark._jvm.org.apache.hadoop.security.UserGroupInformation
        ugi.setConfiguration(spark._jsc.hadoopConfiguration())
        ugi.loginUserFromKeytab(krb["principal"], krb["keytab"])
    for step in cfg["steps"]:
        try:
            df = spark.sql(step["sql"])
            rows = [[None if v is None else str(v) for v in r] for r in df.collect()] if step.get("fetch") else []
            res.append({"sql": step["sql"], "rows": rows})
        except Exception as e:  # the error is the step's result
            res.append({"sql": step["sql"], "error": str(e)[:4000]})
finally:
    spark.stop()
print(json.dumps(res), flush=True)
stop_jvm()
