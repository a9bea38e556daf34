import java.util.Arrays;

import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.LockComponentBuilder;
import org.apache.hadoop.hive.metastore.LockRequestBuilder;
import org.apache.hadoop.hive.metastore.api.DataOperationType;
import org.apache.hadoop.hive.metastore.api.LockComponent;
import org.apache.hadoop.hive.metastore.api.LockRequest;
import org.apache.hadoop.hive.metastore.api.LockResponse;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;
import org.apache.hadoop.conf.Configuration;

/**
 * The lock calls of a real HiveMetaStoreClient, built the way HiveServer2's DbTxnManager and Iceberg's
 * MetastoreLock build them (LockComponentBuilder / LockRequestBuilder), through two proxy front doors (uriA, uriB)
 * whose synthetic lock shims share one ZooKeeper store.
 *
 * Usage: java -cp 'LIB/*' ShimClient.java thrift://A thrift://B DB TABLE
 * Prints one line per call: "step <name> <result>"; exits 1 on the first call that does not behave as Hive does.
 */
public class ShimClient {
  static HiveMetaStoreClient connect(String uri) throws Exception {
    Configuration conf = MetastoreConf.newMetastoreConf();
    MetastoreConf.setVar(conf, MetastoreConf.ConfVars.THRIFT_URIS, uri);
    conf.set("metastore.thrift.uri.selection", "SEQUENTIAL"); // HIVE-21508 on Java 10+
    return new HiveMetaStoreClient(conf);
  }

  static LockRequest insertLock(String db, String table, long txn, String user) {
    // what DbTxnManager asks for an INSERT into a non-ACID table (strict locking: EXCLUSIVE)
    LockComponentBuilder comp = new LockComponentBuilder();
    comp.setExclusive();
    comp.setOperationType(DataOperationType.INSERT);
    comp.setDbName(db);
    comp.setTableName(table);
    comp.setIsTransactional(false);
    LockRequestBuilder req = new LockRequestBuilder("shim-client-" + user);
    req.setTransactionId(txn).setUser(user);
    req.addLockComponent(comp.build());
    return req.build();
  }

  static LockRequest icebergLock(String db, String table) {
    // what Iceberg's MetastoreLock asks: EXCLUSIVE on the table, no transaction
    LockComponent lc = new LockComponent(org.apache.hadoop.hive.metastore.api.LockType.EXCLUSIVE,
        org.apache.hadoop.hive.metastore.api.LockLevel.TABLE, db);
    lc.setTablename(table);
    lc.setOperationType(DataOperationType.NO_TXN);
    LockRequest req = new LockRequest(Arrays.asList(lc), "iceberg", "localhost");
    return req;
  }

  static void step(String name, Object result) {
    System.out.println("step " + name + " " + result);
    System.out.flush();
  }

  static void expect(String name, Object got, Object want) {
    step(name, got);
    if (!String.valueOf(got).equals(String.valueOf(want))) {
      System.out.println("unexpected " + name + ": " + got + ", want " + want);
      Runtime.getRuntime().halt(1);
    }
  }

  static String thrown(ThrowingRunnable r) {
    try {
      r.run();
      return "no-exception";
    } catch (Exception e) {
      return e.getClass().getSimpleName();
    }
  }

  interface ThrowingRunnable {
    void run() throws Exception;
  }

  public static void main(String[] args) throws Exception {
    String db = args[2], table = args[3];
    HiveMetaStoreClient a = connect(args[0]);
    HiveMetaStoreClient b = connect(args[1]);

    long t1 = a.openTxn("alice");
    LockResponse l1 = a.lock(insertLock(db, table, t1, "alice"));
    expect("lock1", l1.getState(), "ACQUIRED");
    step("lock1-id", l1.getLockid());

    long t2 = b.openTxn("bob");
    LockResponse l2 = b.lock(insertLock(db, table, t2, "bob"));
    expect("lock2", l2.getState(), "WAITING");
    expect("check2-waiting", b.checkLock(l2.getLockid()).getState(), "WAITING");

    a.heartbeat(t1, 0); // HiveServer2's heartbeater inside a transaction
    step("heartbeat-txn", "ok");
    a.heartbeat(0, l1.getLockid());
    step("heartbeat-lock", "ok");
    expect("unlock-txn-lock", thrown(() -> a.unlock(l1.getLockid())), "TxnOpenException");

    a.commitTxn(t1);
    step("commit1", "ok");
    expect("check2-after-commit", b.checkLock(l2.getLockid()).getState(), "ACQUIRED");
    expect("check1-after-commit", thrown(() -> a.checkLock(l1.getLockid())), "NoSuchLockException");
    b.commitTxn(t2);
    step("commit2", "ok");

    LockResponse l3 = b.lock(icebergLock(db, table));
    expect("iceberg-lock", l3.getState(), "ACQUIRED");
    expect("iceberg-check-via-a", a.checkLock(l3.getLockid()).getState(), "ACQUIRED");
    a.unlock(l3.getLockid());
    step("iceberg-unlock-via-a", "ok");
    expect("iceberg-check-after-unlock", thrown(() -> b.checkLock(l3.getLockid())), "NoSuchLockException");
    expect("unknown-id", thrown(() -> b.checkLock(l3.getLockid() + 1000)), "NoSuchLockException");
    step("done", "ok");
    Runtime.getRuntime().halt(0); // the client leaves non-daemon threads behind
  }
}
