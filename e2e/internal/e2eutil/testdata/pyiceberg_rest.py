"""PyIceberg's RestCatalog (a real Iceberg REST client) against hms-proxy's
REST listener.

Usage: python pyiceberg_rest.py '<json config>'
Config: uri, warehouse (the catalog), ns, table, location, and the scenario:
  write    create the namespace (with location) and the table, append
           `appends` batches, load the table again and read it back
  append   load the existing table, wait until `start_at` (unix seconds,
           optional), append `appends` batches starting at id `start`; a
           CommitFailedException (409) reloads and retries
  read     load the table and read it back
  refused  try to create the namespace; report the exception
  hidden   every catalog call aimed at namespace `sec` and table
           `pub`.hid_x, which hms-proxy's exposure rules hide; report each
           call's outcome (the exception's type and text, or its result)
  append_refused  load the existing table and try one append; report the
           exception and the table's metadata location before and after
  lifecycle  a table's whole life: namespace, table, two appends, a schema
           change, time travel to the first snapshot, a staged create of a
           format-version 1 table, rename, drops; reports what it saw
Optional: props, more RestCatalog properties (credential, token,
oauth2-server-uri, scope, ssl.cabundle, ...).
Prints one JSON object and exits 0, or prints {"error": ...} and exits 1.
"""

import json
import sys
import time
import traceback

import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "writer", StringType(), required=False),
)


def batch(start, n, writer):
    return pa.table({
        "id": pa.array(list(range(start, start + n)), pa.int64()),
        "writer": pa.array([writer] * n, pa.string()),
    })


def catalog(cfg):
    return RestCatalog("hms-proxy", uri=cfg["uri"], warehouse=cfg["warehouse"], **cfg.get("props", {}))


def readback(cat, cfg):
    tbl = cat.load_table((cfg["ns"], cfg["table"]))
    md = tbl.metadata
    # The main branch's history from the current snapshot back to the
    # first, through parent ids: a lost commit breaks or shortens it.
    by_id = {s.snapshot_id: s for s in md.snapshots}
    chain, cur = [], tbl.current_snapshot()
    while cur is not None:
        chain.append(cur.snapshot_id)
        cur = by_id.get(cur.parent_snapshot_id) if cur.parent_snapshot_id is not None else None
    return {
        "ids": sorted(tbl.scan().to_arrow().column("id").to_pylist()),
        "snapshots": len(md.snapshots),
        "chain": len(chain),
        "metadata_location": tbl.metadata_location,
        "metadata_log": [e.metadata_file for e in md.metadata_log],
    }


def write(cfg):
    cat = catalog(cfg)
    cat.create_namespace(cfg["ns"], {"location": cfg["location"]})
    tbl = cat.create_table((cfg["ns"], cfg["table"]), schema=SCHEMA)
    for i in range(cfg["appends"]):
        tbl.append(batch(i * 10, 2, "w"))
    return readback(cat, cfg)


def append(cfg):
    cat = catalog(cfg)
    cat.load_table((cfg["ns"], cfg["table"]))
    if cfg.get("start_at"):
        time.sleep(max(0.0, cfg["start_at"] - time.time()))
    conflicts = 0
    for i in range(cfg["appends"]):
        for _ in range(50):
            tbl = cat.load_table((cfg["ns"], cfg["table"]))
            try:
                tbl.append(batch(cfg["start"] + i * 10, 2, cfg.get("writer", "w")))
                break
            except CommitFailedException:
                conflicts += 1
        else:
            raise RuntimeError("append %d: 50 conflicts in a row" % i)
    return {"conflicts": conflicts}


def read(cfg):
    return readback(catalog(cfg), cfg)


def refused(cfg):
    cat = catalog(cfg)
    try:
        cat.create_namespace(cfg["ns"], {"location": cfg["location"]})
        return {"refused": False}
    except Exception as exc:
        return {"refused": True, "error_type": type(exc).__name__, "message": str(exc)}


def hidden(cfg):
    cat = catalog(cfg)
    pub, sec = cfg["pub"], cfg["sec"]
    out = {}

    def attempt(name, call):
        try:
            out[name] = {"ok": repr(call())[:300]}
        except Exception as exc:
            out[name] = {"error_type": type(exc).__name__, "message": str(exc)[:500]}

    attempt("load_namespace_properties", lambda: cat.load_namespace_properties(sec))
    attempt("list_tables", lambda: cat.list_tables(sec))
    attempt("update_namespace_properties", lambda: cat.update_namespace_properties(sec, updates={"k": "v"}))
    attempt("drop_namespace", lambda: cat.drop_namespace(sec))
    attempt("create_table_in_hidden_namespace", lambda: cat.create_table((sec, "t_new"), schema=SCHEMA))
    attempt("load_table_in_hidden_namespace", lambda: cat.load_table((sec, "t1")))
    attempt("drop_table_in_hidden_namespace", lambda: cat.drop_table((sec, "t1")))
    attempt("load_table", lambda: cat.load_table((pub, "hid_x")))
    attempt("table_exists", lambda: cat.table_exists((pub, "hid_x")))
    attempt("drop_table", lambda: cat.drop_table((pub, "hid_x")))
    attempt("purge_table", lambda: cat.purge_table((pub, "hid_x")))
    attempt("rename_from_hidden", lambda: cat.rename_table((pub, "hid_x"), (pub, "vis_new")))
    attempt("rename_onto_hidden", lambda: cat.rename_table((pub, "vis_a"), (pub, "hid_new")))
    attempt("create_table_of_hidden_name", lambda: cat.create_table((pub, "hid_new"), schema=SCHEMA))
    attempt("create_namespace_of_hidden_name", lambda: cat.create_namespace(sec + "_2"))
    attempt("list_namespaces", lambda: sorted(".".join(n) for n in cat.list_namespaces()))
    attempt("list_tables_of_visible", lambda: sorted(".".join(n) for n in cat.list_tables(pub)))
    return out


def append_refused(cfg):
    cat = catalog(cfg)
    tbl = cat.load_table((cfg["ns"], cfg["table"]))
    before = tbl.metadata_location
    out = {"refused": False}
    try:
        tbl.append(batch(1000, 2, "refused"))
    except Exception as exc:
        out = {"refused": True, "error_type": type(exc).__name__, "message": str(exc)}
    out["before"] = before
    out["after"] = cat.load_table((cfg["ns"], cfg["table"])).metadata_location
    return out


def lifecycle(cfg):
    cat = catalog(cfg)
    ns = cfg["ns"]
    cat.create_namespace(ns, {"location": cfg["location"]})
    tbl = cat.create_table((ns, "events"), schema=SCHEMA)
    tbl.append(batch(0, 2, "a"))
    first = tbl.current_snapshot().snapshot_id
    tbl.append(batch(10, 2, "b"))
    with tbl.update_schema() as upd:
        upd.add_column("note", StringType())
    tbl = cat.load_table((ns, "events"))
    columns = [f.name for f in tbl.schema().fields]
    now = sorted(tbl.scan().to_arrow().column("id").to_pylist())
    then = sorted(tbl.scan(snapshot_id=first).to_arrow().column("id").to_pylist())
    # A staged create of a format-version 1 table.
    txn = cat.create_table_transaction((ns, "v1"), schema=SCHEMA, properties={"format-version": "1"})
    txn.commit_transaction()
    v1 = cat.load_table((ns, "v1")).metadata.format_version
    cat.rename_table((ns, "events"), (ns, "events_renamed"))
    tables = sorted(t[1] for t in cat.list_tables(ns))
    cat.drop_table((ns, "events_renamed"))
    cat.drop_table((ns, "v1"))
    cat.drop_namespace(ns)
    return {"columns": columns, "now": now, "then": then, "v1_format": v1, "tables": tables,
            "namespace_gone": ns not in [n[0] for n in cat.list_namespaces()]}


SCENARIOS = {"lifecycle": lifecycle, "write": write, "append": append, "read": read, "refused": refused, "append_refused": append_refused,
             "hidden": hidden}


def main():
    cfg = json.loads(sys.argv[1])
    try:
        out = SCENARIOS[cfg["scenario"]](cfg)
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}))
        sys.exit(1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
