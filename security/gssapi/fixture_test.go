package gssapi

import (
	"bufio"
	"errors"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/wire"
)

// realm is a real MIT KDC with the principals the tests use: the front door's service principal hive/localhost
// (what 127.0.0.1 resolves back to), another service HTTP/localhost, and the user alice.
type realm struct {
	kdc               *testbed.KDC
	serverKT, aliceKT string
	serverKeys, alice *keytab.Keytab
	httpKT            string
	cfg               *config.Config
	serverP, aliceP   string
}

func newRealm(t *testing.T, o testbed.KDCOptions) *realm {
	t.Helper()
	k := testbed.StartKDCT(t, o)
	r := &realm{kdc: k, serverP: k.Principal("hive/localhost"), aliceP: k.Principal("alice")}
	var err error
	if r.serverKT, err = k.PrincipalKeytab("server.keytab", "hive/localhost"); err != nil {
		t.Fatal(err)
	}
	if r.aliceKT, err = k.PrincipalKeytab("alice.keytab", "alice"); err != nil {
		t.Fatal(err)
	}
	if r.httpKT, err = k.PrincipalKeytab("http.keytab", "HTTP/localhost"); err != nil {
		t.Fatal(err)
	}
	if r.serverKeys, err = LoadKeytab(r.serverKT); err != nil {
		t.Fatal(err)
	}
	if r.alice, err = LoadKeytab(r.aliceKT); err != nil {
		t.Fatal(err)
	}
	if r.cfg, err = LoadConfig(k.Krb5Conf); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *realm) acceptor(t *testing.T, protection string) *Acceptor {
	t.Helper()
	q, err := sasl.ParseProtection(protection)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAcceptor(AcceptorOptions{Principal: r.serverP, Keytab: r.serverKeys, QOPs: q})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (r *realm) aliceLogin(t *testing.T) *Login {
	t.Helper()
	l, err := NewLogin(LoginOptions{Principal: r.aliceP, Keytab: r.alice, Config: r.cfg})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// hmsServer is the tests' Thrift server: sasl.Server with the GSSAPI acceptor in front of a handler that answers
// get_all_databases and get_databases with ["default", "user_<authenticated short name>"] and refuses the rest.
type hmsServer struct {
	ln      net.Listener
	srv     *sasl.Server
	fd      *FrontDoor // when set, connections go through FrontDoor.Accept and its user mapping
	mu      sync.Mutex
	results []sasl.Result
	hsErrs  []error
	dataErr []error
	calls   []string
	taps    []*tapConn // what each client sent, raw
	wg      sync.WaitGroup
}

// tapConn records the bytes a client sent (the raw SASL stream).
type tapConn struct {
	net.Conn
	mu  sync.Mutex
	buf []byte
}

func (c *tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.buf = append(c.buf, p[:n]...)
	c.mu.Unlock()
	return n, err
}

func (c *tapConn) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf...)
}

func startHMS(t *testing.T, srv *sasl.Server) *hmsServer { return startHMSWith(t, srv, nil) }

func startHMSWith(t *testing.T, srv *sasl.Server, fd *FrontDoor) *hmsServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hmsServer{ln: ln, srv: srv, fd: fd}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				h.serve(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); h.wg.Wait() })
	return h
}

func (h *hmsServer) addr() string { return h.ln.Addr().String() }
func (h *hmsServer) uri() string  { return "thrift://" + h.addr() }

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

func (h *hmsServer) serve(raw net.Conn) {
	c := &tapConn{Conn: raw}
	h.mu.Lock()
	h.taps = append(h.taps, c)
	h.mu.Unlock()
	var sc net.Conn
	var res sasl.Result
	var err error
	user := ""
	if h.fd != nil {
		var id *security.Identity
		if sc, id, res, err = h.fd.Accept(c); err == nil {
			user = "user_" + id.User
		}
	} else if sc, res, err = h.srv.Accept(c); err == nil {
		short, _, _ := strings.Cut(res.Principal, "@")
		user = "user_" + nonWord.ReplaceAllString(strings.ToLower(short), "_")
	}
	h.mu.Lock()
	if err != nil {
		h.hsErrs = append(h.hsErrs, err)
	} else {
		h.results = append(h.results, res)
	}
	h.mu.Unlock()
	if err != nil {
		return
	}
	defer sc.Close()
	br := bufio.NewReaderSize(sc, 64<<10)
	bw := bufio.NewWriterSize(sc, 64<<10)
	for {
		msg, err := wire.ReadMessage(br, wire.Limits{MaxMessage: 16 << 20}, nil)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				h.mu.Lock()
				h.dataErr = append(h.dataErr, err)
				h.mu.Unlock()
			}
			return
		}
		h.mu.Lock()
		h.calls = append(h.calls, msg.Name)
		h.mu.Unlock()
		var out []byte
		switch msg.Name {
		case "get_all_databases", "get_databases":
			body := wire.Struct(wire.Field{ID: 0, V: wire.List(wire.TString, wire.Str("default"), wire.Str(user))})
			out = wire.AppendMessage(nil, wire.Header{Name: msg.Name, Type: wire.Reply, SeqID: msg.SeqID}, &body)
		default:
			out = wire.AppException(msg.Name, msg.SeqID, wire.AppUnknownMethod, "test server: unknown method "+msg.Name)
		}
		if _, err := bw.Write(out); err != nil {
			return
		}
		if err := bw.Flush(); err != nil {
			return
		}
	}
}

func (h *hmsServer) snapshot() (res []sasl.Result, hs, data []error, calls []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]sasl.Result(nil), h.results...), append([]error(nil), h.hsErrs...),
		append([]error(nil), h.dataErr...), append([]string(nil), h.calls...)
}

// waitHandshakeErrors waits until the server recorded n handshake failures.
func (h *hmsServer) waitHandshakeErrors(t *testing.T, n int) []error {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, hs, _, _ := h.snapshot(); len(hs) >= n {
			return hs
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, hs, _, _ := h.snapshot()
	t.Fatalf("server recorded %d handshake failures, want %d: %v", len(hs), n, hs)
	return nil
}

// callGetAllDatabases sends one get_all_databases over a data-phase conn and returns the names.
func callGetAllDatabases(t *testing.T, c net.Conn) []string {
	t.Helper()
	args := wire.Struct()
	req := wire.AppendMessage(nil, wire.Header{Name: "get_all_databases", Type: wire.Call, SeqID: 7}, &args)
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(req); err != nil {
		t.Fatalf("writing get_all_databases: %v", err)
	}
	msg, err := wire.ReadMessage(bufio.NewReader(c), wire.Limits{MaxMessage: 1 << 20}, nil)
	if err != nil {
		t.Fatalf("reading the get_all_databases reply: %v", err)
	}
	if msg.Type != wire.Reply || msg.SeqID != 7 {
		t.Fatalf("reply %+v", msg.Header)
	}
	v, err := wire.DecodeStruct(msg.Body())
	if err != nil {
		t.Fatal(err)
	}
	f := v.Field(0)
	if f == nil {
		t.Fatalf("reply has no success field: %v", v)
	}
	var out []string
	for _, e := range f.Elems {
		out = append(out, string(e.Str))
	}
	return out
}
