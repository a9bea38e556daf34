"""PyIceberg's RestCatalog with its own PyArrowFileIO against hms-proxy's REST
listener, on the object store the proxy's catalog keeps its tables in.

Usage: python pyiceberg_storage.py '<json config>'
Config: uri, warehouse (the proxy catalog), ns, table, location (of the
namespace), props (PyIceberg FileIO properties: s3.endpoint, keys, ...) and
the scenario:
  flow    create the namespace and the table, append twice, scan, add a
          column, append a row using it, rename the table, scan the renamed
          table; report the rows and every file the table's metadata names
  append  load the table, append `n` rows starting at `start`; report the
          outcome (an exception is reported, not raised)
  read    load the table and scan it
  purge   drop the table with purgeRequested=true
Prints one JSON object and exits 0, or prints {"error": ...} and exits 1.
"""

import json
import sys
import traceback

import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "writer", StringType(), required=False),
)


def catalog(cfg):
    return RestCatalog("hms-proxy", uri=cfg["uri"], warehouse=cfg["warehouse"], **cfg.get("props", {}))


def rows(tbl):
    t = tbl.scan().to_arrow()
    out = []
    for r in t.to_pylist():
        out.append({k: r[k] for k in sorted(r)})
    return sorted(out, key=lambda r: r["id"])


def files(tbl):
    """Every file the metadata names: metadata files, manifest lists,
    manifests, data files."""
    md = tbl.metadata
    names = {tbl.metadata_location}
    names.update(e.metadata_file for e in md.metadata_log)
    for snap in md.snapshots:
        names.add(snap.manifest_list)
        for mf in snap.manifests(tbl.io):
            names.add(mf.manifest_path)
            for entry in mf.fetch_manifest_entry(tbl.io, discard_deleted=False):
                names.add(entry.data_file.file_path)
    return sorted(names)


def flow(cfg):
    cat = catalog(cfg)
    ns, name = cfg["ns"], cfg["table"]
    cat.create_namespace(ns, {"location": cfg["location"]})
    tbl = cat.create_table((ns, name), schema=SCHEMA)
    tbl.append(pa.table({"id": pa.array([1, 2], pa.int64()), "writer": ["a", "a"]}))
    tbl.append(pa.table({"id": pa.array([3], pa.int64()), "writer": ["b"]}))
    first = rows(cat.load_table((ns, name)))
    with tbl.update_schema() as upd:
        upd.add_column("note", StringType())
    tbl = cat.load_table((ns, name))
    tbl.append(pa.table({"id": pa.array([4], pa.int64()), "writer": ["c"], "note": ["new column"]}))
    renamed = name + "_renamed"
    cat.rename_table((ns, name), (ns, renamed))
    tbl = cat.load_table((ns, renamed))
    return {
        "first_scan": first,
        "rows": rows(tbl),
        "schema": [f.name for f in tbl.schema().fields],
        "snapshots": len(tbl.metadata.snapshots),
        "location": tbl.metadata.location,
        "metadata_location": tbl.metadata_location,
        "files": files(tbl),
    }


def append(cfg):
    cat = catalog(cfg)
    tbl = cat.load_table((cfg["ns"], cfg["table"]))
    ids = list(range(cfg["start"], cfg["start"] + cfg["n"]))
    try:
        tbl.append(pa.table({"id": pa.array(ids, pa.int64()), "writer": ["w"] * len(ids)}))
        return {"ok": True}
    except Exception as exc:
        return {"ok": False, "error_type": type(exc).__name__, "message": str(exc)}


def read(cfg):
    cat = catalog(cfg)
    tbl = cat.load_table((cfg["ns"], cfg["table"]))
    return {"rows": rows(tbl), "snapshots": len(tbl.metadata.snapshots), "metadata_location": tbl.metadata_location}


def purge(cfg):
    cat = catalog(cfg)
    cat.purge_table((cfg["ns"], cfg["table"]))
    return {"purged": True}


SCENARIOS = {"flow": flow, "append": append, "read": read, "purge": purge}


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
