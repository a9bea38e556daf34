package frontdoor

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/wire"
)

// recorder answers every call with an empty result and remembers the calls
// it served; a call named "hold" waits until release is closed.
type recorder struct {
	mu      sync.Mutex
	served  []int32 // seq ids
	holding chan struct{}
	release chan struct{}
}

func (h *recorder) Handle(_ context.Context, _ *router.ConnInfo, msg *wire.Message, out []byte) []byte {
	if msg.Name == "get_table" { // the held call
		h.holding <- struct{}{}
		<-h.release
	}
	h.mu.Lock()
	h.served = append(h.served, msg.SeqID)
	h.mu.Unlock()
	empty := wire.Struct()
	return wire.AppendMessage(out, wire.Header{Name: msg.Name, Type: wire.Reply, SeqID: msg.SeqID}, &empty)
}

func (h *recorder) saw(seq int32) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.served {
		if s == seq {
			return true
		}
	}
	return false
}

func startListener(t *testing.T, h Handler) *Listener {
	t.Helper()
	strict, err := wire.NewStrictSchema(0)
	if err != nil {
		t.Fatal(err)
	}
	l := New(Config{BindHost: "127.0.0.1", MaxWorkers: 4, MaxMessage: 1 << 20, Strict: strict},
		&planner.Frontend{Name: "primary"}, h, nil, Hooks{})
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.Shutdown(ctx)
	})
	return l
}

func call(name string, seq int32) []byte {
	empty := wire.Struct()
	return wire.AppendMessage(nil, wire.Header{Name: name, Type: wire.Call, SeqID: seq}, &empty)
}

func dial(t *testing.T, l *Listener) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", l.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends a call and reads its reply (bounded: a reply that never
// comes fails the test instead of hanging it).
func roundTrip(t *testing.T, c net.Conn, name string, seq int32) error {
	t.Helper()
	if _, err := c.Write(call(name, seq)); err != nil {
		return err
	}
	return readReply(c, seq)
}

func readReply(c net.Conn, seq int32) error {
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	var m wire.Message
	if err := wire.NewReader(c, 1<<20).Next(&m); err != nil {
		return err
	}
	if m.SeqID != seq || m.Type != wire.Reply {
		return errors.New("unexpected reply")
	}
	return nil
}

// waitState waits (bounded) until the server side of the listener's only
// connection matching pick is in the wanted idle state.
func waitIdle(t *testing.T, l *Listener, want int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		l.mu.Lock()
		n := 0
		for cn := range l.conns {
			if cn.idle {
				n++
			}
		}
		l.mu.Unlock()
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d idle connections after a minute, want %d", n, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// drainWithCallInFlight starts a Shutdown while a "hold" call keeps it
// open; the returned function releases that call and waits for the
// Shutdown's result.
func drainWithCallInFlight(t *testing.T, l *Listener, h *recorder) func() error {
	t.Helper()
	busy := dial(t, l)
	go func() { _ = roundTrip(t, busy, "get_table", 99) }()
	select {
	case <-h.holding:
	case <-time.After(time.Minute):
		t.Fatal("the held call did not reach the handler")
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		done <- l.Shutdown(ctx)
	}()
	// The drain has begun once the listener no longer serves.
	for deadline := time.Now().Add(time.Minute); l.Serving(); {
		if time.Now().After(deadline) {
			t.Fatal("the listener still serves a minute after Shutdown began")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return func() error {
		close(h.release)
		select {
		case err := <-done:
			return err
		case <-time.After(2 * time.Minute):
			t.Fatal("Shutdown did not return")
			return nil
		}
	}
}

// Issue 20, item 8: a connection idle when the drain starts is closed
// before anything more is read from it. Its client sees the close without
// sending anything, and a call it sends afterwards fails at once as a
// transport error, never applied, never waiting for an answer nobody will
// send (a rolling SIGTERM left an alter_table on such a connection
// unanswered and not applied).
func TestDrainClosesAnIdleConnectionBeforeReadingMore(t *testing.T) {
	h := &recorder{holding: make(chan struct{}, 1), release: make(chan struct{})}
	l := startListener(t, h)
	idle := dial(t, l)
	if err := roundTrip(t, idle, "get_all_databases", 1); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, l, 1)
	finish := drainWithCallInFlight(t, l, h)

	// The event: the drain closed the idle connection (EOF, nothing sent).
	_ = idle.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := idle.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection during the drain: read %d bytes, %v; want EOF", n, err)
	}
	// A call sent now is not read: it fails as a transport error.
	err := roundTrip(t, idle, "alter_table", 2)
	if err == nil {
		t.Fatal("a call on a connection closed by the drain was answered")
	}
	if err := finish(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if h.saw(2) {
		t.Fatal("the call sent after the drain closed the connection was served")
	}
	if !h.saw(99) {
		t.Fatal("the call in flight when the drain began was not served")
	}
}

// A call whose first bytes were read before the drain began is read whole,
// served and answered; only then does the connection close.
func TestDrainAnswersACallItBeganToRead(t *testing.T) {
	h := &recorder{holding: make(chan struct{}, 1), release: make(chan struct{})}
	l := startListener(t, h)
	c := dial(t, l)
	msg := call("alter_table", 7)
	if _, err := c.Write(msg[:5]); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, l, 0) // the server holds the call's first bytes
	finish := drainWithCallInFlight(t, l, h)
	if _, err := c.Write(msg[5:]); err != nil {
		t.Fatal(err)
	}
	if err := readReply(c, 7); err != nil {
		t.Fatalf("the call begun before the drain: %v", err)
	}
	if !h.saw(7) {
		t.Fatal("answered but not served")
	}
	// Nothing more is read: the connection closes after that answer.
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("after the answer during the drain: read %d bytes, %v; want EOF", n, err)
	}
	if err := finish(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// A whole call that waits in the socket when the drain wakes the idle wait
// was sent before the close: it is answered (the kernel's receive queue is
// looked into, not only what the reader consumed).
func TestPendingInputSeesUnreadBytes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if pendingInput(server) {
		t.Fatal("pending input on a connection nobody wrote to")
	}
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !pendingInput(server); {
		if time.Now().After(deadline) {
			t.Fatal("a byte written a minute ago is not seen as pending")
		}
		time.Sleep(5 * time.Millisecond)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(server, b); err != nil || b[0] != 'x' {
		t.Fatalf("the peek consumed the byte: %q %v", b, err)
	}
	if pendingInput(server) {
		t.Fatal("pending input after it was read")
	}
}
