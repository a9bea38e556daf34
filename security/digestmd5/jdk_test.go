package digestmd5

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/security/tokens"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// tokenFixture is a secret manager with tokens in every state a client can
// present.
type tokenFixture struct {
	m                                                 *tokens.Manager
	clk                                               *clock
	good, expired, cancelled, unknownKey, forged, bob cred
}

type cred struct{ user, password string }

func credOf(t *testing.T, token string) cred {
	t.Helper()
	tok, err := tokens.DecodeToken(token)
	if err != nil {
		t.Fatal(err)
	}
	return cred{tokens.EncodeIdentifierName(tok.Identifier), tokens.EncodePassword(tok.Password)}
}

func newTokenFixture(t *testing.T) *tokenFixture {
	t.Helper()
	f := &tokenFixture{clk: &clock{time.Now()}}
	store := tokens.NewMemoryStore()
	m, err := tokens.New(tokens.Options{Store: store, Now: func() time.Time { return f.clk.now() }})
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	issue := func(owner, real string) string {
		s, err := m.Get(owner, "hive", real)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	goodTok := issue("alice@EXAMPLE.COM", "hive/hs2@EXAMPLE.COM")
	f.good = credOf(t, goodTok)
	f.bob = credOf(t, issue("bob", ""))
	f.forged = cred{f.good.user, tokens.EncodePassword([]byte("not-the-password-xxx"))}
	c := issue("carol", "")
	f.cancelled = credOf(t, c)
	if _, err := m.Cancel(c, "carol"); err != nil {
		t.Fatal(err)
	}
	// Expired: stored with a renew date in the past.
	id := &tokens.Identifier{Owner: "dave", Renewer: "hive", IssueDate: f.clk.t.Add(-48 * time.Hour).UnixMilli(),
		MaxDate: f.clk.t.Add(72 * time.Hour).UnixMilli(), SequenceNumber: 90, MasterKeyID: keyIDOf(t, goodTok)}
	f.expired = f.stored(t, store, id, f.clk.t.Add(-time.Hour), nil)
	// Signed by a key the store does not hold.
	id2 := *id
	id2.Owner, id2.MasterKeyID = "erin", 4242
	f.unknownKey = f.stored(t, store, &id2, f.clk.t.Add(time.Hour), []byte("some-key"))
	return f
}

func keyIDOf(t *testing.T, token string) int32 {
	tok, _ := tokens.DecodeToken(token)
	id, err := tokens.DecodeIdentifier(tok.Identifier)
	if err != nil {
		t.Fatal(err)
	}
	return id.MasterKeyID
}

// stored puts a token straight into the store (key nil: the signing key of
// the fixture's first token, read back from the store).
func (f *tokenFixture) stored(t *testing.T, store *tokens.MemoryStore, id *tokens.Identifier, renew time.Time, key []byte) cred {
	t.Helper()
	if key == nil {
		keys, _ := store.Keys()
		for _, k := range keys {
			if k.ID == id.MasterKeyID {
				key = k.Key
			}
		}
	}
	raw := id.Encode()
	pw := tokens.Password(raw, key)
	if err := store.AddToken(raw, tokens.TokenInfo{RenewDate: renew.UnixMilli(), Password: pw}); err != nil {
		t.Fatal(err)
	}
	return cred{tokens.EncodeIdentifierName(raw), tokens.EncodePassword(pw)}
}

type jdkClientCase struct {
	name     string
	server   ServerOptions // Lookup filled in
	qop      string        // client's javax.security.sasl.qop
	cred     cred
	authzid  string
	rounds   int
	strength string
	tamper   func(i int, frame []byte) []byte
	// expectations
	wantJava string // prefix of the Java result
	wantQOP  sasl.QOP
	wantErr  string // Go handshake error substring
	wantData string // Go data-phase error substring
	wantUser string
}

func flip(at int) func(int, []byte) []byte {
	return func(i int, f []byte) []byte {
		if i == 0 {
			f = append([]byte(nil), f...)
			f[at%len(f)] ^= 0x40
		}
		return f
	}
}

func flipFromEnd(n int) func(int, []byte) []byte {
	return func(i int, f []byte) []byte {
		if i == 0 {
			f = append([]byte(nil), f...)
			f[len(f)-n] ^= 0x40
		}
		return f
	}
}

func replayFirst() func(int, []byte) []byte {
	var first []byte
	return func(i int, f []byte) []byte {
		if i == 0 {
			first = append([]byte(nil), f...)
			return f
		}
		return first
	}
}

// TestJDKClientAgainstGoServer: the JDK's DIGEST-MD5 client, as Hive's
// HiveMetaStoreClient configures it, authenticates with delegation tokens
// against the Go server for every QOP and cipher and exchanges data both
// ways; forged, expired, cancelled and unknown-key tokens, a foreign authzid
// and tampered or replayed data frames are refused.
func TestJDKClientAgainstGoServer(t *testing.T) {
	f := newTokenFixture(t)
	all := []sasl.QOP{sasl.QOPAuthConf, sasl.QOPAuthInt, sasl.QOPAuth}
	conf := func(ciphers ...string) ServerOptions {
		return ServerOptions{QOPs: []sasl.QOP{sasl.QOPAuthConf}, Ciphers: ciphers}
	}
	const rounds = 12
	cases := []jdkClientCase{
		{name: "auth", qop: "auth", cred: f.good, rounds: rounds, wantJava: "ok qop=auth ", wantQOP: sasl.QOPAuth},
		{name: "auth-int", server: ServerOptions{QOPs: []sasl.QOP{sasl.QOPAuthInt}}, qop: "auth-int", cred: f.good, rounds: rounds,
			wantJava: "ok qop=auth-int", wantQOP: sasl.QOPAuthInt},
		{name: "3des", server: conf(Cipher3DES), qop: "auth-conf", cred: f.good, rounds: rounds, wantJava: "ok qop=auth-conf strength=high", wantQOP: sasl.QOPAuthConf},
		{name: "rc4", server: conf(CipherRC4), qop: "auth-conf", cred: f.good, rounds: rounds, wantJava: "ok qop=auth-conf strength=high", wantQOP: sasl.QOPAuthConf},
		{name: "des", server: conf(CipherDES), qop: "auth-conf", cred: f.good, rounds: rounds, wantJava: "ok qop=auth-conf strength=medium", wantQOP: sasl.QOPAuthConf},
		{name: "rc4-56", server: conf(CipherRC456), qop: "auth-conf", cred: f.good, rounds: rounds, wantJava: "ok qop=auth-conf strength=medium", wantQOP: sasl.QOPAuthConf},
		{name: "rc4-40", server: conf(CipherRC440), qop: "auth-conf", cred: f.good, rounds: rounds, wantJava: "ok qop=auth-conf strength=low", wantQOP: sasl.QOPAuthConf},
		{name: "all ciphers offered", server: conf(), qop: "auth-conf", cred: f.good, rounds: rounds, wantJava: "ok qop=auth-conf strength=high", wantQOP: sasl.QOPAuthConf},
		{name: "low strength client", server: conf(), qop: "auth-conf", strength: "low", cred: f.good, rounds: 3, wantJava: "ok qop=auth-conf strength=low", wantQOP: sasl.QOPAuthConf},
		{name: "client picks auth-int", server: ServerOptions{QOPs: all}, qop: "auth-int,auth", cred: f.good, rounds: 3, wantJava: "ok qop=auth-int", wantQOP: sasl.QOPAuthInt},
		{name: "authzid equals authid", qop: "auth", cred: f.bob, authzid: f.bob.user, rounds: 1, wantJava: "ok", wantQOP: sasl.QOPAuth, wantUser: "bob"},
		{name: "forged password", qop: "auth", cred: f.forged, rounds: 1, wantJava: "refused DIGEST-MD5: digest response format violation: mismatched response", wantErr: "mismatched response"},
		{name: "expired", qop: "auth", cred: f.expired, rounds: 1, wantJava: "refused DIGEST-MD5: cannot acquire password", wantErr: "is expired"},
		{name: "cancelled", qop: "auth", cred: f.cancelled, rounds: 1, wantJava: "refused", wantErr: "does not exist"},
		{name: "unknown key", qop: "auth", cred: f.unknownKey, rounds: 1, wantJava: "refused", wantErr: "keyId=4242"},
		{name: "not a token", qop: "auth", cred: cred{"!!!", "x"}, rounds: 1, wantJava: "refused", wantErr: "not a delegation token identifier"},
		{name: "foreign authzid", qop: "auth", cred: f.bob, authzid: "root", rounds: 1, wantJava: "refused", wantErr: "not authorized to act as root"},
		{name: "no common qop", qop: "auth-conf", cred: f.good, rounds: 1, wantJava: "error", wantErr: "reading the client's response"},
		{name: "tampered MAC (auth-int)", server: ServerOptions{QOPs: []sasl.QOP{sasl.QOPAuthInt}}, qop: "auth-int", cred: f.good, rounds: 1,
			tamper: flipFromEnd(7), wantJava: "error", wantQOP: sasl.QOPAuthInt, wantData: "MAC mismatch"},
		{name: "tampered message (auth-int)", server: ServerOptions{QOPs: []sasl.QOP{sasl.QOPAuthInt}}, qop: "auth-int", cred: f.good, rounds: 1,
			tamper: flip(0), wantJava: "error", wantQOP: sasl.QOPAuthInt, wantData: "MAC mismatch"},
		{name: "tampered ciphertext (3des)", server: conf(Cipher3DES), qop: "auth-conf", cred: f.good, rounds: 1,
			tamper: flip(3), wantJava: "error", wantQOP: sasl.QOPAuthConf, wantData: "integrity check failed"},
		{name: "tampered ciphertext (rc4)", server: conf(CipherRC4), qop: "auth-conf", cred: f.good, rounds: 1,
			tamper: flip(0), wantJava: "error", wantQOP: sasl.QOPAuthConf, wantData: "MAC mismatch"},
		{name: "tampered sequence number (auth-int)", server: ServerOptions{QOPs: []sasl.QOP{sasl.QOPAuthInt}}, qop: "auth-int", cred: f.good, rounds: 1,
			tamper: func(i int, fr []byte) []byte { fr[len(fr)-1] ^= 1; return fr }, wantJava: "error", wantQOP: sasl.QOPAuthInt, wantData: "MAC mismatch"},
		{name: "replayed frame (auth-int)", server: ServerOptions{QOPs: []sasl.QOP{sasl.QOPAuthInt}}, qop: "auth-int", cred: f.good, rounds: 2,
			tamper: replayFirst(), wantJava: "error", wantQOP: sasl.QOPAuthInt, wantData: "out-of-order message: sequence number 0, expected 1"},
		{name: "replayed frame (des)", server: conf(CipherDES), qop: "auth-conf", cred: f.good, rounds: 2,
			tamper: replayFirst(), wantJava: "error", wantQOP: sasl.QOPAuthConf, wantData: "security layer"},
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	outcomes := make([]serverOutcome, len(cases))
	served := make(chan struct{})
	go func() {
		defer close(served)
		for i := range cases {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			o := cases[i].server
			o.Lookup = TokenLookup(f.m)
			factory, err := NewServerFactory(o)
			if err != nil {
				outcomes[i].handshakeErr = err
				conn.Close()
				continue
			}
			mech, _ := factory()
			outcomes[i] = serveOne(conn, mech, cases[i].tamper)
		}
	}()
	args := []string{"client", "127.0.0.1", strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:")}
	for _, c := range cases {
		authz, strength := c.authzid, c.strength
		if authz == "" {
			authz = "-"
		}
		if strength == "" {
			strength = "-"
		}
		args = append(args, strings.Join([]string{c.qop, c.cred.user, c.cred.password, authz, strconv.Itoa(c.rounds), strength}, "|"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := javaCmd(ctx, t, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("DigestPeer client: %v\n%s", err, out)
	}
	<-served
	java := parseCases(string(out))
	for i, c := range cases {
		got, o := java[i], outcomes[i]
		t.Run(c.name, func(t *testing.T) {
			t.Logf("java: %s; go: handshake=%v data=%v", got, o.handshakeErr, o.dataErr)
			if !strings.HasPrefix(got, c.wantJava) {
				t.Errorf("JDK client: %q, want prefix %q", got, c.wantJava)
			}
			switch {
			case c.wantErr != "":
				if o.handshakeErr == nil || !strings.Contains(o.handshakeErr.Error(), c.wantErr) {
					t.Errorf("handshake error %v, want %q", o.handshakeErr, c.wantErr)
				}
				return
			case o.handshakeErr != nil:
				t.Fatalf("handshake: %v", o.handshakeErr)
			}
			if o.result.QOP != c.wantQOP || o.result.Mechanism != Mechanism {
				t.Errorf("result %+v, want QOP %s", o.result, c.wantQOP)
			}
			wantUser := c.wantUser
			if wantUser == "" {
				wantUser = "alice@EXAMPLE.COM"
				if o.result.RealUser != "hive/hs2@EXAMPLE.COM" {
					t.Errorf("real user %q", o.result.RealUser)
				}
			}
			if o.result.Principal != wantUser {
				t.Errorf("principal %q, want %q", o.result.Principal, wantUser)
			}
			if (o.result.Layer == nil) != (c.wantQOP == sasl.QOPAuth) {
				t.Errorf("layer %v for QOP %s", o.result.Layer, c.wantQOP)
			}
			if c.wantData != "" {
				if o.dataErr == nil || !strings.Contains(o.dataErr.Error(), c.wantData) || !errors.Is(o.dataErr, ErrLayer) {
					t.Errorf("data error %v, want %q", o.dataErr, c.wantData)
				}
				return
			}
			if o.dataErr != nil || o.rounds != c.rounds {
				t.Errorf("data phase: %d rounds of %d, %v", o.rounds, c.rounds, o.dataErr)
			}
		})
	}
}

// TestGoClientAgainstJDKServer: the Go client authenticates to the JDK's
// DIGEST-MD5 server (configured as Hive's metastore does) with a token's
// credentials for every QOP and cipher and exchanges data; a wrong password
// and a foreign authzid are refused by the JDK.
func TestGoClientAgainstJDKServer(t *testing.T) {
	f := newTokenFixture(t)
	type gc struct {
		name      string
		serverQOP string
		opts      ClientOptions
		wantJava  string
		wantErr   string
	}
	mk := func(qops []sasl.QOP, ciphers ...string) ClientOptions {
		o := ClientOptions{Username: f.good.user, Password: f.good.password, QOPs: qops}
		if ciphers != nil {
			o.Ciphers = ciphers
		}
		return o
	}
	conf := []sasl.QOP{sasl.QOPAuthConf}
	cases := []gc{
		{"auth", "auth", mk(nil), "ok authz=" + f.good.user + " qop=auth ", ""},
		{"auth-int", "auth-int", mk([]sasl.QOP{sasl.QOPAuthInt}), "ok authz=" + f.good.user + " qop=auth-int", ""},
		{"3des", "auth-conf", mk(conf, Cipher3DES), "ok authz=" + f.good.user + " qop=auth-conf strength=high", ""},
		{"rc4", "auth-conf", mk(conf, CipherRC4), "ok authz=" + f.good.user + " qop=auth-conf strength=high", ""},
		{"des", "auth-conf", mk(conf, CipherDES), "ok authz=" + f.good.user + " qop=auth-conf strength=medium", ""},
		{"rc4-56", "auth-conf", mk(conf, CipherRC456), "ok authz=" + f.good.user + " qop=auth-conf strength=medium", ""},
		{"rc4-40", "auth-conf", mk(conf, CipherRC440), "ok authz=" + f.good.user + " qop=auth-conf strength=low", ""},
		{"prefers first offered qop", "auth-conf,auth-int,auth", mk([]sasl.QOP{sasl.QOPAuthInt, sasl.QOPAuthConf}),
			"ok authz=" + f.good.user + " qop=auth-int", ""},
		{"wrong password", "auth", ClientOptions{Username: f.good.user, Password: "d3Jvbmc="}, "refused", "server refused"},
		{"foreign authzid", "auth", ClientOptions{Username: f.good.user, Password: f.good.password, AuthzID: "root"}, "refused", "server refused"},
		{"no common qop", "auth-conf", mk(nil), "error", "no common qop"},
	}
	args := []string{"server"}
	for _, c := range cases {
		args = append(args, strings.Join([]string{c.serverQOP, f.good.user, f.good.password}, "|"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := javaCmd(ctx, t, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "port=") {
		t.Fatalf("DigestPeer server did not announce its port: %q %s", sc.Text(), stderr.String())
	}
	addr := "127.0.0.1:" + strings.TrimPrefix(sc.Text(), "port=")
	goErrs := make([]error, len(cases))
	for i, c := range cases {
		mech, err := NewClient(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		_, goErrs[i] = clientOne(addr, mech, 12)
	}
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("DigestPeer server: %v\n%s\n%s", err, rest.String(), stderr.String())
	}
	java := parseCases(rest.String())
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("java: %s; go: %v", java[i], goErrs[i])
			if !strings.HasPrefix(java[i], c.wantJava) {
				t.Errorf("JDK server: %q, want prefix %q", java[i], c.wantJava)
			}
			if c.wantErr == "" && goErrs[i] != nil {
				t.Errorf("Go client: %v", goErrs[i])
			}
			if c.wantErr != "" && (goErrs[i] == nil || !strings.Contains(goErrs[i].Error(), c.wantErr)) {
				t.Errorf("Go client error %v, want %q", goErrs[i], c.wantErr)
			}
			if c.wantErr == "" && !strings.Contains(java[i], "rounds=12") {
				t.Errorf("JDK server saw %q, want 12 rounds", java[i])
			}
		})
	}
}
