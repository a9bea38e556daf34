package hmsbed;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * hs2sql --jdbc jdbc:hive2://HOST:PORT/default --db NAME [--db-location DIR] [--acid-db NAME]
 *
 * <p>A SQL session of a HiveServer2 user over Hive JDBC: the statements an operator runs after upgrading HiveServer2,
 * each one step. HiveServer2 (a real one, started by the test bed with the metastore under test as its
 * hive.metastore.uris) turns them into metastore calls; the driver never talks to the metastore itself.
 *
 * <p>Every step is attempted (a failed one does not stop the session), and its detail is the statement's answer in a
 * stable rendering (rows sorted, the database names replaced by $DB and $ACID; "(no rows)" for a result set without
 * rows, nothing for a statement without a result set), so that two runs — directly to a metastore and through
 * hms-proxy — can be compared step by step. Statements that change data are followed by a read
 * that shows what they changed, so a statement that failed after writing shows in the next step.
 *
 * <p>The first part runs in a session with HiveServer2's defaults (DummyTxnManager); one INSERT then runs with
 * DbTxnManager and its default locks; the transactional part, in --acid-db (default: --db), runs in a session with
 * DbTxnManager (hive.support.concurrency=true) and hive.txn.xlock.write=true, as a Hive 4 deployment with ACID
 * tables on older metastores is configured.
 */
final class Hs2SqlScenario implements Driver.Scenario {

  private static final String DB_TXN_MANAGER = "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager";

  /** The detail of a result set without rows; a statement without a result set has none. */
  static final String NO_ROWS = "(no rows)";

  @Override
  public void run(Steps steps, Driver.Args args) throws Exception {
    final String jdbc = args.require("jdbc");
    final String db = args.require("db");
    final String acid = args.get("acid-db") == null ? db : args.get("acid-db");
    Class.forName("org.apache.hive.jdbc.HiveDriver");
    final Session s = new Session(steps, db, acid);
    try (Connection c = DriverManager.getConnection(withConf(jdbc, "hive.exec.dynamic.partition.mode=nonstrict"), "hive", "")) {
      s.c = c;
      String location = args.get("db-location") == null ? "" : " LOCATION '" + args.get("db-location") + "'";
      s.sql("CREATE DATABASE", "CREATE DATABASE " + db + location);
      s.sql("SHOW DATABASES LIKE", "SHOW DATABASES LIKE '" + db + "'");
      s.sql("CREATE TABLE managed", "CREATE TABLE " + db + ".managed (id int, name string)");
      s.sql("CREATE EXTERNAL TABLE", "CREATE EXTERNAL TABLE " + db + ".ext (id int, name string)");
      s.sql("CREATE TABLE partitioned", "CREATE TABLE " + db + ".part (id int, name string) PARTITIONED BY (ds string)");
      s.sql("SHOW TABLES", "SHOW TABLES IN " + db);
      s.sql("INSERT managed", "INSERT INTO " + db + ".managed VALUES (1, 'a'), (2, 'b'), (3, 'c')");
      s.sql("SELECT managed", "SELECT id, name FROM " + db + ".managed");
      // answered from the statistics the INSERT wrote: wrong statistics show as a wrong count
      s.sql("SET compute.query.using.stats", "SET hive.compute.query.using.stats=true");
      s.sql("COUNT managed from statistics", "SELECT count(*) FROM " + db + ".managed");
      s.sql("INSERT external", "INSERT INTO " + db + ".ext VALUES (10, 'x'), (11, 'y')");
      s.sql("COUNT external", "SELECT count(*) FROM " + db + ".ext");
      s.sql("INSERT static partition", "INSERT INTO " + db + ".part PARTITION (ds='2024-01-01') VALUES (1, 'p1')");
      s.sql("INSERT dynamic partition", "INSERT INTO " + db + ".part PARTITION (ds) VALUES (2, 'p2', '2024-01-02'), (3, 'p3', '2024-01-02')");
      s.sql("SHOW PARTITIONS", "SHOW PARTITIONS " + db + ".part");
      s.sql("SELECT partition", "SELECT id, name, ds FROM " + db + ".part WHERE ds = '2024-01-02'");
      s.sql("COUNT partitioned from statistics", "SELECT count(*) FROM " + db + ".part");
      s.sql("ANALYZE table", "ANALYZE TABLE " + db + ".managed COMPUTE STATISTICS");
      s.sql("ANALYZE columns", "ANALYZE TABLE " + db + ".managed COMPUTE STATISTICS FOR COLUMNS");
      s.sql("ANALYZE partition columns", "ANALYZE TABLE " + db + ".part PARTITION (ds='2024-01-01') COMPUTE STATISTICS FOR COLUMNS");
      s.sql("column statistics", "DESCRIBE FORMATTED " + db + ".managed id");
      s.sql("CTAS", "CREATE TABLE " + db + ".ctas AS SELECT id, name FROM " + db + ".managed WHERE id > 1");
      s.sql("SELECT ctas", "SELECT id, name FROM " + db + ".ctas");
      s.sql("ADD COLUMNS", "ALTER TABLE " + db + ".managed ADD COLUMNS (extra string)");
      s.sql("DESCRIBE", "DESCRIBE " + db + ".managed");
      s.sql("ADD PARTITION", "ALTER TABLE " + db + ".part ADD PARTITION (ds='2024-01-03')");
      s.sql("DROP PARTITION", "ALTER TABLE " + db + ".part DROP PARTITION (ds='2024-01-01')");
      s.sql("SHOW PARTITIONS after drop", "SHOW PARTITIONS " + db + ".part");
      s.sql("SELECT after DROP PARTITION", "SELECT id, ds FROM " + db + ".part");
      s.sql("CREATE VIEW", "CREATE VIEW " + db + ".v AS SELECT id FROM " + db + ".managed WHERE id < 3");
      s.sql("SELECT view", "SELECT id FROM " + db + ".v");
      s.sql("JOIN", "SELECT m.id, c.name FROM " + db + ".managed m JOIN " + db + ".ctas c ON m.id = c.id");
      s.sql("SHOW TABLES again", "SHOW TABLES IN " + db);
    }
    // HiveServer2's default locks (hive.txn.xlock.write=false) ask the metastore to fail a read lock instead of
    // waiting, which Hive 3.1.3 cannot: through hms-proxy such a statement is refused before it writes anything.
    String txnDefault = withConf(jdbc, "hive.support.concurrency=true", "hive.txn.manager=" + DB_TXN_MANAGER);
    try (Connection c = DriverManager.getConnection(txnDefault, "hive", "")) {
      s.c = c;
      s.sql("default locks INSERT", "INSERT INTO " + db + ".managed VALUES (9, 'z', 'z')");
      s.sql("SELECT after default locks INSERT", "SELECT id, name FROM " + db + ".managed WHERE id = 9");
    }
    String txn = withConf(jdbc, "hive.support.concurrency=true", "hive.txn.manager=" + DB_TXN_MANAGER,
        "hive.exec.dynamic.partition.mode=nonstrict", "hive.txn.xlock.write=true");
    try (Connection c = DriverManager.getConnection(txn, "hive", "")) {
      s.c = c;
      if (!acid.equals(db)) {
        s.sql("CREATE DATABASE for ACID", "CREATE DATABASE " + acid);
      }
      s.sql("DbTxnManager INSERT", "INSERT INTO " + db + ".managed VALUES (4, 'd', 'e')");
      s.sql("DbTxnManager SELECT", "SELECT id, name, extra FROM " + db + ".managed");
      s.sql("CREATE TABLE insert-only", "CREATE TABLE " + acid + ".io (id int) TBLPROPERTIES ('transactional'='true', 'transactional_properties'='insert_only')");
      s.sql("INSERT insert-only", "INSERT INTO " + acid + ".io VALUES (1), (2)");
      s.sql("SELECT insert-only", "SELECT id FROM " + acid + ".io");
      s.sql("CREATE TABLE ACID", "CREATE TABLE " + acid + ".acid (id int, v string) STORED AS ORC TBLPROPERTIES ('transactional'='true')");
      s.sql("INSERT ACID", "INSERT INTO " + acid + ".acid VALUES (1, 'a'), (2, 'b')");
      s.sql("UPDATE ACID", "UPDATE " + acid + ".acid SET v = 'c' WHERE id = 1");
      s.sql("DELETE ACID", "DELETE FROM " + acid + ".acid WHERE id = 2");
      s.sql("SELECT ACID", "SELECT id, v FROM " + acid + ".acid");
      s.sql("SHOW TRANSACTIONS", "SHOW TRANSACTIONS");
      s.sql("SHOW LOCKS", "SHOW LOCKS");
      s.sql("DROP TABLE insert-only", "DROP TABLE " + acid + ".io");
      s.sql("DROP TABLE ACID", "DROP TABLE " + acid + ".acid");
      if (!acid.equals(db)) {
        s.sql("DROP DATABASE for ACID", "DROP DATABASE " + acid + " CASCADE");
      }
    }
    try (Connection c = DriverManager.getConnection(jdbc, "hive", "")) {
      s.c = c;
      s.sql("DROP VIEW", "DROP VIEW " + db + ".v");
      s.sql("DROP TABLE ctas", "DROP TABLE " + db + ".ctas");
      s.sql("DROP TABLE external", "DROP TABLE " + db + ".ext");
      s.sql("DROP TABLE partitioned", "DROP TABLE " + db + ".part");
      s.sql("DROP TABLE managed", "DROP TABLE " + db + ".managed");
      s.sql("SHOW TABLES after drops", "SHOW TABLES IN " + db);
      s.sql("DROP DATABASE", "DROP DATABASE " + db + " CASCADE");
      s.sql("SHOW DATABASES after drop", "SHOW DATABASES LIKE '" + db + "'");
    }
  }

  /** Adds hive_conf_list entries (after '?') to a Hive JDBC URL. */
  static String withConf(String url, String... kv) {
    StringBuilder b = new StringBuilder(url);
    b.append(url.contains("?") ? ";" : "?");
    b.append(String.join(";", kv));
    return b.toString();
  }

  /** One JDBC connection at a time; every statement is one step. */
  private static final class Session {
    final Steps steps;
    final String db;
    final String acid;
    Connection c;

    Session(Steps steps, String db, String acid) {
      this.steps = steps;
      this.db = db;
      this.acid = acid;
    }

    void sql(String name, String sql) {
      steps.attempt(name, () -> {
        try (Statement st = c.createStatement()) {
          if (!st.execute(sql)) {
            return null;
          }
          try (ResultSet rs = st.getResultSet()) {
            return render(sql, rs);
          }
        } catch (SQLException e) {
          throw new Steps.Check(sql + ": " + e.getMessage(), null);
        }
      });
    }

    /** The answer, stable across runs: names of this session replaced, volatile columns summarized. */
    String render(String sql, ResultSet rs) throws SQLException {
      ResultSetMetaData md = rs.getMetaData();
      List<String> rows = new ArrayList<>();
      int open = 0;
      int locks = 0;
      while (rs.next()) {
        if (sql.equals("SHOW TRANSACTIONS")) {
          // only the state counts: ids and times differ from run to run
          if ("OPEN".equalsIgnoreCase(trim(rs.getString(2)))) {
            open++;
          }
          continue;
        }
        if (sql.equals("SHOW LOCKS")) {
          String dbName = trim(rs.getString(2));
          if (dbName.equalsIgnoreCase(db) || dbName.equalsIgnoreCase(acid)) {
            locks++;
          }
          continue;
        }
        StringBuilder r = new StringBuilder();
        for (int i = 1; i <= md.getColumnCount(); i++) {
          if (i > 1) {
            r.append('|');
          }
          r.append(trim(rs.getString(i)));
        }
        rows.add(r.toString());
      }
      if (sql.equals("SHOW TRANSACTIONS")) {
        return "open transactions: " + open;
      }
      if (sql.equals("SHOW LOCKS")) {
        return "locks on the scenario's databases: " + locks;
      }
      if (rows.isEmpty()) {
        // an answer without rows, told apart from a statement that has no result set (detail "")
        return NO_ROWS;
      }
      // rows sorted here, not by ORDER BY: a plain SELECT is then a fetch task, not a MapReduce job
      Collections.sort(rows);
      String out = String.join("; ", rows);
      if (!acid.equals(db)) {
        out = out.replace(acid, "$ACID");
      }
      return out.replace(db, "$DB");
    }

    static String trim(String s) {
      return s == null ? "NULL" : s.trim();
    }
  }
}
