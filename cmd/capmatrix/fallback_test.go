package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// failingBackend answers every call with a TApplicationException of the
// type in typ. It counts the calls it received.
type failingBackend struct {
	l     net.Listener
	typ   atomic.Int32
	calls atomic.Int64
}

func startFailingBackend(t *testing.T) *failingBackend {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &failingBackend{l: l}
	b.typ.Store(wire.AppUnknownMethod)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go b.serve(c)
		}
	}()
	return b
}

func (b *failingBackend) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		m, err := wire.ReadMessage(r, wire.Limits{}, nil)
		if err != nil {
			return
		}
		b.calls.Add(1)
		if m.Type == wire.Oneway {
			continue
		}
		if _, err := c.Write(wire.AppException(m.Name, m.SeqID, b.typ.Load(), "test backend: "+m.Name+" fails")); err != nil {
			return
		}
	}
}

// emptySuccess reports whether a reply is a success with no exception field:
// what the router's empty compatibility answer looks like (the backend here
// never succeeds).
func emptySuccess(m *wire.Message) bool {
	if m.Type != wire.Reply {
		return false
	}
	v, err := wire.DecodeStruct(m.Body())
	if err != nil {
		return false
	}
	for _, f := range v.Fields {
		if f.ID != 0 {
			return false
		}
	}
	return true
}

// The Fallback column of the method matrix mirrors two unexported rules of
// router/adapt.go. This drives every RPC an APACHE_4_1_0 front door exposes
// through a real proxy to an APACHE_4_1_0 backend that fails every call:
// first with UNKNOWN_METHOD, then with INTERNAL_ERROR. The router must answer
// empty exactly where the column says so, and count each empty answer.
func TestFallbackColumnMatchesTheRouter(t *testing.T) {
	mx, err := BuildMatrix()
	if err != nil {
		t.Fatal(err)
	}
	be := startFailingBackend(t)
	p := proxytest.Start(t, map[string]string{
		"catalogs": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": "thrift://" + be.l.Addr().String(),
		"catalog.catalog1.runtime-profile":          "APACHE_4_1_0",
		"compatibility.frontend-profile":            "APACHE_4_1_0",
	})
	conn, err := net.DialTimeout("tcp", p.Listener("primary").Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	r := bufio.NewReader(conn)
	col, _ := mx.Backend("APACHE_4_1_0")

	// The metric's to_api says which rule answered: empty_error for the
	// optional reads (any failure), empty_unknown_method for the others.
	label := func(row *MethodRow) string {
		if row.Fallback == fallbackAnyFailure {
			return "empty_error"
		}
		return "empty_unknown_method"
	}
	want := map[string]int{}
	seq := int32(0)
	for _, mode := range []struct {
		typ      int32
		expected func(row *MethodRow) bool
	}{
		{wire.AppUnknownMethod, func(row *MethodRow) bool { return row.Fallback != "" }},
		{wire.AppInternalError, func(row *MethodRow) bool { return row.Fallback == fallbackAnyFailure }},
	} {
		be.typ.Store(mode.typ)
		n := 0
		for _, row := range mx.Rows {
			m := row.Method
			if m.Oneway || !m.Profiles.Has(thriftgen.ProfileApache410) {
				continue
			}
			if k := row.Cells[col].Kind; k == ProxyAnswers || k == NotForwarded {
				continue
			}
			seq++
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			args := wire.Struct()
			if _, err := conn.Write(wire.AppendMessage(nil, wire.Header{Name: m.Name, Type: wire.Call, SeqID: seq}, &args)); err != nil {
				t.Fatal(err)
			}
			reply, err := wire.ReadMessage(r, wire.Limits{}, nil)
			if errors.Is(err, io.EOF) || err != nil {
				t.Fatalf("%s: reading the reply: %v", m.Name, err)
			}
			got, exp := emptySuccess(reply), mode.expected(row)
			if got != exp {
				t.Errorf("backend failing with TApplicationException %d: %s answered empty=%v, but COMPATIBILITY.md's Fallback column says %q",
					mode.typ, m.Name, got, row.Fallback)
			}
			if exp {
				want[label(row)]++
				n++
			}
		}
		if n == 0 {
			t.Fatalf("no RPC answers empty when the backend fails with TApplicationException %d: the test proves nothing", mode.typ)
		}
		for l, w := range want {
			if got := p.Metric(t, "hms_proxy_backend_fallback_total", "to_api", l); int(got) != w {
				t.Errorf("after TApplicationException %d: hms_proxy_backend_fallback_total{to_api=%s} = %v, want %d", mode.typ, l, got, w)
			}
		}
	}
	if be.calls.Load() == 0 {
		t.Fatal("the test backend received no call")
	}
}
