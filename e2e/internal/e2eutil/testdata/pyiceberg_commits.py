"""PyIceberg's Hive catalog (a real Iceberg client) against hms-proxy.

Usage: python pyiceberg_commits.py thrift://PROXY DB WAREHOUSE_URI COMMITS

Creates DB.events through the proxy, appends COMMITS batches (each one Iceberg
commit: lock EXCLUSIVE on the table with isTransactional=true and no
transaction, check_lock while WAITING, get_table, alter_table with the new
metadata_location, unlock), then loads the table again and reads every row.
Prints one JSON object per step; exits 1 on the first failure.
"""
import json
import sys

import pyarrow as pa
from pyiceberg.catalog.hive import HiveCatalog


def step(name, **detail):
    print(json.dumps({"step": name, **detail}), flush=True)


def main():
    uri, db, warehouse, commits = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    catalog = HiveCatalog("proxy", uri=uri, warehouse=warehouse)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("batch", pa.string(), nullable=False)])
    table = catalog.create_table(f"{db}.events", schema=schema)
    step("create_table", location=table.metadata_location)
    for i in range(commits):
        rows = pa.table({"id": [i * 10 + 1, i * 10 + 2], "batch": [f"b{i}", f"b{i}"]}, schema=schema)
        table.append(rows)
        step("append", batch=i, metadata_location=table.metadata_location,
             snapshot=table.current_snapshot().snapshot_id)
    loaded = catalog.load_table(f"{db}.events")
    ids = sorted(loaded.scan().to_arrow().column("id").to_pylist())
    snapshots = len(loaded.metadata.snapshots)
    step("read", ids=ids, snapshots=snapshots, metadata_location=loaded.metadata_location)
    step("done")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line for the Go test, then the trace on stderr
        step("error", error=f"{type(e).__name__}: {e}")
        raise
