package hmsbed;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.ColumnStatistics;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsObj;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;

/**
 * Opens the real HiveMetaStoreClient and hides the few call signatures that differ between Hive 3.1.3 and 4.1.0
 * (the driver sources compile against both).
 */
final class Hms {
  /** Engine name Hive 4 stores column statistics under; Hive 3 has no engine. */
  static final String ENGINE = "hive";

  private Hms() {}

  static IMetaStoreClient open(String uri) throws Exception {
    Configuration conf = MetastoreConf.newMetastoreConf();
    conf.set("metastore.thrift.uris", uri);
    // HIVE-21508: with the default RANDOM selection the 3.1.3 client fails on Java 9+ (a cast in resolveUris).
    conf.set("metastore.thrift.uri.selection", "SEQUENTIAL");
    conf.set("metastore.client.connect.retry.delay", "1s");
    conf.set("metastore.connect.retries", "2");
    conf.set("metastore.client.socket.timeout", "120s");
    for (Map.Entry<String, String> e : Security.EXTRA.entrySet()) {
      conf.set(e.getKey(), e.getValue());
    }
    return new HiveMetaStoreClient(conf);
  }

  /** The Hive release the driver was compiled against (e.g. 3.1.3 or 4.1.0). */
  static String clientVersion() {
    try {
      Class<?> c = Class.forName("org.apache.hadoop.hive.metastore.utils.MetastoreVersionInfo");
      return (String) c.getMethod("getVersion").invoke(null);
    } catch (ReflectiveOperationException e) {
      return "unknown (" + e + ")";
    }
  }

  static boolean isHive4() {
    return hasMethod(ColumnStatistics.class, "setEngine", String.class);
  }

  /** Hive 4 requires the statistics engine on every ColumnStatistics written; Hive 3 has no such field. */
  static void setEngine(ColumnStatistics cs) throws Exception {
    if (isHive4()) {
      ColumnStatistics.class.getMethod("setEngine", String.class).invoke(cs, ENGINE);
    }
  }

  @SuppressWarnings("unchecked")
  static List<ColumnStatisticsObj> tableColumnStatistics(IMetaStoreClient c, String db, String table,
      List<String> cols) throws Exception {
    if (isHive4()) {
      return (List<ColumnStatisticsObj>) call(c, "getTableColumnStatistics",
          new Class<?>[] {String.class, String.class, List.class, String.class}, db, table, cols, ENGINE);
    }
    return (List<ColumnStatisticsObj>) call(c, "getTableColumnStatistics",
        new Class<?>[] {String.class, String.class, List.class}, db, table, cols);
  }

  @SuppressWarnings("unchecked")
  static Map<String, List<ColumnStatisticsObj>> partitionColumnStatistics(IMetaStoreClient c, String db,
      String table, List<String> parts, List<String> cols) throws Exception {
    if (isHive4()) {
      return (Map<String, List<ColumnStatisticsObj>>) call(c, "getPartitionColumnStatistics",
          new Class<?>[] {String.class, String.class, List.class, List.class, String.class},
          db, table, parts, cols, ENGINE);
    }
    return (Map<String, List<ColumnStatisticsObj>>) call(c, "getPartitionColumnStatistics",
        new Class<?>[] {String.class, String.class, List.class, List.class}, db, table, parts, cols);
  }

  /** Hive 4 only: sets a field of a Thrift request by its setter (e.g. setEngine), as Hive 4's callers do. */
  static void set(Object o, String setter, Class<?> type, Object value) throws Exception {
    if (isHive4()) {
      o.getClass().getMethod(setter, type).invoke(o, value);
    }
  }

  /** Hive 4's openTxn(user, TxnType.DEFAULT) as DbTxnManager calls it; Hive 3's openTxn(user). */
  static long openTxnAsHiveServer2(IMetaStoreClient c, String user) throws Exception {
    if (isHive4()) {
      Class<?> txnType = Class.forName("org.apache.hadoop.hive.metastore.api.TxnType");
      Object def = txnType.getField("DEFAULT").get(null);
      return (Long) call(c, "openTxn", new Class<?>[] {String.class, txnType}, user, def);
    }
    return c.openTxn(user);
  }

  /** Commits as HiveServer2 4.x does (exclWriteEnabled = hive.txn.xlock.write); Hive 3: commitTxn(id). */
  static void commitTxnAsHiveServer2(IMetaStoreClient c, long txnId, boolean exclWrite) throws Exception {
    if (isHive4()) {
      Class<?> req = Class.forName("org.apache.hadoop.hive.metastore.api.CommitTxnRequest");
      Object r = req.getConstructor(long.class).newInstance(txnId);
      req.getMethod("setExclWriteEnabled", boolean.class).invoke(r, exclWrite);
      call(c, "commitTxn", new Class<?>[] {req}, r);
      return;
    }
    c.commitTxn(txnId);
  }

  static boolean deleteTableColumnStatistics(IMetaStoreClient c, String db, String table, String col) throws Exception {
    if (isHive4()) {
      return (Boolean) call(c, "deleteTableColumnStatistics",
          new Class<?>[] {String.class, String.class, String.class, String.class}, db, table, col, ENGINE);
    }
    return (Boolean) call(c, "deleteTableColumnStatistics",
        new Class<?>[] {String.class, String.class, String.class}, db, table, col);
  }

  static boolean deletePartitionColumnStatistics(IMetaStoreClient c, String db, String table, String part, String col)
      throws Exception {
    if (isHive4()) {
      return (Boolean) call(c, "deletePartitionColumnStatistics",
          new Class<?>[] {String.class, String.class, String.class, String.class, String.class}, db, table, part, col, ENGINE);
    }
    return (Boolean) call(c, "deletePartitionColumnStatistics",
        new Class<?>[] {String.class, String.class, String.class, String.class}, db, table, part, col);
  }

  static org.apache.hadoop.hive.metastore.api.AggrStats aggrColStats(IMetaStoreClient c, String db, String table,
      List<String> cols, List<String> parts) throws Exception {
    if (isHive4()) {
      return (org.apache.hadoop.hive.metastore.api.AggrStats) call(c, "getAggrColStatsFor",
          new Class<?>[] {String.class, String.class, List.class, List.class, String.class}, db, table, cols, parts, ENGINE);
    }
    return (org.apache.hadoop.hive.metastore.api.AggrStats) call(c, "getAggrColStatsFor",
        new Class<?>[] {String.class, String.class, List.class, List.class}, db, table, cols, parts);
  }

  static Object call(Object target, String name, Class<?>[] types, Object... args) throws Exception {
    Method m = IMetaStoreClient.class.getMethod(name, types);
    try {
      return m.invoke(target, args);
    } catch (InvocationTargetException e) {
      Throwable t = e.getCause();
      if (t instanceof Exception) {
        throw (Exception) t;
      }
      throw e;
    }
  }

  static boolean hasMethod(Class<?> c, String name, Class<?>... types) {
    try {
      c.getMethod(name, types);
      return true;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }
}
