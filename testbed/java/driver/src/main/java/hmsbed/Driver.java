package hmsbed;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The test bed's scenario driver: runs a named scenario with the real HiveMetaStoreClient of the Hive version it was
 * compiled against (the same sources are built by testbed/java/hive3 and testbed/java/hive4).
 *
 * <pre>
 *   --uri thrift://HOST:PORT --scenario NAME [scenario arguments]
 *   [--principal P --keytab FILE --krb5-conf FILE --server-principal hive/_HOST@REALM] [--conf key=value]...
 * </pre>
 *
 * With --principal the driver logs in from the keytab and talks SASL/GSSAPI (see Security).
 *
 * Every step is printed as one JSON line on stdout: {"step":..,"ok":..,"error":..,"ms":..,"detail":..}.
 * Exit status: 0 when every step passed, 1 when a step failed, 2 on a usage error.
 * Everything else (client logging, stack traces) goes to stderr.
 */
public final class Driver {

  /** A scenario: a sequence of steps run against the metastore named by --uri. */
  interface Scenario {
    void run(Steps steps, Args args) throws Exception;
  }

  /** The scenario table. Later issues add rows here. */
  static final Map<String, Scenario> SCENARIOS = new LinkedHashMap<>();
  static {
    SCENARIOS.put("version", new VersionScenario());
    SCENARIOS.put("ddl", new DdlScenario());
    SCENARIOS.put("lossless", new LosslessScenario());
    SCENARIOS.put("txn", new TxnScenario());
    SCENARIOS.put("stats", new StatsScenario());
    SCENARIOS.put("addparts", new AddPartsScenario());
    SCENARIOS.put("hs2", new Hs2Scenario());
    // Iceberg's classes are on the class path for this scenario only: load them when it runs.
    SCENARIOS.put("iceberg", (steps, args) -> new IcebergScenario().run(steps, args));
    SCENARIOS.put("token", new TokenScenario());
    SCENARIOS.put("exposure", new ExposureScenario());
  }

  public static void main(String[] argv) {
    // Steps own stdout; anything a library prints (log4j's default console appender included) goes to stderr.
    PrintStream out = System.out;
    System.setOut(System.err);
    Steps steps = new Steps(out);
    int status;
    try {
      status = run(steps, argv);
    } catch (Throwable t) {
      t.printStackTrace(System.err);
      steps.record("driver", false, Steps.describe(t), 0, null);
      status = 1;
    }
    out.flush();
    // HiveMetaStoreClient and Hadoop leave non-daemon threads behind; do not wait for them.
    Runtime.getRuntime().halt(status);
  }

  static int run(Steps steps, String[] argv) throws Exception {
    Args args;
    try {
      args = Args.parse(argv);
    } catch (IllegalArgumentException e) {
      steps.record("arguments", false, e.getMessage(), 0, null);
      return 2;
    }
    String name = args.get("scenario");
    String uri = args.get("uri");
    if (name == null || uri == null) {
      steps.record("arguments", false,
          "usage: --uri thrift://HOST:PORT --scenario NAME [args]; scenarios: " + SCENARIOS.keySet(), 0, null);
      return 2;
    }
    Scenario scenario = SCENARIOS.get(name);
    if (scenario == null) {
      steps.record("arguments", false, "unknown scenario '" + name + "'; known: " + SCENARIOS.keySet(), 0, null);
      return 2;
    }
    try {
      Security.setup(steps, args);
      scenario.run(steps, args);
    } catch (Steps.Abort e) {
      // the failed step is already recorded
    }
    return steps.failed() ? 1 : 0;
  }

  /** Command-line arguments: --key value (repeatable) and bare --flag. */
  static final class Args {
    private final Map<String, List<String>> values = new LinkedHashMap<>();

    static Args parse(String[] argv) {
      Args a = new Args();
      for (int i = 0; i < argv.length; i++) {
        String k = argv[i];
        if (!k.startsWith("--") || k.length() == 2) {
          throw new IllegalArgumentException("unexpected argument '" + k + "' in " + Arrays.toString(argv));
        }
        k = k.substring(2);
        String v = "true";
        if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) {
          v = argv[++i];
        }
        a.values.computeIfAbsent(k, x -> new ArrayList<>()).add(v);
      }
      return a;
    }

    String get(String k) {
      List<String> v = values.get(k);
      return v == null ? null : v.get(v.size() - 1);
    }

    String require(String k) {
      String v = get(k);
      if (v == null || v.equals("true")) {
        throw new IllegalArgumentException("missing argument --" + k);
      }
      return v;
    }

    List<String> all(String k) {
      List<String> v = values.get(k);
      return v == null ? new ArrayList<String>() : v;
    }

    boolean flag(String k) {
      return "true".equals(get(k));
    }
  }
}
