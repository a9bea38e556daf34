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
		// The first probes wait for each other until three run at once
		// (however slowly goroutines start), then stay a moment, so a
		// fourth one let in beside them would be seen.
		for deadline := time.Now().Add(time.Minute); peak.Load() < 3 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
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
	waitReports(t, rec, 4)
	p.Close()
	res := rec.of("c1")
	if overlaps.Load() != 0 {
		t.Fatalf("%d overlapping probes", overlaps.Load())
	}
	// Back to back: each probe starts after the previous one (150 ms) ended.
	for i := 1; i < len(res); i++ {
		if gap := res[i].Start.Sub(res[i-1].Start); gap < 150*time.Millisecond {
			t.Errorf("probe %d started %v after the previous one, which took 150 ms", i, gap)
		}
	}
	// And a fast probe runs once per interval, not more: in any stretch of
	// time at most one round per interval plus the first (a slow machine
	// only makes rounds later, never earlier).
	rec2 := &recorder{}
	p2 := mustPoller(t, Options{Interval: 100 * time.Millisecond, Targets: []Target{{Name: "c1", Probe: func(context.Context) error { return nil }}}, Report: rec2.report})
	start := time.Now()
	p2.Start()
	waitReports(t, rec2, 4)
	p2.Close()
	elapsed := time.Since(start)
	if n, most := len(rec2.of("c1")), int(elapsed/(100*time.Millisecond))+1; n > most {
		t.Fatalf("%d probes in %v at a 100 ms interval, at most %d", n, elapsed, most)
	}
}

// waitReports waits (bounded) until the recorder has n results.
func waitReports(t *testing.T, rec *recorder, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); rec.len() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d results within a minute, want %d", rec.len(), n)
		}
		time.Sleep(time.Millisecond)
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
	// At least the probe timeout; and it returned at all, while the stuck
	// probe never returns before release: the round did not wait for it.
	if took < 100*time.Millisecond {
		t.Fatalf("a round with a stuck probe took %v, less than the 100 ms probe timeout", took)
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
	// Probed again once the stuck probe has returned (the rounds before
	// that still find it running).
	for deadline := time.Now().Add(time.Minute); started.Load() < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the backend was not probed again within a minute of its stuck probe returning")
		}
		p.Round(context.Background())
		time.Sleep(time.Millisecond)
	}
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
	waitReports(t, rec, 3)
	p.Close()
	n, c := rec.len(), calls.Load()
	time.Sleep(100 * time.Millisecond) // a loop left running would probe in this time (negative check)
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
