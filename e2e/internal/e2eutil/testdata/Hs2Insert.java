import java.util.Arrays;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.LockComponentBuilder;
import org.apache.hadoop.hive.metastore.LockRequestBuilder;
import org.apache.hadoop.hive.metastore.api.DataOperationType;
import org.apache.hadoop.hive.metastore.api.LockRequest;
import org.apache.hadoop.hive.metastore.api.LockResponse;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;

/**
 * HiveServer2's metastore calls for "INSERT INTO db.t PARTITION (p='N') VALUES (...)" into a non-ACID table, made
 * with a real HiveMetaStoreClient the way DbTxnManager makes them (LockRequestBuilder / LockComponentBuilder),
 * through two proxy front doors (uriA, uriB) that share one lock store: open_txns, lock (EXCLUSIVE on the target
 * under strict locking, SHARED_READ on Hive's _dummy_database._dummy_table source), check_lock, heartbeat, the write
 * (add_partition), commit_txn, which releases the lock; a second writer through the other front door waits until
 * then.
 *
 * Usage: java -cp 'LIB/*' Hs2Insert.java thrift://A thrift://B DB TABLE
 * Prints one line per call: "step <name> <result>"; "unexpected ..." and exit 1 when a call does not behave as
 * HiveServer2 needs.
 */
public class Hs2Insert {
  static HiveMetaStoreClient connect(String uri) throws Exception {
    Configuration conf = MetastoreConf.newMetastoreConf();
    MetastoreConf.setVar(conf, MetastoreConf.ConfVars.THRIFT_URIS, uri);
    conf.set("metastore.thrift.uri.selection", "SEQUENTIAL"); // HIVE-21508 on Java 10+
    return new HiveMetaStoreClient(conf);
  }

  /** DbTxnManager's lock request of an INSERT ... VALUES into a non-ACID table. */
  static LockRequest insertLock(String db, String table, long txn, String user) {
    LockComponentBuilder target = new LockComponentBuilder();
    target.setExclusive(); // hive.txn.strict.locking.mode=true (the default)
    target.setOperationType(DataOperationType.INSERT);
    target.setDbName(db);
    target.setTableName(table);
    target.setIsTransactional(false);
    LockComponentBuilder dummy = new LockComponentBuilder();
    dummy.setShared();
    dummy.setOperationType(DataOperationType.SELECT);
    dummy.setDbName("_dummy_database");
    dummy.setTableName("_dummy_table");
    dummy.setIsTransactional(false);
    LockRequestBuilder req = new LockRequestBuilder("hs2-insert-" + user);
    req.setTransactionId(txn).setUser(user);
    req.addLockComponent(dummy.build());
    req.addLockComponent(target.build());
    return req.build();
  }

  static void step(String name, Object result) {
    System.out.println("step " + name + " " + result);
    System.out.flush();
  }

  static void expect(String name, Object got, Object want) {
    step(name, got);
    if (!String.valueOf(got).equals(String.valueOf(want))) {
      System.out.println("unexpected " + name + ": " + got + ", want " + want);
      System.out.flush();
      Runtime.getRuntime().halt(1);
    }
  }

  public static void main(String[] args) throws Exception {
    String db = args[2], table = args[3];
    HiveMetaStoreClient a = connect(args[0]);
    HiveMetaStoreClient b = connect(args[1]);

    long txn = a.openTxn("hive");
    step("open_txns", txn);
    LockResponse lock = a.lock(insertLock(db, table, txn, "hive"));
    expect("lock", lock.getState(), "ACQUIRED");
    step("lockid", lock.getLockid());
    expect("check_lock", a.checkLock(lock.getLockid()).getState(), "ACQUIRED");

    long other = b.openTxn("bob");
    LockResponse waiting = b.lock(insertLock(db, table, other, "bob"));
    expect("second-writer-lock", waiting.getState(), "WAITING");

    a.heartbeat(txn, 0); // DbTxnManager's heartbeater: the transaction, lock id 0
    step("heartbeat", "ok");

    Table t = a.getTable(db, table);
    Partition p = new Partition();
    p.setDbName(db);
    p.setTableName(table);
    p.setValues(Arrays.asList("1"));
    StorageDescriptor sd = t.getSd().deepCopy();
    sd.setLocation(t.getSd().getLocation() + "/p=1");
    p.setSd(sd);
    a.add_partition(p);
    step("add_partition", "ok");

    expect("second-writer-before-commit", b.checkLock(waiting.getLockid()).getState(), "WAITING");
    a.commitTxn(txn);
    step("commit_txn", "ok");
    expect("second-writer-after-commit", b.checkLock(waiting.getLockid()).getState(), "ACQUIRED");
    b.rollbackTxn(other);
    step("abort_txn", "ok");

    List<String> parts = b.listPartitionNames(db, table, (short) -1);
    expect("partitions", parts, "[p=1]");
    step("done", "ok");
    Runtime.getRuntime().halt(0); // the client leaves non-daemon threads behind
  }
}
