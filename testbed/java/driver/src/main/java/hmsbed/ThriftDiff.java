package hmsbed;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.thrift.TBase;
import org.apache.thrift.TFieldIdEnum;

/**
 * Field-by-field handling of Thrift objects through their generated metadata (works with the Thrift runtime of
 * either Hive version): normalizing the names that legitimately differ between a federated view and the backend view,
 * and a readable difference report.
 */
final class ThriftDiff {
  /** Fields that carry a database name. */
  static final Set<String> DB_FIELDS = new HashSet<>(Arrays.asList(
      "dbName", "db_name", "dbname", "table_db", "pktable_db", "fktable_db", "parent_db_name"));
  /** Fields that carry a catalog name. */
  static final Set<String> CAT_FIELDS = new HashSet<>(Arrays.asList("catName", "cat_name", "catalogName"));

  static final String DB = "<db>";
  static final String CAT = "<cat>";

  private ThriftDiff() {}

  /**
   * Returns a copy of o where every database-name field equal to db becomes "&lt;db&gt;" and every catalog-name field
   * becomes "&lt;cat&gt;". Database-name fields holding any other value are left alone and listed in unexpected as
   * "path=value", so a wrongly mapped name still shows up.
   */
  static Object normalize(Object o, String db, List<String> unexpected) {
    return normalize(o, db, unexpected, "");
  }

  @SuppressWarnings({"rawtypes", "unchecked"})
  private static Object normalize(Object o, String db, List<String> unexpected, String path) {
    if (o instanceof TBase) {
      TBase copy = ((TBase) o).deepCopy();
      for (TFieldIdEnum f : fields(copy)) {
        if (!copy.isSet(f)) {
          continue;
        }
        String name = f.getFieldName();
        Object v = copy.getFieldValue(f);
        String p = path.isEmpty() ? name : path + "." + name;
        boolean dbField = DB_FIELDS.contains(name) || (copy instanceof Database && name.equals("name"));
        if (v instanceof String && dbField) {
          if (db.equals(v)) {
            copy.setFieldValue(f, DB);
          } else {
            unexpected.add(p + "=" + v);
          }
        } else if (v instanceof String && CAT_FIELDS.contains(name)) {
          copy.setFieldValue(f, CAT);
        } else {
          copy.setFieldValue(f, normalize(v, db, unexpected, p));
        }
      }
      return copy;
    }
    if (o instanceof List) {
      List out = new ArrayList();
      int i = 0;
      for (Object e : (List) o) {
        out.add(normalize(e, db, unexpected, path + "[" + i++ + "]"));
      }
      return out;
    }
    if (o instanceof Set) {
      Set out = new LinkedHashSet();
      for (Object e : (Set) o) {
        out.add(normalize(e, db, unexpected, path + "{}"));
      }
      return out;
    }
    if (o instanceof Map) {
      Map out = new LinkedHashMap();
      for (Object e : ((Map) o).entrySet()) {
        Map.Entry en = (Map.Entry) e;
        out.put(normalize(en.getKey(), db, unexpected, path + "{key}"),
            normalize(en.getValue(), db, unexpected, path + "[" + en.getKey() + "]"));
      }
      return out;
    }
    return o;
  }

  /** The differences between a and b as "path: a-value != b-value" lines (at most max). */
  static List<String> diff(Object a, Object b, int max) {
    List<String> out = new ArrayList<>();
    diff(a, b, "", out, max);
    return out;
  }

  @SuppressWarnings({"rawtypes", "unchecked"})
  private static void diff(Object a, Object b, String path, List<String> out, int max) {
    if (out.size() >= max) {
      return;
    }
    if (a == null || b == null) {
      if (a != b) {
        out.add(where(path) + ": " + show(a) + " != " + show(b));
      }
      return;
    }
    if (a instanceof TBase && a.getClass() == b.getClass()) {
      TBase ta = (TBase) a;
      TBase tb = (TBase) b;
      for (TFieldIdEnum f : fields(ta)) {
        String p = path.isEmpty() ? f.getFieldName() : path + "." + f.getFieldName();
        boolean sa = ta.isSet(f);
        boolean sb = tb.isSet(f);
        if (sa != sb) {
          out.add(p + ": " + (sa ? show(ta.getFieldValue(f)) : "unset") + " != "
              + (sb ? show(tb.getFieldValue(f)) : "unset"));
        } else if (sa) {
          diff(ta.getFieldValue(f), tb.getFieldValue(f), p, out, max);
        }
      }
      return;
    }
    if (a instanceof List && b instanceof List) {
      List la = (List) a;
      List lb = (List) b;
      if (la.size() != lb.size()) {
        out.add(where(path) + ": " + la.size() + " elements != " + lb.size() + " elements: " + show(la) + " != " + show(lb));
        return;
      }
      for (int i = 0; i < la.size(); i++) {
        diff(la.get(i), lb.get(i), path + "[" + i + "]", out, max);
      }
      return;
    }
    if (a instanceof Map && b instanceof Map) {
      Map ma = (Map) a;
      Map mb = (Map) b;
      Set keys = new TreeSet(new java.util.Comparator<Object>() {
        @Override
        public int compare(Object x, Object y) {
          return String.valueOf(x).compareTo(String.valueOf(y));
        }
      });
      keys.addAll(ma.keySet());
      keys.addAll(mb.keySet());
      for (Object k : keys) {
        String p = path + "[" + k + "]";
        if (!ma.containsKey(k)) {
          out.add(p + ": missing != " + show(mb.get(k)));
        } else if (!mb.containsKey(k)) {
          out.add(p + ": " + show(ma.get(k)) + " != missing");
        } else {
          diff(ma.get(k), mb.get(k), p, out, max);
        }
        if (out.size() >= max) {
          return;
        }
      }
      return;
    }
    if (!a.equals(b)) {
      out.add(where(path) + ": " + show(a) + " != " + show(b));
    }
  }

  private static String where(String path) {
    return path.isEmpty() ? "(value)" : path;
  }

  private static String show(Object o) {
    String s = String.valueOf(o);
    return s.length() > 300 ? s.substring(0, 300) + "..." : s;
  }

  /** The generated _Fields constants of a Thrift struct or union. */
  private static TFieldIdEnum[] fields(TBase<?, ?> o) {
    try {
      Class<?> c = Class.forName(o.getClass().getName() + "$_Fields", true, o.getClass().getClassLoader());
      return (TFieldIdEnum[]) c.getEnumConstants();
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("no Thrift field metadata for " + o.getClass().getName(), e);
    }
  }
}
