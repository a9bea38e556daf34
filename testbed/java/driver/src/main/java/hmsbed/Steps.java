package hmsbed;

import java.io.PrintStream;

/** Runs and records scenario steps, one JSON line each. */
final class Steps {
  /** Thrown after a failed step to stop the scenario body; cleanup steps still run. */
  static final class Abort extends RuntimeException {
    Abort(String step) {
      super("step failed: " + step);
    }
  }

  /** A step body; returns the detail to report (may be null). */
  interface Body {
    String run() throws Exception;
  }

  private final PrintStream out;
  private boolean failed;

  Steps(PrintStream out) {
    this.out = out;
  }

  boolean failed() {
    return failed;
  }

  /** Runs a step; on failure records it and throws Abort. */
  void run(String name, Body body) {
    if (!attempt(name, body)) {
      throw new Abort(name);
    }
  }

  /** Runs a step; on failure records it and returns false (the scenario goes on). */
  boolean attempt(String name, Body body) {
    long t0 = System.nanoTime();
    try {
      String detail = body.run();
      record(name, true, null, ms(t0), detail);
      return true;
    } catch (Check e) {
      record(name, false, e.getMessage(), ms(t0), e.detail);
      return false;
    } catch (Throwable e) {
      e.printStackTrace(System.err);
      record(name, false, describe(e), ms(t0), null);
      return false;
    }
  }

  /** A failed verification inside a step: message plus optional longer detail. */
  static final class Check extends Exception {
    final String detail;

    Check(String message, String detail) {
      super(message);
      this.detail = detail;
    }
  }

  static void check(boolean ok, String message) throws Check {
    if (!ok) {
      throw new Check(message, null);
    }
  }

  static void check(boolean ok, String message, String detail) throws Check {
    if (!ok) {
      throw new Check(message, detail);
    }
  }

  private static long ms(long t0) {
    return (System.nanoTime() - t0) / 1_000_000L;
  }

  static String describe(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (b.length() > 0) {
        b.append(" <- ");
      }
      b.append(c.getClass().getName());
      if (c.getMessage() != null) {
        b.append(": ").append(c.getMessage());
      }
      if (c.getCause() == c) {
        break;
      }
    }
    return b.toString();
  }

  synchronized void record(String name, boolean ok, String error, long ms, String detail) {
    if (!ok) {
      failed = true;
    }
    StringBuilder b = new StringBuilder(128);
    b.append("{\"step\":").append(quote(name));
    b.append(",\"ok\":").append(ok);
    if (error != null && !error.isEmpty()) {
      b.append(",\"error\":").append(quote(error));
    }
    b.append(",\"ms\":").append(ms);
    if (detail != null && !detail.isEmpty()) {
      b.append(",\"detail\":").append(quote(detail));
    }
    b.append('}');
    out.println(b);
    out.flush();
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2);
    b.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"': b.append("\\\""); break;
        case '\\': b.append("\\\\"); break;
        case '\n': b.append("\\n"); break;
        case '\r': b.append("\\r"); break;
        case '\t': b.append("\\t"); break;
        default:
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
      }
    }
    return b.append('"').toString();
  }
}
