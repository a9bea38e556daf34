// Clients of a replicated hms-proxy as Hive runs them: each thread has its own
// RetryingMetaStoreClient (hive.metastore.failure.retries, a reconnect and a
// retry after a transport failure), connected through the load balancer.
//
//   java -cp 'hive-3.1.3-jars/*' RetryingClients.java URI THREADS LOCKDB LOCKTABLE GOFILE STOPFILE
//
// 1. A client takes a synthetic lock (SHARED_READ on LOCKDB.LOCKTABLE, a table of a non-default catalog: the
//    proxy's lock shim holds it in ZooKeeper) and prints "step lockid N".
// 2. THREADS reader threads call get_all_databases, get_database("default") and get_database(LOCKDB) until
//    STOPFILE exists.
// 3. When GOFILE exists (the test has killed a replica meanwhile), the lock's client checks, heart-beats and
//    unlocks it: the retrying client reconnects through the balancer to a surviving replica.
// 4. When STOPFILE exists: "step calls C failures F", then "step done ok" when nothing failed. A failure is a
//    call that threw to the caller after Hive's own retries.
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.RetryingMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.DataOperationType;
import org.apache.hadoop.hive.metastore.api.LockComponent;
import org.apache.hadoop.hive.metastore.api.LockLevel;
import org.apache.hadoop.hive.metastore.api.LockRequest;
import org.apache.hadoop.hive.metastore.api.LockResponse;
import org.apache.hadoop.hive.metastore.api.LockState;
import org.apache.hadoop.hive.metastore.api.LockType;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;

public class RetryingClients {
  static IMetaStoreClient open(String uri) throws Exception {
    Configuration conf = MetastoreConf.newMetastoreConf();
    conf.set("metastore.thrift.uris", uri);
    conf.set("metastore.thrift.uri.selection", "SEQUENTIAL"); // HIVE-21508 on Java 9+
    conf.set("hive.metastore.failure.retries", "10");
    conf.set("metastore.failure.retries", "10");
    conf.set("metastore.client.connect.retry.delay", "1s");
    conf.set("metastore.connect.retries", "5");
    conf.set("metastore.client.socket.timeout", "60s");
    return RetryingMetaStoreClient.getProxy(conf, true);
  }

  static void step(String s) {
    synchronized (System.out) {
      System.out.println("step " + s);
      System.out.flush();
    }
  }

  static void waitFor(String file) throws InterruptedException {
    long deadline = System.currentTimeMillis() + 300_000;
    while (!Files.exists(Paths.get(file))) {
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException(file + " did not appear within 300 s");
      }
      Thread.sleep(20);
    }
  }

  public static void main(String[] a) throws Exception {
    String uri = a[0];
    int threads = Integer.parseInt(a[1]);
    String lockDb = a[2], lockTable = a[3], goFile = a[4], stopFile = a[5];
    AtomicLong calls = new AtomicLong(), failures = new AtomicLong();

    IMetaStoreClient locker = open(uri);
    LockComponent comp = new LockComponent(LockType.SHARED_READ, LockLevel.TABLE, lockDb);
    comp.setTablename(lockTable);
    comp.setOperationType(DataOperationType.SELECT);
    List<LockComponent> comps = new ArrayList<>();
    comps.add(comp);
    LockRequest req = new LockRequest(comps, "ha-test", "localhost");
    LockResponse lr = locker.lock(req);
    step("lockid " + lr.getLockid() + " " + lr.getState());

    List<Thread> ts = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      Thread t = new Thread(() -> {
        try {
          IMetaStoreClient c = open(uri);
          while (!Files.exists(Paths.get(stopFile))) {
            try {
              c.getAllDatabases();
              c.getDatabase("default");
              c.getDatabase(lockDb);
              calls.addAndGet(3);
            } catch (Exception e) {
              failures.incrementAndGet();
              step("failure " + e);
            }
          }
          c.close();
        } catch (Exception e) {
          failures.incrementAndGet();
          step("failure opening a client: " + e);
        }
      });
      t.start();
      ts.add(t);
    }
    step("ready");

    waitFor(goFile);
    LockResponse cl = locker.checkLock(lr.getLockid());
    step("check_lock " + cl.getState());
    locker.heartbeat(0, lr.getLockid());
    step("heartbeat ok");
    locker.unlock(lr.getLockid());
    step("unlock ok");
    locker.close();

    for (Thread t : ts) {
      t.join();
    }
    step("calls " + calls.get() + " failures " + failures.get());
    if (failures.get() == 0 && cl.getState() == LockState.ACQUIRED) {
      step("done ok");
    }
  }
}
