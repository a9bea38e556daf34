package router

import (
	"context"
	"sync"
	"time"

	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/router/breaker"
	"github.com/hms-proxy/hms-proxy/wire"
)

// ProbeBackends checks every catalog's metastore with a cheap fb303
// getStatus call over a pooled session (monitoring.ReadinessSource), past
// the circuit breaker: /readyz reports what the backend answers, the
// breaker its own state. With background polling on it does nothing: the
// poller's probes are the readiness data (BackgroundProbes).
func (r *Router) ProbeBackends(ctx context.Context) {
	if r.res.poller != nil {
		return
	}
	var wg sync.WaitGroup
	if r.shim != nil {
		wg.Add(1)
		go func() { defer wg.Done(); r.probeLockStore(ctx) }()
	}
	for _, l := range r.lanes {
		b := l.pool
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			b.markProbe()
			args := wire.Struct()
			req := wire.AppendMessage(nil, wire.Header{Name: "getStatus", Type: wire.Call, SeqID: 1}, &args)
			reply, done, err := b.Probe(pctx, req)
			if err == nil {
				done()
				if reply.Type == wire.Exception {
					_, msg, _ := wire.ParseAppException(reply.Body())
					b.failure(errString("getStatus probe answered: " + msg))
				}
			}
		}()
	}
	wg.Wait()
}

// BackgroundProbes reports whether backends are probed in the background
// and when the last completed round started (monitoring.BackgroundProbeSource).
func (r *Router) BackgroundProbes() (last time.Time, on bool) {
	return r.LastBackgroundProbe(), r.res.poller != nil
}

type errString string

func (e errString) Error() string { return string(e) }

// BackendStates is the live per-catalog state (monitoring.ReadinessSource):
// the pool's connectivity, the guard's breaker, timeouts and latency, the
// last background probe and the fan-out omissions.
func (r *Router) BackendStates() []monitoring.BackendState {
	var out []monitoring.BackendState
	for _, l := range r.lanes {
		cat, b := l.cat, l.pool
		h := b.Health()
		st := monitoring.BackendState{Catalog: cat.Name, Connected: h.Connected,
			LatencyBudgetMs: b.opt.CallBudget.Milliseconds(),
			LastError:       h.LastError, Endpoint: h.Endpoint,
			RuntimeProfile: l.runtime.Name}
		st.LastSuccessEpochSecond = epoch(h.LastSuccess)
		st.LastFailureEpochSecond = epoch(h.LastFailure)
		st.LastProbeEpochSecond = epoch(h.LastProbe)
		l.breaker.State().Apply(&st)
		if st.CircuitState == breaker.Disabled {
			// No breaker acts on the guard's streak: show the pool's (its
			// calls and the readiness probes).
			st.ConsecutiveFailures = h.ConsecutiveFailures
		}
		cs := &l.state
		if cs.probed.Load() && cs.probeFail.Load() {
			st.Degraded = true
		}
		if r.res.opt.SafeFanoutReads {
			st.SafeFanout = true
			st.FanoutOmissions = cs.omitted.Load()
			st.LastFanoutOmissionEpochSecond = cs.lastOmit.Load()
			st.OmittedNow = l.degradedNow() != ""
		}
		out = append(out, st)
	}
	return out
}

func epoch(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}
