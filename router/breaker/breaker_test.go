package breaker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var refused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

type timeoutErr struct{}

func (timeoutErr) Error() string { return "read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout" }
func (timeoutErr) Timeout() bool { return true }

func newGuard(t *testing.T, o Options) *Guard {
	t.Helper()
	if o.Catalog == "" {
		o.Catalog = "catalog2"
	}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// call admits one call and reports err (nil: a reply) after latency.
func call(g *Guard, latency time.Duration, err error) error {
	tk, aerr := g.Admit()
	if aerr != nil {
		return aerr
	}
	tk.Done(latency, err)
	return nil
}

func TestTransportFailuresOpenTheCircuitAndItFailsFast(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	g := newGuard(t, Options{CircuitBreaker: true, OpenState: 300 * time.Millisecond, Metrics: m})
	for i := 0; i < 2; i++ {
		if err := call(g, time.Millisecond, refused); err != nil {
			t.Fatalf("call %d refused while closed: %v", i, err)
		}
	}
	if s := g.State(); s.Circuit != Closed || s.ConsecutiveFailures != 2 {
		t.Fatalf("after 2 failures: %+v", s)
	}
	before := time.Now()
	if err := call(g, time.Millisecond, refused); err != nil {
		t.Fatal(err)
	}
	s := g.State()
	if s.Circuit != Open || s.ConsecutiveFailures != 3 || s.RetryAt.Before(before.Add(250*time.Millisecond)) {
		t.Fatalf("after 3 failures: %+v", s)
	}
	err := call(g, 0, nil)
	var oe *OpenError
	if !errors.As(err, &oe) || !errors.Is(err, ErrOpen) {
		t.Fatalf("open circuit admitted a call: %v", err)
	}
	for _, want := range []string{"catalog catalog2", "OPEN after 3 consecutive failures", "connection refused", "fail fast until " + s.RetryAt.UTC().Format(time.RFC3339Nano)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if v := testutil.ToFloat64(m.rejectedTotal.WithLabelValues("catalog2")); v != 1 {
		t.Errorf("rejected = %v, want 1", v)
	}
	if v := testutil.ToFloat64(m.circuitState.WithLabelValues("catalog2")); v != 2 {
		t.Errorf("state gauge = %v, want 2 (open)", v)
	}

	// After the open window, exactly one trial call goes through.
	time.Sleep(time.Until(s.RetryAt) + 20*time.Millisecond)
	trial, err := g.Admit()
	if err != nil {
		t.Fatalf("no half-open trial after the open window: %v", err)
	}
	if st := g.State(); st.Circuit != HalfOpen {
		t.Fatalf("state during the trial: %s", st.Circuit)
	}
	if err := call(g, 0, nil); !errors.As(err, &oe) || oe.State != HalfOpen {
		t.Fatalf("second call during the trial: %v", err)
	}
	trial.Done(time.Millisecond, refused) // the trial fails: open again
	if st := g.State(); st.Circuit != Open {
		t.Fatalf("after a failed trial: %s", st.Circuit)
	}
	time.Sleep(time.Until(g.State().RetryAt) + 20*time.Millisecond)
	if err := call(g, time.Millisecond, nil); err != nil { // the trial succeeds: closed
		t.Fatal(err)
	}
	if st := g.State(); st.Circuit != Closed || st.ConsecutiveFailures != 0 || !st.RetryAt.IsZero() {
		t.Fatalf("after a good trial: %+v", st)
	}
}

// TestOnlyTransportFailuresAndBreachesCount: replies carrying a backend
// exception are successes for the circuit; a reply later than the latency
// budget is a failure; a cancelled or abandoned call is neither.
func TestOnlyTransportFailuresAndBreachesCount(t *testing.T) {
	g := newGuard(t, Options{CircuitBreaker: true, LatencyBudget: 100 * time.Millisecond})
	for i := 0; i < 10; i++ {
		_ = call(g, time.Millisecond, refused)
		_ = call(g, time.Millisecond, refused)
		// A NoSuchObjectException or MetaException reply: err == nil.
		if err := call(g, 5*time.Millisecond, nil); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	if s := g.State(); s.Circuit != Closed || s.ConsecutiveFailures != 0 {
		t.Fatalf("2 failures then a reply, 10 times: %+v", s)
	}
	for i := 0; i < 20; i++ {
		tk, err := g.Admit()
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			tk.Done(time.Second, context.Canceled)
		} else {
			tk.Abandon()
		}
	}
	if s := g.State(); s.Circuit != Closed || s.ConsecutiveFailures != 0 {
		t.Fatalf("abandoned calls counted: %+v", s)
	}
	for i := 0; i < 3; i++ {
		_ = call(g, 150*time.Millisecond, nil) // a reply, but 50 ms over budget
	}
	s := g.State()
	if s.Circuit != Open || !strings.Contains(s.LastError, "over the latency budget of 100ms") {
		t.Fatalf("3 budget breaches: %+v", s)
	}
	if s.LastLatency != 150*time.Millisecond || s.LatencyEWMA < 50 {
		t.Errorf("a breach is still a latency sample: %+v", s)
	}
}

func TestHalfOpenLetsExactlyOneConcurrentCallThrough(t *testing.T) {
	g := newGuard(t, Options{CircuitBreaker: true, FailureThreshold: 1, OpenState: 100 * time.Millisecond})
	_ = call(g, 0, refused)
	time.Sleep(150 * time.Millisecond)
	var admitted atomic.Int32
	var wg sync.WaitGroup
	release := make(chan struct{})
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, err := g.Admit()
			if err == nil {
				admitted.Add(1)
				<-release
				tk.Done(time.Millisecond, nil)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if admitted.Load() != 1 {
		t.Fatalf("%d calls admitted in half-open, want 1", admitted.Load())
	}
	if g.State().Circuit != Closed {
		t.Fatalf("state after the trial: %s", g.State().Circuit)
	}
}

func TestProbeClosesARecoveredBackendAndTripsADeadOne(t *testing.T) {
	g := newGuard(t, Options{CircuitBreaker: true, OpenState: time.Hour})
	for i := 0; i < 3; i++ {
		g.ProbeResult(0, refused) // nobody called: the probes alone find it dead
	}
	if s := g.State(); s.Circuit != Open || !strings.HasPrefix(s.LastError, "probe: ") {
		t.Fatalf("3 failed probes: %+v", s)
	}
	g.ProbeResult(2*time.Millisecond, nil)
	if s := g.State(); s.Circuit != Closed || s.ConsecutiveFailures != 0 || !s.RetryAt.IsZero() {
		t.Fatalf("a good probe must close an open circuit at once (open window 1 h): %+v", s)
	}
	if err := call(g, time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	// A probe slower than the budget is no proof of health.
	g2 := newGuard(t, Options{CircuitBreaker: true, FailureThreshold: 1, OpenState: time.Hour, LatencyBudget: 50 * time.Millisecond})
	_ = call(g2, 0, refused)
	g2.ProbeResult(80*time.Millisecond, nil)
	if s := g2.State(); s.Circuit != Open {
		t.Fatalf("a probe over budget closed the circuit: %+v", s)
	}
}

func TestDisabledBreakerAdmitsEverythingButKeepsTheStreak(t *testing.T) {
	g := newGuard(t, Options{})
	for i := 0; i < 10; i++ {
		if err := call(g, time.Millisecond, refused); err != nil {
			t.Fatal(err)
		}
	}
	if s := g.State(); s.Circuit != Disabled || s.ConsecutiveFailures != 10 {
		t.Fatalf("%+v", s)
	}
	if tk, _ := g.Admit(); tk.Timeout() != 0 {
		t.Errorf("no budget, no adaptive timeout: Timeout = %v, want 0", tk.Timeout())
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// TestAdaptiveTimeoutFollowsTheEWMAWithHysteresisAndCooldown walks the
// adaptive timeout through its rules with a simulated clock.
func TestAdaptiveTimeoutFollowsTheEWMAWithHysteresisAndCooldown(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	g := newGuard(t, Options{Adaptive: Adaptive{Enabled: true}, Metrics: m, Now: clk.now})
	applied := func() float64 { return testutil.ToFloat64(m.appliedTotal.WithLabelValues("catalog2")) }
	skipped := func(r string) float64 { return testutil.ToFloat64(m.skippedTotal.WithLabelValues("catalog2", r)) }
	tick := func(latency time.Duration, n int) {
		for i := 0; i < n; i++ {
			clk.t = clk.t.Add(10 * time.Millisecond)
			_ = call(g, latency, nil)
		}
	}
	if s := g.State(); s.Baseline != 5*time.Second || s.Adaptive != 5*time.Second {
		t.Fatalf("start: %+v", s)
	}
	// 100 ms calls: EWMA 100 ms, x4 = 400 ms, clamped to min-ms 1 s. The
	// change of 4 s passes max(2 s, 25 % of 5 s); there was no change yet, so
	// no cooldown: applied at the first reply.
	tick(100*time.Millisecond, 1)
	if s := g.State(); s.Adaptive != time.Second || applied() != 1 {
		t.Fatalf("after a 100 ms reply: %+v, applied %v", s, applied())
	}
	// Latency creeps up to 400 ms: targets up to 1.6 s, all within 2 s of the
	// current 1 s: suppressed by hysteresis, each distinct proposal counted once.
	tick(400*time.Millisecond, 40)
	if s := g.State(); s.Adaptive != time.Second {
		t.Fatalf("hysteresis did not hold: %+v", s)
	}
	if h := skipped(SkipHysteresis); h < 2 || h > 7 {
		t.Errorf("hysteresis skips = %v, want one per distinct proposal between 1.1 s and 1.6 s", h)
	}
	before := skipped(SkipHysteresis)
	tick(400*time.Millisecond, 40) // steady: the proposal no longer changes
	if skipped(SkipHysteresis) != before {
		t.Errorf("a steady latency kept counting hysteresis skips (%v -> %v)", before, skipped(SkipHysteresis))
	}
	// Latency jumps to 2 s: target 8 s, a change of 7 s; but the last change
	// was 0.81 s ago, within the 30 s cooldown.
	tick(2*time.Second, 30)
	if s := g.State(); s.Adaptive != time.Second || skipped(SkipCooldown) < 1 {
		t.Fatalf("cooldown did not hold: %+v, cooldown skips %v", s, skipped(SkipCooldown))
	}
	clk.t = clk.t.Add(30 * time.Second)
	tick(2*time.Second, 1)
	if s := g.State(); s.Adaptive != 8*time.Second || applied() != 2 {
		t.Fatalf("after the cooldown: %+v, applied %v", s, applied())
	}
	// Latency over the max: clamped to max-ms (two steps, a cooldown apart).
	clk.t = clk.t.Add(31 * time.Second)
	tick(30*time.Second, 20)
	clk.t = clk.t.Add(31 * time.Second)
	tick(30*time.Second, 1)
	if s := g.State(); s.Adaptive != 60*time.Second || applied() != 4 {
		t.Fatalf("not clamped to max-ms: %+v", s)
	}
	tk, _ := g.Admit()
	if tk.Timeout() != 60*time.Second {
		t.Errorf("Ticket.Timeout = %v, want the adaptive 60 s", tk.Timeout())
	}
	tk.Abandon()
}

func TestATimeoutRaisesTheAdaptiveTimeoutPastTheHysteresis(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	g := newGuard(t, Options{Adaptive: Adaptive{Enabled: true, ReconnectCooldown: time.Second}, Now: clk.now,
		LatencyBudget: 20 * time.Second})
	_ = call(g, 10*time.Millisecond, nil) // -> min 1 s
	if g.State().Adaptive != time.Second {
		t.Fatalf("%+v", g.State())
	}
	// The fast EWMA alone would keep proposing 1 s; a timed-out call (only a
	// lower bound on its latency, so no sample) must grow the timeout by at
	// least the hysteresis, or it could never grow at all.
	for _, want := range []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second} {
		clk.t = clk.t.Add(2 * time.Second)
		_ = call(g, g.State().Adaptive, timeoutErr{})
		if s := g.State(); s.Adaptive != want {
			t.Fatalf("after a timeout: adaptive %v, want %v", s.Adaptive, want)
		}
	}
	tk, _ := g.Admit()
	if tk.Timeout() != 12*time.Second {
		t.Errorf("Timeout = %v: want min(budget 20 s, adaptive 12 s)", tk.Timeout())
	}
	tk.Abandon()
	clk.t = clk.t.Add(2 * time.Second)
	_ = call(g, 0, fmt.Errorf("borrow: %w", context.DeadlineExceeded))
	if s := g.State(); s.Adaptive != 24*time.Second {
		t.Errorf("context deadline is a timeout too: %+v", s)
	}
	tk, _ = g.Admit()
	if tk.Timeout() != 20*time.Second {
		t.Errorf("Timeout = %v: want the budget, 20 s, below the adaptive 24 s", tk.Timeout())
	}
	tk.Abandon()
	if s := g.State(); s.LatencyEWMA != 10 {
		t.Errorf("timed-out calls became latency samples: EWMA %v", s.LatencyEWMA)
	}
}

func TestStateAppliesToReadyz(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	g := newGuard(t, Options{CircuitBreaker: true, FailureThreshold: 1, OpenState: time.Hour, LatencyBudget: 1500 * time.Millisecond,
		Adaptive: Adaptive{Enabled: true}, Now: clk.now})
	_ = call(g, 12*time.Millisecond, nil)
	_ = call(g, 0, refused)
	var b monitoring.BackendState
	g.State().Apply(&b)
	want := monitoring.BackendState{CircuitState: Open, ConsecutiveFailures: 1, CircuitRetryAtEpochMs: clk.t.Add(time.Hour).UnixMilli(),
		BaselineTimeoutMs: 5000, AdaptiveTimeoutMs: 1000, LatencyBudgetMs: 1500, LatencyEwmaMs: 12, LastLatencyMs: 12, Degraded: true}
	if b != want {
		t.Fatalf("readyz fields\n got %+v\nwant %+v", b, want)
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	_, err := New(Options{Catalog: "c1", FailureThreshold: -1, OpenState: -time.Second, LatencyBudget: -1,
		Adaptive: Adaptive{Min: 10 * time.Second, Max: 5 * time.Second, Multiplier: -1, Alpha: 1.5, ReconnectCooldown: -1}})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"routing.circuit-breaker.failure-threshold=-1", "routing.circuit-breaker.open-state-ms=-1000",
		"catalog.c1.latency-budget-ms", "routing.adaptive-timeout.min-ms=10000 is larger than routing.adaptive-timeout.max-ms=5000",
		"routing.adaptive-timeout.multiplier=-1", "routing.adaptive-timeout.alpha=1.5", "routing.adaptive-timeout.reconnect-cooldown-ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
