package proxybench

import (
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/fwd"
	"github.com/hms-proxy/hms-proxy/bench/instant"
	"github.com/hms-proxy/hms-proxy/bench/load"
	"github.com/hms-proxy/hms-proxy/bench/workload"
	"github.com/hms-proxy/hms-proxy/wire"
)

// bed is an instant backend, a forwarder to it and an in-process proxy to it.
type bed struct {
	data    workload.Data
	reqs    *workload.Requests
	instant string // backend address
	fwd     string // forwarder address
	proxy   string // proxy address
}

func startBed(tb testing.TB, audit bool) *bed {
	tb.Helper()
	d := workload.NewData("gobench")
	replies, err := SyntheticReplies(d)
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := instant.New(replies)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go srv.Serve(ln)
	tb.Cleanup(srv.Close)
	f := &fwd.Forwarder{Target: ln.Addr().String()}
	fln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go f.Serve(fln)
	tb.Cleanup(f.Close)
	port, err := FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	mport, err := FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	a, err := Start(Props(ProxyConfig{Port: port, MgmtPort: mport, Backends: []string{"thrift://" + ln.Addr().String()},
		PoolSize: 8, Audit: audit, Dir: tb.TempDir()}), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = a.Shutdown(timeoutCtx(tb)) })
	reqs, err := workload.Encode(d, []int{1, 8, 64})
	if err != nil {
		tb.Fatal(err)
	}
	return &bed{data: d, reqs: reqs, instant: ln.Addr().String(), fwd: fln.Addr().String(),
		proxy: a.Listener("primary").Addr().String()}
}

func dial(tb testing.TB, addr string) *load.Conn {
	tb.Helper()
	c, err := load.Dial(addr, 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Minute))
	tb.Cleanup(func() { c.Close() })
	return c
}

// The fixtures answer as a metastore would, and the proxy in front of them
// rewrites the backend catalog name to the proxy's catalog, as it must.
func TestFixturesAnswerThroughProxyAndForwarder(t *testing.T) {
	b := startBed(t, true)
	get := func(addr string) *wire.Message {
		op, err := load.NewStatic(b.reqs.Static[workload.GetTable])
		if err != nil {
			t.Fatal(err)
		}
		c := dial(t, addr)
		if err := op.Do(c); err != nil {
			t.Fatalf("get_table via %s: %v", addr, err)
		}
		// Do checks the reply; read it once more to look at it.
		req := append([]byte(nil), b.reqs.Static[workload.GetTable]...)
		off := 8 + len("get_table")
		m, err := c.Call(req, off)
		if err != nil {
			t.Fatalf("get_table via %s: %v", addr, err)
		}
		return m
	}
	direct, viaFwd, viaProxy := get(b.instant), get(b.fwd), get(b.proxy)
	if string(direct.Body()) != string(viaFwd.Body()) {
		t.Fatal("the forwarder changed the reply")
	}
	if !strings.Contains(string(direct.Body()), "\x00\x00\x00\x04hive") {
		t.Fatal("the instant backend's table does not carry catName hive")
	}
	if strings.Contains(string(viaProxy.Body()), "\x00\x00\x00\x04hive") || !strings.Contains(string(viaProxy.Body()), "\x00\x00\x00\x08catalog1") {
		t.Fatal("the proxy did not rewrite catName hive to catalog1")
	}
	if got, want := len(viaProxy.Body()), len(direct.Body())+len("catalog1")-len("hive"); got != want {
		t.Fatalf("proxied reply body is %d bytes, want %d (the direct reply plus the longer catalog name)", got, want)
	}
	// Every workload's calls succeed through the proxy.
	ops := workload.NewOps()
	c := dial(t, b.proxy)
	for _, w := range workload.All {
		op, err := ops.Op(b.reqs, w, 8)
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Do(c); err != nil {
			t.Fatalf("%s through the proxy: %v", w, err)
		}
	}
}

// mallocsPerOp runs n operations and returns heap allocations and bytes per
// operation of the whole process.
func mallocsPerOp(tb testing.TB, op load.Op, c *load.Conn, n int) (allocs, bytes float64) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for i := 0; i < n; i++ {
		if err := op.Do(c); err != nil {
			tb.Fatal(err)
		}
	}
	runtime.ReadMemStats(&m1)
	return float64(m1.Mallocs-m0.Mallocs) / float64(n), float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n)
}

// benchProxied measures one workload through the in-process proxy, one
// connection, calls back to back. allocs/op counts the whole process (load
// generator and instant backend included); proxy-allocs/op subtracts what the
// same calls cost straight to the instant backend, leaving the proxy's own.
func benchProxied(b *testing.B, w string, audit bool) {
	bd := startBed(b, audit)
	ops := workload.NewOps()
	direct, err := ops.Op(bd.reqs, w, 1)
	if err != nil {
		b.Fatal(err)
	}
	proxied, err := ops.Op(bd.reqs, w, 1)
	if err != nil {
		b.Fatal(err)
	}
	dc, pc := dial(b, bd.instant), dial(b, bd.proxy)
	mallocsPerOp(b, direct, dc, 200) // warm up both paths
	mallocsPerOp(b, proxied, pc, 200)
	baseAllocs, baseBytes := mallocsPerOp(b, direct, dc, 2000)
	b.ReportAllocs()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := proxied.Do(pc); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N)-baseAllocs, "proxy-allocs/op")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(b.N)-baseBytes, "proxy-B/op")
}

func benchDirect(b *testing.B, w string, addr func(*bed) string) {
	bd := startBed(b, false)
	op, err := workload.NewOps().Op(bd.reqs, w, 1)
	if err != nil {
		b.Fatal(err)
	}
	c := dial(b, addr(bd))
	mallocsPerOp(b, op, c, 200)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := op.Do(c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetTable(b *testing.B) {
	b.Run("direct", func(b *testing.B) { benchDirect(b, workload.GetTable, func(x *bed) string { return x.instant }) })
	b.Run("forwarder", func(b *testing.B) { benchDirect(b, workload.GetTable, func(x *bed) string { return x.fwd }) })
	b.Run("proxy", func(b *testing.B) { benchProxied(b, workload.GetTable, true) })
	b.Run("proxy-noaudit", func(b *testing.B) { benchProxied(b, workload.GetTable, false) })
}

func BenchmarkGetPartitions(b *testing.B) {
	b.Run("direct", func(b *testing.B) { benchDirect(b, workload.GetPartitions, func(x *bed) string { return x.instant }) })
	b.Run("proxy", func(b *testing.B) { benchProxied(b, workload.GetPartitions, true) })
}

func BenchmarkGetPartitionsByNames(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		benchDirect(b, workload.GetPartitionsByNames, func(x *bed) string { return x.instant })
	})
	b.Run("proxy", func(b *testing.B) { benchProxied(b, workload.GetPartitionsByNames, true) })
}
