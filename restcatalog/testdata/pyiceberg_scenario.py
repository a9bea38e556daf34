"""Drives hms-proxy's Iceberg REST frontend with pyiceberg's RestCatalog.

Usage: python pyiceberg_scenario.py '<json config>'
The config names the scenario and its inputs; the script prints one JSON
object with what it observed (the Go test asserts on it) and exits 0, or
prints {"error": ...} and exits 1. Every step is a real pyiceberg call.
"""

import json
import os
import sys
import traceback

import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
)


def rows(start, n):
    return pa.table(
        {
            "id": pa.array(list(range(start, start + n)), pa.int64()),
            "name": pa.array([f"row{i}" for i in range(start, start + n)], pa.string()),
        }
    )


def catalog(cfg, warehouse=None):
    props = {"uri": cfg["uri"]}
    if warehouse:
        props["warehouse"] = warehouse
    return RestCatalog("hms-proxy", **props)


def ids(tbl):
    return sorted(tbl.scan().to_arrow().column("id").to_pylist())


def lifecycle(cfg):
    """Namespace, table, two appends, scan, listings, rename, purge."""
    out = {}
    cat = catalog(cfg, cfg.get("warehouse"))
    out["prefix"] = cat.properties.get("prefix")
    ns = cfg["ns"]
    cat.create_namespace(ns, {"location": cfg["location"]})
    out["namespace_properties"] = cat.load_namespace_properties(ns)
    tbl = cat.create_table((ns, "orders"), schema=SCHEMA)
    tbl.append(rows(0, 3))
    tbl.append(rows(3, 2))
    tbl = cat.load_table((ns, "orders"))
    out["ids"] = ids(tbl)
    out["snapshots"] = len(tbl.metadata.snapshots)
    out["metadata_location"] = tbl.metadata_location
    out["table_location"] = tbl.metadata.location
    out["namespaces"] = [list(n) for n in cat.list_namespaces()]
    out["tables"] = [list(t) for t in cat.list_tables(ns)]
    if cfg.get("default_uri_check"):
        default = catalog(cfg)
        out["default_namespaces"] = [list(n) for n in default.list_namespaces()]
    cat.rename_table((ns, "orders"), (ns, "orders_renamed"))
    out["tables_after_rename"] = [list(t) for t in cat.list_tables(ns)]
    renamed = cat.load_table((ns, "orders_renamed"))
    out["ids_after_rename"] = ids(renamed)
    # Every file the table's metadata knows, before the purge.
    files = set()
    for snap in renamed.metadata.snapshots:
        files.add(snap.manifest_list)
        for m in snap.manifests(renamed.io):
            files.add(m.manifest_path)
            for entry in m.fetch_manifest_entry(renamed.io, discard_deleted=False):
                files.add(entry.data_file.file_path)
    for entry in renamed.metadata.metadata_log:
        files.add(entry.metadata_file)
    files.add(renamed.metadata_location)
    out["files"] = sorted(files)
    if cfg.get("sentinel"):
        # A file in the table's folder that no metadata names: a purge must
        # leave it.
        with open(cfg["sentinel"], "w") as f:
            f.write("not part of the table")
    if cfg.get("purge", True):
        cat.purge_table((ns, "orders_renamed"))
        try:
            cat.load_table((ns, "orders_renamed"))
            out["loaded_after_purge"] = True
        except NoSuchTableError:
            out["loaded_after_purge"] = False
    return out


def conflict(cfg):
    """Two writers on one table, twice: with pyiceberg's commit retries off
    the second gets CommitFailedException (409) and retries by hand; with
    them on (the default) pyiceberg retries by itself. No append is lost."""
    out = {}
    cat = catalog(cfg, cfg.get("warehouse"))
    ns = cfg["ns"]
    cat.create_namespace(ns, {"location": cfg["location"]})
    for name, props in (("manual", {"commit.retry.num-retries": "0"}), ("auto", {})):
        cat.create_table((ns, name), schema=SCHEMA, properties=props)
        a = cat.load_table((ns, name))
        b = cat.load_table((ns, name))
        a.append(rows(0, 2))
        try:
            b.append(rows(100, 2))
            out[name + "_second_writer"] = "committed"
        except CommitFailedException as exc:
            out[name + "_second_writer"] = "CommitFailedException"
            out[name + "_message"] = str(exc)
            b = cat.load_table((ns, name))
            b.append(rows(100, 2))
        tbl = cat.load_table((ns, name))
        out[name + "_ids"] = ids(tbl)
        out[name + "_snapshots"] = len(tbl.metadata.snapshots)
    return out


def write_refused(cfg):
    """A write on a catalog without writer isolation: ForbiddenError."""
    cat = catalog(cfg, cfg.get("warehouse"))
    try:
        cat.create_namespace(cfg["ns"], {"location": cfg["location"]})
        return {"refused": False}
    except Exception as exc:  # pyiceberg raises ForbiddenError for 403
        return {"refused": True, "error_type": type(exc).__name__, "message": str(exc)}


def read(cfg):
    """Load a table and scan it."""
    cat = catalog(cfg, cfg.get("warehouse"))
    tbl = cat.load_table((cfg["ns"], cfg["table"]))
    return {"ids": ids(tbl), "snapshots": len(tbl.metadata.snapshots)}


def catalog_ops(cfg):
    """Namespace properties, a staged create (create-table transaction),
    register, Iceberg views, drops."""
    from pyiceberg.view.metadata import SQLViewRepresentation, ViewRepresentation, ViewVersion

    out = {}
    cat = catalog(cfg, cfg.get("warehouse"))
    ns = cfg["ns"]
    cat.create_namespace(ns, {"location": cfg["location"], "team": "a", "old": "x"})
    summary = cat.update_namespace_properties(ns, removals={"old", "absent"}, updates={"team": "b", "new": "y"})
    out["props_summary"] = {"updated": sorted(summary.updated), "removed": sorted(summary.removed), "missing": sorted(summary.missing)}
    out["props"] = cat.load_namespace_properties(ns)

    # Staged create: nothing exists until the transaction commits.
    with cat.create_table_transaction((ns, "staged"), schema=SCHEMA) as tx:
        out["staged_exists_before_commit"] = cat.table_exists((ns, "staged"))
        tx.append(rows(0, 3))
    staged = cat.load_table((ns, "staged"))
    out["staged_ids"] = ids(staged)

    # Register: the same metadata file under a second name.
    cat.drop_table((ns, "staged"))
    out["staged_exists_after_drop"] = cat.table_exists((ns, "staged"))
    reg = cat.register_table((ns, "registered"), staged.metadata_location)
    out["registered_ids"] = ids(reg)
    out["registered_metadata_location"] = reg.metadata_location == staged.metadata_location

    # Views.
    version = ViewVersion(
        schema_id=0,
        representations=[ViewRepresentation(SQLViewRepresentation(type="sql", sql="SELECT id FROM registered", dialect="spark"))],
        default_namespace=[ns],
    )
    cat.create_view((ns, "v_ids"), schema=SCHEMA, view_version=version)
    out["views"] = [list(v) for v in cat.list_views(ns)]
    out["view_exists"] = cat.view_exists((ns, "v_ids"))
    view = cat.load_view((ns, "v_ids"))
    out["view_sql"] = view.metadata.versions[0].representations[0].root.sql
    out["tables_exclude_views"] = [list(t) for t in cat.list_tables(ns)]
    cat.drop_view((ns, "v_ids"))
    out["view_exists_after_drop"] = cat.view_exists((ns, "v_ids"))
    cat.drop_table((ns, "registered"))
    cat.drop_namespace(ns)
    out["namespace_exists_after_drop"] = cat.namespace_exists(ns)
    return out


def table_files(tbl):
    files = set()
    for snap in tbl.metadata.snapshots:
        files.add(snap.manifest_list)
        for m in snap.manifests(tbl.io):
            files.add(m.manifest_path)
            for entry in m.fetch_manifest_entry(tbl.io, discard_deleted=False):
                files.add(entry.data_file.file_path)
    for entry in tbl.metadata.metadata_log:
        files.add(entry.metadata_file)
    files.add(tbl.metadata_location)
    return sorted(files)


def prepare_table(cfg):
    """A namespace and a table with one append; with "foreign", also a
    parquet file elsewhere added by reference (add_files), so a manifest
    names a file outside the table's tree."""
    import pyarrow.parquet as pq

    cat = catalog(cfg, cfg.get("warehouse"))
    ns = cfg["ns"]
    cat.create_namespace(ns, {"location": cfg["location"]})
    tbl = cat.create_table((ns, cfg["table"]), schema=SCHEMA)
    tbl.append(rows(0, 2))
    if cfg.get("foreign"):
        pq.write_table(rows(50, 1), cfg["foreign"])
        tbl = cat.load_table((ns, cfg["table"]))
        tbl.add_files(["file:" + cfg["foreign"]])
    tbl = cat.load_table((ns, cfg["table"]))
    return {"files": table_files(tbl), "ids": ids(tbl), "location": tbl.metadata.location}


def purge(cfg):
    """purge_table (DELETE ...?purgeRequested=true), or drop_table."""
    cat = catalog(cfg, cfg.get("warehouse"))
    try:
        if cfg.get("plain"):
            cat.drop_table((cfg["ns"], cfg["table"]))
        else:
            cat.purge_table((cfg["ns"], cfg["table"]))
        return {"ok": True}
    except Exception as exc:
        return {"ok": False, "error_type": type(exc).__name__, "message": str(exc)}


def evolution(cfg):
    """Metadata evolution through the REST catalog on format v1, v2 and v3
    tables: schema, partition spec and sort order changes with appends in
    between, a delete, tags and a branch, statistics set and removed,
    properties, snapshot expiry and a v1 to v2 upgrade. PyIceberg 0.12 writes
    no v3 manifests, so the v3 table gets the metadata-only steps. Reports
    what a fresh load shows."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.table.sorting import SortField, SortOrder
    from pyiceberg.table.statistics import BlobMetadata, StatisticsFile
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DoubleType

    cat = catalog(cfg, cfg.get("warehouse"))
    ns = cfg["ns"]
    cat.create_namespace(ns, {"location": cfg["location"]})
    out = {}
    for fv in (1, 2, 3):
        data = fv < 3
        name = f"evo_v{fv}"
        spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="name_part"))
        order = SortOrder(SortField(source_id=1, transform=IdentityTransform()))
        tbl = cat.create_table((ns, name), schema=SCHEMA, partition_spec=spec, sort_order=order, properties={"format-version": str(fv)})
        if data:
            tbl.append(rows(0, 3))
            first = tbl.current_snapshot().snapshot_id
        with tbl.update_schema() as u:
            u.add_column("score", DoubleType())
            u.rename_column("name", "label")
        with tbl.update_spec() as s:
            s.add_field("id", IdentityTransform(), "id_part")
        with tbl.update_sort_order() as so:
            so.desc("id", IdentityTransform())
        if data:
            tbl.append(
                pa.table(
                    {
                        "id": pa.array([10, 11], pa.int64()),
                        "label": pa.array(["x10", "x11"], pa.string()),
                        "score": pa.array([1.5, 2.5], pa.float64()),
                    }
                )
            )
            second = tbl.current_snapshot().snapshot_id
            tbl.manage_snapshots().create_tag(first, "first").create_branch(second, "audit", max_snapshot_age_ms=86400000).commit()
            tbl.manage_snapshots().create_tag(second, "second").commit()
            tbl.manage_snapshots().remove_tag("second").commit()
            seq = tbl.metadata.snapshot_by_id(second).sequence_number or 0
            stats = StatisticsFile(
                snapshot_id=second,
                statistics_path=tbl.location() + "/metadata/stats-" + str(second) + ".puffin",
                file_size_in_bytes=123,
                file_footer_size_in_bytes=45,
                blob_metadata=[BlobMetadata(type="apache-datasketches-theta-v1", snapshot_id=second, sequence_number=seq, fields=[1], properties={"ndv": "5"})],
            )
            with tbl.update_statistics() as us:
                us.set_statistics(stats)
        with tbl.transaction() as tx:
            tx.set_properties(owner_team="lake", retention="7d")
        with tbl.transaction() as tx:
            tx.remove_properties("retention")
        if data:
            tbl.append(
                pa.table({"id": pa.array([20], pa.int64()), "label": pa.array(["x20"], pa.string()), "score": pa.array([0.5], pa.float64())})
            )
            third = tbl.current_snapshot().snapshot_id
            tbl.delete("id = 1")
            tbl = cat.load_table((ns, name))
            tbl.maintenance.expire_snapshots().by_id(third).commit()
            with tbl.update_statistics() as us:
                us.remove_statistics(second)
        if fv == 1:
            with tbl.transaction() as tx:
                tx.upgrade_table_version(2)
        tbl = cat.load_table((ns, name))
        md = tbl.metadata
        out[name] = {
            "format_version": md.format_version,
            "ids": ids(tbl),
            "columns": [f.name for f in tbl.schema().fields],
            "schemas": len(md.schemas),
            "spec_fields": [f.name for f in tbl.spec().fields],
            "specs": len(md.partition_specs),
            "sort": [(f.source_id, str(f.direction)) for f in tbl.sort_order().fields],
            "refs": sorted(md.refs.keys()),
            "snapshots": len(md.snapshots),
            "statistics": len(md.statistics),
            "properties": {k: v for k, v in md.properties.items() if k in ("owner_team", "retention")},
            "metadata_log": len(md.metadata_log),
        }
    return out


SCENARIOS = {"evolution": evolution, "prepare_table": prepare_table, "purge": purge, "catalog_ops": catalog_ops, "lifecycle": lifecycle, "conflict": conflict, "write_refused": write_refused, "read": read}


def main():
    cfg = json.loads(sys.argv[1])
    try:
        out = SCENARIOS[cfg["scenario"]](cfg)
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}))
        sys.exit(1)
    print(json.dumps(out))


if __name__ == "__main__":
    os.environ.setdefault("PYICEBERG_HOME", os.getcwd())
    main()
