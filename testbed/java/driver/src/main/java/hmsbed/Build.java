package hmsbed;

import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.SerDeInfo;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;

/** Builders for the metastore objects the scenarios create. */
final class Build {
  private static final SecureRandom RANDOM = new SecureRandom();

  private Build() {}

  /** A short lower-case token that makes object names unique per run (HMS lower-cases names). */
  static String runId() {
    return Long.toString(System.currentTimeMillis(), 36) + Integer.toString(RANDOM.nextInt(36 * 36 * 36), 36);
  }

  static Map<String, String> params(String... kv) {
    Map<String, String> m = new HashMap<>();
    for (int i = 0; i + 1 < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  static Database database(String name) {
    Database d = new Database();
    d.setName(name);
    d.setDescription("hms-proxy test bed database");
    d.setParameters(params("hmsbed.created-by", "driver"));
    return d;
  }

  static FieldSchema col(String name, String type, String comment) {
    return new FieldSchema(name, type, comment);
  }

  static StorageDescriptor textStorage(List<FieldSchema> cols) {
    StorageDescriptor sd = new StorageDescriptor();
    sd.setCols(cols);
    sd.setInputFormat("org.apache.hadoop.mapred.TextInputFormat");
    sd.setOutputFormat("org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat");
    SerDeInfo serde = new SerDeInfo();
    serde.setName("hmsbed");
    serde.setSerializationLib("org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe");
    serde.setParameters(params("serialization.format", "1", "field.delim", ","));
    sd.setSerdeInfo(serde);
    sd.setCompressed(false);
    sd.setNumBuckets(-1);
    sd.setBucketCols(new ArrayList<String>());
    sd.setSortCols(new ArrayList<org.apache.hadoop.hive.metastore.api.Order>());
    sd.setParameters(params("sd.param", "kept"));
    return sd;
  }

  /** A managed text table partitioned by two string columns. */
  static Table partitionedTable(String db, String name, List<FieldSchema> cols, Map<String, String> params) {
    Table t = new Table();
    t.setDbName(db);
    t.setTableName(name);
    t.setOwner("hmsbed");
    t.setCreateTime((int) (System.currentTimeMillis() / 1000));
    t.setRetention(0);
    t.setSd(textStorage(cols));
    t.setPartitionKeys(new ArrayList<>(Arrays.asList(
        col("ds", "string", "day"), col("region", "string", "region code"))));
    t.setParameters(params);
    t.setTableType("MANAGED_TABLE");
    return t;
  }

  static Partition partition(Table t, Map<String, String> params, String... values) {
    Partition p = new Partition();
    p.setDbName(t.getDbName());
    p.setTableName(t.getTableName());
    p.setValues(new ArrayList<>(Arrays.asList(values)));
    StorageDescriptor sd = t.getSd().deepCopy();
    sd.unsetLocation();
    p.setSd(sd);
    p.setParameters(params);
    int now = (int) (System.currentTimeMillis() / 1000);
    p.setCreateTime(now);
    p.setLastAccessTime(now);
    return p;
  }

  /** Hive's partition name for the two partition keys of partitionedTable. */
  static String partName(String ds, String region) {
    return "ds=" + ds + "/region=" + region;
  }
}
