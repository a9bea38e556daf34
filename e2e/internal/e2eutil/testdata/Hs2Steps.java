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
 * Runs SQL statements through HiveServer2 over Hive JDBC, one connection, each statement one line of output:
 * "ok" followed by the rows (sorted, '; '-joined) or "error <message>". A statement never stops the ones after it.
 *
 * <p>Usage: java -cp 'HS2/*:LIB/*' Hs2Steps.java JDBC_URL STATEMENT...
 */
public class Hs2Steps {
  public static void main(String[] args) throws Exception {
    Class.forName("org.apache.hive.jdbc.HiveDriver");
    try (Connection c = DriverManager.getConnection(args[0], "hive", "")) {
      for (int i = 1; i < args.length; i++) {
        String sql = args[i];
        try (Statement st = c.createStatement()) {
          if (!st.execute(sql)) {
            System.out.println("ok");
            continue;
          }
          List<String> rows = new ArrayList<>();
          try (ResultSet rs = st.getResultSet()) {
            ResultSetMetaData md = rs.getMetaData();
            while (rs.next()) {
              StringBuilder r = new StringBuilder();
              for (int j = 1; j <= md.getColumnCount(); j++) {
                if (j > 1) {
                  r.append('|');
                }
                String v = rs.getString(j);
                r.append(v == null ? "NULL" : v.trim());
              }
              rows.add(r.toString());
            }
          }
          Collections.sort(rows);
          System.out.println(rows.isEmpty() ? "ok" : "ok " + String.join("; ", rows));
        } catch (SQLException e) {
          System.out.println("error " + String.valueOf(e.getMessage()).replace('\n', ' '));
        }
        System.out.flush();
      }
    }
    Runtime.getRuntime().halt(0);
  }
}
