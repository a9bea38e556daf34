package hmsbed;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.api.TableMeta;

/**
 * ddl --db NAME [--db NAME2 ...] [--expect-db NAME ...] [--keep]
 *
 * <p>For every --db: create the database and a partitioned table, add/list/get/drop partitions, alter the table and
 * read the change back, find the table with getTables/getAllTables/getTableMeta; then getAllDatabases must list every
 * --db and --expect-db; then (unless --keep) drop what was created. Database names are used exactly as given.
 */
final class DdlScenario implements Driver.Scenario {

  private static final String[][] PARTS = {
      {"2024-01-01", "eu"}, {"2024-01-01", "us"}, {"2024-01-02", "eu"}, {"2024-01-02", "us"}};

  @Override
  public void run(Steps steps, Driver.Args args) throws Exception {
    final List<String> dbs = args.all("db");
    if (dbs.isEmpty()) {
      throw new IllegalArgumentException("ddl needs at least one --db NAME");
    }
    final List<String> expected = new ArrayList<>(dbs);
    expected.addAll(args.all("expect-db"));
    final boolean keep = args.flag("keep");
    final String table = "ddl_" + Build.runId();
    final IMetaStoreClient c = Hms.open(args.require("uri"));
    // what this run created, for the cleanup (db -> table created in it or null)
    final Map<String, String> created = new LinkedHashMap<>();
    try {
      for (String db : dbs) {
        exercise(steps, c, db, table, created);
      }
      steps.run("getAllDatabases", () -> {
        List<String> all = c.getAllDatabases();
        List<String> missing = new ArrayList<>();
        for (String db : expected) {
          if (!all.contains(db)) {
            missing.add(db);
          }
        }
        Steps.check(missing.isEmpty(), "getAllDatabases lacks " + missing, "got " + all);
        return all.size() + " databases, all of " + expected + " present";
      });
    } finally {
      if (!keep) {
        for (Map.Entry<String, String> e : created.entrySet()) {
          final String db = e.getKey();
          final String tbl = e.getValue();
          if (tbl != null) {
            steps.attempt("dropTable " + db + "." + tbl, () -> {
              c.dropTable(db, tbl, true, false);
              Steps.check(!c.tableExists(db, tbl), "table still exists after dropTable");
              return null;
            });
          }
          steps.attempt("dropDatabase " + db, () -> {
            c.dropDatabase(db, true, false, false);
            try {
              c.getDatabase(db);
            } catch (NoSuchObjectException expectedGone) {
              return null;
            }
            throw new Steps.Check("database still exists after dropDatabase", null);
          });
        }
      }
      c.close();
    }
  }

  private static void exercise(Steps steps, final IMetaStoreClient c, final String db, final String tbl,
      Map<String, String> created) {
    final String q = db + "." + tbl;
    steps.run("createDatabase " + db, () -> {
      c.createDatabase(Build.database(db));
      return null;
    });
    created.put(db, null);

    steps.run("createTable " + q, () -> {
      List<FieldSchema> cols = new ArrayList<>(Arrays.asList(
          Build.col("id", "bigint", "row id"),
          Build.col("name", "string", "display name"),
          Build.col("amount", "decimal(10,2)", null),
          Build.col("tags", "array<string>", "free tags")));
      Table t = Build.partitionedTable(db, tbl, cols,
          Build.params("hmsbed.scenario", "ddl", "comment", "test bed table"));
      c.createTable(t);
      return null;
    });
    created.put(db, tbl);

    steps.run("addPartition " + q, () -> {
      Table t = c.getTable(db, tbl);
      Partition p = c.add_partition(Build.partition(t, Build.params("hmsbed.part", "0"), PARTS[0]));
      Steps.check(p.getValues().equals(Arrays.asList(PARTS[0])), "returned partition values " + p.getValues());
      return Build.partName(PARTS[0][0], PARTS[0][1]);
    });

    steps.run("addPartitions " + q, () -> {
      Table t = c.getTable(db, tbl);
      List<Partition> ps = new ArrayList<>();
      for (int i = 1; i < PARTS.length; i++) {
        ps.add(Build.partition(t, Build.params("hmsbed.part", String.valueOf(i)), PARTS[i]));
      }
      int n = c.add_partitions(ps);
      Steps.check(n == PARTS.length - 1, "add_partitions returned " + n + ", want " + (PARTS.length - 1));
      return n + " partitions";
    });

    steps.run("listPartitionNames " + q, () -> {
      List<String> names = c.listPartitionNames(db, tbl, (short) -1);
      TreeSet<String> want = new TreeSet<>();
      for (String[] p : PARTS) {
        want.add(Build.partName(p[0], p[1]));
      }
      Steps.check(new TreeSet<>(names).equals(want), "partition names " + names + ", want " + want);
      return String.valueOf(names);
    });

    steps.run("listPartitions " + q, () -> {
      List<Partition> ps = c.listPartitions(db, tbl, (short) -1);
      Steps.check(ps.size() == PARTS.length, "listPartitions returned " + ps.size() + " partitions");
      for (Partition p : ps) {
        Steps.check(db.equals(p.getDbName()) && tbl.equals(p.getTableName()),
            "partition names its table as " + p.getDbName() + "." + p.getTableName());
        Steps.check(p.getParameters() != null && p.getParameters().containsKey("hmsbed.part"),
            "partition " + p.getValues() + " lost its parameters: " + p.getParameters());
      }
      return ps.size() + " partitions";
    });

    steps.run("getPartition " + q, () -> {
      Partition p = c.getPartition(db, tbl, Arrays.asList(PARTS[2]));
      Steps.check(p.getValues().equals(Arrays.asList(PARTS[2])), "got values " + p.getValues());
      Steps.check(db.equals(p.getDbName()), "partition dbName " + p.getDbName() + ", want " + db);
      Steps.check("2".equals(p.getParameters().get("hmsbed.part")), "partition parameters " + p.getParameters());
      return p.getSd().getLocation();
    });

    steps.run("getPartitionsByNames " + q, () -> {
      List<String> names = Arrays.asList(Build.partName(PARTS[1][0], PARTS[1][1]),
          Build.partName(PARTS[3][0], PARTS[3][1]));
      List<Partition> ps = c.getPartitionsByNames(db, tbl, names);
      Steps.check(ps.size() == 2, "got " + ps.size() + " partitions for " + names);
      return String.valueOf(names);
    });

    steps.run("dropPartition " + q, () -> {
      boolean dropped = c.dropPartition(db, tbl, Arrays.asList(PARTS[3]), true);
      Steps.check(dropped, "dropPartition returned false");
      List<String> names = c.listPartitionNames(db, tbl, (short) -1);
      Steps.check(names.size() == PARTS.length - 1 && !names.contains(Build.partName(PARTS[3][0], PARTS[3][1])),
          "partitions after drop: " + names);
      return String.valueOf(names);
    });

    steps.run("alterTable " + q, () -> {
      Table t = c.getTable(db, tbl);
      t.getSd().getCols().add(Build.col("added_col", "string", "added by alter"));
      t.getParameters().put("hmsbed.altered", "yes");
      c.alter_table(db, tbl, t);
      return null;
    });

    steps.run("getTable " + q, () -> {
      Table t = c.getTable(db, tbl);
      Steps.check(db.equals(t.getDbName()), "dbName " + t.getDbName() + ", want " + db);
      Steps.check(tbl.equals(t.getTableName()), "tableName " + t.getTableName());
      List<String> names = new ArrayList<>();
      for (FieldSchema f : t.getSd().getCols()) {
        names.add(f.getName());
      }
      Steps.check(names.equals(Arrays.asList("id", "name", "amount", "tags", "added_col")),
          "columns after alter: " + names);
      Steps.check("yes".equals(t.getParameters().get("hmsbed.altered")), "parameters after alter: " + t.getParameters());
      Steps.check("ddl".equals(t.getParameters().get("hmsbed.scenario")), "lost parameter: " + t.getParameters());
      Steps.check(t.getPartitionKeysSize() == 2, "partition keys " + t.getPartitionKeys());
      return t.getTableType() + " " + t.getSd().getLocation();
    });

    steps.run("getTables " + q, () -> {
      List<String> byPattern = c.getTables(db, "ddl_*");
      Steps.check(byPattern.contains(tbl), "getTables(" + db + ", ddl_*) = " + byPattern);
      List<String> all = c.getAllTables(db);
      Steps.check(all.contains(tbl), "getAllTables(" + db + ") = " + all);
      return String.valueOf(all);
    });

    steps.run("getTableMeta exact " + q, () -> {
      List<TableMeta> metas = c.getTableMeta(db, tbl, null);
      Steps.check(metas.size() == 1, "getTableMeta(" + db + ", " + tbl + ") returned " + metas.size(), String.valueOf(metas));
      TableMeta m = metas.get(0);
      Steps.check(db.equals(m.getDbName()), "TableMeta.dbName " + m.getDbName() + ", want " + db);
      Steps.check(tbl.equals(m.getTableName()), "TableMeta.tableName " + m.getTableName());
      Steps.check("MANAGED_TABLE".equals(m.getTableType()), "TableMeta.tableType " + m.getTableType());
      return String.valueOf(m);
    });

    steps.run("getTableMeta pattern " + q, () -> {
      String dbPattern = db.length() > 1 ? db.substring(0, db.length() - 1) + "*" : "*";
      List<TableMeta> metas = c.getTableMeta(dbPattern, "ddl_*", Collections.singletonList("MANAGED_TABLE"));
      for (TableMeta m : metas) {
        if (tbl.equals(m.getTableName()) && db.equals(m.getDbName())) {
          return "found with (" + dbPattern + ", ddl_*) among " + metas.size();
        }
      }
      throw new Steps.Check("getTableMeta(" + dbPattern + ", ddl_*) does not list " + q, String.valueOf(metas));
    });

    steps.run("getDatabase " + db, () -> {
      Database d = c.getDatabase(db);
      Steps.check(db.equals(d.getName()), "Database.name " + d.getName() + ", want " + db);
      Steps.check("driver".equals(d.getParameters().get("hmsbed.created-by")), "parameters " + d.getParameters());
      return d.getLocationUri();
    });
  }
}
