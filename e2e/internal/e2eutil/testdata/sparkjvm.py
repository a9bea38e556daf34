# What the test bed's PySpark scripts share (e2eutil's spark_sql.py, e2e/storage's spark_iceberg.py).


def stop_jvm():
    """Closes Spark's JVM and waits for it (it exits when its stdin closes), so the JVM has exited, and written its
    class-data archive (testbed/cds.go), when this script has."""
    from pyspark import SparkContext
    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is not None:
        proc.stdin.close()
        try:
            proc.wait(timeout=120)
        except Exception:  # its stdin is closed: it exits on its own, this script does not wait longer
            pass

