package gssapi

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// Java's hadoop.rpc.protection values and the QOP the server must end up with.
var protections = []struct {
	conf string
	qop  sasl.QOP
}{
	{"authentication", sasl.QOPAuth},
	{"integrity", sasl.QOPAuthInt},
	{"privacy", sasl.QOPAuthConf},
}

// TestJavaClientsAuthenticate: the real Java HiveMetaStoreClient (3.1.3 and 4.1.0, keytab login,
// hive.metastore.sasl.enabled=true) connects to sasl.Server + the GSSAPI acceptor for each QOP, and its
// getAllDatabases call is answered by a handler that knows who it is.
func TestJavaClientsAuthenticate(t *testing.T) {
	r := newRealm(t, testbed.KDCOptions{})
	for _, v := range []testbed.Version{testbed.Hive313, testbed.Hive410} {
		for _, p := range protections {
			t.Run(string(v)+"/"+p.conf, func(t *testing.T) {
				m, _ := sasl.NewMetrics(nil)
				srv := &sasl.Server{Mechs: map[string]sasl.ServerMechFactory{Mechanism: r.acceptor(t, p.conf).Factory()},
					Listener: "test", Metrics: m}
				h := startHMS(t, srv)
				kc := testbed.KerberosClient{KDC: r.kdc, Principal: r.aliceP, Keytab: r.aliceKT,
					ServerPrincipal: r.kdc.Principal("hive/_HOST"), Protection: p.conf}
				steps := testbed.RunScenarioT(t, v, clientURI(v, h), "version", kc.Args()...)
				var listed string
				for _, s := range steps {
					if s.Step == "getAllDatabases" {
						listed = s.Detail
					}
				}
				if !strings.Contains(listed, "user_alice") {
					t.Fatalf("the handler did not see alice: getAllDatabases = %q", listed)
				}
				res, hs, data, calls := h.snapshot()
				if len(hs) != 0 || len(data) != 0 {
					t.Fatalf("server errors: handshake %v, data %v", hs, data)
				}
				if len(res) == 0 || res[0].Principal != r.aliceP || res[0].QOP != p.qop {
					t.Fatalf("results %+v, want principal %s QOP %s", res, r.aliceP, p.qop)
				}
				if (res[0].Layer != nil) != (p.qop != sasl.QOPAuth) {
					t.Fatalf("QOP %s with layer %v", p.qop, res[0].Layer)
				}
				t.Logf("calls the Java %s client made: %v", v, calls)
				h.mu.Lock()
				stream := h.taps[0].bytes()
				h.mu.Unlock()
				first := checkJavaStream(t, stream, p.qop)
				if l, ok := res[0].Layer.(*Layer); ok {
					v := javaVector{Client: string(v), QOP: string(p.qop), KeyType: l.key.KeyType,
						Key: hex.EncodeToString(l.key.KeyValue), Token: hex.EncodeToString(first)}
					checkJavaVector(t, v) // decoded offline, with a fresh layer, like the stored vectors
					recordJavaVector(t, v)
				}
			})
		}
	}
}

// clientURI is the URI a Java client of version v dials. Hive 3.1.3 replaces _HOST in the server principal with the
// canonical name of the URI host (127.0.0.1 becomes localhost); Hive 4.1.0 uses the URI host as written (it asks
// for hive/127.0.0.1), so it is given the name.
func clientURI(v testbed.Version, h *hmsServer) string {
	if v == testbed.Hive410 {
		return "thrift://localhost:" + h.addr()[strings.LastIndexByte(h.addr(), ':')+1:]
	}
	return h.uri()
}

// TestJavaClientRefused: what the real Java client does wrong is refused with Hive's "GSS initiate failed" and
// counted by reason.
func TestJavaClientRefused(t *testing.T) {
	r := newRealm(t, testbed.KDCOptions{})
	other := newRealm(t, testbed.KDCOptions{Realm: "OTHER.TEST"})
	m, _ := sasl.NewMetrics(nil)
	srv := &sasl.Server{Mechs: map[string]sasl.ServerMechFactory{Mechanism: r.acceptor(t, "privacy").Factory()},
		Listener: "test", Metrics: m}
	h := startHMS(t, srv)
	cases := []struct {
		name   string
		kc     testbed.KerberosClient
		reason string // on the server
		client string // in the client's error
	}{
		// credentials configured but no login: the Java client cannot even build an AP-REQ
		{"no ticket", testbed.KerberosClient{KDC: r.kdc, Principal: r.aliceP, NoLogin: true,
			ServerPrincipal: r.kdc.Principal("hive/_HOST"), Protection: "privacy"}, sasl.ReasonPeerFailure, "GSS initiate failed"},
		{"another service", testbed.KerberosClient{KDC: r.kdc, Principal: r.aliceP, Keytab: r.aliceKT,
			ServerPrincipal: r.kdc.Principal("HTTP/_HOST"), Protection: "privacy"}, ReasonWrongService, "Peer indicated failure: GSS initiate failed"},
		{"another realm", testbed.KerberosClient{KDC: other.kdc, Principal: other.aliceP, Keytab: other.aliceKT,
			ServerPrincipal: other.kdc.Principal("hive/_HOST"), Protection: "privacy"}, ReasonWrongRealm, "Peer indicated failure: GSS initiate failed"},
		{"no common QOP", testbed.KerberosClient{KDC: r.kdc, Principal: r.aliceP, Keytab: r.aliceKT,
			ServerPrincipal: r.kdc.Principal("hive/_HOST"), Protection: "authentication"}, sasl.ReasonPeerFailure, "No common protection layer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, hsBefore, _, _ := h.snapshot()
			steps, err := testbed.RunScenario(testbed.Hive313, h.uri(), "version", c.kc.Args()...)
			if err == nil {
				t.Fatalf("the client was served: %v", steps)
			}
			var failed string
			for _, s := range steps {
				if !s.OK {
					failed = s.Step + ": " + s.Error
				}
			}
			t.Logf("client failure: %s", failed)
			if !strings.Contains(failed, "getAllDatabases") {
				t.Fatalf("want getAllDatabases to fail, got %v (%v)", steps, err)
			}
			if !strings.Contains(failed, c.client) {
				t.Errorf("client error %q does not say %q", failed, c.client)
			}
			{
				h.waitHandshakeErrors(t, len(hsBefore)+1)
				time.Sleep(300 * time.Millisecond) // the client retries; let the server record every attempt
				_, hs, _, _ := h.snapshot()
				var he *sasl.HandshakeError
				for _, e := range hs[len(hsBefore):] {
					if !errors.As(e, &he) || he.Reason != c.reason {
						t.Fatalf("server error %v, want reason %s", e, c.reason)
					}
				}
				if got := m.Failures("test", he.Mechanism, c.reason); got < 1 {
					t.Fatalf("metric for %s = %v", c.reason, got)
				}
			}
		})
	}
	if res, _, _, _ := h.snapshot(); len(res) != 0 {
		t.Fatalf("a refused client completed a handshake: %+v", res)
	}
}

// dialGo connects the Go initiator (alice) to addr with the given preference list.
func dialGo(t *testing.T, r *realm, l *Login, service string, qops []sasl.QOP, addr string) (net.Conn, error) {
	t.Helper()
	in, err := NewInitiator(InitiatorOptions{Login: l, Principal: service, QOPs: qops})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return in.Dial(nil)(ctx, "tcp", addr)
}

// TestGoInitiatorToGoAcceptor: both sides of this package agree for every QOP, and the data phase carries real
// calls (several, so sequence numbers advance).
func TestGoInitiatorToGoAcceptor(t *testing.T) {
	r := newRealm(t, testbed.KDCOptions{})
	srv := &sasl.Server{Mechs: map[string]sasl.ServerMechFactory{Mechanism: r.acceptor(t, "privacy,integrity,authentication").Factory()}}
	h := startHMS(t, srv)
	l := r.aliceLogin(t)
	for _, p := range protections {
		t.Run(p.conf, func(t *testing.T) {
			c, err := dialGo(t, r, l, r.kdc.Principal("hive/_HOST"), []sasl.QOP{p.qop}, h.addr())
			if err != nil {
				_, hs, _, _ := h.snapshot()
				t.Fatalf("%v; server: %v", err, hs)
			}
			defer c.Close()
			for i := 0; i < 3; i++ {
				if got := callGetAllDatabases(t, c); !slices.Equal(got, []string{"default", "user_alice"}) {
					t.Fatalf("databases %v", got)
				}
			}
			sc := c.(*sasl.Conn)
			if p.qop == sasl.QOPAuth {
				if sc.Layer() != nil {
					t.Fatal("auth with a layer")
				}
			} else if sc.Layer().(*Layer).Sealed() != (p.qop == sasl.QOPAuthConf) {
				t.Fatalf("sealed = %v for %s", sc.Layer().(*Layer).Sealed(), p.qop)
			}
		})
	}
	if st := l.Status(); st.State != "ACTIVE" || !st.LoggedIn || !st.Healthy || st.Principal != r.aliceP ||
		st.SecondsUntilExpiry == nil || *st.SecondsUntilExpiry <= 0 || st.TGTExpiresAtEpochSecond <= time.Now().Unix() {
		t.Fatalf("login status %+v", st)
	}
}

// checkJavaStream checks what the real Java client sent, frame by frame, against the formats this package
// implements: START "GSSAPI"; OK + GSS AP-REQ; OK + empty (after our AP-REP); COMPLETE + an integrity-only wrap token
// of 4 bytes (05 04 00 ff, EC 12, RRC 0); then data frames that are plain Thrift (auth), integrity tokens
// (05 04 00 ff 00 0c 00 00) or sealed tokens (05 04 02 ff 00 00 00 00).
func checkJavaStream(t *testing.T, b []byte, qop sasl.QOP) (firstData []byte) {
	t.Helper()
	next := func(n int) []byte {
		if len(b) < n {
			t.Fatalf("client stream ends early (%d bytes left, want %d)", len(b), n)
		}
		out := b[:n]
		b = b[n:]
		return out
	}
	type neg struct {
		status byte
		check  func(p []byte) bool
		what   string
	}
	for _, f := range []neg{
		{1, func(p []byte) bool { return string(p) == "GSSAPI" }, "START GSSAPI"},
		{2, func(p []byte) bool { id, _, err := parseContextToken(p); return err == nil && id == tokAPReq }, "OK + AP-REQ"},
		{2, func(p []byte) bool { return len(p) == 0 }, "OK + empty"},
		{5, func(p []byte) bool { return len(p) == 32 && string(p[:8]) == "\x05\x04\x00\xff\x00\x0c\x00\x00" }, "COMPLETE + layer choice"},
	} {
		h := next(5)
		p := next(int(binary.BigEndian.Uint32(h[1:])))
		if h[0] != f.status || !f.check(p) {
			t.Fatalf("Java client frame %q: status %d payload % x", f.what, h[0], p[:min(len(p), 24)])
		}
	}
	want := map[sasl.QOP]string{
		sasl.QOPAuth:     "\x80\x01\x00",                     // a strict TBinaryProtocol envelope
		sasl.QOPAuthInt:  "\x05\x04\x00\xff\x00\x0c\x00\x00", // integrity: not sealed, EC 12, RRC 0
		sasl.QOPAuthConf: "\x05\x04\x02\xff\x00\x00\x00\x00", // sealed, EC 0, RRC 0
	}[qop]
	if want == "" {
		t.Fatalf("no expected data-frame prefix for QOP %q", qop)
	}
	frames := 0
	for len(b) > 0 {
		p := next(int(binary.BigEndian.Uint32(next(4))))
		if !strings.HasPrefix(string(p), want) {
			t.Fatalf("Java %s data frame %d starts % x, want % x", qop, frames, p[:min(len(p), 8)], want)
		}
		if frames == 0 {
			firstData = p
		}
		frames++
	}
	if frames == 0 {
		t.Fatal("the Java client sent no data frame")
	}
	return firstData
}
