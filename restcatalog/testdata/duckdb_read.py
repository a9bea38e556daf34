"""Reads Iceberg tables of hms-proxy's REST frontend with DuckDB's iceberg
extension (ATTACH ... TYPE iceberg), the extensions loaded from their PyPI
wheels (no download at run time).

Usage: python duckdb_read.py '<json config>' with uri, warehouse, ns, table.
Prints {"ids": [...], "tables": [...]} or {"error": ...}.
"""

import glob
import json
import os
import sys

import duckdb


def extension(name):
    mod = __import__("duckdb_extension_" + name)
    paths = glob.glob(os.path.join(os.path.dirname(mod.__file__), "extensions", "*", name + ".duckdb_extension"))
    if not paths:
        raise RuntimeError("no " + name + " extension in its wheel")
    return paths[0]


def main():
    cfg = json.loads(sys.argv[1])
    con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
    for name in ("httpfs", "avro", "iceberg"):
        con.execute(f"LOAD '{extension(name)}'")
    con.execute(
        f"ATTACH '{cfg['warehouse']}' AS lake (TYPE iceberg, ENDPOINT '{cfg['uri']}', AUTHORIZATION_TYPE 'none')"
    )
    out = {}
    out["tables"] = sorted(
        r[0] for r in con.execute(f"SELECT table_name FROM information_schema.tables WHERE table_catalog = 'lake' AND table_schema = '{cfg['ns']}'").fetchall()
    )
    out["ids"] = [r[0] for r in con.execute(f"SELECT id FROM lake.\"{cfg['ns']}\".\"{cfg['table']}\" ORDER BY id").fetchall()]
    print(json.dumps(out))


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        sys.exit(1)
