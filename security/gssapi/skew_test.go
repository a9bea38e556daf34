package gssapi

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// craftAPReq is the framed AP-REQ a Java client would send for tkt, with the authenticator's time moved by shift
// (built with gokrb5's message types, as a client with a wrong clock would).
func craftAPReq(t *testing.T, l *Login, tkt messages.Ticket, key types.EncryptionKey, shift time.Duration) []byte {
	t.Helper()
	cname, crealm, err := l.credentials()
	if err != nil {
		t.Fatal(err)
	}
	auth, err := types.NewAuthenticator(crealm, cname)
	if err != nil {
		t.Fatal(err)
	}
	auth.CTime = auth.CTime.Add(shift)
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.GenerateSeqNumberAndSubKey(key.KeyType, et.GetKeyByteSize()); err != nil {
		t.Fatal(err)
	}
	auth.Cksum = gssChecksum(gssFlagMutual | gssFlagReplay | gssFlagSequence | gssFlagConf | gssFlagInteg)
	req, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		t.Fatal(err)
	}
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return frameContextToken(tokAPReq, b)
}

// present sends START GSSAPI with tok from local (nil: any) and returns the server's answer status.
func present(t *testing.T, h *hmsServer, local net.Addr, tok []byte) byte {
	t.Helper()
	d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: local}
	c, err := d.Dial("tcp", h.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(append(frame(1, []byte("GSSAPI")), frame(2, tok)...)); err != nil {
		t.Fatal(err)
	}
	st, text := readReply(t, c)
	t.Logf("answer %d: %.40q", st, text)
	return st
}

// withClockskew writes a copy of the realm's krb5.conf with libdefaults clockskew set.
func withClockskew(t *testing.T, r *realm, seconds string) string {
	t.Helper()
	b, err := os.ReadFile(r.kdc.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "[libdefaults]\n", "[libdefaults]\n clockskew = "+seconds+"\n", 1)
	if s == string(b) {
		t.Fatal("the test bed's krb5.conf has no [libdefaults] line")
	}
	p := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The front door's allowed clock skew is krb5.conf's libdefaults clockskew (300 s when unset), as MIT's and Java's
// acceptors read it: an authenticator two minutes off is accepted under the default and refused with reason
// clock_skew under clockskew = 60; ten minutes off is refused under the default.
func TestClockSkewFromKrb5Conf(t *testing.T) {
	r := newRealm(t, testbed.KDCOptions{})
	door := func(krb5 string) *hmsServer {
		fd, err := NewFrontDoor(FrontDoorOptions{Principal: r.serverP, Keytab: r.serverKT, Krb5Conf: krb5, BindHost: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		return startHMSWith(t, fd.Server, fd)
	}
	def, strict := door(r.kdc.Krb5Conf), door(withClockskew(t, r, "60"))
	l := r.aliceLogin(t)
	tkt, key, err := l.ServiceTicket("hive/localhost", r.kdc.Realm)
	if err != nil {
		t.Fatal(err)
	}
	if st := present(t, def, nil, craftAPReq(t, l, tkt, key, -2*time.Minute)); st != 2 {
		t.Fatalf("an authenticator 2 min old under the default skew of 300 s: status %d, want OK (2)", st)
	}
	if st := present(t, strict, nil, craftAPReq(t, l, tkt, key, -2*time.Minute)); st != 3 {
		t.Fatalf("an authenticator 2 min old under clockskew = 60: status %d, want BAD (3)", st)
	}
	wantReason(t, strict, 1, ReasonSkew)
	if st := present(t, def, nil, craftAPReq(t, l, tkt, key, 10*time.Minute)); st != 3 {
		t.Fatalf("an authenticator 10 min ahead under the default skew: status %d, want BAD (3)", st)
	}
	// the first connection to def ended after its AP-REP (closed by this test), the second was refused
	wantReason(t, def, 2, ReasonSkew)
}

// A ticket the KDC issued with client addresses (noaddresses = false on the client, 127.0.0.1 added) is accepted
// from 127.0.0.1 and refused with reason bad_address from 127.0.0.2 (another loopback address, not in it).
func TestTicketAddresses(t *testing.T) {
	r := newRealm(t, testbed.KDCOptions{})
	cfg, err := LoadConfig(r.kdc.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	cfg.LibDefaults.NoAddresses = false
	cfg.LibDefaults.ExtraAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	l, err := NewLogin(LoginOptions{Principal: r.aliceP, Keytab: r.alice, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	tkt, key, err := l.ServiceTicket("hive/localhost", r.kdc.Realm)
	if err != nil {
		t.Fatal(err)
	}
	// the ticket really holds addresses (decrypted with the service key, as the acceptor does)
	dec := tkt
	if err := dec.DecryptEncPart(r.serverKeys, nil); err != nil {
		t.Fatal(err)
	}
	if len(dec.DecryptedEncPart.CAddr) == 0 {
		t.Fatal("the KDC issued a ticket without addresses; the test needs one with")
	}
	h := startHMS(t, &sasl.Server{Mechs: map[string]sasl.ServerMechFactory{Mechanism: r.acceptor(t, "authentication").Factory()}})
	if st := present(t, h, &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}, craftAPReq(t, l, tkt, key, 0)); st != 2 {
		t.Fatalf("the addressed ticket from 127.0.0.1: status %d, want OK (2)", st)
	}
	if st := present(t, h, &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, craftAPReq(t, l, tkt, key, 0)); st != 3 {
		t.Fatalf("the addressed ticket from 127.0.0.2: status %d, want BAD (3)", st)
	}
	wantReason(t, h, 2, ReasonBadAddress)
}

// wantReason waits for n handshake failures on h and checks exactly one has reason (the others: connections this
// test closed after an OK).
func wantReason(t *testing.T, h *hmsServer, n int, reason string) {
	t.Helper()
	found := 0
	var all []string
	for _, err := range h.waitHandshakeErrors(t, n) {
		var he *sasl.HandshakeError
		if errors.As(err, &he) {
			all = append(all, he.Reason)
			if he.Reason == reason {
				found++
			}
		}
	}
	if found != 1 {
		t.Fatalf("handshake failure reasons %v, want exactly one %q", all, reason)
	}
}
