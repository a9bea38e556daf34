import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * A Hive JDBC session of one user: connects to HiveServer2 as USER (the JDBC user property, as beeline -n USER does)
 * and runs each statement, printing one line per statement: "ok" and the rows' first columns, '; '-joined, or
 * "error <message>". A failed statement does not stop the ones after it.
 *
 * <p>Usage: java -cp CLASSPATH Hs2As.java JDBC_URL USER STATEMENT...
 */
public class Hs2As {
  public static void main(String[] args) throws Exception {
    Class.forName("org.apache.hive.jdbc.HiveDriver");
    try (Connection c = DriverManager.getConnection(args[0], args[1], "")) {
      for (int i = 2; i < args.length; i++) {
        try (Statement st = c.createStatement()) {
          if (!st.execute(args[i])) {
            System.out.println("ok");
            continue;
          }
          List<String> rows = new ArrayList<>();
          try (ResultSet rs = st.getResultSet()) {
            while (rs.next()) {
              String v = rs.getString(1);
              rows.add(v == null ? "NULL" : v.trim());
            }
          }
          System.out.println(("ok " + String.join("; ", rows)).trim());
        } catch (SQLException e) {
          System.out.println("error " + String.valueOf(e.getMessage()).replace('\n', ' '));
        }
        System.out.flush();
      }
    }
    Runtime.getRuntime().halt(0);
  }
}
