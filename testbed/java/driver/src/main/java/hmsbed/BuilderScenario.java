package hmsbed;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.client.builder.DatabaseBuilder;
import org.apache.hadoop.hive.metastore.client.builder.PartitionBuilder;
import org.apache.hadoop.hive.metastore.client.builder.TableBuilder;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;

/**
 * builder --db NAME
 *
 * <p>Objects made with the client library's own builders, as tools and Hive's own tests make them: a database
 * (Hive 4's DatabaseBuilder always sets createTime and the database type), a partitioned table and a partition,
 * read back and dropped.
 */
final class BuilderScenario implements Driver.Scenario {

  @Override
  public void run(Steps steps, Driver.Args args) throws Exception {
    final String db = args.require("db");
    final IMetaStoreClient c = Hms.open(args.require("uri"));
    final Configuration conf = MetastoreConf.newMetastoreConf();
    try {
      steps.run("create database (DatabaseBuilder)", () -> {
        new DatabaseBuilder().setName(db).addParam("hmsbed.scenario", "builder").create(c, conf);
        Database got = c.getDatabase(db);
        Steps.check(db.equals(got.getName()) && "builder".equals(got.getParameters().get("hmsbed.scenario")),
            "database read back as " + got);
        return got.getName();
      });
      steps.run("create table (TableBuilder)", () -> {
        new TableBuilder().setDbName(db).setTableName("t").addCol("id", "int").addCol("name", "string")
            .addPartCol("ds", "string").create(c, conf);
        Table t = c.getTable(db, "t");
        Steps.check(t.getPartitionKeys().size() == 1 && t.getSd().getCols().size() == 2, "table read back as " + t);
        return t.getTableName();
      });
      steps.run("add partition (PartitionBuilder)", () -> {
        Table t = c.getTable(db, "t");
        new PartitionBuilder().inTable(t).addValue("2024-01-01").addToTable(c, conf);
        Partition p = c.getPartition(db, "t", java.util.Collections.singletonList("2024-01-01"));
        return String.join("/", p.getValues());
      });
    } finally {
      steps.attempt("drop database cascade", () -> {
        c.dropDatabase(db, true, true, true);
        return null;
      });
      c.close();
    }
  }
}
