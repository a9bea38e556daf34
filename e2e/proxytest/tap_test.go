package proxytest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/wire"
)

// fakeBackend is a minimal Thrift server: it answers every call with a
// reply whose success is "<method>#<seq>", answers "boom" with an
// UNKNOWN_METHOD exception, never answers oneway calls, and keeps every byte
// it received and sent.
type fakeBackend struct {
	ln       net.Listener
	mu       sync.Mutex
	received bytes.Buffer
	sent     bytes.Buffer
	wg       sync.WaitGroup
}

func startFakeBackend(t *testing.T) *fakeBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fb := &fakeBackend{ln: ln}
	var conns sync.Map
	fb.wg.Add(1)
	go func() {
		defer fb.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true)
			fb.wg.Add(1)
			go func() {
				defer fb.wg.Done()
				defer c.Close()
				fb.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		fb.wg.Wait()
	})
	return fb
}

func (fb *fakeBackend) uri() string { return "thrift://" + fb.ln.Addr().String() }

func (fb *fakeBackend) serve(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		m, err := wire.ReadMessage(r, wire.Limits{}, nil)
		if err != nil {
			return
		}
		fb.mu.Lock()
		fb.received.Write(m.Raw)
		fb.mu.Unlock()
		if m.Type == wire.Oneway {
			continue
		}
		var out []byte
		if m.Name == "boom" {
			out = wire.AppException(m.Name, m.SeqID, wire.AppUnknownMethod, "Invalid method name: 'boom'")
		} else {
			body := wire.Struct(wire.Field{ID: 0, V: wire.Str(fmt.Sprintf("%s#%d", m.Name, m.SeqID))})
			out = wire.AppendMessage(nil, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
		}
		fb.mu.Lock()
		fb.sent.Write(out)
		fb.mu.Unlock()
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func (fb *fakeBackend) bytes() (received, sent []byte) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return append([]byte(nil), fb.received.Bytes()...), append([]byte(nil), fb.sent.Bytes()...)
}

func dialTap(t *testing.T, tap *Tap) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(tap.URI(), "thrift://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

func call(name string, typ byte, seq int32, args wire.Value) []byte {
	return wire.AppendMessage(nil, wire.Header{Name: name, Type: typ, SeqID: seq}, &args)
}

func TestTapForwardsBytesUnchangedAndRecordsCalls(t *testing.T) {
	fb := startFakeBackend(t)
	tap := NewTap(t, fb.uri())
	c, r := dialTap(t, tap)

	args := wire.Struct(
		wire.Field{ID: 1, V: wire.Str("sales")},
		wire.Field{ID: 2, V: wire.List(wire.TString, wire.Str("a"), wire.Str("b"))},
		wire.Field{ID: 9, V: wire.I64(-7)}) // a field no schema knows: still recorded
	var sent, got []byte
	for _, m := range [][]byte{
		call("get_table_objects_by_name", wire.Call, 1, args),
		call("fire_and_forget", wire.Oneway, 2, wire.Struct()),
		call("boom", wire.Call, 3, wire.Struct()),
	} {
		if _, err := c.Write(m); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, m...)
	}
	for i := 0; i < 2; i++ { // two answers: the oneway call has none
		m, err := wire.ReadMessage(r, wire.Limits{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Raw...)
	}
	received, backendSent := fb.bytes()
	if !bytes.Equal(received, sent) {
		t.Fatalf("backend received %d bytes that differ from the %d the client sent", len(received), len(sent))
	}
	if !bytes.Equal(got, backendSent) {
		t.Fatalf("client received %d bytes that differ from the %d the backend sent", len(got), len(backendSent))
	}

	calls := tap.Calls()
	if len(calls) != 3 {
		t.Fatalf("recorded %d calls, want 3: %v", len(calls), tap.Methods())
	}
	if c0 := calls[0]; c0.Method != "get_table_objects_by_name" || c0.Type != wire.Call || c0.SeqID != 1 ||
		!bytes.Equal(c0.Args.Encode(), args.Encode()) {
		t.Fatalf("first call recorded as %+v", c0)
	}
	if s := calls[0].Reply.Result.Field(0).String(); calls[0].Reply.Type != wire.Reply || s != "get_table_objects_by_name#1" {
		t.Fatalf("first answer recorded as %+v", calls[0].Reply)
	}
	if calls[1].Method != "fire_and_forget" || calls[1].Type != wire.Oneway || calls[1].Reply != nil {
		t.Fatalf("oneway call recorded as %+v", calls[1])
	}
	if typ, msg, ok := calls[2].Reply.AppException(); !ok || typ != wire.AppUnknownMethod || !strings.Contains(msg, "boom") {
		t.Fatalf("exception answer recorded as %+v", calls[2].Reply)
	}
	if _, _, ok := calls[0].Reply.AppException(); ok {
		t.Fatal("a normal reply must not read as an exception")
	}

	tap.Reset()
	if n := len(tap.Calls()); n != 0 {
		t.Fatalf("Reset left %d calls", n)
	}
	if _, err := c.Write(call("again", wire.Call, 4, wire.Struct())); err != nil {
		t.Fatal(err)
	}
	if _, err := wire.ReadMessage(r, wire.Limits{}, nil); err != nil {
		t.Fatal(err)
	}
	if m := tap.Methods(); len(m) != 1 || m[0] != "again" {
		t.Fatalf("after Reset the tap recorded %v", m)
	}
}

// Answers are matched to their calls per connection, with many connections
// at once.
func TestTapMatchesAnswersPerConnection(t *testing.T) {
	fb := startFakeBackend(t)
	tap := NewTap(t, fb.uri())
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		c, r := dialTap(t, tap)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				seq := int32(g*1000 + i)
				if _, err := c.Write(call(fmt.Sprintf("m%d", g), wire.Call, seq, wire.Struct())); err != nil {
					errs <- err
					return
				}
				if _, err := wire.ReadMessage(r, wire.Limits{}, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	calls := tap.Calls()
	if len(calls) != 200 {
		t.Fatalf("recorded %d calls, want 200", len(calls))
	}
	for _, c := range calls {
		want := fmt.Sprintf("%s#%d", c.Method, c.SeqID)
		if c.Reply == nil || c.Reply.Result.Field(0).String() != want {
			t.Fatalf("call %s seq %d got answer %+v", c.Method, c.SeqID, c.Reply)
		}
	}
}

func TestTapHangUpNeverReachesTheBackend(t *testing.T) {
	fb := startFakeBackend(t)
	tap := NewTap(t, fb.uri())
	tap.HangUp(true)
	c, r := dialTap(t, tap)
	if _, err := c.Write(call("get_runtime_stats", wire.Call, 1, wire.Struct())); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("a hung-up call must end the connection, read gave %v", err)
	}
	calls := tap.Calls()
	if len(calls) != 1 || calls[0].Method != "get_runtime_stats" || !calls[0].HungUp || calls[0].Reply != nil {
		t.Fatalf("hung-up call recorded as %+v", calls)
	}
	if received, _ := fb.bytes(); len(received) != 0 {
		t.Fatalf("the backend received %d bytes of a hung-up call", len(received))
	}

	tap.HangUp(false)
	c2, r2 := dialTap(t, tap)
	if _, err := c2.Write(call("get_runtime_stats", wire.Call, 2, wire.Struct())); err != nil {
		t.Fatal(err)
	}
	if m, err := wire.ReadMessage(r2, wire.Limits{}, nil); err != nil || m.Type != wire.Reply {
		t.Fatalf("after HangUp(false) calls go through again: %v %v", m, err)
	}
}

func TestTapStaysOnLoopback(t *testing.T) {
	for _, uri := range []string{"thrift://10.1.2.3:9083", "thrift://metastore.example.com:9083", "http://127.0.0.1:9083", "thrift://127.0.0.1"} {
		if tap, err := newTap(t, uri); err == nil {
			tap.close()
			t.Errorf("newTap(%q) accepted a backend it must refuse", uri)
		} else if !strings.Contains(err.Error(), uri) {
			t.Errorf("newTap(%q): error %q does not name the URI", uri, err)
		}
	}
	for _, uri := range []string{"thrift://127.0.0.1:9083", "thrift://localhost:9083", "thrift://[::1]:9083"} {
		tap, err := newTap(t, uri)
		if err != nil {
			t.Errorf("newTap(%q): %v", uri, err)
			continue
		}
		if !strings.HasPrefix(tap.URI(), "thrift://127.0.0.1:") {
			t.Errorf("tap listens on %s, want loopback", tap.URI())
		}
		tap.close()
	}
}

// recordingTB captures the tap's cleanup verdict instead of failing.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestTapFailsTheTestOnAStreamItCannotParse(t *testing.T) {
	fb := startFakeBackend(t)
	rec := &recordingTB{TB: t}
	tap, err := newTap(rec, fb.uri())
	if err != nil {
		t.Fatal(err)
	}
	defer tap.close()
	c, r := dialTap(t, tap)
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadByte(); err == nil {
		t.Fatal("the tap must close a connection it cannot parse")
	}
	if received, _ := fb.bytes(); len(received) != 0 {
		t.Fatalf("unparseable bytes reached the backend (%d bytes)", len(received))
	}
	tap.close()
	if len(rec.errs) == 0 || !strings.Contains(rec.errs[0], "reading a call from the proxy") {
		t.Fatalf("tap cleanup reported %q, want the parse failure", rec.errs)
	}
}
