package e2eutil

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/wire"
)

// Raw is a client connection that sends bytes as they are.
type Raw struct {
	T *testing.T
	C net.Conn
	R *bufio.Reader
}

func DialRaw(t *testing.T, uri string) *Raw {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(uri, "thrift://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &Raw{T: t, C: c, R: bufio.NewReader(c)}
}

func (r *Raw) Send(b []byte) {
	r.T.Helper()
	_ = r.C.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.C.Write(b); err != nil {
		r.T.Fatal(err)
	}
}

func (r *Raw) Recv() (*wire.Message, error) {
	_ = r.C.SetReadDeadline(time.Now().Add(10 * time.Second))
	return wire.ReadMessage(r.R, wire.Limits{MaxMessage: 16 << 20}, nil)
}

// refusedAndClosed asserts a TApplicationException of type typ, then the end
// of the connection.
func (r *Raw) RefusedAndClosed(typ int32, fragments ...string) {
	r.T.Helper()
	m, err := r.Recv()
	if err != nil {
		r.T.Fatalf("want a TApplicationException before the connection closes, got %v", err)
	}
	got, msg, _ := wire.ParseAppException(m.Body())
	if m.Type != wire.Exception || got != typ {
		r.T.Fatalf("want TApplicationException type %d, got message type %d type %d %q", typ, m.Type, got, msg)
	}
	for _, f := range fragments {
		if !strings.Contains(msg, f) {
			r.T.Fatalf("refusal %q lacks %q", msg, f)
		}
	}
	// EOF, or a reset when the proxy closed with part of the frame unread.
	if _, err := r.Recv(); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		r.T.Fatalf("the connection must be closed after a refused frame, got %v", err)
	}
}

func CallBytes(name string, seq int32, args wire.Value) []byte {
	return wire.AppendMessage(nil, wire.Header{Name: name, Type: wire.Call, SeqID: seq}, &args)
}
