package router

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/wire"
)

// peer is a scripted Thrift peer for the pool's own protocol checks: it
// answers each call with whatever answer builds from the request, and counts
// the connections it accepted. (The e2e tests run the pool against real
// metastores; a real metastore never sends a wrong answer on purpose.)
func peer(t *testing.T, answer func(req *wire.Message) []byte) (addr string, accepted *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted = new(atomic.Int32)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					m, err := wire.ReadMessage(r, wire.Limits{MaxMessage: 1 << 20}, nil)
					if err != nil {
						return
					}
					if _, err := c.Write(answer(m)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String(), accepted
}

func reply(name string, seq int32) []byte {
	body := wire.Struct(wire.Field{ID: 0, V: wire.List(wire.TString, wire.Str("default"))})
	return wire.AppendMessage(nil, wire.Header{Name: name, Type: wire.Reply, SeqID: seq}, &body)
}

func TestPoolRefusesRepliesThatDoNotMatchTheirRequest(t *testing.T) {
	cases := []struct {
		name   string
		answer func(req *wire.Message) []byte
		want   string
	}{
		{"another sequence id", func(m *wire.Message) []byte { return reply(m.Name, m.SeqID+1) }, "sequence id"},
		{"another method", func(m *wire.Message) []byte { return reply("get_table", m.SeqID) }, "got get_table"},
		{"a call instead of a reply", func(m *wire.Message) []byte {
			b := wire.Struct()
			return wire.AppendMessage(nil, wire.Header{Name: m.Name, Type: wire.Call, SeqID: m.SeqID}, &b)
		}, "type 1"},
		{"a second answer behind the first", func(m *wire.Message) []byte {
			return append(reply(m.Name, m.SeqID), reply(m.Name, m.SeqID)...)
		}, "bytes followed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr, accepted := peer(t, c.answer)
			b, err := NewBackend(BackendOptions{Catalog: "c2", URIs: []string{"thrift://" + addr}, PoolSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			for i := 0; i < 3; i++ {
				args := wire.Struct()
				req := wire.AppendMessage(nil, wire.Header{Name: "get_all_databases", Type: wire.Call, SeqID: 77}, &args)
				_, _, err := b.Call(context.Background(), req, false)
				if !errors.Is(err, ErrBadReply) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "c2") {
					t.Fatalf("call %d: want ErrBadReply naming the catalog and %q, got %v", i, c.want, err)
				}
			}
			if n := accepted.Load(); n != 3 {
				t.Fatalf("every bad exchange must close its session: 3 calls used %d connections", n)
			}
			if h := b.Health(); h.Active != 0 {
				t.Fatalf("%d sessions still lent out", h.Active)
			}
		})
	}
}

// The pool stamps its own sequence ids, so a client's id never reaches the
// backend and a late answer to an earlier request cannot pass for a new one.
func TestPoolStampsItsOwnSequenceIDs(t *testing.T) {
	var mu sync.Mutex
	var seen []int32
	addr, accepted := peer(t, func(m *wire.Message) []byte {
		mu.Lock()
		seen = append(seen, m.SeqID)
		mu.Unlock()
		return reply(m.Name, m.SeqID)
	})
	b, err := NewBackend(BackendOptions{Catalog: "c1", URIs: []string{"thrift://" + addr}, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := 0; i < 3; i++ {
		args := wire.Struct()
		req := wire.AppendMessage(nil, wire.Header{Name: "get_all_databases", Type: wire.Call, SeqID: 5}, &args)
		r, done, err := b.Call(context.Background(), req, false)
		if err != nil {
			t.Fatal(err)
		}
		if r.SeqID == 5 && i > 0 {
			t.Fatalf("the client's sequence id reached the backend")
		}
		done()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || seen[0] == seen[1] || seen[1] == seen[2] || accepted.Load() != 1 {
		t.Fatalf("one session, three distinct sequence ids: saw %v over %d connections", seen, accepted.Load())
	}
}

// Which outcomes give a session back and which close it (sessions.go): the
// peer answers each call with a scripted outcome; every call that must
// retire its session makes the next one connect anew.
func TestPoolRetiresSessionsAfterOutcomesThatMayLeaveState(t *testing.T) {
	table, err := methods.BuildTable()
	if err != nil {
		t.Fatal(err)
	}
	declared := func(method string, field func(*methods.Spec) int16) func(m *wire.Message) []byte {
		s := table.Lookup(method)
		return func(m *wire.Message) []byte {
			body := wire.Struct(wire.Field{ID: field(s), V: wire.Struct(wire.Field{ID: 1, V: wire.Str("no")})})
			return wire.AppendMessage(nil, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
		}
	}
	noSuch := func(s *methods.Spec) int16 { return s.NoSuchObjectField }
	meta := func(s *methods.Spec) int16 { return s.MetaExcField }
	app := func(typ int32) func(m *wire.Message) []byte {
		return func(m *wire.Message) []byte { return wire.AppException(m.Name, m.SeqID, typ, "boom") }
	}
	void := func(m *wire.Message) []byte {
		body := wire.Struct()
		return wire.AppendMessage(nil, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
	}
	cases := []struct {
		name, method string
		answer       func(m *wire.Message) []byte
		table        *methods.Table
		retire       string // "" : the session serves every call
	}{
		{"a success", "get_all_databases", func(m *wire.Message) []byte { return reply(m.Name, m.SeqID) }, table, ""},
		{"a void success", "drop_table", void, table, ""},
		{"a read's NoSuchObjectException (tableExists)", "get_table", declared("get_table", noSuch), table, ""},
		{"get_table_req's NoSuchObjectException", "get_table_req", declared("get_table_req", noSuch), table, ""},
		{"get_database's NoSuchObjectException", "get_database", declared("get_database", noSuch), table, ""},
		{"UNKNOWN_METHOD (no handler ran)", "get_table_req", app(wire.AppUnknownMethod), table, ""},
		{"a write's NoSuchObjectException", "drop_table", declared("drop_table", noSuch), table, "exception"},
		{"a write's MetaException (exchange_partitions)", "exchange_partitions", declared("exchange_partitions", meta), table, "exception"},
		{"a read's MetaException", "get_table", declared("get_table", meta), table, "exception"},
		{"a lock call's exception", "check_lock", declared("check_lock", func(s *methods.Spec) int16 { return 1 }), table, "exception"},
		{"INTERNAL_ERROR of a read", "get_table", app(wire.AppInternalError), table, "application_exception"},
		{"PROTOCOL_ERROR", "lock", app(wire.AppProtocolError), table, "protocol_error"},
		{"setMetaConf's success", "setMetaConf", void, table, "session_state"},
		{"without a method table, a read's miss", "get_table", declared("get_table", noSuch), nil, "exception"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr, accepted := peer(t, c.answer)
			var mu sync.Mutex
			var reasons []string
			b, err := NewBackend(BackendOptions{Catalog: "c1", URIs: []string{"thrift://" + addr}, PoolSize: 1,
				Table: c.table, OnRetire: func(r string) { mu.Lock(); reasons = append(reasons, r); mu.Unlock() }})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			for i := 0; i < 3; i++ {
				args := wire.Struct()
				req := wire.AppendMessage(nil, wire.Header{Name: c.method, Type: wire.Call, SeqID: 1}, &args)
				_, done, err := b.Call(context.Background(), req, false)
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				done()
			}
			mu.Lock()
			defer mu.Unlock()
			wantConns, wantReasons := int32(1), []string(nil)
			if c.retire != "" {
				wantConns, wantReasons = 3, []string{c.retire, c.retire, c.retire}
			}
			if n := accepted.Load(); n != wantConns || strings.Join(reasons, ",") != strings.Join(wantReasons, ",") {
				t.Fatalf("3 calls used %d connections and retired %v; want %d and %v", n, reasons, wantConns, wantReasons)
			}
		})
	}
}

// A round trip that fails closes its session with the reason a dashboard
// shows: a timeout, a cancelled caller, or the transport.
func TestPoolNamesWhyAFailedRoundTripClosedItsSession(t *testing.T) {
	block, got := make(chan struct{}), make(chan struct{}, 1)
	t.Cleanup(func() { close(block) })
	slow, _ := peer(t, func(m *wire.Message) []byte {
		got <- struct{}{}
		<-block // never answers in time
		return nil
	})
	l, err := net.Listen("tcp", "127.0.0.1:0") // hangs up on every call
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = c.Read(make([]byte, 64)); c.Close() }()
		}
	}()
	var mu sync.Mutex
	var reasons []string
	call := func(addr string, ctx context.Context, socketTimeout time.Duration) {
		t.Helper()
		b, err := NewBackend(BackendOptions{Catalog: "c1", URIs: []string{"thrift://" + addr}, PoolSize: 1,
			SocketTimeout: socketTimeout, // bounds the round trip, not the connect
			OnRetire:      func(r string) { mu.Lock(); reasons = append(reasons, r); mu.Unlock() }})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		args := wire.Struct()
		req := wire.AppendMessage(nil, wire.Header{Name: "get_all_databases", Type: wire.Call, SeqID: 1}, &args)
		if _, _, err := b.Call(ctx, req, false); err == nil {
			t.Fatal("the call succeeded")
		}
	}
	call(slow, context.Background(), 100*time.Millisecond)
	<-got
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-got; cancel() }() // once the peer has the call
	call(slow, ctx, 0)
	call(l.Addr().String(), context.Background(), 0)
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(reasons, ",") != "timeout,cancelled,transport" {
		t.Fatalf("reasons %v, want timeout, cancelled, transport", reasons)
	}
}

// A borrow that finds every session busy past its wait gives up with
// ErrPoolExhausted, naming the pool, and is counted once (the acquire-timeout
// metrics hang on OnAcquireTimeout); the call holding the session is not
// disturbed. The peer holds its answer until the test lets it go, so nothing
// here depends on timing but the waiter's own bound.
func TestPoolCountsABorrowThatFindsNoSessionInTime(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	addr, _ := peer(t, func(m *wire.Message) []byte {
		arrived <- struct{}{}
		<-release
		return reply(m.Name, m.SeqID)
	})
	var timeouts atomic.Int32
	b, err := NewBackend(BackendOptions{Catalog: "c1", URIs: []string{"thrift://" + addr}, PoolSize: 1,
		BorrowTimeout: 50 * time.Millisecond, OnAcquireTimeout: func(string) { timeouts.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	call := func() error {
		args := wire.Struct()
		req := wire.AppendMessage(nil, wire.Header{Name: "get_all_databases", Type: wire.Call, SeqID: 1}, &args)
		_, done, err := b.Call(context.Background(), req, false)
		if err == nil {
			done()
		}
		return err
	}
	held := make(chan error, 1)
	go func() { held <- call() }()
	<-arrived // the one session is busy at the peer
	err = call()
	if !errors.Is(err, ErrPoolExhausted) || !strings.Contains(err.Error(), "catalog c1") || timeouts.Load() != 1 {
		t.Fatalf("a borrow while the only session is busy: err %v, counted %d; want ErrPoolExhausted naming catalog c1, counted once", err, timeouts.Load())
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatalf("the call holding the session: %v", err)
	}
	if err := call(); err != nil || timeouts.Load() != 1 {
		t.Fatalf("a call once the session is free: %v, acquire timeouts %d; want success and still 1", err, timeouts.Load())
	}
}
