// SchemaExtractor reads the Thrift metadata that the Thrift Java compiler bakes into the generated classes of a
// real Hive Metastore jar and prints one profile schema as JSON (the thriftgen/schema.json format, one profile,
// no dialects). It is the project's only source of Apache wire facts: nothing is read from .thrift files.
//
// Run with Java 17's source launcher; no build needed:
//
//   java -cp <hive jar>:<libthrift jar>:<libfb303 jar> SchemaExtractor.java <hive jar> <PROFILE> [out.json]
//
// What is read:
//   - every class of package org.apache.hadoop.hive.metastore.api in <hive jar> that implements TBase (structs,
//     unions, exceptions) or TEnum (enums), found by listing the jar's entries;
//   - the methods of ThriftHiveMetastore.Iface and com.facebook.fb303.FacebookService.Iface, with their
//     <method>_args and <method>_result inner classes (a method without a _result class is oneway);
//   - every struct or enum class referenced from the metadata (e.g. fb303's fb_status).
// For each struct the static metaDataMap (FieldMetaData: name, requiredness, value type tree) is combined with the
// _Fields enum (wire ids). References to typedef'd or forward-declared structs carry only a name
// (FieldValueMetaData(TType.STRUCT, name)); they are resolved against the struct classes found, or the run fails.
//
// IDL defaults ("6: optional bool reallocate = false") are not in the metadata: the Thrift compiler turns them into
// assignments in the struct's no-arg constructor. The fields that constructor assigns are read from its bytecode
// (javap, in process), and their values from a fresh instance; each becomes the field's "default".
//
// The output is deterministic: maps sorted by key, fields in Java's wire (IDL declaration) order, enum values by
// value, methods by name.

import java.io.*;
import java.lang.reflect.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.security.MessageDigest;
import java.util.*;
import java.util.jar.*;
import java.util.spi.ToolProvider;

import org.apache.thrift.TBase;
import org.apache.thrift.TEnum;
import org.apache.thrift.TException;
import org.apache.thrift.TFieldIdEnum;
import org.apache.thrift.TFieldRequirementType;
import org.apache.thrift.TUnion;
import org.apache.thrift.meta_data.*;
import org.apache.thrift.protocol.TField;
import org.apache.thrift.protocol.TType;

public class SchemaExtractor {
    static final String API_PKG = "org.apache.hadoop.hive.metastore.api.";
    static final String HMS_SERVICE = API_PKG + "ThriftHiveMetastore";
    static final String FB303_SERVICE = "com.facebook.fb303.FacebookService";

    final String profile;
    final ClassLoader loader = SchemaExtractor.class.getClassLoader();
    final TreeMap<String, Class<?>> structClasses = new TreeMap<>();
    final TreeMap<String, Class<?>> enumClasses = new TreeMap<>();
    final TreeMap<String, String> methodService = new TreeMap<>();
    final Deque<Class<?>> pending = new ArrayDeque<>();
    // struct class name -> names of the fields its no-arg constructor assigns (the IDL defaults)
    final Map<String, Set<String>> assigned = new HashMap<>();

    SchemaExtractor(String profile) {
        this.profile = profile;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2 || args.length > 3) {
            System.err.println("usage: java -cp <jars> SchemaExtractor.java <hive-metastore-jar> <PROFILE> [out.json]");
            System.exit(2);
        }
        SchemaExtractor x = new SchemaExtractor(args[1]);
        String json = x.run(Paths.get(args[0]));
        if (args.length == 3) {
            Files.write(Paths.get(args[2]), json.getBytes(StandardCharsets.UTF_8));
        } else {
            System.out.print(json);
        }
    }

    String run(Path hiveJar) throws Exception {
        if (!Files.isRegularFile(hiveJar)) {
            throw new IllegalArgumentException("hive jar not found: " + hiveJar);
        }
        // 1. every generated class of the api package
        try (JarFile jf = new JarFile(hiveJar.toFile())) {
            List<String> names = new ArrayList<>();
            for (Enumeration<JarEntry> e = jf.entries(); e.hasMoreElements(); ) {
                String n = e.nextElement().getName();
                if (!n.endsWith(".class")) continue;
                String cn = n.substring(0, n.length() - 6).replace('/', '.');
                if (!cn.startsWith(API_PKG) || cn.indexOf('$') >= 0) continue;
                if (cn.substring(API_PKG.length()).indexOf('.') >= 0) continue; // sub-packages
                names.add(cn);
            }
            Collections.sort(names);
            for (String cn : names) {
                Class<?> c = Class.forName(cn, false, loader);
                if (TBase.class.isAssignableFrom(c)) {
                    addStruct(c);
                } else if (c.isEnum() && TEnum.class.isAssignableFrom(c)) {
                    addEnum(c);
                }
            }
        }
        // 2. the services: HMS and its fb303 base
        addService(HMS_SERVICE, "ThriftHiveMetastore");
        addService(FB303_SERVICE, "FacebookService");
        // 3. anything referenced (fb303 enums, structs outside the package)
        while (!pending.isEmpty()) {
            Class<?> c = pending.pop();
            for (FieldMetaData fmd : metaData(c).values()) {
                collectRefs(fmd.valueMetaData);
            }
        }
        readConstructors();
        return render();
    }

    void addStruct(Class<?> c) {
        String name = c.getSimpleName();
        Class<?> prev = structClasses.get(name);
        if (prev != null) {
            if (prev != c) throw new IllegalStateException("two struct classes named " + name + ": " + prev + ", " + c);
            return;
        }
        if (enumClasses.containsKey(name)) throw new IllegalStateException("name " + name + " is both enum and struct");
        structClasses.put(name, c);
        pending.push(c);
    }

    void addEnum(Class<?> c) {
        String name = c.getSimpleName();
        Class<?> prev = enumClasses.get(name);
        if (prev != null) {
            if (prev != c) throw new IllegalStateException("two enum classes named " + name + ": " + prev + ", " + c);
            return;
        }
        if (structClasses.containsKey(name)) throw new IllegalStateException("name " + name + " is both enum and struct");
        enumClasses.put(name, c);
    }

    void addService(String serviceClass, String serviceName) throws Exception {
        Class<?> iface = Class.forName(serviceClass + "$Iface", false, loader);
        List<String> ms = new ArrayList<>();
        for (Method m : iface.getDeclaredMethods()) ms.add(m.getName());
        Collections.sort(ms);
        for (String m : ms) {
            if (methodService.containsKey(m)) {
                throw new IllegalStateException("method " + m + " declared by " + methodService.get(m) + " and " + serviceName);
            }
            methodService.put(m, serviceName);
            Class<?> a = Class.forName(serviceClass + "$" + m + "_args", false, loader);
            addStruct(a);
            Class<?> r = optionalClass(serviceClass + "$" + m + "_result");
            if (r != null) addStruct(r);
        }
    }

    Class<?> optionalClass(String name) {
        try {
            return Class.forName(name, false, loader);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    void collectRefs(FieldValueMetaData v) {
        if (v instanceof StructMetaData) {
            addStruct(((StructMetaData) v).structClass);
        } else if (v instanceof EnumMetaData) {
            addEnum(((EnumMetaData) v).enumClass);
        } else if (v instanceof ListMetaData) {
            collectRefs(((ListMetaData) v).elemMetaData);
        } else if (v instanceof SetMetaData) {
            collectRefs(((SetMetaData) v).elemMetaData);
        } else if (v instanceof MapMetaData) {
            collectRefs(((MapMetaData) v).keyMetaData);
            collectRefs(((MapMetaData) v).valueMetaData);
        }
    }

    @SuppressWarnings("unchecked")
    static Map<? extends TFieldIdEnum, FieldMetaData> metaData(Class<?> c) {
        try {
            Field f = c.getField("metaDataMap");
            Object m = f.get(null); // initializes the class
            if (m == null) throw new IllegalStateException(c.getName() + ".metaDataMap is null");
            return (Map<? extends TFieldIdEnum, FieldMetaData>) m;
        } catch (NoSuchFieldException | IllegalAccessException e) {
            throw new IllegalStateException(c.getName() + " has no public static metaDataMap", e);
        }
    }

    // ---- IDL defaults ----

    // readConstructors disassembles every struct class with javap and records, per class, the fields its no-arg
    // constructor assigns with putfield. javap prints each constructor as "public <binary name>();" followed by its
    // code and a blank line; a putfield of the class's own field is "putfield #n // Field <name>:<descriptor>".
    void readConstructors() {
        ToolProvider javap = ToolProvider.findFirst("javap")
                .orElseThrow(() -> new IllegalStateException("javap is not available: run the extractor with a JDK 17+"));
        List<String> args = new ArrayList<>(List.of("-c", "-p", "-cp", System.getProperty("java.class.path")));
        for (Class<?> c : structClasses.values()) args.add(c.getName());
        StringWriter out = new StringWriter(), err = new StringWriter();
        int rc = javap.run(new PrintWriter(out), new PrintWriter(err), args.toArray(new String[0]));
        if (rc != 0) throw new IllegalStateException("javap failed (" + rc + "): " + err);
        String current = null;
        for (String line : out.toString().split("\n")) {
            String t = line.trim();
            if (line.startsWith("  public ") && t.endsWith("();")) {
                current = t.substring("public ".length(), t.length() - 3);
                assigned.put(current, new TreeSet<>());
                continue;
            }
            if (current == null) continue;
            if (t.isEmpty() || t.equals("}")) {
                current = null;
                continue;
            }
            int at = t.indexOf("// Field ");
            if (t.contains(" putfield ") && at >= 0) {
                String ref = t.substring(at + "// Field ".length());
                String name = ref.substring(0, ref.indexOf(':'));
                if (name.indexOf('.') < 0) assigned.get(current).add(name); // a field of another class is qualified
            }
        }
        for (Class<?> c : structClasses.values()) {
            if (!assigned.containsKey(c.getName())) {
                throw new IllegalStateException(c.getName() + ": javap shows no public no-arg constructor");
            }
        }
    }

    // defaultOf is the JSON literal of the field's IDL default, or null when the IDL gives it none.
    String defaultOf(Class<?> c, TFieldIdEnum fid, FieldMetaData fmd) throws Exception {
        if (!assigned.get(c.getName()).contains(fmd.fieldName)) return null;
        @SuppressWarnings("unchecked")
        TBase<?, TFieldIdEnum> fresh = (TBase<?, TFieldIdEnum>) c.getDeclaredConstructor().newInstance();
        Object v = fresh.getFieldValue(fid);
        String where = c.getName() + "." + fmd.fieldName;
        if (v instanceof Boolean || v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long) {
            return v.toString();
        }
        if (v instanceof String) return q((String) v);
        if (v instanceof TEnum) return Integer.toString(((TEnum) v).getValue());
        throw new IllegalStateException(where + ": default " + v + " (" + (v == null ? "null" : v.getClass().getName())
                + ") is not a scalar, string or enum; the schema format has no place for it");
    }

    // ---- rendering ----

    String render() throws Exception {
        StringBuilder b = new StringBuilder();
        String p = "[" + q(profile) + "]";
        b.append("{\n");
        b.append(" \"profiles\": ").append(p).append(",\n");
        b.append(" \"source\": ").append(source()).append(",\n");
        b.append(" \"enums\": {");
        boolean first = true;
        for (Map.Entry<String, Class<?>> e : enumClasses.entrySet()) {
            b.append(first ? "\n" : ",\n");
            first = false;
            b.append("  ").append(q(e.getKey())).append(": {\"profiles\": ").append(p).append(", \"values\": [");
            Object[] consts = e.getValue().getEnumConstants();
            List<TEnum> vals = new ArrayList<>();
            for (Object o : consts) vals.add((TEnum) o);
            vals.sort(Comparator.comparingInt(TEnum::getValue));
            boolean f2 = true;
            for (TEnum v : vals) {
                b.append(f2 ? "\n" : ",\n");
                f2 = false;
                b.append("   {\"name\": ").append(q(((Enum<?>) v).name())).append(", \"value\": ").append(v.getValue())
                        .append(", \"profiles\": ").append(p).append("}");
            }
            b.append("]}");
        }
        b.append("\n },\n");
        b.append(" \"structs\": {");
        first = true;
        for (Map.Entry<String, Class<?>> e : structClasses.entrySet()) {
            b.append(first ? "\n" : ",\n");
            first = false;
            Class<?> c = e.getValue();
            String kind = TUnion.class.isAssignableFrom(c) ? "union"
                    : TException.class.isAssignableFrom(c) ? "exception" : "struct";
            b.append("  ").append(q(e.getKey())).append(": {\"kind\": ").append(q(kind)).append(", \"profiles\": ")
                    .append(p).append(", \"fields\": [");
            Map<? extends TFieldIdEnum, FieldMetaData> md = metaData(c);
            Set<Short> ids = new HashSet<>();
            boolean f2 = true;
            for (TFieldIdEnum fid : wireOrder(c, md)) {
                FieldMetaData fmd = md.get(fid);
                if (!ids.add(fid.getThriftFieldId())) {
                    throw new IllegalStateException(c.getName() + ": duplicate field id " + fid.getThriftFieldId());
                }
                if (!fid.getFieldName().equals(fmd.fieldName)) {
                    throw new IllegalStateException(c.getName() + ": _Fields name " + fid.getFieldName()
                            + " differs from metadata name " + fmd.fieldName);
                }
                b.append(f2 ? "\n" : ",\n");
                f2 = false;
                b.append("   {\"id\": ").append(fid.getThriftFieldId()).append(", \"name\": ").append(q(fmd.fieldName))
                        .append(", \"required\": ").append(q(req(c, fmd))).append(", \"type\": ")
                        .append(type(c.getName() + "." + fmd.fieldName, fmd.valueMetaData, c, fmd.fieldName));
                String def = defaultOf(c, fid, fmd);
                if (def != null) b.append(", \"default\": ").append(def);
                b.append(", \"profiles\": ").append(p).append("}");
            }
            b.append("]}");
        }
        b.append("\n },\n");
        b.append(" \"methods\": [");
        first = true;
        for (Map.Entry<String, String> e : methodService.entrySet()) {
            b.append(first ? "\n" : ",\n");
            first = false;
            String m = e.getKey();
            boolean oneway = !structClasses.containsKey(m + "_result");
            b.append("  {\"name\": ").append(q(m)).append(", \"oneway\": ").append(oneway).append(", \"args\": ")
                    .append(q(m + "_args"));
            if (!oneway) b.append(", \"result\": ").append(q(m + "_result"));
            b.append(", \"profiles\": ").append(p).append(", \"service\": ").append(q(e.getValue())).append("}");
        }
        b.append("\n ]\n}\n");
        return b.toString();
    }

    // wireOrder returns the fields in the order the Java class writes them: IDL declaration order, which is the
    // order of the static TField descriptors (<NAME>_FIELD_DESC) in the class. The _Fields enum and metaDataMap are
    // sorted by id instead, which differs for Decimal (3: unscaled before 1: scale) and for fields without an id.
    static List<TFieldIdEnum> wireOrder(Class<?> c, Map<? extends TFieldIdEnum, FieldMetaData> md) {
        Map<Short, TFieldIdEnum> byId = new HashMap<>();
        for (TFieldIdEnum f : md.keySet()) byId.put(f.getThriftFieldId(), f);
        List<TFieldIdEnum> out = new ArrayList<>();
        for (Field f : c.getDeclaredFields()) {
            if (!Modifier.isStatic(f.getModifiers()) || f.getType() != TField.class) continue;
            TField desc;
            try {
                f.setAccessible(true);
                desc = (TField) f.get(null);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(c.getName() + "." + f.getName() + " unreadable", e);
            }
            TFieldIdEnum fid = byId.remove(desc.id);
            if (fid == null || !fid.getFieldName().equals(desc.name)) {
                throw new IllegalStateException(c.getName() + ": field descriptor " + desc.id + ":" + desc.name
                        + " matches no metadata field");
            }
            out.add(fid);
        }
        if (!byId.isEmpty()) {
            throw new IllegalStateException(c.getName() + ": no field descriptor for ids " + byId.keySet());
        }
        return out;
    }

    static String req(Class<?> c, FieldMetaData fmd) {
        switch (fmd.requirementType) {
            case TFieldRequirementType.REQUIRED:
                return "required";
            case TFieldRequirementType.OPTIONAL:
                return "optional";
            case TFieldRequirementType.DEFAULT:
                return "default";
            default:
                throw new IllegalStateException(c.getName() + "." + fmd.fieldName + ": unknown requirement type "
                        + fmd.requirementType);
        }
    }

    String type(String where, FieldValueMetaData v) {
        return type(where, v, null, null);
    }

    // owner and fieldName are set for a field's top-level type only (not for container elements).
    String type(String where, FieldValueMetaData v, Class<?> owner, String fieldName) {
        switch (v.type) {
            case TType.BOOL:
                return kind("bool");
            case TType.BYTE:
                return kind("byte");
            case TType.I16:
                return kind("i16");
            case TType.I32:
                if (v.isTypedef() && enumClasses.containsKey(v.getTypedefName())) {
                    throw new IllegalStateException(where + ": i32 typedef " + v.getTypedefName() + " names an enum");
                }
                return kind("i32");
            case TType.I64:
                return kind("i64");
            case TType.DOUBLE:
                return kind("double");
            case TType.STRING:
                return kind(v.isBinary() ? "binary" : "string");
            case TType.LIST:
                return "{\"kind\": \"list\", \"elem\": " + type(where + "[]", ((ListMetaData) v).elemMetaData) + "}";
            case TType.SET:
                return "{\"kind\": \"set\", \"elem\": " + type(where + "[]", ((SetMetaData) v).elemMetaData) + "}";
            case TType.MAP: {
                MapMetaData m = (MapMetaData) v;
                return "{\"kind\": \"map\", \"key\": " + type(where + "{key}", m.keyMetaData) + ", \"value\": "
                        + type(where + "{value}", m.valueMetaData) + "}";
            }
            case TType.STRUCT: {
                String name;
                if (v instanceof StructMetaData) {
                    name = ((StructMetaData) v).structClass.getSimpleName();
                } else if (v.isTypedef()) {
                    name = v.getTypedefName(); // forward-declared or typedef'd struct: resolve by name
                } else if (owner != null) {
                    // exceptions in *_result classes carry a bare FieldValueMetaData(TType.STRUCT): the Java field's
                    // declared class is the type
                    name = declaredStruct(where, owner, fieldName).getSimpleName();
                } else {
                    throw new IllegalStateException(where + ": struct type without class or name");
                }
                if (!structClasses.containsKey(name)) {
                    throw new IllegalStateException(where + ": struct reference " + name + " resolves to no struct class");
                }
                return "{\"kind\": \"struct\", \"name\": " + q(name) + "}";
            }
            case TType.ENUM: {
                String name;
                if (v instanceof EnumMetaData) {
                    name = ((EnumMetaData) v).enumClass.getSimpleName();
                } else if (v.isTypedef()) {
                    name = v.getTypedefName();
                } else {
                    throw new IllegalStateException(where + ": enum type without class or name");
                }
                if (!enumClasses.containsKey(name)) {
                    throw new IllegalStateException(where + ": enum reference " + name + " resolves to no enum class");
                }
                return "{\"kind\": \"enum\", \"name\": " + q(name) + "}";
            }
            default:
                throw new IllegalStateException(where + ": unsupported TType " + v.type);
        }
    }

    Class<?> declaredStruct(String where, Class<?> owner, String fieldName) {
        Class<?> t;
        try {
            t = owner.getDeclaredField(fieldName).getType();
        } catch (NoSuchFieldException e) {
            throw new IllegalStateException(where + ": struct type without class or name, and no Java field " + fieldName);
        }
        if (!TBase.class.isAssignableFrom(t)) {
            throw new IllegalStateException(where + ": Java field type " + t.getName() + " is not a Thrift struct");
        }
        addStruct(t);
        return t;
    }

    static String kind(String k) {
        return "{\"kind\": " + q(k) + "}";
    }

    // source names the jars the metadata came from, with their digests, so a schema is traceable to its bytes.
    String source() throws Exception {
        StringBuilder b = new StringBuilder("{");
        String[][] roots = {{"hive", HMS_SERVICE}, {"fb303", FB303_SERVICE}, {"libthrift", TBase.class.getName()}};
        boolean first = true;
        for (String[] r : roots) {
            Class<?> c = Class.forName(r[1], false, loader);
            Path jar = Paths.get(c.getProtectionDomain().getCodeSource().getLocation().toURI());
            if (!first) b.append(", ");
            first = false;
            b.append(q(r[0])).append(": {\"jar\": ").append(q(jar.getFileName().toString())).append(", \"sha256\": ")
                    .append(q(sha256(jar))).append("}");
        }
        return b.append("}").toString();
    }

    static String sha256(Path p) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        byte[] d = md.digest(Files.readAllBytes(p));
        StringBuilder s = new StringBuilder();
        for (byte x : d) s.append(String.format("%02x", x));
        return s.toString();
    }

    static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
