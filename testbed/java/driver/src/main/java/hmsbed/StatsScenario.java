package hmsbed;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.AggrStats;
import org.apache.hadoop.hive.metastore.api.ColumnStatistics;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsData;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsDesc;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsObj;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.LongColumnStatsData;
import org.apache.hadoop.hive.metastore.api.SetPartitionsStatsRequest;
import org.apache.hadoop.hive.metastore.api.Table;

/**
 * stats --db NAME
 *
 * <p>Column statistics through the real client, as HiveServer2's statistics tasks and ANALYZE write and read them:
 * a table and two of its partitions get statistics (updateTableColumnStatistics, updatePartitionColumnStatistics,
 * setPartitionColumnStatistics), each is read back (table, partitions, aggregate), then deleted (table level and
 * partition level) and must be gone. Hive 4 clients send engine "hive", as Hive 4 requires.
 */
final class StatsScenario implements Driver.Scenario {

  @Override
  public void run(Steps steps, Driver.Args args) throws Exception {
    final String db = args.require("db");
    final String tbl = "stats_" + Build.runId();
    final IMetaStoreClient c = Hms.open(args.require("uri"));
    final String p1 = Build.partName("2024-01-01", "eu");
    final String p2 = Build.partName("2024-01-01", "us");
    try {
      steps.run("create " + db + "." + tbl, () -> {
        c.createDatabase(Build.database(db));
        List<FieldSchema> cols = new ArrayList<>(Arrays.asList(Build.col("id", "bigint", null), Build.col("name", "string", null)));
        c.createTable(Build.partitionedTable(db, tbl, cols, Build.params("hmsbed.scenario", "stats")));
        Table t = c.getTable(db, tbl);
        c.add_partitions(Arrays.asList(Build.partition(t, Build.params(), "2024-01-01", "eu"),
            Build.partition(t, Build.params(), "2024-01-01", "us")));
        return null;
      });
      steps.run("updateTableColumnStatistics", () -> {
        Steps.check(c.updateTableColumnStatistics(stats(db, tbl, null, 100)), "returned false");
        return null;
      });
      steps.run("getTableColumnStatistics", () -> {
        List<ColumnStatisticsObj> got = Hms.tableColumnStatistics(c, db, tbl, Collections.singletonList("id"));
        Steps.check(got.size() == 1 && got.get(0).getStatsData().getLongStats().getNumDVs() == 100, "got " + got);
        return null;
      });
      steps.run("updatePartitionColumnStatistics", () -> {
        Steps.check(c.updatePartitionColumnStatistics(stats(db, tbl, p1, 10)), "returned false");
        return null;
      });
      steps.run("setPartitionColumnStatistics", () -> {
        // HiveServer2's statistics task: one request for a set of partitions, needMerge false
        SetPartitionsStatsRequest req = new SetPartitionsStatsRequest(Collections.singletonList(stats(db, tbl, p2, 20)));
        req.setNeedMerge(false);
        Hms.set(req, "setEngine", String.class, Hms.ENGINE);
        Steps.check(c.setPartitionColumnStatistics(req), "returned false");
        return null;
      });
      steps.run("getPartitionColumnStatistics", () -> {
        Map<String, List<ColumnStatisticsObj>> got = Hms.partitionColumnStatistics(c, db, tbl, Arrays.asList(p1, p2),
            Collections.singletonList("id"));
        Steps.check(got.size() == 2 && ndv(got.get(p1)) == 10 && ndv(got.get(p2)) == 20, "got " + got);
        return String.valueOf(got.keySet());
      });
      steps.run("getAggrColStatsFor", () -> {
        AggrStats a = Hms.aggrColStats(c, db, tbl, Collections.singletonList("id"), Arrays.asList(p1, p2));
        Steps.check(a.getPartsFound() == 2 && a.getColStatsSize() == 1, "got " + a);
        return "parts found " + a.getPartsFound();
      });
      steps.run("deleteTableColumnStatistics", () -> {
        Steps.check(Hms.deleteTableColumnStatistics(c, db, tbl, "id"), "returned false");
        List<ColumnStatisticsObj> got = Hms.tableColumnStatistics(c, db, tbl, Collections.singletonList("id"));
        Steps.check(got.isEmpty(), "table statistics left: " + got);
        Map<String, List<ColumnStatisticsObj>> parts = Hms.partitionColumnStatistics(c, db, tbl, Arrays.asList(p1, p2),
            Collections.singletonList("id"));
        Steps.check(parts.size() == 2, "deleting the table's statistics must keep the partitions': " + parts);
        return null;
      });
      steps.run("deletePartitionColumnStatistics", () -> {
        Steps.check(Hms.deletePartitionColumnStatistics(c, db, tbl, p1, "id"), "returned false");
        Map<String, List<ColumnStatisticsObj>> got = Hms.partitionColumnStatistics(c, db, tbl, Arrays.asList(p1, p2),
            Collections.singletonList("id"));
        Steps.check(!got.containsKey(p1) && got.containsKey(p2), "after deleting " + p1 + ": " + got);
        return null;
      });
    } finally {
      steps.attempt("dropDatabase " + db, () -> {
        c.dropDatabase(db, true, true, true);
        return null;
      });
      c.close();
    }
  }

  private static long ndv(List<ColumnStatisticsObj> l) {
    return l == null || l.isEmpty() ? -1 : l.get(0).getStatsData().getLongStats().getNumDVs();
  }

  /** Long statistics of column id; part null = table level. */
  static ColumnStatistics stats(String db, String tbl, String part, long ndv) throws Exception {
    ColumnStatisticsDesc d = new ColumnStatisticsDesc(part == null, db, tbl);
    if (part != null) {
      d.setPartName(part);
    }
    LongColumnStatsData l = new LongColumnStatsData(1, ndv);
    l.setLowValue(0);
    l.setHighValue(1000);
    ColumnStatisticsData data = new ColumnStatisticsData();
    data.setLongStats(l);
    ColumnStatistics cs = new ColumnStatistics(d, Collections.singletonList(new ColumnStatisticsObj("id", "bigint", data)));
    Hms.setEngine(cs);
    return cs;
  }
}
