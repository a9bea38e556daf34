package sasl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The transport is tested here with a hand-written test mechanism (TEST-XOR below): the real mechanisms (GSSAPI
// in security/gssapi, against real Java clients and a real KDC) are tested in their own packages. TEST-XOR runs two
// rounds (challenge "nonce", response "nonce!"), and its layer XORs every byte and prefixes a marker, so a frame
// that skipped the layer is visible.

type xorLayer struct{}

func (xorLayer) Wrap(p []byte) ([]byte, error) {
	out := []byte{'W'}
	for _, c := range p {
		out = append(out, c^0x55)
	}
	return out, nil
}

func (xorLayer) Unwrap(t []byte) ([]byte, error) {
	if len(t) == 0 || t[0] != 'W' {
		return nil, errors.New("not a TEST-XOR token")
	}
	out := make([]byte, 0, len(t)-1)
	for _, c := range t[1:] {
		out = append(out, c^0x55)
	}
	return out, nil
}

type xorServer struct {
	step int
	peer string
}

func (m *xorServer) Name() string          { return "TEST-XOR" }
func (m *xorServer) SetPeer(remote string) { m.peer = remote }
func (m *xorServer) Result() Result {
	return Result{Principal: "tester@" + m.peer, QOP: QOPAuthConf, Layer: xorLayer{}}
}
func (m *xorServer) Step(r []byte) ([]byte, bool, error) {
	m.step++
	switch m.step {
	case 1:
		if string(r) != "hello" {
			return nil, false, &MechError{Reason: "bad_hello", Peer: "bad hello", Err: errors.New("initial response was " + string(r))}
		}
		return []byte("nonce"), false, nil
	case 2:
		if string(r) != "nonce!" {
			return nil, false, errors.New("wrong answer")
		}
		return nil, true, nil
	}
	return nil, false, errors.New("too many steps")
}

type xorClient struct {
	step  int
	hello string
}

func (m *xorClient) Name() string           { return "TEST-XOR" }
func (m *xorClient) Start() ([]byte, error) { return []byte(m.hello), nil }
func (m *xorClient) Layer() Layer           { return xorLayer{} }
func (m *xorClient) Step(c []byte) ([]byte, bool, error) {
	m.step++
	return append(c, '!'), true, nil
}

func newServer(m *Metrics) *Server {
	return &Server{Mechs: map[string]ServerMechFactory{"TEST-XOR": func() (ServerMech, error) { return &xorServer{}, nil }},
		HandshakeTimeout: 2 * time.Second, Listener: "t", Metrics: m, MaxFrame: 1 << 20}
}

// serve accepts one connection on a pipe-like TCP pair and echoes data-phase bytes.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-ch
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func TestNegotiationAndDataPhase(t *testing.T) {
	m, _ := NewMetrics(nil)
	cc, scn := tcpPair(t)
	type acc struct {
		c   net.Conn
		res Result
		err error
	}
	done := make(chan acc, 1)
	go func() {
		c, r, err := newServer(m).Accept(scn)
		done <- acc{c, r, err}
	}()
	cl, err := Client(cc, &xorClient{hello: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if !strings.HasPrefix(a.res.Principal, "tester@127.0.0.1:") || a.res.Mechanism != "TEST-XOR" {
		t.Fatalf("result %+v", a.res)
	}
	// each Write is one wrapped frame; Read returns bytes across frame boundaries
	for _, w := range []string{"first message", "second", strings.Repeat("x", 100000)} {
		if _, err := cl.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := io.ReadAll(io.LimitReader(a.c, int64(len("first message")+len("second")+100000)))
	if err != nil || string(got) != "first message"+"second"+strings.Repeat("x", 100000) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	// the raw stream of a reply: 4-byte length, then the wrapped payload
	go a.c.Write([]byte("reply"))
	raw := make([]byte, 10)
	if _, err := io.ReadFull(cc, raw); err != nil {
		t.Fatal(err)
	}
	if binary.BigEndian.Uint32(raw) != 6 || raw[4] != 'W' {
		t.Fatalf("raw reply frame % x", raw)
	}
	if n := m.Handshakes("t", "TEST-XOR"); n != 1 {
		t.Fatalf("handshake durations observed: %d", n)
	}
}

// TestMechanismRefusal: a mechanism error goes to the client in a BAD frame (the text the mechanism chose), the
// client gets a PeerError and the server counts the mechanism's reason.
func TestMechanismRefusal(t *testing.T) {
	m, _ := NewMetrics(nil)
	cc, scn := tcpPair(t)
	errc := make(chan error, 1)
	go func() {
		_, _, err := newServer(m).Accept(scn)
		errc <- err
	}()
	_, err := Client(cc, &xorClient{hello: "bye"})
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Msg != "bad hello" || pe.Status != "BAD" {
		t.Fatalf("client error %v", err)
	}
	serr := <-errc
	var he *HandshakeError
	if !errors.As(serr, &he) || he.Reason != "bad_hello" || he.Mechanism != "TEST-XOR" {
		t.Fatalf("server error %v", serr)
	}
	if m.Failures("t", "TEST-XOR", "bad_hello") != 1 {
		t.Fatal("failure not counted")
	}
}

// TestClientAgainstBadServers: the client side reports a server that answers out of protocol.
func TestClientAgainstBadServers(t *testing.T) {
	for name, c := range map[string]struct {
		reply []byte
		want  string
	}{
		"ERROR frame":   {append([]byte{4, 0, 0, 0, 4}, "nope"...), "Peer indicated failure: nope"},
		"START frame":   {[]byte{1, 0, 0, 0, 0}, "expected COMPLETE or OK, got START"},
		"oversized":     {[]byte{2, 0x7f, 0xff, 0xff, 0xff}, "over the limit"},
		"bad status":    {[]byte{9, 0, 0, 0, 0}, "Invalid status 9"},
		"closed":        {nil, "EOF"},
		"early success": {[]byte{5, 0, 0, 0, 0}, "COMPLETE before the mechanism finished"},
	} {
		t.Run(name, func(t *testing.T) {
			cc, scn := tcpPair(t)
			go func() {
				io.ReadFull(scn, make([]byte, 5+8+5+5)) // START TEST-XOR, OK hello
				scn.Write(c.reply)
				scn.Close()
			}()
			_ = cc.SetDeadline(time.Now().Add(5 * time.Second))
			_, err := Client(cc, &strictClient{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("client error %v, want %q", err, c.want)
			}
		})
	}
}

// strictClient needs two challenges.
type strictClient struct{ n int }

func (m *strictClient) Name() string           { return "TEST-XOR" }
func (m *strictClient) Start() ([]byte, error) { return []byte("hello"), nil }
func (m *strictClient) Layer() Layer           { return nil }
func (m *strictClient) Step(c []byte) ([]byte, bool, error) {
	m.n++
	return nil, m.n == 2, nil
}

// TestDataFrameLimits: a data frame over MaxFrame is refused before any allocation of its size, and a declared
// size is not allocated up front: memory grows with the bytes that actually arrive.
func TestDataFrameLimits(t *testing.T) {
	cc, scn := tcpPair(t)
	c := newConn(scn, nil, 64<<20)
	// over the limit
	cc.Write([]byte{0x7f, 0xff, 0xff, 0xff})
	if _, err := c.Read(make([]byte, 10)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversized frame: %v", err)
	}
	if _, err := c.Read(make([]byte, 10)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("the connection is not poisoned after an oversized frame: %v", err)
	}

	cc2, scn2 := tcpPair(t)
	c2 := newConn(scn2, nil, 64<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	go func() {
		cc2.Write([]byte{0x03, 0x00, 0x00, 0x00}) // declares 48 MiB
		cc2.Write(bytes.Repeat([]byte{1}, 100<<10))
		cc2.Close()
	}()
	_, err := c2.Read(make([]byte, 10))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated frame: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Fatalf("a 48 MiB declaration with 100 KiB sent allocated %d bytes", grew)
	}
}

func TestParseProtection(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 "auth",
		"authentication":                   "auth",
		"privacy, integrity":               "auth-conf,auth-int",
		"auth-int,AUTH":                    "auth-int,auth",
		"privacy,integrity,authentication": "auth-conf,auth-int,auth",
	} {
		q, err := ParseProtection(in)
		var s []string
		for _, x := range q {
			s = append(s, string(x))
		}
		if err != nil || strings.Join(s, ",") != want {
			t.Errorf("%q: %v %v, want %s", in, s, err, want)
		}
	}
	for _, bad := range []string{"secret", "privacy,privacy", "integrity,"} {
		if _, err := ParseProtection(bad); err == nil || !strings.Contains(err.Error(), "hadoop.rpc.protection") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
