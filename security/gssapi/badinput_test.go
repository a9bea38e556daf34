package gssapi

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/wire"
)

// frame is one SASL negotiation frame as a raw client writes it.
func frame(status byte, payload []byte) []byte {
	b := make([]byte, 5, 5+len(payload))
	b[0] = status
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	return append(b, payload...)
}

// readReply reads one negotiation frame the server sent.
func readReply(t *testing.T, c net.Conn) (byte, string) {
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

// expectClosed reads until the server closes the connection; it fails t if that takes longer than within.
func expectClosed(t *testing.T, c net.Conn, within time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) { // a close with unread input is a reset
		t.Fatalf("the server did not close the connection within %v: %v", within, err)
	}
}

func lastReason(t *testing.T, h *hmsServer, n int) string {
	t.Helper()
	hs := h.waitHandshakeErrors(t, n)
	var he *sasl.HandshakeError
	if !errors.As(hs[n-1], &he) {
		t.Fatalf("error %v is no HandshakeError", hs[n-1])
	}
	t.Logf("server: %v", he)
	return he.Reason
}

// TestBadNegotiations: what a broken or hostile client sends during the negotiation gets the answer Hive gives
// (BAD/ERROR frame where the protocol allows), the connection closed and a failure counted by reason.
func TestBadNegotiations(t *testing.T) {
	r := newRealm(t, testbed.KDCOptions{})
	m, _ := sasl.NewMetrics(nil)
	srv := &sasl.Server{Mechs: map[string]sasl.ServerMechFactory{Mechanism: r.acceptor(t, "privacy").Factory()},
		HandshakeTimeout: time.Second, Listener: "fd", Metrics: m}
	h := startHMS(t, srv)
	args := wire.Struct()
	thriftCall := wire.AppendMessage(nil, wire.Header{Name: "get_all_databases", Type: wire.Call, SeqID: 1}, &args)
	oversized := frame(2, nil)
	binary.BigEndian.PutUint32(oversized[1:], 50<<20) // declares 50 MiB, sends none of it
	cases := []struct {
		name       string
		send       [][]byte
		wantStatus byte   // 0: no reply frame, only the close
		wantText   string // in the reply
		reason     string
	}{
		{"plain thrift call", [][]byte{thriftCall}, 4, "Invalid status -128", sasl.ReasonNotSASL},
		{"garbage", [][]byte{[]byte("\x37garbage that is no SASL frame at all")}, 4, "Invalid status 55", sasl.ReasonMalformed},
		{"unknown mechanism", [][]byte{frame(1, []byte("PLAIN"))}, 3, "Unsupported mechanism type PLAIN", sasl.ReasonUnknownMech},
		{"OK before START", [][]byte{frame(2, []byte("x"))}, 4, "Expecting START status, received OK", sasl.ReasonMalformed},
		{"oversized token", [][]byte{frame(1, []byte("GSSAPI")), oversized}, 4, "over the limit", sasl.ReasonOversized},
		{"not a GSS token", [][]byte{frame(1, []byte("GSSAPI")), frame(2, []byte("hello"))}, 3, "GSS initiate failed", ReasonBadToken},
		{"truncated frame", [][]byte{frame(1, []byte("GSSAPI"))[:7]}, 0, "", sasl.ReasonTimeout},
		{"stalls after START", [][]byte{frame(1, []byte("GSSAPI"))}, 0, "", sasl.ReasonTimeout},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", h.addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, b := range c.send {
				if _, err := conn.Write(b); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			if c.wantStatus != 0 {
				st, text := readReply(t, conn)
				if st != c.wantStatus || !strings.Contains(text, c.wantText) {
					t.Fatalf("reply %d %q, want %d with %q", st, text, c.wantStatus, c.wantText)
				}
			}
			expectClosed(t, conn, 10*time.Second)
			if c.reason == sasl.ReasonTimeout && time.Since(start) < 900*time.Millisecond {
				t.Fatalf("closed after %v, before the 1s handshake deadline", time.Since(start))
			}
			if got := lastReason(t, h, i+1); got != c.reason {
				t.Fatalf("reason %q, want %q", got, c.reason)
			}
		})
	}
	if got := m.Failures("fd", "", sasl.ReasonNotSASL); got != 1 {
		t.Fatalf("not_sasl failures = %v, want 1", got)
	}
	if res, _, _, _ := h.snapshot(); len(res) != 0 {
		t.Fatalf("a bad client completed a handshake: %+v", res)
	}
}

// TestReplayedAuthenticator: the same AP-REQ presented twice is served once; the replay gets BAD.
func TestReplayedAuthenticator(t *testing.T) {
	r := newRealm(t, testbed.KDCOptions{})
	srv := &sasl.Server{Mechs: map[string]sasl.ServerMechFactory{Mechanism: r.acceptor(t, "privacy").Factory()}}
	h := startHMS(t, srv)
	l := r.aliceLogin(t)
	tkt, key, err := l.ServiceTicket("hive/localhost", r.kdc.Realm)
	if err != nil {
		t.Fatal(err)
	}
	cname, crealm, _ := l.credentials()
	tok, _, err := buildAPReq(tkt, key, cname, crealm)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []byte{2, 3} { // OK + AP-REP, then BAD
		c, err := net.Dial("tcp", h.addr())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(append(frame(1, []byte("GSSAPI")), frame(2, tok)...))
		st, text := readReply(t, c)
		c.Close()
		if st != want {
			t.Fatalf("presentation %d: status %d (%q), want %d", i+1, st, text, want)
		}
	}
	// two failures: the first connection, closed by this test after the AP-REP, and the replay
	replays := 0
	for _, err := range h.waitHandshakeErrors(t, 2) {
		var he *sasl.HandshakeError
		if errors.As(err, &he) && he.Reason == ReasonReplay {
			replays++
		}
	}
	if replays != 1 {
		t.Fatalf("want one replay refusal, got %d", replays)
	}
}

// TestExpiredTicket: a ticket the real KDC issued for a few seconds is refused once it has expired.
func TestExpiredTicket(t *testing.T) {
	r := newRealm(t, testbed.KDCOptions{})
	if err := r.kdc.AddPrincipalLife("bob", 3*time.Second); err != nil {
		t.Fatal(err)
	}
	bobKT, err := r.kdc.Keytab("bob.keytab", "bob")
	if err != nil {
		t.Fatal(err)
	}
	kt, err := LoadKeytab(bobKT)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLogin(LoginOptions{Principal: r.kdc.Principal("bob"), Keytab: kt, Config: r.cfg})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := sasl.ParseProtection("privacy")
	a, err := NewAcceptor(AcceptorOptions{Principal: r.serverP, Keytab: r.serverKeys, QOPs: q, MaxClockSkew: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := startHMS(t, &sasl.Server{Mechs: map[string]sasl.ServerMechFactory{Mechanism: a.Factory()}})
	tkt, key, err := l.ServiceTicket("hive/localhost", r.kdc.Realm)
	if err != nil {
		t.Fatal(err)
	}
	life := time.Until(l.tickets["hive/localhost@"+r.kdc.Realm].end) // the client's view of the ticket (TGS-REP)
	if life > 5*time.Second {
		t.Fatalf("the KDC issued a ticket for %v, want at most the principal's 3s", life)
	}
	time.Sleep(life + 2*time.Second) // past the end and the 1s skew
	cname, crealm, _ := l.credentials()
	tok, _, err := buildAPReq(tkt, key, cname, crealm)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", h.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(append(frame(1, []byte("GSSAPI")), frame(2, tok)...))
	if st, text := readReply(t, c); st != 3 || text != "GSS initiate failed" {
		t.Fatalf("reply %d %q, want BAD GSS initiate failed", st, text)
	}
	if got := lastReason(t, h, 1); got != ReasonExpired {
		t.Fatalf("reason %q, want expired", got)
	}
}

// TestTamperedDataFrame: after a real handshake, a data frame whose wrap token was changed in flight is refused
// and the connection dropped, for integrity and for privacy.
func TestTamperedDataFrame(t *testing.T) {
	r := newRealm(t, testbed.KDCOptions{})
	srv := &sasl.Server{Mechs: map[string]sasl.ServerMechFactory{Mechanism: r.acceptor(t, "privacy,integrity").Factory()}}
	h := startHMS(t, srv)
	l := r.aliceLogin(t)
	args := wire.Struct()
	call := wire.AppendMessage(nil, wire.Header{Name: "get_all_databases", Type: wire.Call, SeqID: 1}, &args)
	for i, q := range []sasl.QOP{sasl.QOPAuthInt, sasl.QOPAuthConf} {
		t.Run(string(q), func(t *testing.T) {
			c, err := dialGo(t, r, l, r.serverP, []sasl.QOP{q}, h.addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
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
			deadline := time.Now().Add(10 * time.Second)
			var data []error
			for time.Now().Before(deadline) {
				if _, _, data, _ = h.snapshot(); len(data) > i {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if len(data) <= i || !errors.Is(data[i], ErrBadToken) {
				t.Fatalf("server data errors %v, want a bad wrap token", data)
			}
			t.Logf("server: %v", data[i])
		})
	}
	if _, _, _, calls := h.snapshot(); len(calls) != 0 {
		t.Fatalf("tampered calls were served: %v", calls)
	}
}

// TestNonMutualClient: a client that does not ask for mutual authentication (the flow Go Kafka/ZooKeeper clients
// use against Java servers: no AP-REP) gets the layer offer at once, with the acceptor's sequence starting at the
// initiator's, as Java's and MIT's acceptors do.
func TestNonMutualClient(t *testing.T) {
	r := newRealm(t, testbed.KDCOptions{})
	l := r.aliceLogin(t)
	tkt, key, err := l.ServiceTicket("hive/localhost", r.kdc.Realm)
	if err != nil {
		t.Fatal(err)
	}
	cname, crealm, _ := l.credentials()
	tok, auth, err := buildAPReqFlags(tkt, key, cname, crealm, gssFlagInteg|gssFlagConf)
	if err != nil {
		t.Fatal(err)
	}
	mech, _ := r.acceptor(t, "integrity").Factory()()
	mech.(sasl.PeerAware).SetPeer("127.0.0.1:1")
	offer, done, err := mech.Step(tok)
	if err != nil || done {
		t.Fatalf("AP-REQ: %v %v", done, err)
	}
	seq := uint64(auth.SeqNumber)
	ini, err := NewLayer(auth.SubKey, false, false, false, seq, seq)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := ini.unwrapAny(offer)
	if err != nil {
		t.Fatalf("the first answer is not the layer offer: %v", err)
	}
	if len(msg) != 4 || msg[0] != layerIntegrity {
		t.Fatalf("offer % x", msg)
	}
	reply, _ := ini.wrapIntegrity(securityMessage(layerIntegrity, 65536, ""))
	if _, done, err := mech.Step(reply); err != nil || !done {
		t.Fatalf("layer choice: %v %v", done, err)
	}
	if res := mech.Result(); res.Principal != r.aliceP || res.QOP != sasl.QOPAuthInt {
		t.Fatalf("result %+v", res)
	}
}
