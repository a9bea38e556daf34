package hmsbed;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.BooleanColumnStatsData;
import org.apache.hadoop.hive.metastore.api.ColumnStatistics;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsData;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsDesc;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsObj;
import org.apache.hadoop.hive.metastore.api.DoubleColumnStatsData;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.ForeignKeysRequest;
import org.apache.hadoop.hive.metastore.api.LongColumnStatsData;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.PrimaryKeysRequest;
import org.apache.hadoop.hive.metastore.api.SQLCheckConstraint;
import org.apache.hadoop.hive.metastore.api.SQLDefaultConstraint;
import org.apache.hadoop.hive.metastore.api.SQLForeignKey;
import org.apache.hadoop.hive.metastore.api.SQLNotNullConstraint;
import org.apache.hadoop.hive.metastore.api.SQLPrimaryKey;
import org.apache.hadoop.hive.metastore.api.SQLUniqueConstraint;
import org.apache.hadoop.hive.metastore.api.SkewedInfo;
import org.apache.hadoop.hive.metastore.api.StringColumnStatsData;
import org.apache.hadoop.hive.metastore.api.Table;

/**
 * lossless --db NAME --table T --direct-uri thrift://H:P --direct-db BACKENDNAME [--keep]
 *
 * <p>Writes through --uri the metadata that is easiest to lose in transit: skewed columns with value-location maps
 * (a map keyed by lists), primary and foreign keys, table and partition parameters, table- and partition-level
 * column statistics of several types. Reads everything back through --uri and directly from --direct-uri (database
 * --direct-db) and compares field by field after normalizing only the database/catalog name fields, which
 * legitimately differ between a federated view and the backend view. Also checks the written values came back.
 */
final class LosslessScenario implements Driver.Scenario {

  private static final String[][] PARTS = {{"2024-03-01", "eu"}, {"2024-03-01", "us"}, {"2024-03-02", "eu"}};
  private static final List<String> STAT_COLS = Arrays.asList("id", "name", "amount", "flag");

  @Override
  public void run(final Steps steps, Driver.Args args) throws Exception {
    final String db = args.require("db");
    final String tbl = args.require("table").toLowerCase();
    final String parent = tbl + "_parent";
    final String directDb = args.require("direct-db");
    final boolean keep = args.flag("keep");
    final IMetaStoreClient c = Hms.open(args.require("uri"));
    final IMetaStoreClient d = Hms.open(args.require("direct-uri"));
    final boolean[] createdDb = {false};
    final boolean[] createdParent = {false};
    final boolean[] createdChild = {false};
    try {
      steps.run("database " + db, () -> {
        try {
          c.getDatabase(db);
          return "exists";
        } catch (NoSuchObjectException e) {
          c.createDatabase(Build.database(db));
          createdDb[0] = true;
          return "created";
        }
      });

      steps.run("createTableWithConstraints " + db + "." + parent, () -> {
        Table t = Build.partitionedTable(db, parent, new ArrayList<>(Arrays.asList(
            Build.col("id", "bigint", "parent key"), Build.col("label", "string", null))),
            Build.params("hmsbed.scenario", "lossless", "hmsbed.role", "parent"));
        t.setPartitionKeys(new ArrayList<FieldSchema>());
        c.createTableWithConstraints(t, Collections.singletonList(pk(db, parent, "id", parent + "_pk")),
            none(SQLForeignKey.class), none(SQLUniqueConstraint.class), none(SQLNotNullConstraint.class),
            none(SQLDefaultConstraint.class), none(SQLCheckConstraint.class));
        createdParent[0] = true;
        return null;
      });

      final Table sent = child(db, tbl);
      steps.run("createTableWithConstraints " + db + "." + tbl, () -> {
        SQLForeignKey fk = new SQLForeignKey();
        fk.setPktable_db(db);
        fk.setPktable_name(parent);
        fk.setPkcolumn_name("id");
        fk.setFktable_db(db);
        fk.setFktable_name(tbl);
        fk.setFkcolumn_name("parent_id");
        fk.setKey_seq(1);
        fk.setUpdate_rule(0);
        fk.setDelete_rule(0);
        fk.setFk_name(tbl + "_fk");
        fk.setPk_name(parent + "_pk");
        fk.setEnable_cstr(false);
        fk.setValidate_cstr(false);
        fk.setRely_cstr(true);
        c.createTableWithConstraints(sent.deepCopy(), Collections.singletonList(pk(db, tbl, "id", tbl + "_pk")),
            Collections.singletonList(fk), none(SQLUniqueConstraint.class), none(SQLNotNullConstraint.class),
            none(SQLDefaultConstraint.class), none(SQLCheckConstraint.class));
        createdChild[0] = true;
        return null;
      });

      final Map<String, Map<String, String>> sentPartParams = new HashMap<>();
      steps.run("addPartitions " + db + "." + tbl, () -> {
        Table t = c.getTable(db, tbl);
        List<Partition> ps = new ArrayList<>();
        for (int i = 0; i < PARTS.length; i++) {
          Map<String, String> params = Build.params("hmsbed.part", String.valueOf(i), "hmsbed.note", "p" + i + " ✓");
          sentPartParams.put(Build.partName(PARTS[i][0], PARTS[i][1]), params);
          ps.add(Build.partition(t, new HashMap<>(params), PARTS[i]));
        }
        return c.add_partitions(ps) + " partitions";
      });

      final List<ColumnStatisticsObj> sentTableStats = stats(0);
      steps.run("updateTableColumnStatistics", () -> {
        ColumnStatistics cs = new ColumnStatistics(new ColumnStatisticsDesc(true, db, tbl), sentTableStats);
        Hms.setEngine(cs);
        Steps.check(c.updateTableColumnStatistics(cs), "updateTableColumnStatistics returned false");
        return null;
      });

      final Map<String, List<ColumnStatisticsObj>> sentPartStats = new TreeMap<>();
      steps.run("updatePartitionColumnStatistics", () -> {
        for (int i = 0; i < 2; i++) {
          String name = Build.partName(PARTS[i][0], PARTS[i][1]);
          ColumnStatisticsDesc desc = new ColumnStatisticsDesc(false, db, tbl);
          desc.setPartName(name);
          List<ColumnStatisticsObj> objs = stats(i + 1);
          sentPartStats.put(name, byColumn(objs));
          ColumnStatistics cs = new ColumnStatistics(desc, objs);
          Hms.setEngine(cs);
          Steps.check(c.updatePartitionColumnStatistics(cs), "updatePartitionColumnStatistics returned false for " + name);
        }
        return sentPartStats.keySet().toString();
      });

      // --- what was written came back (through --uri) ---
      steps.attempt("roundtrip skewedInfo", () -> {
        SkewedInfo got = c.getTable(db, tbl).getSd().getSkewedInfo();
        List<String> diff = ThriftDiff.diff(sent.getSd().getSkewedInfo(), got, 20);
        Steps.check(diff.isEmpty(), "skewedInfo changed", String.join("; ", diff));
        return got.getSkewedColValueLocationMapsSize() + " value locations";
      });
      steps.attempt("roundtrip table parameters", () -> {
        Map<String, String> got = c.getTable(db, tbl).getParameters();
        return containsAll("table", sent.getParameters(), got);
      });
      steps.attempt("roundtrip partition parameters", () -> {
        StringBuilder b = new StringBuilder();
        for (Partition p : c.listPartitions(db, tbl, (short) -1)) {
          String name = Build.partName(p.getValues().get(0), p.getValues().get(1));
          b.append(containsAll(name, sentPartParams.get(name), p.getParameters())).append("; ");
        }
        return b.toString();
      });
      steps.attempt("roundtrip table column statistics", () -> {
        List<ColumnStatisticsObj> got = byColumn(Hms.tableColumnStatistics(c, db, tbl, STAT_COLS));
        List<String> diff = ThriftDiff.diff(byColumn(sentTableStats), got, 20);
        Steps.check(diff.isEmpty(), "table statistics changed", String.join("; ", diff));
        return got.size() + " columns";
      });
      steps.attempt("roundtrip partition column statistics", () -> {
        Map<String, List<ColumnStatisticsObj>> got = partStats(c, db, tbl);
        List<String> diff = ThriftDiff.diff(sentPartStats, got, 20);
        Steps.check(diff.isEmpty(), "partition statistics changed", String.join("; ", diff));
        return got.keySet().toString();
      });
      steps.attempt("roundtrip primary key", () -> {
        List<SQLPrimaryKey> got = c.getPrimaryKeys(new PrimaryKeysRequest(db, tbl));
        Steps.check(got.size() == 1 && "id".equals(got.get(0).getColumn_name())
            && (tbl + "_pk").equals(got.get(0).getPk_name()), "primary key " + got);
        return null;
      });
      steps.attempt("roundtrip foreign key", () -> {
        List<SQLForeignKey> got = c.getForeignKeys(new ForeignKeysRequest(null, null, db, tbl));
        Steps.check(got.size() == 1 && parent.equals(got.get(0).getPktable_name())
            && "parent_id".equals(got.get(0).getFkcolumn_name()) && got.get(0).isRely_cstr(), "foreign key " + got);
        return null;
      });

      // --- the view through --uri equals the backend's own view ---
      compare(steps, "getDatabase", db, directDb, () -> c.getDatabase(db), () -> d.getDatabase(directDb));
      compare(steps, "getTable " + tbl, db, directDb, () -> c.getTable(db, tbl), () -> d.getTable(directDb, tbl));
      compare(steps, "getTable " + parent, db, directDb, () -> c.getTable(db, parent),
          () -> d.getTable(directDb, parent));
      compare(steps, "listPartitions", db, directDb, () -> sortParts(c.listPartitions(db, tbl, (short) -1)),
          () -> sortParts(d.listPartitions(directDb, tbl, (short) -1)));
      final List<String> names = new ArrayList<>(sentPartParams.keySet());
      compare(steps, "getPartitionsByNames", db, directDb, () -> sortParts(c.getPartitionsByNames(db, tbl, names)),
          () -> sortParts(d.getPartitionsByNames(directDb, tbl, names)));
      compare(steps, "getPrimaryKeys", db, directDb, () -> c.getPrimaryKeys(new PrimaryKeysRequest(db, tbl)),
          () -> d.getPrimaryKeys(new PrimaryKeysRequest(directDb, tbl)));
      compare(steps, "getForeignKeys", db, directDb,
          () -> c.getForeignKeys(new ForeignKeysRequest(null, null, db, tbl)),
          () -> d.getForeignKeys(new ForeignKeysRequest(null, null, directDb, tbl)));
      compare(steps, "getTableColumnStatistics", db, directDb,
          () -> byColumn(Hms.tableColumnStatistics(c, db, tbl, STAT_COLS)),
          () -> byColumn(Hms.tableColumnStatistics(d, directDb, tbl, STAT_COLS)));
      compare(steps, "getPartitionColumnStatistics", db, directDb, () -> partStats(c, db, tbl),
          () -> partStats(d, directDb, tbl));
    } finally {
      if (!keep) {
        if (createdChild[0]) {
          steps.attempt("dropTable " + db + "." + tbl, () -> {
            c.dropTable(db, tbl, true, false);
            return null;
          });
        }
        if (createdParent[0]) {
          steps.attempt("dropTable " + db + "." + parent, () -> {
            c.dropTable(db, parent, true, false);
            return null;
          });
        }
        if (createdDb[0]) {
          steps.attempt("dropDatabase " + db, () -> {
            c.dropDatabase(db, true, false, false);
            return null;
          });
        }
      }
      c.close();
      d.close();
    }
  }

  /** One step: the --uri view (names must be db) equals the direct view (names must be directDb). */
  private interface Fetch {
    Object get() throws Exception;
  }

  private static void compare(Steps steps, String what, final String db, final String directDb, final Fetch viaUri,
      final Fetch direct) {
    steps.attempt("compare " + what, () -> {
      List<String> odd = new ArrayList<>();
      Object a = ThriftDiff.normalize(viaUri.get(), db, odd);
      Object b = ThriftDiff.normalize(direct.get(), directDb, odd);
      Steps.check(odd.isEmpty(), "unexpected database names", String.join("; ", odd));
      List<String> diff = ThriftDiff.diff(a, b, 20);
      Steps.check(diff.isEmpty(), what + " differs (via --uri != direct)", String.join("; ", diff));
      Steps.check(a.equals(b), what + " differs (Thrift equals) with no field difference found");
      return null;
    });
  }

  private static Table child(String db, String tbl) {
    Table t = Build.partitionedTable(db, tbl, new ArrayList<>(Arrays.asList(
        Build.col("id", "bigint", "key"),
        Build.col("parent_id", "bigint", "references the parent"),
        Build.col("name", "string", "skewed column"),
        Build.col("amount", "double", null),
        Build.col("flag", "boolean", "a flag"))),
        Build.params("hmsbed.scenario", "lossless", "hmsbed.role", "child", "hmsbed.unicode", "naïve ✓",
            "hmsbed.empty", ""));
    SkewedInfo skew = new SkewedInfo();
    skew.setSkewedColNames(new ArrayList<>(Collections.singletonList("name")));
    List<List<String>> values = new ArrayList<>();
    Map<List<String>, String> locations = new HashMap<>();
    for (String v : new String[] {"alpha", "beta"}) {
      values.add(new ArrayList<>(Collections.singletonList(v)));
      locations.put(new ArrayList<>(Collections.singletonList(v)), "file:/tmp/hmsbed-skew/" + tbl + "/name=" + v);
    }
    skew.setSkewedColValues(values);
    skew.setSkewedColValueLocationMaps(locations);
    t.getSd().setSkewedInfo(skew);
    t.getSd().setStoredAsSubDirectories(true);
    return t;
  }

  private static SQLPrimaryKey pk(String db, String tbl, String col, String name) {
    SQLPrimaryKey k = new SQLPrimaryKey();
    k.setTable_db(db);
    k.setTable_name(tbl);
    k.setColumn_name(col);
    k.setKey_seq(1);
    k.setPk_name(name);
    k.setEnable_cstr(false);
    k.setValidate_cstr(false);
    k.setRely_cstr(true);
    return k;
  }

  private static <T> List<T> none(Class<T> c) {
    return new ArrayList<>();
  }

  /** Column statistics of four types; seed makes table and partition values differ. */
  private static List<ColumnStatisticsObj> stats(int seed) {
    List<ColumnStatisticsObj> out = new ArrayList<>();
    LongColumnStatsData l = new LongColumnStatsData(seed, 100 + seed);
    l.setLowValue(-7 - seed);
    l.setHighValue(1_000_000L + seed);
    out.add(new ColumnStatisticsObj("id", "bigint", ColumnStatisticsData.longStats(l)));
    out.add(new ColumnStatisticsObj("name", "string",
        ColumnStatisticsData.stringStats(new StringColumnStatsData(12 + seed, 5.5 + seed, 1 + seed, 50 + seed))));
    DoubleColumnStatsData dd = new DoubleColumnStatsData(2 + seed, 40 + seed);
    dd.setLowValue(-1.5 - seed);
    dd.setHighValue(99.25 + seed);
    out.add(new ColumnStatisticsObj("amount", "double", ColumnStatisticsData.doubleStats(dd)));
    out.add(new ColumnStatisticsObj("flag", "boolean",
        ColumnStatisticsData.booleanStats(new BooleanColumnStatsData(10 + seed, 5 + seed, seed))));
    return out;
  }

  private static Map<String, List<ColumnStatisticsObj>> partStats(IMetaStoreClient c, String db, String tbl)
      throws Exception {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      names.add(Build.partName(PARTS[i][0], PARTS[i][1]));
    }
    Map<String, List<ColumnStatisticsObj>> out = new TreeMap<>();
    for (Map.Entry<String, List<ColumnStatisticsObj>> e
        : Hms.partitionColumnStatistics(c, db, tbl, names, STAT_COLS).entrySet()) {
      out.put(e.getKey(), byColumn(e.getValue()));
    }
    return out;
  }

  private static List<ColumnStatisticsObj> byColumn(List<ColumnStatisticsObj> in) {
    List<ColumnStatisticsObj> out = new ArrayList<>(in);
    Collections.sort(out, new Comparator<ColumnStatisticsObj>() {
      @Override
      public int compare(ColumnStatisticsObj a, ColumnStatisticsObj b) {
        return a.getColName().compareTo(b.getColName());
      }
    });
    return out;
  }

  private static List<Partition> sortParts(List<Partition> in) {
    List<Partition> out = new ArrayList<>(in);
    Collections.sort(out, new Comparator<Partition>() {
      @Override
      public int compare(Partition a, Partition b) {
        return String.valueOf(a.getValues()).compareTo(String.valueOf(b.getValues()));
      }
    });
    return out;
  }

  private static String containsAll(String what, Map<String, String> sent, Map<String, String> got)
      throws Steps.Check {
    List<String> lost = new ArrayList<>();
    for (Map.Entry<String, String> e : sent.entrySet()) {
      String v = got == null ? null : got.get(e.getKey());
      if (!e.getValue().equals(v)) {
        lost.add(e.getKey() + "=" + e.getValue() + " came back as " + v);
      }
    }
    Steps.check(lost.isEmpty(), what + " parameters changed", String.join("; ", lost));
    return what + ": " + sent.size() + " parameters kept";
  }
}
