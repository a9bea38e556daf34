package proxybench

import (
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/instant"
	"github.com/hms-proxy/hms-proxy/bench/load"
	"github.com/hms-proxy/hms-proxy/bench/workload"
)

// Fan-out cost (issue 14 item 7): get_all_databases through the in-process
// proxy over N catalogs served by one instant backend, uncached and with the
// database list cache, one connection, calls back to back; and the cached
// throughput over 16 connections. proxy-cpu-us/op is the process's CPU per
// call minus what the same call costs straight to the instant backend (the
// load generator's and the backend's share), leaving the proxy's own.

// fanBed is an instant backend and a proxy with n catalogs on it.
func fanBed(tb testing.TB, n int, extra map[string]string) (backend, proxy string, static []byte) {
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
	port, err := FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	mport, err := FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	uris := make([]string, n)
	for i := range uris {
		uris[i] = "thrift://" + ln.Addr().String()
	}
	a, err := Start(Props(ProxyConfig{Port: port, MgmtPort: mport, Backends: uris, PoolSize: 16, Audit: true,
		Dir: tb.TempDir(), Extra: extra}), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = a.Shutdown(timeoutCtx(tb)) })
	reqs, err := workload.Encode(d, []int{1})
	if err != nil {
		tb.Fatal(err)
	}
	return ln.Addr().String(), a.Listener("primary").Addr().String(), reqs.Static[workload.FanOutDatabases]
}

var listCache = map[string]string{
	"routing.database-list-cache.ttl-ms":              "600000",
	"routing.database-list-cache.shared-across-users": "true",
}

// cpuTime is the process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// perOp runs op n times and returns CPU, allocations and wall time per op.
func perOp(tb testing.TB, op load.Op, c *load.Conn, n int) (cpu time.Duration, allocs float64, wall time.Duration) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0, w0 := cpuTime(), time.Now()
	for i := 0; i < n; i++ {
		if err := op.Do(c); err != nil {
			tb.Fatal(err)
		}
	}
	wall, cpu = time.Since(w0), cpuTime()-c0
	runtime.ReadMemStats(&m1)
	return cpu / time.Duration(n), float64(m1.Mallocs-m0.Mallocs) / float64(n), wall / time.Duration(n)
}

func benchFanOut(b *testing.B, n int, extra map[string]string) {
	backend, proxy, static := fanBed(b, n, extra)
	direct, err := load.NewStatic(static)
	if err != nil {
		b.Fatal(err)
	}
	proxied, err := load.NewStatic(static)
	if err != nil {
		b.Fatal(err)
	}
	dc, pc := dial(b, backend), dial(b, proxy)
	perOp(b, direct, dc, 500) // warm up
	perOp(b, proxied, pc, 500)
	baseCPU, baseAllocs, _ := perOp(b, direct, dc, 5000)
	b.ReportAllocs()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := proxied.Do(pc); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := cpuTime() - c0
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64((cpu-baseCPU*time.Duration(b.N))/time.Duration(b.N))/1e3, "proxy-cpu-us/op")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N)-baseAllocs, "proxy-allocs/op")
}

func BenchmarkFanOutDatabases(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		backend, _, static := fanBed(b, 1, nil)
		op, err := load.NewStatic(static)
		if err != nil {
			b.Fatal(err)
		}
		c := dial(b, backend)
		perOp(b, op, c, 500)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := op.Do(c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proxy-1cat", func(b *testing.B) { benchFanOut(b, 1, nil) })
	b.Run("proxy-2cat", func(b *testing.B) { benchFanOut(b, 2, nil) })
	b.Run("proxy-4cat", func(b *testing.B) { benchFanOut(b, 4, nil) })
	b.Run("proxy-2cat-cached", func(b *testing.B) { benchFanOut(b, 2, listCache) })
	b.Run("proxy-4cat-cached", func(b *testing.B) { benchFanOut(b, 4, listCache) })
}

// BenchmarkFanOutCachedThroughput: cached get_all_databases over 2
// catalogs from 16 connections at once. The load generator runs in the same
// process and on the same cores, so calls/s understates what the proxy does
// alone; process-cpu-us/call includes the generator's share.
func BenchmarkFanOutCachedThroughput(b *testing.B) {
	_, proxy, static := fanBed(b, 2, listCache)
	const conns = 16
	cs := make([]*load.Conn, conns)
	ops := make([]load.Op, conns)
	for i := range cs {
		cs[i] = dial(b, proxy)
		op, err := load.NewStatic(static)
		if err != nil {
			b.Fatal(err)
		}
		ops[i] = op
		perOp(b, op, cs[i], 100)
	}
	b.ResetTimer()
	start, c0 := time.Now(), cpuTime()
	var wg sync.WaitGroup
	per := b.N/conns + 1
	for i := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < per; k++ {
				if err := ops[i].Do(cs[i]); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	n := float64(per * conns)
	b.ReportMetric(n/time.Since(start).Seconds(), "calls/s")
	// CPU of the whole process (proxy and load generator) per call: on a
	// machine of its own the proxy does at most cores / this calls per second.
	b.ReportMetric(float64(cpuTime()-c0)/1e3/n, "process-cpu-us/call")
}
