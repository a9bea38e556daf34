package digestmd5

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/security/sasl"
)

// RFC 2831 §4's example exchange.
func TestRFC2831Example(t *testing.T) {
	in := &digestInput{username: "chris", realm: "elwood.innosoft.com", password: "secret", nonce: "OA6MG9tEQGm2hh",
		cnonce: "OA6MHXh6VqTrRk", digestURI: "imap/elwood.innosoft.com", qop: sasl.QOPAuth, nc: 1}
	if got := in.response("AUTHENTICATE"); got != "d388dad90d4bbd760a152321f2143af7" {
		t.Errorf("response = %s", got)
	}
	if got := in.response(""); got != "ea40f60335c427b5527b84dbabcdfffd" {
		t.Errorf("rspauth = %s", got)
	}
}

func TestParseDirectives(t *testing.T) {
	d, err := parseDirectives([]byte(` realm="a\"b" , nonce="n,1",qop=auth ,, charset=utf-8, realm="second"`), "realm")
	if err != nil {
		t.Fatal(err)
	}
	if d["realm"][0] != `a"b` || d["realm"][1] != "second" || d["nonce"][0] != "n,1" || d["qop"][0] != "auth" {
		t.Errorf("parsed %v", d)
	}
	for _, bad := range []string{`realm="x`, `=x`, `qop`, `qop=`, `a=1 b=2`, `a="x"y`, `username="a",username="b"`, "a=\xff",
		`a="x\`, strings.Repeat("a=1,", 65)} {
		if _, err := parseDirectives([]byte(bad)); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
}

func goPair(t *testing.T, so ServerOptions, co ClientOptions) (sasl.ServerMech, sasl.ClientMech) {
	t.Helper()
	f, err := NewServerFactory(so)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := f()
	c, err := NewClient(co)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func staticLookup(user, password string) func(string) (Credentials, error) {
	return func(u string) (Credentials, error) {
		if u != user {
			return Credentials{}, errors.New("unknown user " + u)
		}
		return Credentials{Password: password, User: "owner", RealUser: "real"}, nil
	}
}

// handshake runs a Go client against a Go server in memory; mutate may
// change the client's response.
func handshake(t *testing.T, s sasl.ServerMech, c sasl.ClientMech, mutate func([]byte) []byte) ([]byte, error) {
	t.Helper()
	init, _ := c.Start()
	ch, done, err := s.Step(init)
	if err != nil || done {
		t.Fatalf("challenge: %v %v", done, err)
	}
	resp, _, err := c.Step(ch)
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		resp = mutate(resp)
	}
	rsp, done, err := s.Step(resp)
	if err != nil {
		return resp, err
	}
	if !done {
		t.Fatal("server not done")
	}
	if _, done, err := c.Step(rsp); err != nil || !done {
		t.Fatalf("client rspauth: %v %v", done, err)
	}
	return resp, nil
}

func TestHandshakeRefusals(t *testing.T) {
	so := ServerOptions{Lookup: staticLookup("u", "p"), QOPs: []sasl.QOP{sasl.QOPAuthConf, sasl.QOPAuthInt, sasl.QOPAuth}}
	co := ClientOptions{Username: "u", Password: "p", QOPs: []sasl.QOP{sasl.QOPAuthInt}}

	s, c := goPair(t, so, co)
	resp, err := handshake(t, s, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Result()
	if r.Principal != "owner" || r.RealUser != "real" || r.QOP != sasl.QOPAuthInt || r.Layer == nil || c.Layer() == nil {
		t.Fatalf("result %+v", r)
	}
	// Layers talk to each other both ways.
	for i := 0; i < 5; i++ {
		w, _ := c.Layer().Wrap(message(i))
		if got, err := r.Layer.Unwrap(w); err != nil || !bytes.Equal(got, message(i)) {
			t.Fatalf("client→server %d: %v", i, err)
		}
		w, _ = r.Layer.Wrap(message(i))
		if got, err := c.Layer().Unwrap(w); err != nil || !bytes.Equal(got, message(i)) {
			t.Fatalf("server→client %d: %v", i, err)
		}
	}
	// The same response again: to the finished server, and to a new server (new nonce).
	if _, _, err := s.Step(resp); err == nil {
		t.Error("a finished server accepted another response")
	}
	s2, _ := goPair(t, so, co)
	if _, _, err := s2.Step(nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s2.Step(resp); err == nil || !strings.Contains(err.Error(), "mismatched nonce") {
		t.Errorf("replayed response: %v", err)
	}

	for name, tc := range map[string]struct {
		mutate func([]byte) []byte
		want   string
	}{
		"nonce count 2":   {func(b []byte) []byte { return bytes.Replace(b, []byte("nc=00000001"), []byte("nc=00000002"), 1) }, "nonce count"},
		"garbage":         {func([]byte) []byte { return []byte("\x00\x01garbage\xff") }, "format violation"},
		"empty":           {func([]byte) []byte { return nil }, "empty digest response"},
		"truncated":       {func(b []byte) []byte { return b[:len(b)/2] }, "DIGEST-MD5"},
		"oversized":       {func(b []byte) []byte { return append(b, bytes.Repeat([]byte(" "), 5000)...) }, "exceeds 4096"},
		"wrong uri":       {func(b []byte) []byte { return bytes.Replace(b, []byte("null/default"), []byte("hive/default"), 1) }, "mismatched URI"},
		"wrong realm":     {func(b []byte) []byte { return bytes.Replace(b, []byte(`realm="default"`), []byte(`realm="other"`), 1) }, "nonexistent realm"},
		"qop not offered": {func(b []byte) []byte { return bytes.Replace(b, []byte("qop=auth-int"), []byte("qop=auth-foo"), 1) }, "invalid qop"},
		"response bit":    {func(b []byte) []byte { return bytes.Replace(b, []byte("response="), []byte("response=0"), 1) }, "mismatched response"},
		"bad charset":     {func(b []byte) []byte { return bytes.Replace(b, []byte("charset=utf-8"), []byte("charset=latin1"), 1) }, "charset"},
		"bad maxbuf":      {func(b []byte) []byte { return bytes.Replace(b, []byte("maxbuf=65536"), []byte("maxbuf=1"), 1) }, "maxbuf"},
		"duplicate":       {func(b []byte) []byte { return append(b, []byte(`,username="x"`)...) }, "more than once"},
	} {
		s, c := goPair(t, so, co)
		if _, err := handshake(t, s, c, tc.mutate); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
		if _, _, err := s.Step([]byte("x")); err == nil {
			t.Errorf("%s: a failed server accepts another step", name)
		}
	}

	// A server that did not offer auth-conf refuses it.
	s3, c3 := goPair(t, ServerOptions{Lookup: staticLookup("u", "p")}, ClientOptions{Username: "u", Password: "p"})
	if _, err := handshake(t, s3, c3, func(b []byte) []byte {
		return bytes.Replace(b, []byte("qop=auth"), []byte("qop=auth-conf,cipher=rc4"), 1)
	}); err == nil || !strings.Contains(err.Error(), "does not support qop auth-conf") {
		t.Errorf("auth-conf not offered: %v", err)
	}
	// A client refuses a server that does not know the password.
	s4, c4 := goPair(t, ServerOptions{Lookup: staticLookup("u", "other")}, ClientOptions{Username: "u", Password: "p"})
	init, _ := c4.Start()
	ch, _, _ := s4.Step(init)
	resp4, _, _ := c4.Step(ch)
	if _, _, err := s4.Step(resp4); err == nil {
		t.Fatal("server accepted the wrong password")
	}
	if _, _, err := c4.Step([]byte("rspauth=00000000000000000000000000000000")); err == nil || !strings.Contains(err.Error(), "rspauth does not match") {
		t.Errorf("forged rspauth: %v", err)
	}

	for name, o := range map[string]ServerOptions{
		"no lookup":      {},
		"bad qop":        {Lookup: staticLookup("u", "p"), QOPs: []sasl.QOP{"privacy"}},
		"bad cipher":     {Lookup: staticLookup("u", "p"), Ciphers: []string{"aes"}},
		"no conf cipher": {Lookup: staticLookup("u", "p"), QOPs: []sasl.QOP{sasl.QOPAuthConf}, Ciphers: []string{}},
		"tiny maxbuf":    {Lookup: staticLookup("u", "p"), MaxBuf: 8},
	} {
		if _, err := NewServerFactory(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLayerEveryCipherBothWays(t *testing.T) {
	ha1 := bytes.Repeat([]byte{0xa5, 0x3c}, 8)
	for _, ci := range append([]string{""}, AllCiphers...) {
		qop := sasl.QOPAuthConf
		if ci == "" {
			qop = sasl.QOPAuthInt
		}
		cl, err := newLayer(ha1, qop, ci, true)
		if err != nil {
			t.Fatal(err)
		}
		sv, _ := newLayer(ha1, qop, ci, false)
		for i := 0; i < 30; i++ {
			w, _ := cl.Wrap(message(i))
			if bytes.Contains(w, message(i)) && ci != "" && len(message(i)) > 8 {
				t.Errorf("%s: plaintext visible in the wrapped message", ci)
			}
			if got, err := sv.Unwrap(w); err != nil || !bytes.Equal(got, message(i)) {
				t.Fatalf("%s round %d: %v", ci, i, err)
			}
		}
		if w, _ := cl.Wrap(nil); len(w) != 0 {
			t.Errorf("%s: empty message wrapped to %d bytes", ci, len(w))
		}
		if _, err := sv.Unwrap([]byte{1, 2, 3}); !errors.Is(err, ErrLayer) {
			t.Errorf("%s: short token: %v", ci, err)
		}
	}
}

// FuzzServerResponse feeds arbitrary digest-responses to a server after its
// challenge: it must refuse or accept without panicking, and never accept a
// response that was not computed with the password.
func FuzzServerResponse(f *testing.F) {
	f.Add([]byte(`charset=utf-8,username="u",realm="default",nonce="n",nc=00000001,cnonce="c",digest-uri="null/default",maxbuf=65536,response=d388dad90d4bbd760a152321f2143af7,qop=auth`))
	f.Add([]byte(`username="u",qop=auth-conf,cipher=rc4,response=x`))
	f.Add([]byte(`a="\`))
	f.Add([]byte{0xff, 0xfe})
	factory, err := NewServerFactory(ServerOptions{Lookup: staticLookup("u", "p"), QOPs: []sasl.QOP{sasl.QOPAuthConf, sasl.QOPAuthInt, sasl.QOPAuth}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, resp []byte) {
		s, _ := factory()
		if _, _, err := s.Step(nil); err != nil {
			t.Fatal(err)
		}
		if _, done, err := s.Step(resp); err == nil || done {
			t.Fatalf("accepted a response without the server's nonce: %q", resp)
		}
	})
}

// FuzzDirectives: the parser never panics and what it accepts, written back,
// parses to the same directives.
func FuzzDirectives(f *testing.F) {
	f.Add([]byte(`realm="default",nonce="abc",qop="auth,auth-int",charset=utf-8,algorithm=md5-sess`))
	f.Add([]byte(`a="x\"y", b = c ,,`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseDirectives(b, "realm")
		if err != nil {
			return
		}
		w := &directiveWriter{}
		for k, vs := range d {
			for _, v := range vs {
				w.quoted(k, v)
			}
		}
		d2, err := parseDirectives(w.b, "realm")
		if err != nil {
			t.Fatalf("rewritten %q: %v", w.b, err)
		}
		for k, vs := range d {
			if strings.Join(d2[k], "\x00") != strings.Join(vs, "\x00") {
				t.Fatalf("key %q: %q != %q", k, d2[k], vs)
			}
		}
	})
}

// FuzzUnwrap: arbitrary tokens never panic a security layer and never pass
// its integrity check.
func FuzzUnwrap(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789"), uint8(0))
	f.Add(make([]byte, 22), uint8(3))
	f.Fuzz(func(t *testing.T, tok []byte, which uint8) {
		ciphers := append([]string{""}, AllCiphers...)
		ci := ciphers[int(which)%len(ciphers)]
		qop := sasl.QOPAuthConf
		if ci == "" {
			qop = sasl.QOPAuthInt
		}
		l, err := newLayer(bytes.Repeat([]byte{7}, 16), qop, ci, false)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := l.Unwrap(tok); err == nil && len(tok) > 0 {
			t.Fatalf("forged token accepted: %q", out)
		}
	})
}

func TestQOPsFromProtection(t *testing.T) {
	got, err := QOPsFromProtection("hadoop.rpc.protection", "privacy, Integrity,authentication,privacy")
	if err != nil || qopStrings(got) != "auth-conf,auth-int,auth" {
		t.Errorf("%v, %v", got, err)
	}
	for _, bad := range []string{"", " , ", "secret"} {
		if _, err := QOPsFromProtection("hadoop.rpc.protection", bad); err == nil || !strings.Contains(err.Error(), "hadoop.rpc.protection") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
