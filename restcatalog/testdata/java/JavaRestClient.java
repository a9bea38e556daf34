// Drives hms-proxy's Iceberg REST frontend with Iceberg's own Java client
// (org.apache.iceberg.rest.RESTCatalog, as Spark and Trino embed it): catalog
// operations only (the client's FileIO is in memory, the server writes the
// metadata files). Run as a source file:
//   java -cp <jars> JavaRestClient.java <uri> <namespace> <location>
// Prints one JSON object with what it observed.

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;

public class JavaRestClient {
  static RESTCatalog catalog(String uri, String warehouse) {
    Map<String, String> props = new HashMap<>();
    props.put("uri", uri);
    if (warehouse != null) {
      props.put("warehouse", warehouse);
    }
    props.put("io-impl", "org.apache.iceberg.inmemory.InMemoryFileIO");
    RESTCatalog cat = new RESTCatalog();
    cat.initialize("java", props);
    return cat;
  }

  public static void main(String[] args) throws Exception {
    String uri = args[0], ns = args[1], location = args[2];
    Map<String, Object> out = new LinkedHashMap<>();
    RESTCatalog cat = catalog(uri, null);
    Namespace n = Namespace.of(ns);
    cat.createNamespace(n, new HashMap<>(Map.of("location", location)));
    out.put("namespace_exists", cat.namespaceExists(n));

    Schema schema =
        new Schema(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.optional(2, "day", Types.DateType.get()));
    TableIdentifier a = TableIdentifier.of(n, "a"), b = TableIdentifier.of(n, "b");
    cat.createTable(a, schema, PartitionSpec.builderFor(schema).month("day").build(), new HashMap<>(Map.of("k", "v")));
    cat.createTable(b, schema);
    Table ta = cat.loadTable(a);
    out.put("a_partition_fields", ta.spec().fields().size());
    out.put("a_property_k", ta.properties().get("k"));

    ta.updateSchema().addColumn("note", Types.StringType.get()).commit();
    List<String> cols = new ArrayList<>();
    cat.loadTable(a).schema().columns().forEach(c -> cols.add(c.name()));
    out.put("a_columns", cols);

    // Two handles on b: the stale one's commit meets a 409, and the Java
    // client refreshes and retries by itself.
    Table b1 = cat.loadTable(b), b2 = cat.loadTable(b);
    b1.updateProperties().set("first", "1").commit();
    b2.updateProperties().set("second", "2").commit();
    Map<String, String> bp = cat.loadTable(b).properties();
    out.put("b_first_and_second", bp.get("first") + "," + bp.get("second"));

    // A multi-table transaction.
    TableMetadata baseA = ((BaseTable) cat.loadTable(a)).operations().current();
    TableMetadata baseB = ((BaseTable) cat.loadTable(b)).operations().current();
    cat.commitTransaction(
        TableCommit.create(a, baseA, TableMetadata.buildFrom(baseA).setProperties(new HashMap<>(Map.of("txn", "1"))).build()),
        TableCommit.create(b, baseB, TableMetadata.buildFrom(baseB).setProperties(new HashMap<>(Map.of("txn", "1"))).build()));
    out.put("txn", cat.loadTable(a).properties().get("txn") + "," + cat.loadTable(b).properties().get("txn"));

    // A view.
    cat.buildView(TableIdentifier.of(n, "v"))
            .withSchema(schema)
            .withDefaultNamespace(n)
            .withQuery("spark", "SELECT id FROM a")
            .create();
    out.put("view_sql", cat.loadView(TableIdentifier.of(n, "v")).sqlFor("spark").sql());
    out.put("views", cat.listViews(n).size());

    cat.renameTable(b, TableIdentifier.of(n, "b2"));
    List<String> tables = new ArrayList<>();
    cat.listTables(n).forEach(t -> tables.add(t.name()));
    tables.sort(null);
    out.put("tables", tables);
    try {
      cat.loadTable(TableIdentifier.of(n, "missing"));
      out.put("missing", "loaded");
    } catch (NoSuchTableException e) {
      out.put("missing", "NoSuchTableException");
    }

    // A catalog without writer isolation: the client reads the endpoints.
    RESTCatalog other = catalog(uri, "catalog2");
    try {
      other.createNamespace(Namespace.of(ns));
      out.put("catalog2_write", "done");
    } catch (Exception e) {
      out.put("catalog2_write", e.getClass().getSimpleName());
    }
    out.put("catalog2_lists", other.listNamespaces().size() > 0);

    cat.dropView(TableIdentifier.of(n, "v"));
    cat.dropTable(a, false);
    cat.dropTable(TableIdentifier.of(n, "b2"), false);
    cat.dropNamespace(n);
    out.put("namespace_exists_after_drop", cat.namespaceExists(n));
    cat.close();
    other.close();
    System.out.println(new ObjectMapper().writeValueAsString(out));
  }
}
