// Package breaker is the per-backend resilience state the backend pool
// consults on every call: a circuit breaker (routing.circuit-breaker.*, on
// github.com/sony/gobreaker/v2) and an adaptive socket timeout
// (routing.adaptive-timeout.*), with the per-catalog latency budget
// (catalog.<name>.latency-budget-ms).
//
// The pool asks Guard.Admit before it borrows a session: an open circuit
// fails fast with an *OpenError naming the catalog and the retry time. An
// admitted call gets a Ticket whose Timeout is the call's deadline, the
// smaller of the latency budget and the adaptive timeout; the pool applies
// it and reports the outcome with Ticket.Done:
//
//   - a reply (a result, a declared exception such as MetaException or
//     NoSuchObjectException, or a TApplicationException): the backend is
//     alive, a success for the circuit, unless it took longer than the latency
//     budget, which is a breach and counts as a failure;
//   - a transport error (connect, read, write, deadline): a failure;
//   - context.Canceled, or Ticket.Abandon: the caller gave up, counted
//     neither way.
//
// After FailureThreshold consecutive failures the circuit opens for
// OpenState; then one call is let through (HALF_OPEN), which closes it on
// success or opens it again on failure. A successful background probe
// (ProbeResult) closes an open circuit at once, so a recovered backend is
// back within one polling interval, before any client pays for the trial.
package breaker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/sony/gobreaker/v2"
)

// Circuit states as /readyz spells them.
const (
	Closed   = "CLOSED"
	Open     = "OPEN"
	HalfOpen = "HALF_OPEN"
	Disabled = "DISABLED" // routing.circuit-breaker.enabled=false
)

// Defaults of the specification.
const (
	DefaultFailureThreshold  = 3
	DefaultOpenState         = 30 * time.Second
	DefaultInitialTimeout    = 5 * time.Second
	DefaultMinTimeout        = time.Second
	DefaultMaxTimeout        = 60 * time.Second
	DefaultMultiplier        = 4.0
	DefaultAlpha             = 0.2
	DefaultReconnectCooldown = 30 * time.Second
)

// Adaptive-timeout skip reasons (hms_proxy_adaptive_timeout_reconnect_skipped_total's reason).
const (
	SkipHysteresis = "hysteresis"
	SkipCooldown   = "cooldown"
)

// proposalGrain is the resolution of adaptive-timeout proposals: targets are
// rounded to it, and a suppressed proposal is counted once per distinct value
// (the hysteresis threshold is at least 2 s, so nothing is lost).
const proposalGrain = 100 * time.Millisecond

// Options configure one backend's Guard. Zero values take the defaults above.
type Options struct {
	Catalog string

	CircuitBreaker   bool          // routing.circuit-breaker.enabled
	FailureThreshold int           // routing.circuit-breaker.failure-threshold (3)
	OpenState        time.Duration // routing.circuit-breaker.open-state-ms (30000)

	LatencyBudget time.Duration // catalog.<name>.latency-budget-ms; 0 = none

	Adaptive Adaptive

	Metrics *Metrics         // nil: none
	Now     func() time.Time // nil: time.Now (adaptive cooldown, retry times)
}

// Adaptive configures the adaptive socket timeout (routing.adaptive-timeout.*).
type Adaptive struct {
	Enabled           bool          // .enabled
	Initial           time.Duration // .initial-ms (5000): the baseline, clamped to [Min, Max]
	Min               time.Duration // .min-ms (1000)
	Max               time.Duration // .max-ms (60000)
	Multiplier        float64       // .multiplier (4.0)
	Alpha             float64       // .alpha (0.2): weight of the newest latency in the EWMA
	ReconnectCooldown time.Duration // .reconnect-cooldown-ms (30000)
}

func (o *Options) withDefaults() Options {
	c := *o
	if c.FailureThreshold == 0 {
		c.FailureThreshold = DefaultFailureThreshold
	}
	if c.OpenState == 0 {
		c.OpenState = DefaultOpenState
	}
	a := &c.Adaptive
	if a.Initial == 0 {
		a.Initial = DefaultInitialTimeout
	}
	if a.Min == 0 {
		a.Min = DefaultMinTimeout
	}
	if a.Max == 0 {
		a.Max = DefaultMaxTimeout
	}
	if a.Multiplier == 0 {
		a.Multiplier = DefaultMultiplier
	}
	if a.Alpha == 0 {
		a.Alpha = DefaultAlpha
	}
	if a.ReconnectCooldown == 0 {
		a.ReconnectCooldown = DefaultReconnectCooldown
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports every bad value, naming its key.
func (o *Options) Validate() error {
	c := o.withDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.FailureThreshold < 1 {
		bad("routing.circuit-breaker.failure-threshold=%d: must be at least 1", c.FailureThreshold)
	}
	if c.OpenState < time.Millisecond {
		bad("routing.circuit-breaker.open-state-ms=%d: must be at least 1", c.OpenState.Milliseconds())
	}
	if c.LatencyBudget < 0 {
		bad("catalog.%s.latency-budget-ms=%d: must not be negative", c.Catalog, c.LatencyBudget.Milliseconds())
	}
	a := c.Adaptive
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"initial-ms", a.Initial}, {"min-ms", a.Min}, {"max-ms", a.Max}} {
		if d.v < time.Millisecond {
			bad("routing.adaptive-timeout.%s=%d: must be at least 1", d.key, d.v.Milliseconds())
		}
	}
	if a.Min > a.Max {
		bad("routing.adaptive-timeout.min-ms=%d is larger than routing.adaptive-timeout.max-ms=%d", a.Min.Milliseconds(), a.Max.Milliseconds())
	}
	if math.IsNaN(a.Multiplier) || math.IsInf(a.Multiplier, 0) || a.Multiplier <= 0 {
		bad("routing.adaptive-timeout.multiplier=%v: must be a positive number", a.Multiplier)
	}
	if math.IsNaN(a.Alpha) || a.Alpha <= 0 || a.Alpha > 1 {
		bad("routing.adaptive-timeout.alpha=%v: must be in (0, 1]", a.Alpha)
	}
	if a.ReconnectCooldown < 0 {
		bad("routing.adaptive-timeout.reconnect-cooldown-ms=%d: must not be negative", a.ReconnectCooldown.Milliseconds())
	}
	return errors.Join(errs...)
}

// ErrOpen is what an *OpenError unwraps to.
var ErrOpen = errors.New("circuit breaker open")

// errAbandoned marks calls counted neither way.
var errAbandoned = errors.New("call abandoned by its caller")

// errBudget is a reply that came later than the latency budget.
type errBudget struct{ took, budget time.Duration }

func (e errBudget) Error() string {
	return fmt.Sprintf("reply took %v, over the latency budget of %v", e.took.Round(time.Millisecond), e.budget)
}

// OpenError is the fail-fast answer of an open (or half-open and busy)
// circuit.
type OpenError struct {
	Catalog   string
	State     string    // Open or HalfOpen
	RetryAt   time.Time // when the next trial call is let through (Open)
	Failures  int       // consecutive failures that opened it
	LastError string
	Now       time.Time
}

func (e *OpenError) Error() string {
	if e.State == HalfOpen {
		return fmt.Sprintf("catalog %s: circuit breaker HALF_OPEN: its one trial call is in flight, other calls fail fast until it returns (last error: %s)",
			e.Catalog, e.LastError)
	}
	return fmt.Sprintf("catalog %s: circuit breaker OPEN after %d consecutive failures (last error: %s); calls fail fast until %s (in %v)",
		e.Catalog, e.Failures, e.LastError, e.RetryAt.UTC().Format(time.RFC3339Nano),
		max(e.RetryAt.Sub(e.Now), 0).Round(time.Millisecond))
}

// Unwrap makes errors.Is(err, ErrOpen) true.
func (e *OpenError) Unwrap() error { return ErrOpen }

// Guard is one backend's breaker and adaptive timeout. Safe for concurrent use.
type Guard struct {
	opt Options
	m   *Metrics

	cb      atomic.Pointer[gobreaker.TwoStepCircuitBreaker[struct{}]]
	retryAt atomic.Int64 // unix nanos of the end of the open window; 0 = not open

	mu          sync.Mutex
	consecutive int
	lastError   string
	lastLatency time.Duration
	ewma        float64 // ms
	sampled     bool    // ewma holds at least one sample
	baseline    time.Duration
	current     time.Duration // adaptive timeout in force
	lastApplied time.Time     // last applied change; zero = none yet
	lastSkipped time.Duration // last counted suppressed proposal
}

// New validates opt and builds a Guard.
func New(opt Options) (*Guard, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	g := &Guard{opt: opt.withDefaults(), m: opt.Metrics}
	a := g.opt.Adaptive
	g.baseline = min(max(a.Initial, a.Min), a.Max)
	g.current = g.baseline
	if g.opt.CircuitBreaker {
		g.cb.Store(g.newBreaker())
	}
	g.m.state(g.opt.Catalog, g.circuit())
	g.m.known(g.opt.Catalog, g.opt.CircuitBreaker, a.Enabled)
	return g, nil
}

func (g *Guard) newBreaker() *gobreaker.TwoStepCircuitBreaker[struct{}] {
	threshold := uint32(g.opt.FailureThreshold)
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        g.opt.Catalog,
		MaxRequests: 1, // half-open lets exactly one call through
		Timeout:     g.opt.OpenState,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= threshold },
		IsExcluded:  func(err error) bool { return errors.Is(err, errAbandoned) },
		OnStateChange: func(_ string, _, to gobreaker.State) {
			// Called under the breaker's lock: touch only atomics here.
			if to == gobreaker.StateOpen {
				g.retryAt.Store(g.opt.Now().Add(g.opt.OpenState).UnixNano())
			} else {
				g.retryAt.Store(0)
			}
			g.m.state(g.opt.Catalog, stateName(to))
		},
	})
}

func stateName(s gobreaker.State) string {
	switch s {
	case gobreaker.StateOpen:
		return Open
	case gobreaker.StateHalfOpen:
		return HalfOpen
	default:
		return Closed
	}
}

// Circuit is the circuit's state (Closed, Open, HalfOpen or Disabled);
// cheaper than State.
func (g *Guard) Circuit() string { return g.circuit() }

// LatencyEWMA is the latency EWMA of replies; ok is false before the first.
func (g *Guard) LatencyEWMA() (ewma time.Duration, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return time.Duration(g.ewma * float64(time.Millisecond)), g.sampled
}

func (g *Guard) circuit() string {
	cb := g.cb.Load()
	if cb == nil {
		return Disabled
	}
	return stateName(cb.State())
}

// Ticket is one admitted call. Report its outcome exactly once, with Done or
// Abandon.
type Ticket struct {
	g       *Guard
	done    func(error)
	timeout time.Duration
}

// Timeout is the deadline the pool applies to the call: the smaller of the
// latency budget and the adaptive timeout; 0 when neither is configured (the
// pool's own socket timeout applies).
func (t Ticket) Timeout() time.Duration { return t.timeout }

// Admit asks whether a call may go to the backend now.
func (g *Guard) Admit() (Ticket, error) {
	t := Ticket{g: g, timeout: g.timeout()}
	if cb := g.cb.Load(); cb != nil {
		done, err := cb.Allow()
		if err != nil {
			g.m.rejected(g.opt.Catalog)
			return Ticket{}, g.openError(err)
		}
		t.done = done
	}
	return t, nil
}

func (g *Guard) timeout() time.Duration {
	d := g.opt.LatencyBudget
	if g.opt.Adaptive.Enabled {
		g.mu.Lock()
		cur := g.current
		g.mu.Unlock()
		if d == 0 || cur < d {
			d = cur
		}
	}
	return d
}

func (g *Guard) openError(err error) *OpenError {
	g.mu.Lock()
	e := &OpenError{Catalog: g.opt.Catalog, Failures: g.consecutive, LastError: g.lastError, Now: g.opt.Now()}
	g.mu.Unlock()
	if errors.Is(err, gobreaker.ErrTooManyRequests) {
		e.State = HalfOpen
	} else {
		e.State = Open
		if at := g.retryAt.Load(); at != 0 {
			e.RetryAt = time.Unix(0, at)
		}
	}
	return e
}

// Done reports the call's outcome: latency is how long the backend call
// took, err the transport error (nil when a reply, of any kind, arrived).
func (t Ticket) Done(latency time.Duration, err error) {
	if t.g == nil {
		return
	}
	g := t.g
	if errors.Is(err, context.Canceled) {
		t.Abandon()
		return
	}
	var verdict error
	switch {
	case err != nil:
		verdict = err
		g.observe(latency, false, err)
	case g.opt.LatencyBudget > 0 && latency > g.opt.LatencyBudget:
		verdict = errBudget{took: latency, budget: g.opt.LatencyBudget}
		g.observe(latency, true, verdict)
	default:
		g.observe(latency, true, nil)
	}
	if t.done != nil {
		t.done(verdict)
	}
}

// Abandon reports that the call ended for a reason that says nothing about
// the backend (the client went away, the proxy's own session pool was
// exhausted): counted neither way.
func (t Ticket) Abandon() {
	if t.done != nil {
		t.done(errAbandoned)
	}
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// observe updates the failure streak, the latency EWMA and the adaptive
// timeout. replied says a reply arrived (its latency is a sample, even when
// it breached the budget); failure is nil for a success. A timed-out call is
// no sample (its latency is only a lower bound): it pushes the timeout up
// past the hysteresis instead.
func (g *Guard) observe(latency time.Duration, replied bool, failure error) {
	timedOut := !replied && isTimeout(failure)
	g.mu.Lock()
	defer g.mu.Unlock()
	if failure != nil {
		g.consecutive++
		g.lastError = failure.Error()
	} else {
		g.consecutive = 0
	}
	if replied {
		g.lastLatency = latency
		ms := float64(latency) / float64(time.Millisecond)
		if !g.sampled {
			g.ewma, g.sampled = ms, true
		} else {
			a := g.opt.Adaptive.Alpha
			g.ewma = a*ms + (1-a)*g.ewma
		}
	}
	a := g.opt.Adaptive
	if !a.Enabled || !replied && !timedOut || !g.sampled && !timedOut {
		return
	}
	target := time.Duration(g.ewma * a.Multiplier * float64(time.Millisecond))
	if timedOut {
		target = max(target, 2*g.current, g.current+hysteresis(g.current))
	}
	target = min(max(target.Round(proposalGrain), a.Min), a.Max)
	if target == g.current {
		return
	}
	now := g.opt.Now()
	delta := target - g.current
	if delta < 0 {
		delta = -delta
	}
	reason := ""
	switch {
	case delta < hysteresis(g.current):
		reason = SkipHysteresis
	case !g.lastApplied.IsZero() && now.Sub(g.lastApplied) < a.ReconnectCooldown:
		reason = SkipCooldown
	}
	if reason != "" {
		if target != g.lastSkipped {
			g.lastSkipped = target
			g.m.skipped(g.opt.Catalog, reason)
		}
		return
	}
	g.current = target
	g.lastApplied = now
	g.lastSkipped = 0
	g.m.applied(g.opt.Catalog)
}

// hysteresis is the smallest change worth applying: max(2 s, 25 % of cur).
func hysteresis(cur time.Duration) time.Duration { return max(2*time.Second, cur/4) }

// ProbeResult feeds a background probe's outcome (routing.backend-state-
// polling). A successful probe closes an open or half-open circuit at once;
// on a closed circuit it counts as a success and a failed probe as a failure,
// so a dead backend trips its circuit without a client paying for it. Probe
// latencies are not latency samples (a probe is not a real call).
func (g *Guard) ProbeResult(latency time.Duration, err error) {
	ok := err == nil && (g.opt.LatencyBudget == 0 || latency <= g.opt.LatencyBudget)
	if err == nil && !ok {
		err = errBudget{took: latency, budget: g.opt.LatencyBudget}
	}
	g.mu.Lock()
	if ok {
		g.consecutive = 0
	} else {
		g.consecutive++
		g.lastError = "probe: " + err.Error()
	}
	g.mu.Unlock()
	cb := g.cb.Load()
	if cb == nil {
		return
	}
	switch cb.State() {
	case gobreaker.StateClosed:
		if done, aerr := cb.Allow(); aerr == nil {
			if ok {
				done(nil)
			} else {
				done(err)
			}
		}
	case gobreaker.StateOpen, gobreaker.StateHalfOpen:
		if ok {
			// A fresh breaker starts CLOSED; calls admitted by the old one
			// report to the old one, which nobody reads any more.
			if g.cb.CompareAndSwap(cb, g.newBreaker()) {
				g.retryAt.Store(0)
				g.m.state(g.opt.Catalog, Closed)
			}
		}
	}
}

// State is what /readyz shows about the guard.
type State struct {
	Circuit             string        // Closed, Open, HalfOpen or Disabled
	ConsecutiveFailures int           // transport failures and budget breaches in a row
	RetryAt             time.Time     // end of the open window; zero unless Open
	LastError           string        // the last failure this guard saw
	LastLatency         time.Duration // of the last reply
	LatencyEWMA         float64       // ms
	Sampled             bool          // LatencyEWMA and LastLatency hold a reply's latency
	Baseline            time.Duration // adaptive timeout at start; 0 when adaptive timeouts are off
	Adaptive            time.Duration // adaptive timeout in force; 0 when off
	LatencyBudget       time.Duration
}

// State returns the current state (cheap).
func (g *Guard) State() State {
	s := State{Circuit: g.circuit(), LatencyBudget: g.opt.LatencyBudget}
	if s.Circuit == Open {
		if at := g.retryAt.Load(); at != 0 {
			s.RetryAt = time.Unix(0, at)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s.ConsecutiveFailures = g.consecutive
	s.LastError = g.lastError
	s.LastLatency = g.lastLatency
	s.LatencyEWMA, s.Sampled = g.ewma, g.sampled
	if g.opt.Adaptive.Enabled {
		s.Baseline, s.Adaptive = g.baseline, g.current
	}
	return s
}

// Apply writes the guard's fields into a /readyz backend entry: circuit
// state, failure streak, retry time, timeouts, budget, latency, and degraded
// (the circuit is not closed).
func (s State) Apply(b *monitoring.BackendState) {
	b.CircuitState = s.Circuit
	b.ConsecutiveFailures = s.ConsecutiveFailures
	b.CircuitRetryAtEpochMs = 0
	if !s.RetryAt.IsZero() {
		b.CircuitRetryAtEpochMs = s.RetryAt.UnixMilli()
	}
	b.BaselineTimeoutMs = s.Baseline.Milliseconds()
	b.AdaptiveTimeoutMs = s.Adaptive.Milliseconds()
	if s.LatencyBudget > 0 {
		b.LatencyBudgetMs = s.LatencyBudget.Milliseconds()
	}
	if s.Sampled {
		b.LatencyEwmaMs = math.Round(s.LatencyEWMA*100) / 100
		b.LastLatencyMs = s.LastLatency.Milliseconds()
	}
	b.Degraded = b.Degraded || s.Circuit == Open || s.Circuit == HalfOpen
}
