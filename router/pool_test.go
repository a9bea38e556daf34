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
