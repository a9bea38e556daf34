package polling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder collects reported results.
type recorder struct {
	mu  sync.Mutex
	res []Result
}

func (r *recorder) report(x Result) {
	r.mu.Lock()
	r.res = append(r.res, x)
	r.mu.Unlock()
}

func (r *recorder) of(target string) []Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Result
	for _, x := range r.res {
		if x.Target == target {
			out = append(out, x)
		}
	}
	return out
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.res)
}

var quiet = slog.New(slog.DiscardHandler)

func mustPoller(t *testing.T, o Options) *Poller {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestParallelismIsBounded(t *testing.T) {
	var cur, peak atomic.Int32
	probe := func(ctx context.Context) error {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(40 * time.Millisecond)
		cur.Add(-1)
		return nil
	}
	var targets []Target
	for i := 0; i < 20; i++ {
		targets = append(targets, Target{Name: fmt.Sprintf("catalog%d", i), Probe: probe})
	}
	rec := &recorder{}
	p := mustPoller(t, Options{Interval: time.Hour, MaxParallelism: 3, Targets: targets, Report: rec.report})
	p.Round(context.Background())
	if peak.Load() != 3 {
		t.Fatalf("peak parallelism %d, want exactly max-parallelism 3", peak.Load())
	}
	if rec.len() != 20 || p.Rounds() != 1 {
		t.Fatalf("%d results, %d rounds after one round of 20 targets", rec.len(), p.Rounds())
	}
}

// TestRoundsNeverOverlap: probes that take three intervals delay the next
// round instead of starting a second one beside it.
func TestRoundsNeverOverlap(t *testing.T) {
	var running, overlaps atomic.Int32
	probe := func(ctx context.Context) error {
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		time.Sleep(150 * time.Millisecond)
		running.Add(-1)
		return nil
	}
	rec := &recorder{}
	p := mustPoller(t, Options{Interval: 50 * time.Millisecond, Targets: []Target{{Name: "c1", Probe: probe}}, Report: rec.report})
	p.Start()
	time.Sleep(800 * time.Millisecond)
	p.Close()
	res := rec.of("c1")
	if overlaps.Load() != 0 {
		t.Fatalf("%d overlapping probes", overlaps.Load())
	}
	if len(res) < 2 || len(res) > 6 {
		t.Fatalf("%d probes in 0.8 s of 150 ms probes at a 50 ms interval, want 2..6 (back to back)", len(res))
	}
	for i := 1; i < len(res); i++ {
		if gap := res[i].Start.Sub(res[i-1].Start); gap < 150*time.Millisecond {
			t.Errorf("probe %d started %v after the previous one, which took 150 ms", i, gap)
		}
	}
	// And a fast probe runs once per interval, not more.
	rec2 := &recorder{}
	p2 := mustPoller(t, Options{Interval: 100 * time.Millisecond, Targets: []Target{{Name: "c1", Probe: func(context.Context) error { return nil }}}, Report: rec2.report})
	p2.Start()
	time.Sleep(550 * time.Millisecond)
	p2.Close()
	if n := len(rec2.of("c1")); n < 3 || n > 7 {
		t.Fatalf("%d probes in 0.55 s at a 100 ms interval", n)
	}
}

// TestStuckProbeIsReportedAndNotRepeated: a probe that ignores its context
// is reported failed at its timeout, its backend is reported "still
// running" in later rounds (no second goroutine), and it is probed again
// once it returns.
func TestStuckProbeIsReportedAndNotRepeated(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int32
	stuck := func(ctx context.Context) error {
		if started.Add(1) == 1 {
			<-release // ignores ctx
		}
		return nil
	}
	rec := &recorder{}
	p := mustPoller(t, Options{Interval: time.Hour, ProbeTimeout: 100 * time.Millisecond, Log: quiet,
		Targets: []Target{{Name: "c1", Probe: stuck}, {Name: "c2", Probe: func(context.Context) error { return nil }}}, Report: rec.report})
	t0 := time.Now()
	p.Round(context.Background())
	took := time.Since(t0)
	if took < 100*time.Millisecond || took > 2*time.Second {
		t.Fatalf("a round with a stuck probe took %v, want about the 100 ms probe timeout", took)
	}
	r := rec.of("c1")
	if len(r) != 1 || r[0].Err == nil || !strings.Contains(r[0].Err.Error(), "did not return within its timeout of 100ms") {
		t.Fatalf("stuck probe result: %+v", r)
	}
	if c2 := rec.of("c2"); len(c2) != 1 || c2[0].Err != nil {
		t.Fatalf("the other backend: %+v", c2)
	}
	goroutines := runtime.NumGoroutine()
	for i := 0; i < 5; i++ {
		p.Round(context.Background())
	}
	if started.Load() != 1 {
		t.Fatalf("the stuck backend was probed %d times while its probe had not returned", started.Load())
	}
	if g := runtime.NumGoroutine(); g > goroutines+2 {
		t.Fatalf("goroutines grew from %d to %d over 5 rounds", goroutines, g)
	}
	r = rec.of("c1")
	if len(r) != 6 || !errors.Is(r[5].Err, ErrStillRunning) {
		t.Fatalf("later rounds: %+v", r[len(r)-1])
	}
	close(release)
	time.Sleep(20 * time.Millisecond)
	p.Round(context.Background())
	if r = rec.of("c1"); r[len(r)-1].Err != nil || started.Load() != 2 {
		t.Fatalf("after the probe returned: %+v, started %d", r[len(r)-1], started.Load())
	}
}

func TestCloseStopsTheLoop(t *testing.T) {
	rec := &recorder{}
	var calls atomic.Int32
	p := mustPoller(t, Options{Interval: 20 * time.Millisecond, Targets: []Target{{Name: "c1", Probe: func(ctx context.Context) error {
		calls.Add(1)
		select { // a probe that honours its context
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
			return nil
		}
	}}}, Report: rec.report})
	p.Start()
	p.Start() // no second loop
	time.Sleep(150 * time.Millisecond)
	p.Close()
	n, c := rec.len(), calls.Load()
	if n < 3 {
		t.Fatalf("only %d probes in 150 ms at a 20 ms interval", n)
	}
	time.Sleep(100 * time.Millisecond)
	if rec.len() != n || calls.Load() != c {
		t.Fatalf("probes went on after Close: %d reports, %d calls; %d and %d at Close", rec.len(), calls.Load(), n, c)
	}
	p.Start() // after Close: nothing
	time.Sleep(60 * time.Millisecond)
	if rec.len() != n {
		t.Fatal("Start after Close started probing")
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	_, err := New(Options{Interval: -1, ProbeTimeout: -time.Second, MaxParallelism: -2,
		Targets: []Target{{Name: "c1"}, {Name: "c2", Probe: func(context.Context) error { return nil }}, {Name: "c2", Probe: func(context.Context) error { return nil }}}})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"routing.backend-state-polling.interval-ms", "routing.backend-state-polling.probe-timeout-ms=-1000",
		"routing.backend-state-polling.max-parallelism=-2", "target c1 has no probe function", "target c2 listed twice", "no Report function"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
