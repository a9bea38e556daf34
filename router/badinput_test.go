package router_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/wire"
)

// offlineProxy has one catalog whose metastore is not running: every test
// here must be answered by the proxy itself.
func offlineProxy(t *testing.T, extra map[string]string) *proxytest.Proxy {
	props := map[string]string{
		"catalogs": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": "thrift://127.0.0.1:" + strconv.Itoa(proxytest.FreePort(t)),
		"server.max-message-size":                   "65536",
	}
	for k, v := range extra {
		props[k] = v
	}
	return proxytest.Start(t, props)
}

func dial(t *testing.T, p *proxytest.Proxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Listener("primary").Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends raw bytes and reads one reply message.
func roundTrip(t *testing.T, c net.Conn, raw []byte) *wire.Message {
	t.Helper()
	if _, err := c.Write(raw); err != nil {
		t.Fatal(err)
	}
	m, err := wire.ReadMessage(bufio.NewReader(c), wire.Limits{}, nil)
	if err != nil {
		t.Fatalf("reading reply: %v", err)
	}
	return m
}

func call(name string, seq int32, args wire.Value) []byte {
	return wire.AppendMessage(nil, wire.Header{Name: name, Type: wire.Call, SeqID: seq}, &args)
}

// assertHealthy proves the proxy still serves a fresh connection.
func assertHealthy(t *testing.T, p *proxytest.Proxy) {
	t.Helper()
	c := dial(t, p)
	m := roundTrip(t, c, call("get_catalogs", 5, wire.Struct()))
	if m.Type != wire.Reply || m.SeqID != 5 {
		t.Fatalf("healthy connection got %+v", m.Header)
	}
}

// assertClosed expects the proxy to close the connection without a reply.
func assertClosed(t *testing.T, c net.Conn) {
	t.Helper()
	buf := make([]byte, 1)
	n, err := c.Read(buf)
	if n != 0 || !errors.Is(err, io.EOF) && !strings.Contains(errString(err), "reset") {
		t.Fatalf("want the proxy to close the connection, got n=%d err=%v", n, err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestUnknownMethodAnswersUnknownMethodAndKeepsTheConnection(t *testing.T) {
	p := offlineProxy(t, nil)
	c := dial(t, p)
	m := roundTrip(t, c, call("no_such_rpc", 9, wire.Struct(wire.Field{ID: 1, V: wire.Str("x")})))
	typ, msg, err := wire.ParseAppException(m.Body())
	if err != nil || m.Type != wire.Exception || typ != wire.AppUnknownMethod || !strings.Contains(msg, "no_such_rpc") || m.SeqID != 9 {
		t.Fatalf("got type=%d msg=%q seq=%d err=%v", typ, msg, m.SeqID, err)
	}
	// The same connection goes on: the unknown call was read whole.
	if m := roundTrip(t, c, call("get_catalogs", 10, wire.Struct())); m.Type != wire.Reply || m.SeqID != 10 {
		t.Fatalf("follow-up call on the same connection: %+v", m.Header)
	}
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	huge := wire.AppendHeader(nil, wire.Header{Name: "get_database", Type: wire.Call, SeqID: 1})
	huge = append(huge, wire.TString, 0, 1)
	huge = binary.BigEndian.AppendUint32(huge, 1<<30) // a 1 GiB string, beyond server.max-message-size
	bigList := wire.AppendHeader(nil, wire.Header{Name: "get_table_objects_by_name", Type: wire.Call, SeqID: 1})
	bigList = append(bigList, wire.TList, 0, 2, wire.TString)
	bigList = binary.BigEndian.AppendUint32(bigList, 50_000_000)
	full := call("get_database", 1, wire.Struct(wire.Field{ID: 1, V: wire.Str("sales")}))
	cases := map[string][]byte{
		"garbage frame":       []byte{0x12, 0x34, 0x56, 0x78, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0},
		"bad version":         {0x80, 0x02, 0x00, 0x01, 0, 0, 0, 1, 'x', 0, 0, 0, 1, 0},
		"oversized string":    huge,
		"oversized list":      bigList,
		"truncated message":   full[:len(full)-4],
		"negative string len": append(wire.AppendHeader(nil, wire.Header{Name: "x", Type: wire.Call, SeqID: 1}), wire.TString, 0, 1, 0xff, 0xff, 0xff, 0xfe),
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			p := offlineProxy(t, nil)
			other := dial(t, p) // an unrelated client, connected before the bad one
			c := dial(t, p)
			if _, err := c.Write(raw); err != nil {
				t.Fatal(err)
			}
			if name == "truncated message" {
				c.(*net.TCPConn).CloseWrite()
			}
			assertClosed(t, c)
			if m := roundTrip(t, other, call("get_catalogs", 3, wire.Struct())); m.Type != wire.Reply {
				t.Fatalf("other connection affected: %+v", m.Header)
			}
			assertHealthy(t, p)
		})
	}
}

func TestHTTPOnThriftPortGets400(t *testing.T) {
	p := offlineProxy(t, nil)
	c := dial(t, p)
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(resp), "HTTP/1.1 400") || !strings.Contains(string(resp), "Thrift") {
		t.Fatalf("got %q", resp)
	}
	assertHealthy(t, p)
}

func TestIdleClientIsClosedAfterSocketTimeout(t *testing.T) {
	p := offlineProxy(t, map[string]string{"server.client-socket-timeout-ms": "300"})
	c := dial(t, p)
	// Closed by its 300 ms timeout, not never (the read's own deadline is a
	// minute, far above any slowness).
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	start := time.Now()
	assertClosed(t, c)
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("idle connection closed only after %v", d)
	}
}
