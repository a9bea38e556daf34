package hmsbed;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;

import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.AlreadyExistsException;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;

/**
 * addparts --db NAME
 *
 * <p>add_partitions in the forms HiveServer2 and Spark use: with results, with ifNotExists (existing partitions
 * skipped, only new ones returned), without results, and a duplicate without ifNotExists (AlreadyExistsException).
 * Every partition keeps its own column list and parameters.
 */
final class AddPartsScenario implements Driver.Scenario {

  @Override
  public void run(Steps steps, Driver.Args args) throws Exception {
    final String db = args.require("db");
    final String tbl = "parts_" + Build.runId();
    final IMetaStoreClient c = Hms.open(args.require("uri"));
    final Table[] t = new Table[1];
    try {
      steps.run("create " + db + "." + tbl, () -> {
        c.createDatabase(Build.database(db));
        List<FieldSchema> cols = new ArrayList<>(Arrays.asList(Build.col("id", "bigint", null), Build.col("v", "string", null)));
        c.createTable(Build.partitionedTable(db, tbl, cols, Build.params("hmsbed.scenario", "addparts")));
        t[0] = c.getTable(db, tbl);
        return null;
      });
      steps.run("add_partitions needResults", () -> {
        List<Partition> got = c.add_partitions(Arrays.asList(part(t[0], "a", "1"), part(t[0], "b", "1")), false, true);
        Steps.check(got != null && got.size() == 2, "returned " + got);
        for (Partition p : got) {
          Steps.check(db.equals(p.getDbName()) && p.getSd().getColsSize() == 2, "returned partition " + p);
        }
        return names(got);
      });
      steps.run("add_partitions ifNotExists needResults", () -> {
        List<Partition> got = c.add_partitions(Arrays.asList(part(t[0], "a", "2"), part(t[0], "c", "1")), true, true);
        Steps.check(got != null && got.size() == 1 && got.get(0).getValues().get(0).equals("c"),
            "only the new partition must come back: " + got);
        return names(got);
      });
      steps.run("add_partitions without results", () -> {
        List<Partition> got = c.add_partitions(Arrays.asList(part(t[0], "d", "1")), false, false);
        Steps.check(got == null || got.isEmpty(), "needResults=false returned " + got);
        return null;
      });
      steps.run("add_partitions duplicate", () -> {
        try {
          c.add_partitions(Arrays.asList(part(t[0], "d", "9")), false, true);
        } catch (AlreadyExistsException expected) {
          return expected.getMessage();
        }
        throw new Steps.Check("adding an existing partition without ifNotExists must fail", null);
      });
      steps.run("listPartitions", () -> {
        List<Partition> ps = c.listPartitions(db, tbl, (short) -1);
        TreeSet<String> got = new TreeSet<>();
        for (Partition p : ps) {
          Steps.check(p.getSd().getColsSize() == 2, "partition " + p.getValues() + " lost its columns: " + p.getSd().getCols());
          Steps.check(p.getParameters().get("hmsbed.part") != null, "partition " + p.getValues() + " lost its parameters");
          got.add(p.getValues().get(0) + "/" + p.getParameters().get("hmsbed.part"));
        }
        Steps.check(got.equals(new TreeSet<>(Arrays.asList("a/1", "b/1", "c/1", "d/1"))), "partitions " + got);
        return String.valueOf(got);
      });
    } finally {
      steps.attempt("dropDatabase " + db, () -> {
        c.dropDatabase(db, true, true, true);
        return null;
      });
      c.close();
    }
  }

  /** Partition ds=day, region=eu; parameter hmsbed.part=mark. */
  private static Partition part(Table t, String day, String mark) {
    return Build.partition(t, Build.params("hmsbed.part", mark), day, "eu");
  }

  private static String names(List<Partition> ps) {
    List<String> out = new ArrayList<>();
    for (Partition p : ps) {
      out.add(String.valueOf(p.getValues()));
    }
    return String.valueOf(out);
  }
}
