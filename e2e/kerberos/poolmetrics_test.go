package kerberos

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// slowLink relays connections to a metastore, holding each chunk the proxy sends that names slowMethod for a delay
// (a metastore slow to answer that call), and can cut every open connection at once (its host going away).
type slowLink struct {
	ln    net.Listener
	delay time.Duration
	slow  []byte
	mu    sync.Mutex
	conns []net.Conn
}

func startSlowLink(t *testing.T, target, slowMethod string, delay time.Duration) *slowLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &slowLink{ln: ln, delay: delay, slow: []byte(slowMethod)}
	t.Cleanup(func() { ln.Close(); s.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			s.mu.Lock()
			s.conns = append(s.conns, c, b)
			s.mu.Unlock()
			go func() {
				defer b.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						if bytes.Contains(buf[:n], s.slow) {
							time.Sleep(s.delay)
						}
						if _, werr := b.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, b)
			}()
		}
	}()
	return s
}

func (s *slowLink) uri() string { return "thrift://" + s.ln.Addr().String() }

// cut closes every relayed connection.
func (s *slowLink) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

// The impersonation pool metrics with live pools: alice (set_ugi on a plain front door) has a pool of one session
// to a metastore that answers each call after 1 s; four parallel calls under a 1.5 s latency budget show the
// session active while it serves, leave it idle afterwards, and the calls that found no free session in time are
// counted as acquire timeouts; cutting the connections under the live pool evicts its session with reason
// transport_failure.
func TestImpersonationPoolMetricsLive(t *testing.T) {
	link := startSlowLink(t, strings.TrimPrefix(plain.URI, "thrift://"), "get_all_databases", time.Second)
	p := proxytest.Start(t, map[string]string{
		"catalogs": "catalog1", "catalog.catalog1.conf.hive.metastore.uris": link.uri(),
		"security.impersonation-enabled":               "true",
		"catalog.catalog1.impersonation-pool-max-size": "1",
		"catalog.catalog1.latency-budget-ms":           "1500",
	})
	sessions := func(state string) float64 {
		return p.Metric(t, router.MetricImpersonationSessions, "state", state)
	}
	clients := make([]*thriftgen.Client, 4)
	for i := range clients {
		clients[i] = proxytest.Client(t, p.URI("primary"))
		if _, err := clients[i].SetUgi(ctx(t), "alice", nil); err != nil {
			t.Fatal(err)
		}
	}
	// alice's first call builds her pool and its one session (the call waits 1 s at the metastore)
	if _, err := clients[0].GetAllDatabases(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if a, i := sessions("active"), sessions("idle"); a != 0 || i != 1 {
		t.Fatalf("after alice's first call: sessions active=%v idle=%v, want 0 and 1", a, i)
	}
	// Four parallel calls share alice's one session. Which of them find no
	// session in time and which get it too late to finish depends on the
	// scheduler: a waiter's budget ends when the holder's does, so the two
	// outcomes race (router's TestPoolCountsABorrowThatFindsNoSessionInTime
	// holds the exhausted case deterministically). Each of three rounds checks
	// that every call refused for want of a session was counted once, that
	// every other failure is the budget's, and that no second session opened.
	maxActive, timeouts, refused := 0.0, 0.0, 0
	for round := 1; round <= 3; round++ {
		var wg sync.WaitGroup
		errs := make([]error, len(clients))
		for i, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = c.GetAllDatabases(ctx(t))
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		tick := time.NewTicker(20 * time.Millisecond)
		for running := true; running; {
			select {
			case <-done:
				running = false
			case <-tick.C:
				maxActive = max(maxActive, sessions("active"))
			}
		}
		tick.Stop()
		for _, err := range errs {
			if err == nil {
				continue
			}
			t.Logf("round %d: a parallel call failed: %v", round, err)
			switch msg := err.Error(); {
			case strings.Contains(msg, "freed up within"):
				refused++
			case strings.Contains(msg, "latency budget exceeded"):
			default:
				t.Fatalf("round %d: a parallel call failed for another reason than the pool or the budget: %v", round, err)
			}
		}
		timeouts = p.Metric(t, router.MetricImpersonationAcquireTimeouts)
		if timeouts != float64(refused) {
			t.Fatalf("%s = %v after %d calls refused for want of a session: want one count each",
				router.MetricImpersonationAcquireTimeouts, timeouts, refused)
		}
	}
	if maxActive != 1 {
		t.Fatalf("%s{state=active} peaked at %v while alice's calls ran, want 1 (her one session)", router.MetricImpersonationSessions, maxActive)
	}
	// idle again once the calls are over
	if _, err := clients[0].GetAllDatabases(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if a, i := sessions("active"), sessions("idle"); a != 0 || i != 1 {
		t.Fatalf("after the parallel calls: sessions active=%v idle=%v, want 0 and 1", a, i)
	}
	// the link is cut under the live pool: the next call's session fails and is evicted as a transport failure
	before := p.Metric(t, router.MetricImpersonationEvictions, "reason", router.EvictTransportFailure)
	link.cut()
	_, err := clients[1].GetAllDatabases(ctx(t)) // may succeed on a fresh session (a retry), or fail
	t.Logf("the call after the cut: %v", err)
	waitMetric(t, func() float64 {
		return p.Metric(t, router.MetricImpersonationEvictions, "reason", router.EvictTransportFailure)
	}, before+1)
}

// /readyz shows the ZooKeeper token store: its connect string and root, healthy with master keys while ZooKeeper
// serves, unhealthy with the error once it is stopped (the proxy stays ready: Kerberos clients are still served).
func TestReadyzTokenStoreOnZooKeeper(t *testing.T) {
	zk := testbed.StartZooKeeperT(t)
	znode := "/" + uniq("readyz_tokens")
	p := tokenReplica(t, zk, znode, time.Hour)
	type store struct {
		Store      string `json:"store"`
		Healthy    bool   `json:"healthy"`
		MasterKeys int    `json:"masterKeys"`
		LastError  string `json:"lastError"`
	}
	readyz := func() (bool, *store) {
		resp, err := http.Get(p.ManagementURL() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rz struct {
			Ready      bool   `json:"ready"`
			TokenStore *store `json:"tokenStore"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&rz); err != nil {
			t.Fatal(err)
		}
		if rz.TokenStore == nil {
			t.Fatal("/readyz has no tokenStore section")
		}
		return rz.Ready, rz.TokenStore
	}
	ready, st := readyz()
	if !ready || !st.Healthy || st.MasterKeys < 1 || !strings.Contains(st.Store, zk.Addr) || !strings.Contains(st.Store, znode) || st.LastError != "" {
		t.Fatalf("/readyz with ZooKeeper serving: ready=%v tokenStore=%+v", ready, st)
	}
	if err := zk.Stop(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ready, st = readyz()
		if !st.Healthy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still shows the stopped ZooKeeper healthy: %+v", st)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if st.LastError == "" || !strings.Contains(st.Store, zk.Addr) {
		t.Fatalf("/readyz with ZooKeeper stopped: tokenStore=%+v, want the error", st)
	}
	if !ready {
		t.Fatalf("an unreachable token store made the proxy unready: %+v", st)
	}
	t.Logf("tokenStore with ZooKeeper stopped: %+v", st)
}
