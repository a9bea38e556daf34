package hmsbed;

import java.io.File;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericAppenderFactory;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.hive.HiveCatalog;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.types.Types;

/**
 * iceberg --db NAME --warehouse DIR [--format parquet|avro]
 *
 * <p>Iceberg's own Hive catalog (org.apache.iceberg.hive.HiveCatalog, with its metastore locks) on the real
 * HiveMetaStoreClient of this build: create a namespace (a database located under DIR) and a table, append two
 * data files (Parquet unless --format avro) in two commits (each commit locks the table and alters it with the new metadata location),
 * read every row back through the catalog, then drop table and namespace.
 */
final class IcebergScenario implements Driver.Scenario {

  private static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "name", Types.StringType.get()));

  @Override
  public void run(Steps steps, Driver.Args args) throws Exception {
    final String db = args.require("db");
    final String warehouse = new File(args.require("warehouse")).getAbsolutePath();
    final TableIdentifier id = TableIdentifier.of(db, "ice_" + Build.runId());
    final FileFormat format = FileFormat.fromString(args.get("format") == null ? "parquet" : args.get("format"));
    // The metastore is named in the Configuration (hive.metastore.uris), not by the catalog's "uri"
    // property: Iceberg's HiveCatalog reads that property through HiveConf names Hive 4 renamed.
    Configuration conf = new Configuration();
    conf.set("hive.metastore.uris", args.require("uri"));
    conf.set("metastore.thrift.uris", args.require("uri"));
    conf.set("metastore.thrift.uri.selection", "SEQUENTIAL");
    conf.set("hive.metastore.warehouse.dir", "file:" + warehouse);
    conf.set("metastore.client.socket.timeout", "120s");
    final HiveCatalog catalog = new HiveCatalog();
    catalog.setConf(conf);
    final Table[] table = new Table[1];
    boolean created = false;
    try {
      steps.run("initialize", () -> {
        catalog.initialize("hive", Collections.<String, String>emptyMap());
        return Hms.clientVersion() + " client";
      });
      steps.run("createNamespace " + db, () -> {
        catalog.createNamespace(Namespace.of(db), Collections.singletonMap("location", "file:" + warehouse + "/" + db + ".db"));
        return null;
      });
      steps.run("createTable " + id, () -> {
        table[0] = catalog.createTable(id, SCHEMA, PartitionSpec.unpartitioned(),
            Collections.singletonMap("format-version", "2"));
        return table[0].location();
      });
      created = true;
      for (int commit = 1; commit <= 2; commit++) {
        final int n = commit;
        steps.run("append commit " + n, () -> {
          Table t = catalog.loadTable(id);
          DataFile f = write(t, format, n, (n - 1) * 10, 3);
          t.newAppend().appendFile(f).commit();
          Table again = catalog.loadTable(id);
          Steps.check(again.currentSnapshot() != null
              && again.currentSnapshot().snapshotId() == t.currentSnapshot().snapshotId(),
              "the catalog does not point at the new snapshot after commit " + n);
          return "snapshot " + again.currentSnapshot().snapshotId() + ", " + f.recordCount() + " rows";
        });
      }
      steps.run("read back", () -> {
        Table t = catalog.loadTable(id);
        TreeSet<Long> ids = new TreeSet<>();
        List<String> names = new ArrayList<>();
        try (CloseableIterable<Record> rows = IcebergGenerics.read(t).build()) {
          for (Record r : rows) {
            ids.add((Long) r.getField("id"));
            names.add((String) r.getField("name"));
          }
        }
        TreeSet<Long> want = new TreeSet<>();
        for (long i : new long[] {0, 1, 2, 10, 11, 12}) {
          want.add(i);
        }
        Steps.check(ids.equals(want) && names.size() == 6, "rows " + ids + " " + names + ", want ids " + want);
        int snapshots = 0;
        for (org.apache.iceberg.Snapshot s : t.snapshots()) {
          snapshots++;
        }
        Steps.check(snapshots == 2, snapshots + " snapshots, want 2");
        Map<String, String> props = t.properties();
        return ids.size() + " rows, " + snapshots + " snapshots, format " + props.get("format-version");
      });
    } finally {
      if (created) {
        steps.attempt("dropTable " + id, () -> {
          Steps.check(catalog.dropTable(id, true), "dropTable returned false");
          return null;
        });
      }
      steps.attempt("dropNamespace " + db, () -> {
        catalog.dropNamespace(Namespace.of(db));
        return null;
      });
      catalog.close();
    }
  }

  /** A data file of rows id = from .. from+count-1. */
  private static DataFile write(Table t, FileFormat format, int commit, long from, int count) throws Exception {
    OutputFile out = t.io().newOutputFile(t.locationProvider().newDataLocation(format.addExtension("commit-" + commit)));
    GenericAppenderFactory factory = new GenericAppenderFactory(t.schema(), t.spec());
    DataWriter<Record> w = factory.newDataWriter(
        org.apache.iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(out), format, null);
    try {
      for (long i = from; i < from + count; i++) {
        GenericRecord r = GenericRecord.create(t.schema());
        r.setField("id", i);
        r.setField("name", "row " + i);
        w.write(r);
      }
    } finally {
      w.close();
    }
    return w.toDataFile();
  }
}
