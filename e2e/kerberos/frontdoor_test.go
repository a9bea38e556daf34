package kerberos

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/wire"
)

// The real HiveMetaStoreClient 3.1.3 and 4.1.0 with hive.metastore.sasl.enabled=true run the federated DDL
// scenario (default catalog and catalog2) through the Kerberized proxy to the Kerberized metastores, at every QOP.
// The proxy authenticates alice, the audit names her, and the backends see the proxy's principal (impersonation
// off).
func TestFederatedScenarioOverKerberos(t *testing.T) {
	p := proxytest.Start(t, federation(t))
	for _, v := range []testbed.Version{testbed.Hive313, testbed.Hive410} {
		for _, q := range []string{"authentication", "integrity", "privacy"} {
			t.Run(string(v)+"/"+q, func(t *testing.T) {
				local, remote := uniq("k"+q[:4]), uniq("kr"+q[:4])
				args := append([]string{"--db", local, "--db", "catalog2__" + remote}, javaClient(v, "alice", aliceKT, q).Args()...)
				listener := "primary"
				if v == testbed.Hive410 {
					listener = "hive4"
				}
				steps := testbed.RunScenarioT(t, v, p.URI(listener), "ddl", args...)
				if len(steps) < 10 {
					t.Fatalf("only %d steps ran", len(steps))
				}
				// what reached catalog2's metastore came from the proxy, over Kerberos (integrity)
				if got := auditUsers(t, krb2, remote); len(got) == 0 || got[0] != proxyP {
					t.Fatalf("catalog2's metastore audit for %s shows ugi=%v, want the proxy's principal %s", remote, got, proxyP)
				}
			})
		}
	}
	// the proxy's own audit names the authenticated user, mapped by auth_to_local
	b, err := os.ReadFile(p.AuditFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"authenticatedUser":"alice"`) {
		t.Fatalf("the proxy's audit does not name alice:\n%.2000s", b)
	}
	if n := p.Metric(t, sasl.MetricHandshakeDurationSecs, "mechanism", "GSSAPI"); n < 6 {
		t.Fatalf("%v GSSAPI handshakes timed, want at least 6", n)
	}
	// /readyz: both Kerberos sides ACTIVE, computed from the logins, and the token store
	resp, err := http.Get(p.ManagementURL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rz struct {
		Ready    bool `json:"ready"`
		Kerberos struct {
			FrontDoor, Backend struct {
				State     string `json:"state"`
				Principal string `json:"principal"`
				Expiry    *int64 `json:"secondsUntilExpiry"`
			}
		} `json:"kerberos"`
		TokenStore *struct {
			Store      string `json:"store"`
			Healthy    bool   `json:"healthy"`
			MasterKeys int    `json:"masterKeys"`
		} `json:"tokenStore"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rz); err != nil {
		t.Fatal(err)
	}
	fd, be := rz.Kerberos.FrontDoor, rz.Kerberos.Backend
	if !rz.Ready || fd.State != "ACTIVE" || fd.Principal != proxyP || fd.Expiry == nil || *fd.Expiry <= 0 ||
		be.State != "ACTIVE" || be.Principal != proxyP {
		t.Fatalf("/readyz kerberos: %+v", rz)
	}
	if rz.TokenStore == nil || rz.TokenStore.Store != "memory" || !rz.TokenStore.Healthy || rz.TokenStore.MasterKeys < 1 {
		t.Fatalf("/readyz tokenStore: %+v", rz.TokenStore)
	}
}

// Refusals through the proxy: each is answered as Hive answers it, the connection closed, the failure counted by
// reason, and nothing reaches a backend.
func TestKerberosRefusals(t *testing.T) {
	p := proxytest.Start(t, federation(t, "server.client-socket-timeout-ms=2000"))
	addr := strings.TrimPrefix(p.URI("primary"), "thrift://")
	failures := func(reason string) float64 {
		return p.Metric(t, sasl.MetricAuthFailuresTotal, "listener", "primary", "reason", reason)
	}
	requests := func() float64 { return p.Metric(t, "hms_proxy_requests_total") }
	before, served := requests(), 0.0

	t.Run("no ticket", func(t *testing.T) {
		k := javaClient(testbed.Hive313, "alice", aliceKT, "")
		k.NoLogin = true
		steps, err := testbed.RunScenario(testbed.Hive313, p.URI("primary"), "version", k.Args()...)
		if err == nil {
			t.Fatalf("a client without a ticket was served: %v", steps)
		}
		t.Logf("client: %v", lastStep(steps))
	})
	t.Run("ticket for another service", func(t *testing.T) {
		n := failures("wrong_service")
		k := javaClient(testbed.Hive313, "alice", aliceKT, "")
		k.ServerPrincipal = "hive/_HOST@" + kdc.Realm // the metastores' principal, not the proxy's
		steps, err := testbed.RunScenario(testbed.Hive313, p.URI("primary"), "version", k.Args()...)
		if err == nil {
			t.Fatalf("a ticket for hive/localhost was accepted by the proxy: %v", steps)
		}
		waitMetric(t, func() float64 { return failures("wrong_service") }, n+1)
	})
	t.Run("ticket from another realm", func(t *testing.T) {
		other := testbed.StartKDCT(t, testbed.KDCOptions{Realm: "OTHER.TEST"})
		kt, err := other.PrincipalKeytab("x.keytab", "alice", "hmsproxy/localhost")
		if err != nil {
			t.Fatal(err)
		}
		l := login(t, other.Principal("alice"), kt, other.Krb5Conf)
		n := failures("wrong_realm")
		c, err := saslDial(t, l, other.Principal("hmsproxy/localhost"), []sasl.QOP{sasl.QOPAuth}, addr)
		if err == nil {
			c.Close()
			t.Fatal("a ticket of realm OTHER.TEST was accepted")
		}
		t.Logf("client: %v", err)
		waitMetric(t, func() float64 { return failures("wrong_realm") }, n+1)
	})
	t.Run("replayed authenticator", func(t *testing.T) {
		// a real client's handshake, recorded on its way to the proxy, then replayed
		tap := startRecorder(t, addr)
		k := javaClient(testbed.Hive313, "alice", aliceKT, "")
		r0 := requests()
		testbed.RunScenarioT(t, testbed.Hive313, "thrift://"+tap.addr(), "version", k.Args()...)
		served += requests() - r0
		start, apreq := tap.firstFrames(t)
		n := failures("replay")
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write(append(start, apreq...)); err != nil {
			t.Fatal(err)
		}
		if st, text := readFrame(t, c); st != 3 || text != "GSS initiate failed" {
			t.Fatalf("replay answered %d %q, want BAD GSS initiate failed", st, text)
		}
		expectClosed(t, c, 10*time.Second)
		waitMetric(t, func() float64 { return failures("replay") }, n+1)
	})
	t.Run("tampered data frame", func(t *testing.T) {
		l := login(t, kdc.Principal("alice"), aliceKT, kdc.Krb5Conf)
		args := wire.Struct()
		call := wire.AppendMessage(nil, wire.Header{Name: "get_all_databases", Type: wire.Call, SeqID: 1}, &args)
		for _, q := range []sasl.QOP{sasl.QOPAuthInt, sasl.QOPAuthConf} {
			n := p.Metric(t, "hms_proxy_bad_frames_total", "reason", "sasl_layer")
			c, err := saslDial(t, l, proxyP, []sasl.QOP{q}, addr)
			if err != nil {
				t.Fatal(err)
			}
			sc := c.(*sasl.Conn)
			tok, err := sc.Layer().Wrap(call)
			if err != nil {
				t.Fatal(err)
			}
			tok[len(tok)/2] ^= 0x40 // one bit in flight
			if _, err := sc.Conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...)); err != nil {
				t.Fatal(err)
			}
			expectClosed(t, sc.Conn, 10*time.Second)
			c.Close()
			waitMetric(t, func() float64 { return p.Metric(t, "hms_proxy_bad_frames_total", "reason", "sasl_layer") }, n+1)
		}
	})
	t.Run("handshake never completed", func(t *testing.T) {
		n := failures("timeout")
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		if _, err := c.Write(saslFrame(1, []byte("GSSAPI"))); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, c, 20*time.Second)
		if d := time.Since(start); d < 1800*time.Millisecond {
			t.Fatalf("closed after %v, before the 2 s socket timeout", d)
		}
		waitMetric(t, func() float64 { return failures("timeout") }, n+1)
	})
	t.Run("plain thrift call", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		args := wire.Struct()
		c.Write(wire.AppendMessage(nil, wire.Header{Name: "get_all_databases", Type: wire.Call, SeqID: 1}, &args))
		if st, text := readFrame(t, c); st != 4 || !strings.Contains(text, "Invalid status -128") {
			t.Fatalf("a plain call answered %d %q, want ERROR Invalid status -128", st, text)
		}
	})
	// the recorded client's calls are the only requests that ran
	if got := requests() - before; got != served {
		t.Fatalf("%v requests were served during the refusals, want only the recorded client's %v", got, served)
	}
}

func lastStep(steps []testbed.Step) string {
	if len(steps) == 0 {
		return "(no steps)"
	}
	return steps[len(steps)-1].String()
}

func waitMetric(t *testing.T, get func() float64, want float64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if get() >= want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("metric is %v, want %v", get(), want)
}

func saslFrame(status byte, payload []byte) []byte {
	b := make([]byte, 5, 5+len(payload))
	b[0] = status
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	return append(b, payload...)
}

func readFrame(t *testing.T, c net.Conn) (byte, string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(c, hdr); err != nil {
		t.Fatalf("no reply frame: %v", err)
	}
	p := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
	if _, err := io.ReadFull(c, p); err != nil {
		t.Fatalf("reply payload: %v", err)
	}
	return hdr[0], string(p)
}

func expectClosed(t *testing.T, c net.Conn, within time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the proxy did not close the connection within %v: %v", within, err)
	}
}

// recorder relays connections to a target and records what the first client sent.
type recorder struct {
	ln   net.Listener
	mu   sync.Mutex
	sent []byte
	n    int
}

func startRecorder(t *testing.T, target string) *recorder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			first := r.n == 0
			r.n++
			r.mu.Unlock()
			go func() {
				defer b.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						if first {
							r.mu.Lock()
							r.sent = append(r.sent, buf[:n]...)
							r.mu.Unlock()
						}
						if _, werr := b.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, b)
			}()
		}
	}()
	return r
}

func (r *recorder) addr() string { return r.ln.Addr().String() }

// firstFrames returns the first two SASL frames the first client sent (START and the AP-REQ).
func (r *recorder) firstFrames(t *testing.T) (start, apreq []byte) {
	t.Helper()
	r.mu.Lock()
	b := append([]byte(nil), r.sent...)
	r.mu.Unlock()
	br := bufio.NewReader(strings.NewReader(string(b)))
	var frames [][]byte
	for i := 0; i < 2; i++ {
		hdr := make([]byte, 5)
		if _, err := io.ReadFull(br, hdr); err != nil {
			t.Fatalf("recorded stream too short: %v", err)
		}
		p := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
		if _, err := io.ReadFull(br, p); err != nil {
			t.Fatalf("recorded stream too short: %v", err)
		}
		frames = append(frames, append(hdr, p...))
	}
	if frames[0][0] != 1 || string(frames[0][5:]) != "GSSAPI" || frames[1][5] != 0x60 {
		t.Fatalf("recorded frames are not START GSSAPI + AP-REQ: %x", b[:min(len(b), 40)])
	}
	return frames[0], frames[1]
}

// Outbound tickets that expire: the proxy's client principal gets tickets of a few seconds. The login is renewed
// in the background before the TGT expires; pooled sessions keep working after their ticket expired (a metastore
// checks tickets only at the handshake), and a session opened after the first expiry uses the renewed TGT: no call
// fails because a ticket ran out.
func TestBackendTicketsRenew(t *testing.T) {
	const life = 6 * time.Second
	if err := kdc.AddPrincipalLife("shortlived/localhost", life); err != nil {
		t.Fatal(err)
	}
	kt, err := kdc.Keytab("shortlived.keytab", "shortlived/localhost")
	if err != nil {
		t.Fatal(err)
	}
	p := proxytest.Start(t, federation(t,
		"security.client-principal=shortlived/localhost@"+kdc.Realm,
		"security.client-keytab="+kt))
	alice := kerberosClient(t, login(t, kdc.Principal("alice"), aliceKT, kdc.Krb5Conf), "hmsproxy/_HOST@"+kdc.Realm, p.URI("primary"))
	get := func(db string) {
		t.Helper()
		if _, err := alice.GetDatabase(ctx(t), db); err != nil {
			t.Fatalf("get_database(%s): %v", db, err)
		}
	}
	get("default") // catalog1's first session: the first login
	first := p.Security.KerberosReport().Backend
	if first.State != "ACTIVE" {
		t.Fatalf("backend Kerberos after the first session: %+v", first)
	}
	// the background renewal logs in again in the TGT's last fifth, before it expires: /readyz never goes STALE
	time.Sleep(life + time.Second)
	renewed := p.Security.KerberosReport().Backend
	if renewed.State != "ACTIVE" || !renewed.Healthy || renewed.TGTExpiresAtEpochSecond <= first.TGTExpiresAtEpochSecond {
		t.Fatalf("backend Kerberos past the first TGT's expiry: %+v, want ACTIVE with a later expiry than %+v (renewed in the background)", renewed, first)
	}
	get("default")           // the pooled session outlives its ticket
	get("catalog2__default") // catalog2's first session: a service ticket from the renewed TGT
	if again := p.Security.KerberosReport().Backend; again.State != "ACTIVE" {
		t.Fatalf("backend Kerberos after a session opened past the first expiry: %+v", again)
	}
}
