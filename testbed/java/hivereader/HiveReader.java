import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.thrift.ProcessFunction;
import org.apache.thrift.TBase;
import org.apache.thrift.TEnum;
import org.apache.thrift.TFieldIdEnum;
import org.apache.thrift.TUnion;
import org.apache.thrift.meta_data.EnumMetaData;
import org.apache.thrift.meta_data.FieldMetaData;
import org.apache.thrift.meta_data.FieldValueMetaData;
import org.apache.thrift.meta_data.ListMetaData;
import org.apache.thrift.meta_data.MapMetaData;
import org.apache.thrift.meta_data.SetMetaData;
import org.apache.thrift.meta_data.StructMetaData;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.protocol.TMessage;
import org.apache.thrift.protocol.TProtocol;
import org.apache.thrift.protocol.TProtocolException;
import org.apache.thrift.protocol.TProtocolUtil;
import org.apache.thrift.protocol.TType;
import org.apache.thrift.transport.TMemoryInputTransport;
import org.apache.thrift.transport.TTransportException;

/**
 * The differential harness's oracle: Hive's own generated Thrift reader, driven the way the metastore's server drives
 * it, over byte streams handed in on stdin.
 *
 * <p>Compiled at test time against one Hive version's jars (testbed/hivereader.go), so the same source runs on
 * libthrift 0.9.3 with Hive 3.1.3's classes and on libthrift 0.16 with Hive 4.1.0's. For each stream it does what
 * the metastore's worker thread does with a connection's bytes: TBinaryProtocol (strictRead and strictWrite on, the
 * string and container limits of metastore.server.max.message.size, as HiveMetaStore builds its input protocol
 * factory) over an in-memory transport; per message readMessageBegin, the method's ProcessFunction from the
 * processor's map, {@code args.read}, readMessageEnd. An unknown method's arguments are skipped as a struct (the
 * server answers UNKNOWN_METHOD and goes on); a TProtocolException inside the arguments is answered PROTOCOL_ERROR
 * and the server goes on reading from where the reader stopped; any other failure ends the connection.
 *
 * <p>Requests (stdin): one opcode byte, a big-endian u32 length, that many bytes. 'R' reads a stream, 'S' dumps the
 * schema the jars know (payload empty), 'U' decodes the payload as UTF-8 the way the reader decodes strings and
 * answers the re-encoded bytes. Answers (stdout): a big-endian u32 length and that many bytes (JSON for R and S).
 * Arguments, for runs by hand: {@code --strict-read true|false} (default true, as the server), {@code --limit BYTES}
 * (the string and container limit, default 104857600).
 *
 * <p>The decoded arguments are rendered canonically (the Go side renders its own view the same way): {@code n}
 * null; {@code T}/{@code F}; {@code i<decimal>} for byte, i16, i32, i64; {@code e<decimal>} for an enum;
 * {@code d<16 hex>} for a double's bits; {@code s<hex>} for a string's UTF-8 bytes, {@code b<hex>} for binary;
 * {@code {id:v,...}} for a struct or union (set fields, ascending id); {@code [v,...]} for a list;
 * {@code <v,...>} for a set (sorted renderings); {@code (k=v,...)} for a map (sorted by key rendering).
 */
public final class HiveReader {
  private final long stringLimit;
  private final long containerLimit;
  private final boolean strictRead;
  private final Map<String, ProcessFunction<?, ?>> functions;

  private HiveReader(boolean strictRead, long stringLimit, long containerLimit) {
    this.strictRead = strictRead;
    this.stringLimit = stringLimit;
    this.containerLimit = containerLimit;
    @SuppressWarnings({"rawtypes", "unchecked"})
    ThriftHiveMetastore.Processor p = new ThriftHiveMetastore.Processor(null);
    @SuppressWarnings("unchecked")
    Map<String, ProcessFunction<?, ?>> m = (Map<String, ProcessFunction<?, ?>>) (Map<?, ?>) p.getProcessMapView();
    this.functions = new TreeMap<>(m);
  }

  public static void main(String[] args) throws Exception {
    boolean strictRead = true;
    long limit = 104857600L; // metastore.server.max.message.size default
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--strict-read":
          strictRead = Boolean.parseBoolean(args[++i]);
          break;
        case "--limit":
          limit = Long.parseLong(args[++i]);
          break;
        default:
          System.err.println("HiveReader: unknown argument " + args[i]);
          System.exit(2);
      }
    }
    HiveReader r = new HiveReader(strictRead, limit, limit);
    DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));
    DataOutputStream out = new DataOutputStream(new BufferedOutputStream(System.out, 1 << 16));
    while (true) {
      int op;
      try {
        op = in.readUnsignedByte();
      } catch (EOFException e) {
        return;
      }
      int n = in.readInt();
      byte[] payload = new byte[n];
      in.readFully(payload);
      byte[] answer;
      switch (op) {
        case 'R':
          answer = r.read(payload).getBytes(StandardCharsets.UTF_8);
          break;
        case 'S':
          answer = r.schema().getBytes(StandardCharsets.UTF_8);
          break;
        case 'U':
          answer = new String(payload, StandardCharsets.UTF_8).getBytes(StandardCharsets.UTF_8);
          break;
        default:
          throw new IOException("HiveReader: unknown opcode " + op);
      }
      out.writeInt(answer.length);
      out.write(answer);
      out.flush();
    }
  }

  // ---- reading -------------------------------------------------------------------------------------------------

  private String read(byte[] stream) {
    StringBuilder sb = new StringBuilder(256);
    sb.append("{\"messages\":[");
    String stop = "eof";
    TMemoryInputTransport trans;
    TProtocol prot;
    try {
      trans = new TMemoryInputTransport(stream);
      prot = new TBinaryProtocol.Factory(strictRead, true, stringLimit, containerLimit).getProtocol(trans);
    } catch (Exception e) {
      return "{\"messages\":[],\"stop\":" + quote("harness: " + describe(e)) + "}";
    }
    boolean first = true;
    while (trans.getBytesRemainingInBuffer() > 0) {
      int start = trans.getBufferPosition();
      Message m = new Message(start);
      String end = readOne(prot, trans, m);
      m.end = trans.getBufferPosition();
      if (!first) {
        sb.append(',');
      }
      first = false;
      m.append(sb);
      if (end != null) {
        stop = end;
        break;
      }
    }
    sb.append("],\"stop\":").append(quote(stop)).append('}');
    return sb.toString();
  }

  /** Reads one message into m; returns null to go on, or why the server would stop reading the connection. */
  private String readOne(TProtocol prot, TMemoryInputTransport trans, Message m) {
    TMessage msg;
    try {
      msg = prot.readMessageBegin();
    } catch (Throwable e) {
      return failed(m, e);
    }
    m.name = msg.name;
    m.type = msg.type;
    m.seqid = msg.seqid;
    ProcessFunction<?, ?> fn = functions.get(msg.name);
    if (fn == null) {
      m.known = false;
      try {
        TProtocolUtil.skip(prot, TType.STRUCT);
        prot.readMessageEnd();
        m.outcome = "ok";
        return null;
      } catch (Throwable e) {
        return failed(m, e);
      }
    }
    m.known = true;
    TBase<?, ?> args = fn.getEmptyArgsInstance();
    try {
      args.read(prot);
    } catch (TProtocolException e) {
      // ProcessFunction answers PROTOCOL_ERROR and the server reads on from here.
      m.outcome = "protocol_error";
      m.error = describe(e);
      try {
        prot.readMessageEnd();
      } catch (Throwable x) {
        return failed(m, x);
      }
      return null;
    } catch (Throwable e) {
      return failed(m, e);
    }
    try {
      prot.readMessageEnd();
    } catch (Throwable e) {
      return failed(m, e);
    }
    m.outcome = "ok";
    StringBuilder v = new StringBuilder();
    render(args, v);
    m.fields = v.toString();
    return null;
  }

  private static String failed(Message m, Throwable e) {
    if (e instanceof TTransportException && ((TTransportException) e).getType() == TTransportException.END_OF_FILE) {
      m.outcome = "incomplete"; // the server would wait for more bytes
    } else {
      m.outcome = "fatal"; // the server ends the connection
    }
    m.error = describe(e);
    return m.outcome + ": " + m.error;
  }

  private static String describe(Throwable e) {
    String s = e.getClass().getSimpleName();
    if (e instanceof TProtocolException) {
      s += "(" + ((TProtocolException) e).getType() + ")";
    }
    String msg = e.getMessage();
    if (msg != null) {
      s += ": " + (msg.length() > 300 ? msg.substring(0, 300) + "..." : msg);
    }
    return s;
  }

  private static final class Message {
    final int start;
    int end;
    String name = "";
    byte type;
    int seqid;
    boolean known;
    String outcome = "";
    String error = "";
    String fields = "";

    Message(int start) {
      this.start = start;
    }

    void append(StringBuilder sb) {
      sb.append("{\"start\":").append(start).append(",\"end\":").append(end)
          .append(",\"name\":").append(quote(name)).append(",\"type\":").append(type & 0xff)
          .append(",\"seqid\":").append(seqid).append(",\"known\":").append(known)
          .append(",\"outcome\":").append(quote(outcome)).append(",\"error\":").append(quote(error))
          .append(",\"fields\":").append(quote(fields)).append('}');
    }
  }

  // ---- canonical rendering -------------------------------------------------------------------------------------

  @SuppressWarnings({"rawtypes", "unchecked"})
  private static void render(Object o, StringBuilder sb) {
    if (o == null) {
      sb.append('n');
    } else if (o instanceof TBase) {
      TBase t = (TBase) o;
      TreeMap<Short, TFieldIdEnum> byId = new TreeMap<>();
      for (TFieldIdEnum f : fieldsOf(t.getClass())) {
        byId.put(f.getThriftFieldId(), f);
      }
      sb.append('{');
      boolean first = true;
      for (TFieldIdEnum f : byId.values()) {
        if (!t.isSet(f)) {
          continue;
        }
        if (!first) {
          sb.append(',');
        }
        first = false;
        sb.append(f.getThriftFieldId()).append(':');
        render(t.getFieldValue(f), sb);
      }
      sb.append('}');
    } else if (o instanceof Boolean) {
      sb.append(((Boolean) o) ? 'T' : 'F');
    } else if (o instanceof Byte || o instanceof Short || o instanceof Integer || o instanceof Long) {
      sb.append('i').append(((Number) o).longValue());
    } else if (o instanceof Double) {
      sb.append('d').append(String.format("%016x", Double.doubleToRawLongBits((Double) o)));
    } else if (o instanceof TEnum) {
      sb.append('e').append(((TEnum) o).getValue());
    } else if (o instanceof String) {
      sb.append('s');
      hex(((String) o).getBytes(StandardCharsets.UTF_8), sb);
    } else if (o instanceof byte[]) {
      sb.append('b');
      hex((byte[]) o, sb);
    } else if (o instanceof ByteBuffer) {
      ByteBuffer b = ((ByteBuffer) o).duplicate();
      byte[] a = new byte[b.remaining()];
      b.get(a);
      sb.append('b');
      hex(a, sb);
    } else if (o instanceof List) {
      sb.append('[');
      boolean first = true;
      for (Object e : (List) o) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        render(e, sb);
      }
      sb.append(']');
    } else if (o instanceof java.util.Set) {
      List<String> parts = new ArrayList<>();
      for (Object e : (java.util.Set) o) {
        StringBuilder p = new StringBuilder();
        render(e, p);
        parts.add(p.toString());
      }
      Collections.sort(parts);
      sb.append('<').append(String.join(",", parts)).append('>');
    } else if (o instanceof Map) {
      TreeMap<String, String> parts = new TreeMap<>();
      for (Map.Entry e : ((Map<?, ?>) o).entrySet()) {
        StringBuilder k = new StringBuilder();
        StringBuilder v = new StringBuilder();
        render(e.getKey(), k);
        render(e.getValue(), v);
        parts.put(k.toString(), v.toString());
      }
      sb.append('(');
      boolean first = true;
      for (Map.Entry<String, String> e : parts.entrySet()) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        sb.append(e.getKey()).append('=').append(e.getValue());
      }
      sb.append(')');
    } else {
      sb.append("?").append(o.getClass().getName());
    }
  }

  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private static void hex(byte[] b, StringBuilder sb) {
    for (byte x : b) {
      sb.append(HEX[(x >> 4) & 15]).append(HEX[x & 15]);
    }
  }

  private static TFieldIdEnum[] fieldsOf(Class<?> c) {
    try {
      Class<?> f = Class.forName(c.getName() + "$_Fields", true, c.getClassLoader());
      return (TFieldIdEnum[]) f.getEnumConstants();
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("no Thrift field metadata for " + c.getName(), e);
    }
  }

  // ---- schema dump ---------------------------------------------------------------------------------------------

  /**
   * The schema the jars know: every method with its args struct and whether it is oneway, and every struct reachable
   * from the args, with each field's id, name, requiredness (1 required, 2 optional, 3 default) and type.
   */
  private String schema() {
    Map<String, Class<?>> structs = new TreeMap<>();
    StringBuilder sb = new StringBuilder();
    sb.append("{\"methods\":{");
    boolean first = true;
    for (Map.Entry<String, ProcessFunction<?, ?>> e : functions.entrySet()) {
      Class<?> args = e.getValue().getEmptyArgsInstance().getClass();
      if (!first) {
        sb.append(',');
      }
      first = false;
      sb.append(quote(e.getKey())).append(':').append(quote(args.getSimpleName()));
      collect(args, structs);
    }
    sb.append("},\"structs\":{");
    first = true;
    for (Map.Entry<String, Class<?>> e : structs.entrySet()) {
      if (!first) {
        sb.append(',');
      }
      first = false;
      sb.append(quote(e.getKey())).append(":{\"union\":").append(TUnion.class.isAssignableFrom(e.getValue()))
          .append(",\"fields\":[");
      TBase<?, ?> fresh = newInstance(e.getValue());
      boolean ff = true;
      for (Map.Entry<? extends TFieldIdEnum, FieldMetaData> f : meta(e.getValue()).entrySet()) {
        if (!ff) {
          sb.append(',');
        }
        ff = false;
        FieldMetaData md = f.getValue();
        sb.append("{\"id\":").append(f.getKey().getThriftFieldId()).append(",\"name\":").append(quote(md.fieldName))
            .append(",\"req\":").append(md.requirementType).append(",\"type\":");
        type(md.valueMetaData, sb);
        if (isSet(fresh, f.getKey())) {
          // a default value of the IDL: set by the constructor, so set after a read that did not see the field
          StringBuilder d = new StringBuilder();
          render(getFieldValue(fresh, f.getKey()), d);
          sb.append(",\"default\":").append(quote(d.toString()));
        }
        sb.append('}');
      }
      sb.append("]}");
    }
    sb.append("},\"unknownEnumElements\":").append(quote(unknownEnumElements())).append('}');
    return sb.toString();
  }

  /**
   * What the generated code does with an enum value it does not know inside a list: "null" (an element null: the
   * Thrift 0.9 compiler) or "dropped" (the element left out: later compilers). Measured on ClientCapabilities
   * (list of ClientCapability, in both versions) holding the value 999.
   */
  private String unknownEnumElements() {
    byte[] b = {15, 0, 1, 8, 0, 0, 0, 1, 0, 0, 3, (byte) 0xe7, 0}; // field 1: list<i32> [999]; STOP
    try {
      org.apache.hadoop.hive.metastore.api.ClientCapabilities c = new org.apache.hadoop.hive.metastore.api.ClientCapabilities();
      c.read(new TBinaryProtocol.Factory(strictRead, true, stringLimit, containerLimit).getProtocol(new TMemoryInputTransport(b)));
      return c.getValues().isEmpty() ? "dropped" : "null";
    } catch (Exception e) {
      return "unknown: " + describe(e);
    }
  }

  private static TBase<?, ?> newInstance(Class<?> c) {
    try {
      return (TBase<?, ?>) c.getDeclaredConstructor().newInstance();
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot construct " + c.getName(), e);
    }
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static boolean isSet(TBase t, TFieldIdEnum f) {
    return t.isSet(f);
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static Object getFieldValue(TBase t, TFieldIdEnum f) {
    return t.getFieldValue(f);
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static Map<? extends TFieldIdEnum, FieldMetaData> meta(Class<?> c) {
    return FieldMetaData.getStructMetaDataMap((Class) c);
  }

  private static void collect(Class<?> c, Map<String, Class<?>> seen) {
    if (seen.containsKey(c.getSimpleName())) {
      return;
    }
    seen.put(c.getSimpleName(), c);
    for (FieldMetaData md : meta(c).values()) {
      collectType(md.valueMetaData, seen);
    }
  }

  private static void collectType(FieldValueMetaData t, Map<String, Class<?>> seen) {
    if (t instanceof ListMetaData) {
      collectType(((ListMetaData) t).elemMetaData, seen);
    } else if (t instanceof SetMetaData) {
      collectType(((SetMetaData) t).elemMetaData, seen);
    } else if (t instanceof MapMetaData) {
      collectType(((MapMetaData) t).keyMetaData, seen);
      collectType(((MapMetaData) t).valueMetaData, seen);
    } else if (t.type == TType.STRUCT) {
      collect(structClass(t), seen);
    }
  }

  /**
   * The class of a struct-typed value. A struct used before its definition in the IDL gets a plain
   * FieldValueMetaData that names it (a "typedef" of itself); it lives in the package of the generated API.
   */
  private static Class<?> structClass(FieldValueMetaData t) {
    if (t instanceof StructMetaData) {
      return ((StructMetaData) t).structClass;
    }
    return byName(t.getTypedefName());
  }

  /** The enum class of an enum-typed value, or null for a plain i32. */
  private static Class<?> enumClass(FieldValueMetaData t) {
    if (t instanceof EnumMetaData) {
      return ((EnumMetaData) t).enumClass;
    }
    if (t.type == TType.ENUM || (t.type == TType.I32 && t.isTypedef())) {
      Class<?> c = byName(t.getTypedefName());
      return TEnum.class.isAssignableFrom(c) ? c : null;
    }
    return null;
  }

  private static Class<?> byName(String name) {
    String pkg = ThriftHiveMetastore.class.getPackage().getName();
    try {
      return Class.forName(pkg + "." + name);
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("type " + name + " named in Thrift metadata is not a class of " + pkg, e);
    }
  }

  private static void type(FieldValueMetaData t, StringBuilder sb) {
    Class<?> en = enumClass(t);
    sb.append("{\"t\":").append(en != null ? TType.I32 : t.type);
    if (en != null) {
      sb.append(",\"enum\":[");
      Object[] values = en.getEnumConstants();
      for (int i = 0; i < values.length; i++) {
        if (i > 0) {
          sb.append(',');
        }
        sb.append(((TEnum) values[i]).getValue());
      }
      sb.append(']');
    } else if (t instanceof ListMetaData) {
      sb.append(",\"elem\":");
      type(((ListMetaData) t).elemMetaData, sb);
    } else if (t instanceof SetMetaData) {
      sb.append(",\"elem\":");
      type(((SetMetaData) t).elemMetaData, sb);
    } else if (t instanceof MapMetaData) {
      sb.append(",\"key\":");
      type(((MapMetaData) t).keyMetaData, sb);
      sb.append(",\"elem\":");
      type(((MapMetaData) t).valueMetaData, sb);
    } else if (t.type == TType.STRUCT) {
      sb.append(",\"struct\":").append(quote(structClass(t).getSimpleName()));
    }
    if (t.isBinary()) {
      sb.append(",\"binary\":true");
    }
    sb.append('}');
  }

  private static String quote(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 2);
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        sb.append('\\').append(c);
      } else if (c < 0x20 || c > 0x7e) {
        sb.append(String.format("\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    return sb.append('"').toString();
  }
}
