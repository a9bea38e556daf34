// Package polling is background backend state polling
// (routing.backend-state-polling.*): every interval, each backend is probed
// with one cheap real call, at most MaxParallelism at a time, each bounded by
// ProbeTimeout, and the outcome is reported (to readiness and to the
// backend's circuit breaker). Rounds never overlap: a round that takes
// longer than the interval delays the next one. A probe that ignores its
// deadline is reported failed at the deadline and its backend is skipped
// (reported failed again) until it returns, so a stuck probe never piles up
// goroutines. Close stops the loop and waits for it.
package polling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Defaults of the specification.
const (
	DefaultInterval       = 10 * time.Second
	DefaultProbeTimeout   = 5 * time.Second
	DefaultMaxParallelism = 8
)

// Target is one backend: its name (the catalog) and how to probe it. Probe
// must honour ctx's deadline; it returns nil when the backend answered well.
type Target struct {
	Name  string
	Probe func(ctx context.Context) error
}

// Result is one probe's outcome.
type Result struct {
	Target  string
	Start   time.Time
	Latency time.Duration
	Err     error
}

// Options configure a Poller.
type Options struct {
	Interval       time.Duration // routing.backend-state-polling.interval-ms (10000)
	ProbeTimeout   time.Duration // routing.backend-state-polling.probe-timeout-ms (5000)
	MaxParallelism int           // routing.backend-state-polling.max-parallelism (8)
	Targets        []Target
	// Report receives every result, from the probing goroutine (keep it
	// short: update readiness, call breaker.Guard.ProbeResult).
	Report  func(Result)
	Metrics *Metrics
	Log     *slog.Logger // failures are logged at WARN once per change of state; nil: slog.Default()
}

// Validate reports every bad value, naming its key.
func (o *Options) Validate() error {
	var errs []error
	if o.Interval < 0 || o.Interval > 0 && o.Interval < time.Millisecond {
		errs = append(errs, fmt.Errorf("routing.backend-state-polling.interval-ms=%d: must be at least 1", o.Interval.Milliseconds()))
	}
	if o.ProbeTimeout < 0 || o.ProbeTimeout > 0 && o.ProbeTimeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("routing.backend-state-polling.probe-timeout-ms=%d: must be at least 1", o.ProbeTimeout.Milliseconds()))
	}
	if o.MaxParallelism < 0 {
		errs = append(errs, fmt.Errorf("routing.backend-state-polling.max-parallelism=%d: must be at least 1", o.MaxParallelism))
	}
	seen := map[string]bool{}
	for i, t := range o.Targets {
		switch {
		case t.Name == "":
			errs = append(errs, fmt.Errorf("polling target %d has no name", i))
		case t.Probe == nil:
			errs = append(errs, fmt.Errorf("polling target %s has no probe function", t.Name))
		case seen[t.Name]:
			errs = append(errs, fmt.Errorf("polling target %s listed twice", t.Name))
		}
		seen[t.Name] = true
	}
	if o.Report == nil {
		errs = append(errs, errors.New("polling: no Report function: probe results would be lost"))
	}
	return errors.Join(errs...)
}

// Poller runs the rounds.
type Poller struct {
	opt Options
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	loop   sync.WaitGroup // the round loop
	probes sync.WaitGroup // probe goroutines, including stuck ones

	roundMu sync.Mutex // one round at a time (the loop and Round)

	mu        sync.Mutex
	running   map[string]time.Time // target -> start of a probe that has not returned
	failing   map[string]bool      // for logging state changes only
	lastRound time.Time
	rounds    int
	started   bool
}

// ErrStillRunning is reported for a target whose previous probe has not
// returned yet.
var ErrStillRunning = errors.New("the previous probe of this backend has not returned yet")

// New validates opt and builds a Poller (not started).
func New(opt Options) (*Poller, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if opt.Interval == 0 {
		opt.Interval = DefaultInterval
	}
	if opt.ProbeTimeout == 0 {
		opt.ProbeTimeout = DefaultProbeTimeout
	}
	if opt.MaxParallelism == 0 {
		opt.MaxParallelism = DefaultMaxParallelism
	}
	p := &Poller{opt: opt, log: opt.Log, running: map[string]time.Time{}, failing: map[string]bool{}}
	if p.log == nil {
		p.log = slog.Default()
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Start runs the first round at once, then one every Interval (measured
// from the start of the previous round; an overrunning round delays the
// next, rounds never overlap). Start twice is a no-op.
func (p *Poller) Start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started || p.ctx.Err() != nil {
		return
	}
	p.started = true
	p.loop.Add(1)
	go p.run()
}

func (p *Poller) run() {
	defer p.loop.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		p.Round(p.ctx)
		t.Reset(max(time.Until(start.Add(p.opt.Interval)), 0))
	}
}

// Close stops the loop, cancels running probes and waits for the loop, and
// for the probes up to ProbeTimeout (a probe that ignores its context is
// left behind with a warning rather than holding up shutdown). Nothing is
// reported after Close returns.
func (p *Poller) Close() {
	p.cancel()
	p.loop.Wait()
	done := make(chan struct{})
	go func() { p.probes.Wait(); close(done) }()
	t := time.NewTimer(p.opt.ProbeTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		p.mu.Lock()
		n := len(p.running)
		p.mu.Unlock()
		p.log.Warn("backend probes still running at shutdown; left behind", "probes", n)
	}
}

// LastRound is when the last completed round started (zero: none yet).
func (p *Poller) LastRound() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastRound
}

// Rounds is how many rounds completed.
func (p *Poller) Rounds() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rounds
}

// Round probes every target once (MaxParallelism at a time) and returns
// when each has been reported. The background loop calls it; tests and an
// on-demand readiness check may call it too (calls are serialized).
func (p *Poller) Round(ctx context.Context) {
	p.roundMu.Lock()
	defer p.roundMu.Unlock()
	start := time.Now()
	sem := make(chan struct{}, p.opt.MaxParallelism)
	var wg sync.WaitGroup
	for _, t := range p.opt.Targets {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			p.probe(ctx, t)
		}()
	}
	wg.Wait()
	p.mu.Lock()
	p.lastRound, p.rounds = start, p.rounds+1
	p.mu.Unlock()
}

// probe runs one target's probe and reports it, at the latest at the probe
// timeout (plus a short grace for the probe to notice its deadline).
func (p *Poller) probe(ctx context.Context, t Target) {
	start := time.Now()
	p.mu.Lock()
	if since, busy := p.running[t.Name]; busy {
		p.mu.Unlock()
		p.report(Result{Target: t.Name, Start: start, Err: fmt.Errorf("%w (started %v ago)", ErrStillRunning, time.Since(since).Round(time.Millisecond))})
		return
	}
	p.running[t.Name] = start
	p.mu.Unlock()

	pctx, cancel := context.WithTimeout(ctx, p.opt.ProbeTimeout)
	done := make(chan error, 1)
	p.probes.Add(1)
	go func() {
		defer p.probes.Done()
		defer cancel()
		err := safeProbe(pctx, t.Probe)
		p.mu.Lock()
		delete(p.running, t.Name)
		p.mu.Unlock()
		done <- err
	}()
	grace := time.NewTimer(p.opt.ProbeTimeout + p.opt.ProbeTimeout/10 + 50*time.Millisecond)
	defer grace.Stop()
	var err error
	select {
	case err = <-done:
		if err == nil && time.Since(start) > p.opt.ProbeTimeout {
			err = fmt.Errorf("probe answered after its timeout of %v", p.opt.ProbeTimeout)
		}
	case <-grace.C:
		err = fmt.Errorf("probe did not return within its timeout of %v", p.opt.ProbeTimeout)
	case <-ctx.Done():
		return
	}
	if ctx.Err() != nil || p.ctx.Err() != nil {
		return // shutting down: nothing is reported any more
	}
	p.report(Result{Target: t.Name, Start: start, Latency: time.Since(start), Err: err})
}

func safeProbe(ctx context.Context, f func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("probe panicked: %v", r)
		}
	}()
	return f(ctx)
}

func (p *Poller) report(r Result) {
	p.opt.Metrics.observe(r)
	p.mu.Lock()
	was := p.failing[r.Target]
	p.failing[r.Target] = r.Err != nil
	p.mu.Unlock()
	switch {
	case r.Err != nil && !was:
		p.log.Warn("backend probe failed", "catalog", r.Target, "error", r.Err.Error())
	case r.Err == nil && was:
		p.log.Info("backend probe succeeded again", "catalog", r.Target, "latency", r.Latency)
	}
	p.opt.Report(r)
}
