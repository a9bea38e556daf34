package router

import (
	"context"
	"sync"
	"time"

	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/wire"
)

// ProbeBackends checks every catalog's metastore with a cheap fb303
// getStatus call over a pooled session (monitoring.ReadinessSource).
func (r *Router) ProbeBackends(ctx context.Context) {
	var wg sync.WaitGroup
	if r.shim != nil {
		wg.Add(1)
		go func() { defer wg.Done(); r.probeLockStore(ctx) }()
	}
	for _, cat := range r.ns.Catalogs() {
		b := r.backends[cat]
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			b.markProbe()
			args := wire.Struct()
			req := wire.AppendMessage(nil, wire.Header{Name: "getStatus", Type: wire.Call, SeqID: 1}, &args)
			reply, done, err := b.Call(pctx, req, true)
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

type errString string

func (e errString) Error() string { return string(e) }

// BackendStates is the live per-catalog state (monitoring.ReadinessSource).
func (r *Router) BackendStates() []monitoring.BackendState {
	var out []monitoring.BackendState
	for _, cat := range r.ns.Catalogs() {
		b := r.backends[cat]
		h := b.Health()
		st := monitoring.BackendState{Catalog: cat.Name, Connected: h.Connected,
			LastLatencyMs: h.LastLatency.Milliseconds(), LatencyEwmaMs: h.LatencyEWMA,
			LatencyBudgetMs:     b.opt.CallBudget.Milliseconds(),
			ConsecutiveFailures: h.ConsecutiveFailures, LastError: h.LastError, Endpoint: h.Endpoint,
			RuntimeProfile: r.runtimes[cat].Name}
		st.LastSuccessEpochSecond = epoch(h.LastSuccess)
		st.LastFailureEpochSecond = epoch(h.LastFailure)
		st.LastProbeEpochSecond = epoch(h.LastProbe)
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
