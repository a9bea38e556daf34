import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.Function;
import org.apache.hadoop.hive.metastore.api.FunctionType;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.PrincipalType;
import org.apache.hadoop.hive.metastore.api.SerDeInfo;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;

/**
 * Client sessions one after the other, as separate applications would open them: every step opens its own
 * HiveMetaStoreClient (its own connection to uri), makes one call and closes it. Compiles against the Hive 3.1.3
 * and the Hive 4.1.0 client jars.
 *
 * Usage: java -cp 'LIB/*' ClientSessions.java thrift://HOST:PORT STEP...
 * A step is "op:arg:arg..."; ops:
 *   exchange_partitions:DB:SRC:DST:PVAL   exchange_partitions({p=PVAL}, DB, SRC, DB, DST)
 *   exchange_partition:DB:SRC:DST:PVAL    exchange_partition({p=PVAL}, DB, SRC, DB, DST)
 *   create_table:DB:NAME                  create_table of a text table (a string), at the metastore's location
 *   get_table:DB:NAME                     get_table
 *   drop_table:DB:NAME                    drop_table (deleteData, not ignoreUnknownTab)
 *   add_partition:DB:NAME:PVAL            add_partition p=PVAL, storage copied from the table
 *   create_function:DB:NAME               create_function (class hmsproxy.Nothing)
 *   create_database:NAME                  create_database
 *   alter_table:DB:NAME:NEWDB:NEWNAME     the client's alter_table(DB, NAME, table) of DB.NAME as read, renamed to
 *                                         NEWDB.NEWNAME (3.1.3: alter_table_with_environment_context with "@hive#DB";
 *                                         4.1: alter_table_req)
 *   raw:RPC:DB:NAME:NEWDB:NEWNAME         the same rename sent as the RPC alter_table, alter_table_with_cascade or
 *                                         alter_table_with_environment_context by the client's own Thrift stub, DB as
 *                                         given (what Trino sends)
 * Prints one line per step: "step N OP ok [detail]" or "step N OP <ExceptionClass>: <message>", then "done".
 */
public class ClientSessions {
  static HiveMetaStoreClient connect(String uri) throws Exception {
    Configuration conf = MetastoreConf.newMetastoreConf();
    MetastoreConf.setVar(conf, MetastoreConf.ConfVars.THRIFT_URIS, uri);
    conf.set("metastore.thrift.uri.selection", "SEQUENTIAL"); // HIVE-21508 on Java 10+
    conf.set("hive.metastore.client.socket.timeout", "300");
    return new HiveMetaStoreClient(conf);
  }

  static Table textTable(String db, String name) {
    StorageDescriptor sd = new StorageDescriptor();
    sd.setCols(new ArrayList<>(Arrays.asList(new FieldSchema("a", "string", null))));
    sd.setInputFormat("org.apache.hadoop.mapred.TextInputFormat");
    sd.setOutputFormat("org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat");
    SerDeInfo serde = new SerDeInfo();
    serde.setSerializationLib("org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe");
    serde.setParameters(new HashMap<>());
    sd.setSerdeInfo(serde);
    sd.setBucketCols(new ArrayList<>());
    sd.setSortCols(new ArrayList<>());
    sd.setParameters(new HashMap<>());
    Table t = new Table();
    t.setDbName(db);
    t.setTableName(name);
    t.setOwner("hive");
    t.setTableType("MANAGED_TABLE");
    t.setSd(sd);
    t.setPartitionKeys(new ArrayList<>());
    t.setParameters(new HashMap<>());
    return t;
  }

  static String run(HiveMetaStoreClient c, String[] a) throws Exception {
    switch (a[0]) {
      case "exchange_partitions": {
        Map<String, String> spec = Collections.singletonMap("p", a[4]);
        return c.exchange_partitions(spec, a[1], a[2], a[1], a[3]).size() + " partitions";
      }
      case "exchange_partition": {
        Map<String, String> spec = Collections.singletonMap("p", a[4]);
        return String.valueOf(c.exchange_partition(spec, a[1], a[2], a[1], a[3]).getValues());
      }
      case "create_table":
        c.createTable(textTable(a[1], a[2]));
        return "";
      case "get_table":
        return c.getTable(a[1], a[2]).getTableName();
      case "drop_table":
        c.dropTable(a[1], a[2], true, false);
        return "";
      case "add_partition": {
        Table t = c.getTable(a[1], a[2]);
        Partition p = new Partition();
        p.setDbName(a[1]);
        p.setTableName(a[2]);
        p.setValues(new ArrayList<>(Arrays.asList(a[3])));
        StorageDescriptor sd = t.getSd().deepCopy();
        sd.setLocation(t.getSd().getLocation() + "/p=" + a[3]);
        p.setSd(sd);
        p.setParameters(new HashMap<>());
        c.add_partition(p);
        return "";
      }
      case "create_function": {
        Function f = new Function(a[2], a[1], "hmsproxy.Nothing", "hive", PrincipalType.USER,
            (int) (System.currentTimeMillis() / 1000), FunctionType.JAVA, new ArrayList<>());
        c.createFunction(f);
        return "";
      }
      case "create_database": {
        org.apache.hadoop.hive.metastore.api.Database d = new org.apache.hadoop.hive.metastore.api.Database();
        d.setName(a[1]);
        d.setParameters(new HashMap<>());
        c.createDatabase(d);
        return "";
      }
      case "alter_table": {
        Table t = c.getTable(a[1], a[2]);
        t.setDbName(a[3]);
        t.setTableName(a[4]);
        c.alter_table(a[1], a[2], t);
        return "";
      }
      case "raw": {
        Table t = c.getTable(a[2], a[3]);
        t.setDbName(a[4]);
        t.setTableName(a[5]);
        java.lang.reflect.Field f = HiveMetaStoreClient.class.getDeclaredField("client");
        f.setAccessible(true);
        Object stub = f.get(c);
        switch (a[1]) {
          case "alter_table":
            stub.getClass().getMethod("alter_table", String.class, String.class, Table.class).invoke(stub, a[2], a[3], t);
            break;
          case "alter_table_with_cascade":
            stub.getClass().getMethod("alter_table_with_cascade", String.class, String.class, Table.class, boolean.class)
                .invoke(stub, a[2], a[3], t, false);
            break;
          case "alter_table_with_environment_context":
            stub.getClass().getMethod("alter_table_with_environment_context", String.class, String.class, Table.class,
                org.apache.hadoop.hive.metastore.api.EnvironmentContext.class)
                .invoke(stub, a[2], a[3], t, new org.apache.hadoop.hive.metastore.api.EnvironmentContext());
            break;
          default:
            throw new IllegalArgumentException("unknown RPC " + a[1]);
        }
        return "";
      }
      default:
        throw new IllegalArgumentException("unknown op " + a[0]);
    }
  }

  public static void main(String[] args) throws Exception {
    String uri = args[0];
    for (int i = 1; i < args.length; i++) {
      String[] a = args[i].split(":", -1);
      String out;
      HiveMetaStoreClient c = connect(uri); // a new client session for every step
      try {
        String detail = run(c, a);
        out = "ok" + (detail.isEmpty() ? "" : " " + detail);
      } catch (Exception e) {
        Throwable cause = e instanceof java.lang.reflect.InvocationTargetException ? e.getCause() : e;
        out = cause.getClass().getSimpleName() + ": " + String.valueOf(cause.getMessage()).replace('\n', ' ');
      } finally {
        c.close();
      }
      System.out.println("step " + i + " " + a[0] + " " + out);
      System.out.flush();
    }
    System.out.println("done");
    System.out.flush();
    Runtime.getRuntime().halt(0); // the client leaves non-daemon threads behind
  }
}
