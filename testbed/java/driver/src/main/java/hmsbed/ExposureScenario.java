package hmsbed;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.ColumnStatistics;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsData;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsDesc;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsObj;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.Function;
import org.apache.hadoop.hive.metastore.api.FunctionType;
import org.apache.hadoop.hive.metastore.api.LockComponent;
import org.apache.hadoop.hive.metastore.api.LockLevel;
import org.apache.hadoop.hive.metastore.api.LockRequest;
import org.apache.hadoop.hive.metastore.api.LockType;
import org.apache.hadoop.hive.metastore.api.LongColumnStatsData;
import org.apache.hadoop.hive.metastore.api.PrimaryKeysRequest;
import org.apache.hadoop.hive.metastore.api.PrincipalType;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.api.TableMeta;

/**
 * exposure --secret-db S --pub-db P --hidden-table H --visible-table V --secret-table T [--refusal TEXT]
 *
 * <p>Objects hms-proxy's exposure rules hide, through the real client: database S (with table T) and table P.H do
 * not exist for it. Every call aimed at one fails with the exception the client throws for a missing object, its
 * text naming the object as the client does; lists leave them out; P.V stays readable. Nothing is created or
 * changed: the caller compares the metastores before and after.
 *
 * <p>With --refusal the same calls meet a catalog whose access mode refuses writes (nothing hidden): every write
 * fails with an exception whose text contains TEXT, every read succeeds.
 */
final class ExposureScenario implements Driver.Scenario {

  /** A call expected to fail. */
  interface Call {
    void run() throws Exception;
  }

  private String refusal;

  /**
   * Runs a call that must fail with one of the classes (simple names) and a message naming what; with --refusal, a
   * read must succeed and a write fail naming the refusal.
   */
  private void expect(Steps steps, String step, boolean read, String what, Call call, String... classes) {
    if (refusal != null) {
      steps.attempt(step, () -> {
        try {
          call.run();
        } catch (Exception e) {
          Steps.check(!read && String.valueOf(e.getMessage()).contains(refusal),
              (read ? "a read failed: " : "want a refusal naming " + refusal + ", got ") + e);
          return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
        Steps.check(read, "a write succeeded; want a refusal naming " + refusal);
        return "read";
      });
      return;
    }
    steps.attempt(step, () -> {
      try {
        call.run();
      } catch (Exception e) {
        String name = e.getClass().getSimpleName();
        boolean known = Arrays.asList(classes).contains(name);
        Steps.check(known && String.valueOf(e.getMessage()).contains(what),
            "want " + Arrays.toString(classes) + " naming " + what + ", got " + name + ": " + e.getMessage());
        return name + ": " + e.getMessage();
      }
      throw new Steps.Check("succeeded; want " + Arrays.toString(classes) + " naming " + what, null);
    });
  }

  @Override
  public void run(Steps steps, Driver.Args args) throws Exception {
    final String s = args.require("secret-db");
    final String p = args.require("pub-db");
    final String h = args.require("hidden-table");
    final String v = args.require("visible-table");
    final String st = args.require("secret-table");
    refusal = args.get("refusal");
    final IMetaStoreClient c = Hms.open(args.require("uri"));
    final String hidden = p + "." + h;
    final Table visible = c.getTable(p, v);
    steps.run("getTable " + p + "." + v, () -> visible.getTableName());

    expect(steps, "getDatabase hidden", true, s, () -> c.getDatabase(s), "NoSuchObjectException");
    expect(steps, "getTable hidden", true, hidden, () -> c.getTable(p, h), "NoSuchObjectException");
    expect(steps, "getTable in a hidden database", true, s, () -> c.getTable(s, st), "NoSuchObjectException");
    expect(steps, "getTableObjectsByName hidden database", true, s,
        () -> c.getTableObjectsByName(s, Collections.singletonList(st)), "UnknownDBException");
    expect(steps, "listPartitions hidden", true, hidden, () -> c.listPartitions(p, h, (short) -1),
        "NoSuchObjectException", "MetaException");
    expect(steps, "getPrimaryKeys hidden", true, hidden, () -> c.getPrimaryKeys(new PrimaryKeysRequest(p, h)),
        "NoSuchObjectException", "MetaException");
    expect(steps, "dropDatabase cascade", false, s, () -> c.dropDatabase(s, true, false, true),
        "NoSuchObjectException");
    expect(steps, "dropTable hidden", false, hidden, () -> c.dropTable(p, h, true, false), "NoSuchObjectException");
    expect(steps, "dropTable in a hidden database", false, s, () -> c.dropTable(s, st, true, false),
        "NoSuchObjectException");
    expect(steps, "alter_table hidden", false, hidden, () -> {
      Table t = visible.deepCopy();
      t.setTableName(h);
      t.getParameters().put("altered", "yes");
      c.alter_table(p, h, t);
    }, "InvalidOperationException");
    expect(steps, "alter_table rename onto a hidden name", false, p + ".hid_new", () -> {
      Table t = visible.deepCopy();
      t.setTableName("hid_new");
      c.alter_table(p, v, t);
    }, "MetaException", "InvalidOperationException");
    expect(steps, "createTable in a hidden database", false, s, () -> c.createTable(copyTo(visible, s, "t_new")),
        "NoSuchObjectException");
    expect(steps, "createTable of a hidden name", false, p + ".hid_new",
        () -> c.createTable(copyTo(visible, p, "hid_new")), "MetaException");
    expect(steps, "createDatabase of a hidden name", false, s + "_2",
        () -> c.createDatabase(Build.database(s + "_2")), "MetaException");
    expect(steps, "alterDatabase hidden", false, s, () -> {
      Database d = Build.database(s);
      d.setDescription("altered");
      c.alterDatabase(s, d);
    }, "NoSuchObjectException");
    // (Hive 4's client reads the table first)
    expect(steps, "truncateTable hidden", false, hidden, () -> c.truncateTable(p, h, null), "MetaException",
        "NoSuchObjectException");
    expect(steps, "add_partition hidden", false, hidden, () -> {
      Table t = copyTo(visible, p, h);
      c.add_partition(Build.partition(t, Build.params(), "2"));
    }, "MetaException", "InvalidObjectException");
    expect(steps, "dropPartition in a hidden database", false, s,
        () -> c.dropPartition(s, st, new ArrayList<>(Collections.singletonList("1")), true), "NoSuchObjectException");
    expect(steps, "createFunction in a hidden database", false, s, () -> {
      Function f = new Function();
      f.setDbName(s);
      f.setFunctionName("f2");
      f.setClassName("hmsbed.F");
      f.setOwnerName("hmsbed");
      f.setOwnerType(PrincipalType.USER);
      f.setFunctionType(FunctionType.JAVA);
      f.setCreateTime((int) (System.currentTimeMillis() / 1000));
      f.setResourceUris(new ArrayList<>());
      c.createFunction(f);
    }, "NoSuchObjectException");
    expect(steps, "updateTableColumnStatistics hidden", false, hidden, () -> {
      ColumnStatisticsDesc desc = new ColumnStatisticsDesc(true, p, h);
      LongColumnStatsData l = new LongColumnStatsData(1, 9);
      ColumnStatisticsObj o = new ColumnStatisticsObj("id", "bigint", ColumnStatisticsData.longStats(l));
      ColumnStatistics cs = new ColumnStatistics(desc, new ArrayList<>(Collections.singletonList(o)));
      Hms.setEngine(cs);
      c.updateTableColumnStatistics(cs);
    }, "NoSuchObjectException");
    expect(steps, "lock EXCLUSIVE hidden", false, hidden, () -> {
      LockComponent comp = new LockComponent(LockType.EXCLUSIVE, LockLevel.TABLE, p);
      comp.setTablename(h);
      c.lock(new LockRequest(new ArrayList<>(Collections.singletonList(comp)), "hmsbed", "localhost"));
    }, "TApplicationException");

    if (refusal != null) {
      return;
    }
    steps.attempt("lists leave the hidden objects out", () -> {
      List<String> all = c.getAllTables(p);
      Steps.check(all.equals(Collections.singletonList(v)), "getAllTables(" + p + ") = " + all);
      List<String> some = c.getTables(p, "*");
      Steps.check(some.equals(Collections.singletonList(v)), "getTables(" + p + ", *) = " + some);
      List<Table> objs = c.getTableObjectsByName(p, Arrays.asList(v, h));
      Steps.check(objs.size() == 1 && objs.get(0).getTableName().equals(v), "getTableObjectsByName = " + objs);
      List<String> dbs = c.getAllDatabases();
      Steps.check(!dbs.contains(s) && dbs.contains(p), "getAllDatabases = " + dbs);
      List<TableMeta> metas = c.getTableMeta(p, "*", null);
      Steps.check(metas.size() == 1 && metas.get(0).getTableName().equals(v), "getTableMeta = " + metas);
      return String.valueOf(all);
    });
  }

  /** The visible table's definition under another name. */
  private static Table copyTo(Table visible, String db, String name) {
    Table t = visible.deepCopy();
    t.setDbName(db);
    t.setTableName(name);
    t.getSd().unsetLocation();
    t.setParameters(Build.params());
    List<FieldSchema> cols = t.getSd().getCols();
    t.getSd().setCols(cols);
    return t;
  }
}
