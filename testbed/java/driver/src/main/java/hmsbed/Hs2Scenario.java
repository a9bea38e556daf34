package hmsbed;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.hive.common.StatsSetupConst;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.LockComponentBuilder;
import org.apache.hadoop.hive.metastore.LockRequestBuilder;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsObj;
import org.apache.hadoop.hive.metastore.api.DataOperationType;
import org.apache.hadoop.hive.metastore.api.EnvironmentContext;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.LockComponent;
import org.apache.hadoop.hive.metastore.api.LockRequest;
import org.apache.hadoop.hive.metastore.api.LockResponse;
import org.apache.hadoop.hive.metastore.api.LockState;
import org.apache.hadoop.hive.metastore.api.LockType;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.SetPartitionsStatsRequest;
import org.apache.hadoop.hive.metastore.api.Table;

/**
 * hs2 --db NAME
 *
 * <p>The metastore calls HiveServer2 makes (DbTxnManager with hive.txn.xlock.write=true, Hive.java's MoveTask and
 * statistics tasks) for
 * <pre>
 *   CREATE TABLE t (id bigint, name string) PARTITIONED BY (ds string, region string);
 *   INSERT INTO t PARTITION (ds='2024-01-01', region='eu') VALUES ...;   -- a new static partition
 *   INSERT INTO t PARTITION (ds, region) SELECT ...;                      -- dynamic partitions
 *   SELECT * FROM t WHERE ds = '2024-01-01';
 * </pre>
 * replayed with the real client API in HiveServer2's order: open a transaction, take its locks, add the
 * partitions, write basic and column statistics, commit; for the query, lock for reading, read the table, its
 * partitions and statistics, commit; and a DDL lock taken and released without a transaction.
 */
final class Hs2Scenario implements Driver.Scenario {

  private static final String USER = "hive";

  @Override
  public void run(Steps steps, Driver.Args args) throws Exception {
    final String db = args.require("db");
    final String tbl = "hs2_" + Build.runId();
    final IMetaStoreClient c = Hms.open(args.require("uri"));
    final String query = "hmsbed_" + Build.runId();
    try {
      steps.run("CREATE TABLE", () -> {
        c.createDatabase(Build.database(db));
        c.getDatabase(db);
        Steps.check(!c.tableExists(db, tbl), "table exists before CREATE");
        List<FieldSchema> cols = new ArrayList<>(Arrays.asList(Build.col("id", "bigint", null), Build.col("name", "string", null)));
        c.createTable(Build.partitionedTable(db, tbl, cols, Build.params("hmsbed.scenario", "hs2")));
        return null;
      });

      steps.run("INSERT static partition", () -> {
        long txn = Hms.openTxnAsHiveServer2(c, USER);
        c.getValidTxns(txn);
        long lock = lock(c, txn, query + "-1", new LockComponentBuilder().setDbName(db).setTableName(tbl)
            .setExclusive().setOperationType(DataOperationType.INSERT).setIsTransactional(false).build());
        c.heartbeat(txn, lock);
        Table t = c.getTable(db, tbl);
        List<String> vals = Arrays.asList("2024-01-01", "eu");
        try {
          c.getPartitionWithAuthInfo(db, tbl, vals, USER, Collections.<String>emptyList());
          throw new Steps.Check("partition exists before the INSERT", null);
        } catch (NoSuchObjectException expected) {
          // MoveTask adds it
        }
        Partition p = Build.partition(t, Build.params(), "2024-01-01", "eu");
        c.add_partition(p);
        basicStats(c, db, tbl, Collections.singletonList(c.getPartition(db, tbl, vals)), 2);
        columnStats(c, db, tbl, Build.partName("2024-01-01", "eu"), 2);
        Hms.commitTxnAsHiveServer2(c, txn, true);
        return "txn " + txn + ", lock " + lock;
      });

      steps.run("INSERT dynamic partitions", () -> {
        long txn = Hms.openTxnAsHiveServer2(c, USER);
        c.getValidTxns(txn);
        long lock = lock(c, txn, query + "-2", new LockComponentBuilder().setDbName(db).setTableName(tbl)
            .setExclusive().setOperationType(DataOperationType.INSERT).setIsTransactional(false)
            .setIsDynamicPartitionWrite(true).build());
        Table t = c.getTable(db, tbl);
        List<Partition> added = c.add_partitions(Arrays.asList(Build.partition(t, Build.params(), "2024-01-01", "us"),
            Build.partition(t, Build.params(), "2024-01-02", "eu")), true, true);
        Steps.check(added.size() == 2, "add_partitions returned " + added);
        basicStats(c, db, tbl, c.getPartitionsByNames(db, tbl, Arrays.asList(Build.partName("2024-01-01", "us"),
            Build.partName("2024-01-02", "eu"))), 3);
        columnStats(c, db, tbl, Build.partName("2024-01-01", "us"), 3);
        Hms.commitTxnAsHiveServer2(c, txn, true);
        return "lock " + lock;
      });

      steps.run("SELECT", () -> {
        long txn = Hms.openTxnAsHiveServer2(c, USER);
        c.getValidTxns(txn);
        lock(c, txn, query + "-3", sharedRead(new LockComponentBuilder().setDbName(db).setTableName(tbl)
            .setPartitionName(Build.partName("2024-01-01", "eu")).setExclusive()
            .setOperationType(DataOperationType.SELECT).setIsTransactional(false).build()));
        Table t = c.getTable(db, tbl);
        Steps.check(t.getPartitionKeysSize() == 2, "partition keys " + t.getPartitionKeys());
        List<String> names = c.listPartitionNames(db, tbl, (short) -1);
        Steps.check(names.size() == 3, "partitions " + names);
        List<String> day = new ArrayList<>();
        for (String n : names) {
          if (n.startsWith("ds=2024-01-01/")) {
            day.add(n);
          }
        }
        List<Partition> ps = c.getPartitionsByNames(db, tbl, day);
        Steps.check(ps.size() == 2, "pruned partitions " + ps);
        long rows = 0;
        for (Partition p : ps) {
          rows += Long.parseLong(p.getParameters().getOrDefault(StatsSetupConst.ROW_COUNT, "0"));
        }
        Steps.check(rows == 5, "row counts of the pruned partitions add up to " + rows + ", want 5");
        Map<String, List<ColumnStatisticsObj>> cs = Hms.partitionColumnStatistics(c, db, tbl, day,
            Collections.singletonList("id"));
        Steps.check(cs.size() == 2, "column statistics of the pruned partitions: " + cs);
        Hms.aggrColStats(c, db, tbl, Collections.singletonList("id"), day);
        Hms.commitTxnAsHiveServer2(c, txn, true);
        return rows + " rows in " + day;
      });

      steps.run("DDL lock without a transaction", () -> {
        LockRequest req = new LockRequestBuilder(query + "-4").setUser(USER)
            .addLockComponent(sharedRead(new LockComponentBuilder().setDbName(db).setTableName(tbl).setExclusive()
                .setOperationType(DataOperationType.NO_TXN).build())).build();
        Hms.set(req, "setZeroWaitReadEnabled", boolean.class, false);
        LockResponse r = c.lock(req);
        Steps.check(r.getState() == LockState.ACQUIRED, "lock state " + r.getState());
        c.unlock(r.getLockid());
        return "lock " + r.getLockid();
      });
    } finally {
      steps.attempt("dropDatabase " + db, () -> {
        c.dropDatabase(db, true, true, true);
        return null;
      });
      c.close();
    }
  }

  /** A SHARED_READ component (the builders of Hive 3 and 4 name that setter differently). */
  private static LockComponent sharedRead(LockComponent lc) {
    lc.setType(LockType.SHARED_READ);
    return lc;
  }

  /** DbTxnManager.acquireLocks with hive.txn.xlock.write=true: zero-wait reads and exclusive CTAS off. */
  private static long lock(IMetaStoreClient c, long txn, String query, LockComponent... comps) throws Exception {
    LockRequestBuilder b = new LockRequestBuilder(query).setTransactionId(txn).setUser(USER);
    for (LockComponent lc : comps) {
      b.addLockComponent(lc);
    }
    LockRequest req = b.build();
    Hms.set(req, "setExclusiveCTAS", boolean.class, false);
    Hms.set(req, "setZeroWaitReadEnabled", boolean.class, false);
    LockResponse r = c.lock(req);
    for (int i = 0; r.getState() == LockState.WAITING && i < 50; i++) {
      Thread.sleep(100);
      r = c.checkLock(r.getLockid());
    }
    Steps.check(r.getState() == LockState.ACQUIRED, "lock " + r.getLockid() + " is " + r.getState());
    return r.getLockid();
  }

  /** BasicStatsTask: the new row counts, written with DO_NOT_UPDATE_STATS so the metastore keeps them. */
  private static void basicStats(IMetaStoreClient c, String db, String tbl, List<Partition> parts, long rows)
      throws Exception {
    for (Partition p : parts) {
      p.getParameters().put(StatsSetupConst.ROW_COUNT, String.valueOf(rows));
      p.getParameters().put(StatsSetupConst.NUM_FILES, "1");
      p.getParameters().put(StatsSetupConst.STATS_GENERATED, StatsSetupConst.TASK);
    }
    EnvironmentContext env = new EnvironmentContext();
    env.putToProperties(StatsSetupConst.DO_NOT_UPDATE_STATS, StatsSetupConst.TRUE);
    c.alter_partitions(db, tbl, parts, env);
  }

  /** The column statistics task for the new partition (one request, needMerge false for a new partition). */
  private static void columnStats(IMetaStoreClient c, String db, String tbl, String part, long ndv) throws Exception {
    SetPartitionsStatsRequest req = new SetPartitionsStatsRequest(
        Collections.singletonList(StatsScenario.stats(db, tbl, part, ndv)));
    req.setNeedMerge(false);
    Hms.set(req, "setEngine", String.class, Hms.ENGINE);
    Steps.check(c.setPartitionColumnStatistics(req), "setPartitionColumnStatistics returned false");
  }
}
