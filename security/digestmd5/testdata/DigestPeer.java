// DigestPeer is the JDK's own DIGEST-MD5 (javax.security.sasl, com.sun.security.sasl.digest) on a socket with
// Thrift's SASL framing (status byte, 4-byte length, payload; then 4-byte length-prefixed data frames, wrapped
// when the QOP is above auth), configured as Hive's HadoopThriftAuthBridge configures it: protocol "null",
// server name "default".
//
//   client HOST PORT CASE...   CASE = qop|username|password|authzid|rounds|strength  ("-" for none)
//   server N CASE...           CASE = qop|username|password                          (prints port=P first)
//
// Each case is one connection. Results: "case<i>=ok ...", "case<i>=refused <server text>" or "case<i>=error <e>".
import java.io.*;
import java.net.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import javax.security.auth.callback.*;
import javax.security.sasl.*;

public class DigestPeer {
    static final int START = 1, OK = 2, BAD = 3, ERROR = 4, COMPLETE = 5;
    static final int[] SIZES = {1, 7, 8, 9, 15, 16, 17, 100, 1000, 20000};

    static void send(DataOutputStream out, int status, byte[] payload) throws IOException {
        out.writeByte(status);
        out.writeInt(payload == null ? 0 : payload.length);
        if (payload != null) out.write(payload);
        out.flush();
    }

    static int status;
    static byte[] recv(DataInputStream in) throws IOException {
        status = in.readUnsignedByte();
        int n = in.readInt();
        if (n < 0 || n > 1 << 20) throw new IOException("bad frame length " + n);
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }

    static void writeData(DataOutputStream out, byte[] b) throws IOException {
        out.writeInt(b.length);
        out.write(b);
        out.flush();
    }

    static byte[] readData(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > 1 << 24) throw new IOException("bad data frame length " + n);
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }

    static byte[] message(int round) {
        byte[] m = new byte[SIZES[round % SIZES.length]];
        for (int i = 0; i < m.length; i++) m[i] = (byte) (i * 31 + round);
        return m;
    }

    static CallbackHandler handler(String user, String password) {
        return callbacks -> {
            for (Callback c : callbacks) {
                if (c instanceof NameCallback) {
                    NameCallback nc = (NameCallback) c;
                    if (user != null) nc.setName(user);
                } else if (c instanceof PasswordCallback) {
                    PasswordCallback pc = (PasswordCallback) c;
                    pc.setPassword(password.toCharArray());
                } else if (c instanceof RealmCallback) {
                    RealmCallback rc = (RealmCallback) c;
                    rc.setText(rc.getDefaultText());
                } else if (c instanceof RealmChoiceCallback) {
                    ((RealmChoiceCallback) c).setSelectedIndex(0);
                } else if (c instanceof AuthorizeCallback) {
                    AuthorizeCallback ac = (AuthorizeCallback) c;
                    boolean ok = ac.getAuthenticationID().equals(ac.getAuthorizationID());
                    ac.setAuthorized(ok);
                    if (ok) ac.setAuthorizedID(ac.getAuthorizationID());
                } else {
                    throw new UnsupportedCallbackException(c);
                }
            }
        };
    }

    static String dash(String s) { return "-".equals(s) ? null : s; }

    static String client(String host, int port, String[] c) throws Exception {
        String qop = c[0], user = c[1], password = c[2], authzid = dash(c[3]), strength = dash(c[5]);
        int rounds = Integer.parseInt(c[4]);
        Map<String, String> props = new HashMap<>();
        props.put(Sasl.QOP, qop);
        props.put(Sasl.SERVER_AUTH, "true");
        if (strength != null) props.put(Sasl.STRENGTH, strength);
        SaslClient sc = Sasl.createSaslClient(new String[] {"DIGEST-MD5"}, authzid, "null", "default", props,
            handler(user, password));
        try (Socket s = new Socket(host, port)) {
            s.setSoTimeout(30000);
            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            send(out, START, "DIGEST-MD5".getBytes(StandardCharsets.UTF_8));
            send(out, sc.isComplete() ? COMPLETE : OK, sc.hasInitialResponse() ? sc.evaluateChallenge(new byte[0]) : new byte[0]);
            while (true) {
                byte[] ch = recv(in);
                if (status == BAD || status == ERROR) return "refused " + new String(ch, StandardCharsets.UTF_8);
                byte[] resp = sc.evaluateChallenge(ch);
                if (status == COMPLETE) {
                    if (!sc.isComplete()) return "error server completed before the client";
                    break;
                }
                send(out, sc.isComplete() ? COMPLETE : OK, resp);
            }
            String negotiated = (String) sc.getNegotiatedProperty(Sasl.QOP);
            boolean wrap = !"auth".equals(negotiated);
            for (int r = 0; r < rounds; r++) {
                byte[] m = message(r);
                writeData(out, wrap ? sc.wrap(m, 0, m.length) : m);
                byte[] reply = readData(in);
                if (wrap) reply = sc.unwrap(reply, 0, reply.length);
                byte[] want = new byte[m.length + 5];
                System.arraycopy("pong:".getBytes(StandardCharsets.UTF_8), 0, want, 0, 5);
                System.arraycopy(m, 0, want, 5, m.length);
                if (!Arrays.equals(reply, want)) return "error reply " + r + " differs";
            }
            return "ok qop=" + negotiated + " strength=" + sc.getNegotiatedProperty(Sasl.STRENGTH) + " rounds=" + rounds;
        }
    }

    static String serve(ServerSocket ss, String[] c) throws Exception {
        String qop = c[0], user = c[1], password = c[2];
        Map<String, String> props = new HashMap<>();
        props.put(Sasl.QOP, qop);
        props.put(Sasl.SERVER_AUTH, "true");
        try (Socket s = ss.accept()) {
            s.setSoTimeout(30000);
            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            byte[] mech = recv(in);
            if (status != START || !"DIGEST-MD5".equals(new String(mech, StandardCharsets.UTF_8))) {
                send(out, BAD, "Unsupported mechanism type".getBytes(StandardCharsets.UTF_8));
                return "error bad start";
            }
            SaslServer ss2 = Sasl.createSaslServer("DIGEST-MD5", "null", "default", props, callbacks -> {
                for (Callback cb : callbacks) {
                    if (cb instanceof NameCallback && !user.equals(((NameCallback) cb).getDefaultName())) {
                        throw new IOException("unknown user " + ((NameCallback) cb).getDefaultName());
                    }
                }
                handler(null, password).handle(callbacks);
            });
            while (true) {
                byte[] resp = recv(in);
                byte[] ch;
                try {
                    ch = ss2.evaluateResponse(resp);
                } catch (SaslException e) {
                    send(out, BAD, String.valueOf(e.getMessage()).getBytes(StandardCharsets.UTF_8));
                    return "refused " + e.getMessage();
                }
                if (ss2.isComplete()) {
                    send(out, COMPLETE, ch);
                    break;
                }
                send(out, OK, ch);
            }
            String negotiated = (String) ss2.getNegotiatedProperty(Sasl.QOP);
            boolean wrap = !"auth".equals(negotiated);
            int rounds = 0;
            while (true) {
                byte[] m;
                try {
                    m = readData(in);
                } catch (EOFException e) {
                    break;
                }
                if (wrap) m = ss2.unwrap(m, 0, m.length);
                byte[] reply = new byte[m.length + 5];
                System.arraycopy("pong:".getBytes(StandardCharsets.UTF_8), 0, reply, 0, 5);
                System.arraycopy(m, 0, reply, 5, m.length);
                writeData(out, wrap ? ss2.wrap(reply, 0, reply.length) : reply);
                rounds++;
            }
            return "ok authz=" + ss2.getAuthorizationID() + " qop=" + negotiated + " strength="
                + ss2.getNegotiatedProperty(Sasl.STRENGTH) + " rounds=" + rounds;
        }
    }

    public static void main(String[] a) throws Exception {
        if (a[0].equals("client")) {
            for (int i = 3; i < a.length; i++) {
                String r;
                try {
                    r = client(a[1], Integer.parseInt(a[2]), a[i].split("\\|", -1));
                } catch (Exception e) {
                    r = "error " + e;
                }
                System.out.println("case" + (i - 3) + "=" + r);
                System.out.flush();
            }
        } else {
            try (ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
                ss.setSoTimeout(60000);
                System.out.println("port=" + ss.getLocalPort());
                System.out.flush();
                for (int i = 1; i < a.length; i++) {
                    String r;
                    try {
                        r = serve(ss, a[i].split("\\|", -1));
                    } catch (Exception e) {
                        r = "error " + e;
                    }
                    System.out.println("case" + (i - 1) + "=" + r);
                    System.out.flush();
                }
            }
        }
    }
}
