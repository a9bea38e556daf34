package resilience

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
)

// slowLink is a TCP forwarder to a real metastore that can make chosen
// connections slow (each reply chunk held back): one backend session stuck
// behind a slow network path or a busy metastore thread, while the others
// answer at once. It is network fault injection, not a metastore: every byte
// comes from the real one.
type slowLink struct {
	ln     net.Listener
	target string
	delay  time.Duration

	mu     sync.Mutex
	conns  []net.Conn // client side, by accept order
	slow   map[int]bool
	closed atomic.Int32 // client connections the proxy closed
}

func newSlowLink(t *testing.T, backendURI string, delay time.Duration) *slowLink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &slowLink{ln: ln, target: strings.TrimPrefix(backendURI, "thrift://"), delay: delay, slow: map[int]bool{}}
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
	})
	go s.accept()
	return s
}

func (s *slowLink) URI() string { return "thrift://" + s.ln.Addr().String() }

// slowDown makes connection i (0 = the first accepted) slow from now on.
func (s *slowLink) slowDown(i int) {
	s.mu.Lock()
	s.slow[i] = true
	s.mu.Unlock()
}

func (s *slowLink) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *slowLink) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", s.target)
		if err != nil {
			c.Close()
			continue
		}
		s.mu.Lock()
		i := len(s.conns)
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		go func() { _, _ = io.Copy(b, c); b.Close(); s.closed.Add(1) }()
		go func() {
			buf := make([]byte, 64<<10)
			for {
				n, err := b.Read(buf)
				if n > 0 {
					s.mu.Lock()
					slow := s.slow[i]
					s.mu.Unlock()
					if slow {
						time.Sleep(s.delay)
					}
					if _, werr := c.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			c.Close()
		}()
	}
}

// A fan-out whose catalog2 leg lands on the slow session is answered by a
// second attempt on another session after the hedge delay: no fan-out waits
// for the slow one, the hedge is counted as won, the slow attempt is
// cancelled (its session closed). The same proxy without hedged reads waits.
func TestHedgedReadAnswersPastASlowSession(t *testing.T) {
	needHive(t)
	const delay = 2 * time.Second
	run := func(hedged bool) (slowest time.Duration, p *proxytest.Proxy, link *slowLink) {
		link = newSlowLink(t, hms2.URI, delay)
		p = proxytest.Start(t, props("catalog.catalog2.conf.hive.metastore.uris="+link.URI(),
			"catalog.catalog2.shared-session-pool-size=4",
			"routing.hedged-read.enabled="+map[bool]string{true: "true", false: "false"}[hedged],
			"routing.hedged-read.min-delay-ms=20"))
		// Two sessions to catalog2, both fast; then latency samples.
		a, b := proxytest.Client(t, p.URI("primary")), proxytest.Client(t, p.URI("primary"))
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = a.GetDatabase(context.Background(), "catalog2__default") }()
			go func() { defer wg.Done(); _, _ = b.GetDatabase(context.Background(), "catalog2__default") }()
			wg.Wait()
		}
		for range 20 {
			if _, err := a.GetDatabase(ctx(t), "catalog2__default"); err != nil {
				t.Fatal(err)
			}
		}
		if n := link.accepted(); n != 2 {
			t.Fatalf("the proxy opened %d sessions to catalog2, want 2", n)
		}
		link.slowDown(1)
		for i := 0; i < 6; i++ {
			start := time.Now()
			dbs, err := a.GetAllDatabases(ctx(t))
			if err != nil || !contains(dbs, "catalog2__default") {
				t.Fatalf("fan-out %d: %v %v", i, dbs, err)
			}
			slowest = max(slowest, time.Since(start))
		}
		return slowest, p, link
	}

	slowest, p, link := run(true)
	won := p.Metric(t, "hms_proxy_hedged_reads_total", "catalog", "catalog2", "result", "won")
	t.Logf("hedged: slowest of 6 fan-outs %v; hedges won %v; catalog2 connections %d, %d closed", slowest, won, link.accepted(), link.closed.Load())
	if slowest > delay/2 {
		t.Errorf("with hedged reads a fan-out waited %v for the slow session (its delay %v)", slowest, delay)
	}
	if won < 1 {
		t.Errorf("hms_proxy_hedged_reads_total{catalog2,won} = %v: no hedge answered", won)
	}
	if link.closed.Load() < 1 {
		t.Error("the losing attempt's session was not closed")
	}

	slowest, _, _ = run(false)
	t.Logf("not hedged: slowest of 6 fan-outs %v", slowest)
	if slowest < delay {
		t.Errorf("without hedged reads no fan-out met the slow session (slowest %v): the test did not test hedging", slowest)
	}
}
