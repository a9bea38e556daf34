package polling_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/router/breaker"
	"github.com/hms-proxy/hms-proxy/router/polling"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/wire"
)

// probeOver returns a probe that sends call over a new TCP connection to
// addr, as a backend session would, within the probe's deadline.
func probeOver(addr string, call polling.ProbeCall) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		if dl, ok := ctx.Deadline(); ok {
			_ = c.SetDeadline(dl)
		}
		if _, err := c.Write(call.Request(1)); err != nil {
			return err
		}
		var m wire.Message
		if err := wire.NewReader(c, 1<<20).Next(&m); err != nil {
			return err
		}
		return call.Check(&m)
	}
}

// checkProbeCalls: both probe calls succeed on a real metastore, and a
// method it does not have is a failed probe, not a success.
func checkProbeCalls(t *testing.T, m *testbed.Metastore) {
	for _, call := range []polling.ProbeCall{polling.DBUUID, polling.Status} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := probeOver(strings.TrimPrefix(m.URI, "thrift://"), call)(ctx)
		cancel()
		if err != nil {
			t.Errorf("Hive %s, %s: %v", m.Version, call.Method, err)
		}
	}
	bogus := polling.ProbeCall{Method: "no_such_method"}
	err := probeOver(strings.TrimPrefix(m.URI, "thrift://"), bogus)(context.Background())
	if err == nil || !strings.Contains(err.Error(), "TApplicationException: Invalid method name") {
		t.Errorf("Hive %s, unknown method: %v", m.Version, err)
	}
}

// pauser stops and resumes a metastore's JVM (SIGSTOP/SIGCONT to its
// process group), as a hung metastore host behaves: connections are
// accepted by the kernel, nothing is answered.
type pauser struct{ pgid int }

func pauserOf(t *testing.T, m *testbed.Metastore) *pauser {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), "-Dhmsproxy.testbed.dir="+m.Dir+"\x00") {
			continue
		}
		pgid, err := syscall.Getpgid(pid)
		if err != nil {
			t.Fatal(err)
		}
		p := &pauser{pgid: pgid}
		t.Cleanup(p.resume) // never leave a stopped JVM behind
		return p
	}
	t.Fatalf("no process found for the metastore in %s", m.Dir)
	return nil
}

func (p *pauser) pause()  { _ = syscall.Kill(-p.pgid, syscall.SIGSTOP) }
func (p *pauser) resume() { _ = syscall.Kill(-p.pgid, syscall.SIGCONT) }

// TestPollingFeedsBreakersOfRealMetastores runs the poller over a real Hive
// 3.1.3 and a real Hive 4.1.0 metastore, each result fed to the catalog's
// circuit breaker (open window 1 h, so only a probe can close it again), and
// checks what an operator would see:
//
//   - a hung metastore (SIGSTOP) is found dead by the probes alone, before
//     any client call: its circuit opens, client calls fail fast naming the
//     catalog, and the healthy catalog is probed on as before;
//   - when it wakes up, the next probe closes its circuit;
//   - a killed metastore (connection refused) is found the same way, and its
//     circuit closes within one interval of its restart.
func TestPollingFeedsBreakersOfRealMetastores(t *testing.T) {
	ms := testbed.StartMetastoresT(t, testbed.Hive313, testbed.Hive410)
	for _, m := range ms {
		checkProbeCalls(t, m)
	}
	addr := func(i int) string { return strings.TrimPrefix(ms[i].URI, "thrift://") }
	// A probe timeout a healthy metastore meets on a loaded machine too (a
	// hung one never answers, whatever the timeout).
	const interval, probeTimeout = 300 * time.Millisecond, 3 * time.Second
	guards := map[string]*breaker.Guard{}
	for _, c := range []string{"catalog1", "catalog2"} {
		g, err := breaker.New(breaker.Options{Catalog: c, CircuitBreaker: true, OpenState: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		guards[c] = g
	}
	var mu sync.Mutex
	var results []polling.Result
	p, err := polling.New(polling.Options{Interval: interval, ProbeTimeout: probeTimeout, MaxParallelism: 8,
		Log: slog.New(slog.DiscardHandler),
		Targets: []polling.Target{
			{Name: "catalog1", Probe: probeOver(addr(0), polling.DBUUID)},
			{Name: "catalog2", Probe: probeOver(addr(1), polling.DBUUID)},
		},
		Report: func(r polling.Result) {
			guards[r.Target].ProbeResult(r.Latency, r.Err)
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	defer p.Close()
	// since counts the probes that ended after from (a probe in flight when
	// the fault came fails from it, although it began before).
	since := func(target string, from time.Time) (ok, failed int, lastErr error) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range results {
			if r.Target != target || r.Start.Add(r.Latency).Before(from) {
				continue
			}
			if r.Err == nil {
				ok++
			} else {
				failed, lastErr = failed+1, r.Err
			}
		}
		return
	}
	// waitFor waits for an event. The limits only tell "happens" from "never
	// happens" (an open window of an hour, a circuit nobody closes), so they
	// are far above what the events take on a slow machine.
	waitFor := func(what string, limit time.Duration, cond func() bool) time.Duration {
		t.Helper()
		limit = max(limit, 2*time.Minute)
		start := time.Now()
		for !cond() {
			if time.Since(start) > limit {
				t.Fatalf("%s: not within %v", what, limit)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}
	circuit := func(c string) string { return guards[c].State().Circuit }
	waitFor("first good probes", 10*time.Second, func() bool {
		a, _, _ := since("catalog1", time.Time{})
		b, _, _ := since("catalog2", time.Time{})
		return a > 0 && b > 0
	})

	// 1. catalog2 hangs.
	pz := pauserOf(t, ms[1])
	pausedAt := time.Now()
	pz.pause()
	took := waitFor("catalog2's circuit opens from probes alone", 15*time.Second, func() bool { return circuit("catalog2") == breaker.Open })
	t.Logf("hung metastore: circuit open %v after SIGSTOP (3 probes of %v timeout, %v interval)", took, probeTimeout, interval)
	_, failed, lastErr := since("catalog2", pausedAt)
	if failed < 3 || lastErr == nil || !strings.Contains(lastErr.Error(), "timeout") {
		t.Errorf("catalog2 while hung: %d failed probes, last error %v", failed, lastErr)
	}
	_, aerr := guards["catalog2"].Admit()
	var oe *breaker.OpenError
	if !errors.As(aerr, &oe) || !strings.Contains(aerr.Error(), "catalog catalog2: circuit breaker OPEN") {
		t.Fatalf("a client call to the hung catalog must fail fast naming it: %v", aerr)
	}
	okc1, failc1, _ := since("catalog1", pausedAt)
	if okc1 < 2 || circuit("catalog1") != breaker.Closed {
		t.Errorf("the healthy catalog while the other hung: %d ok, %d failed probes, circuit %s", okc1, failc1, circuit("catalog1"))
	}

	// 2. It wakes up: the next probe closes the circuit (the open window is 1 h).
	pz.resume()
	took = waitFor("catalog2's circuit closes after SIGCONT", 5*time.Second, func() bool { return circuit("catalog2") == breaker.Closed })
	t.Logf("woken metastore: circuit closed %v after SIGCONT", took)
	if tk, err := guards["catalog2"].Admit(); err != nil {
		t.Fatalf("closed circuit refused a call: %v", err)
	} else {
		tk.Abandon()
	}

	// 3. catalog2 is killed: connection refused, found by the probes.
	if err := ms[1].Stop(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	waitFor("catalog2's circuit opens after the kill", 10*time.Second, func() bool { return circuit("catalog2") == breaker.Open })
	_, _, lastErr = since("catalog2", killedAt)
	if lastErr == nil || !strings.Contains(lastErr.Error(), "connection refused") {
		t.Errorf("killed metastore: last probe error %v", lastErr)
	}
	if err := ms[1].Restart(); err != nil {
		t.Fatal(err)
	}
	took = waitFor("catalog2's circuit closes after the restart", interval+probeTimeout+3*time.Second, func() bool { return circuit("catalog2") == breaker.Closed })
	t.Logf("restarted metastore: circuit closed %v after it answered again (interval %v, probe timeout %v)", took, interval, probeTimeout)
}
