package hmsbed;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.UserGroupInformation;

/**
 * Kerberos for the driver: with --principal P --keytab F --krb5-conf K the driver logs in from the keytab (Hadoop's
 * UserGroupInformation, as HiveServer2 and Spark do) and every HiveMetaStoreClient it opens uses SASL/GSSAPI
 * (metastore.sasl.enabled=true) to the service principal --server-principal (hive.metastore.kerberos.principal,
 * _HOST allowed). --conf key=value (repeatable) adds client settings, e.g. --conf hadoop.rpc.protection=privacy.
 * --no-login keeps all of that but skips the keytab login (a Kerberos client without credentials, for negative
 * tests).
 */
final class Security {
  /** Settings added to every client configuration (Hms.open). */
  static final Map<String, String> EXTRA = new LinkedHashMap<>();
  private static boolean kerberos;

  private Security() {}

  static boolean kerberos() {
    return kerberos;
  }

  /** Reads the security arguments; logs in when --principal is given. Records a kerberosLogin step. */
  static void setup(Steps steps, Driver.Args args) throws Exception {
    for (String kv : args.all("conf")) {
      int i = kv.indexOf('=');
      if (i <= 0) {
        throw new IllegalArgumentException("--conf wants key=value, got '" + kv + "'");
      }
      EXTRA.put(kv.substring(0, i), kv.substring(i + 1));
    }
    final String principal = args.get("principal");
    if (principal == null) {
      return;
    }
    final boolean login = !args.flag("no-login");
    final String keytab = login ? args.require("keytab") : null;
    final String krb5 = args.require("krb5-conf");
    final String server = args.require("server-principal");
    // before any Kerberos class reads its configuration
    System.setProperty("java.security.krb5.conf", krb5);
    kerberos = true;
    EXTRA.put("metastore.sasl.enabled", "true");
    EXTRA.put("hive.metastore.sasl.enabled", "true");
    EXTRA.put("metastore.kerberos.principal", server);
    EXTRA.put("hive.metastore.kerberos.principal", server);
    EXTRA.put("hadoop.security.authentication", "kerberos");
    steps.run("kerberosLogin", () -> {
      Configuration conf = new Configuration(false);
      conf.set("hadoop.security.authentication", "kerberos");
      for (Map.Entry<String, String> e : EXTRA.entrySet()) {
        conf.set(e.getKey(), e.getValue());
      }
      UserGroupInformation.setConfiguration(conf);
      if (!login) {
        return "skipped (--no-login): " + UserGroupInformation.getCurrentUser();
      }
      UserGroupInformation.loginUserFromKeytab(principal, keytab);
      UserGroupInformation u = UserGroupInformation.getLoginUser();
      return u.getUserName() + " (" + u.getAuthenticationMethod() + ", kerberos credentials: "
          + u.hasKerberosCredentials() + ")";
    });
  }
}
