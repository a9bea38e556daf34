package router

import (
	"context"

	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/security/ratelimit"
)

// RateLimit is the overload protection middleware (rate-limit.*), meant to
// be first in the chain (Options.Outer). It decides once per client request,
// when the plan knows every catalog the request asks (a fan-out takes one
// token of each catalog it asks, degraded catalogs it leaves out excepted),
// and refuses with the RPC's MetaException (or its declared fallback),
// status "throttled", counted in hms_proxy_rate_limited_total. Calls the
// proxy answers itself (set_ugi, get_catalogs, getVersion, delegation
// tokens, synthetic refresh_privileges) take no token. A nil or disabled
// limiter is no middleware.
func RateLimit(l *ratelimit.Limiter, m *monitoring.Metrics) Middleware {
	if !l.Enabled() {
		return nil
	}
	// The classes of each RPC-class bit set, built once.
	var classes [16][]string
	for c := range classes {
		classes[c] = methods.Class(c).Names()
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, x *Exchange) error {
			err := x.Once(func() error {
				spec := x.Spec()
				rq := ratelimit.Request{Method: x.Method(), Family: string(spec.Family),
					Classes: classes[spec.Classes&15], Catalogs: x.Catalogs()}
				if id := x.Identity(); id.Authenticated() {
					rq.Principal = id.User
					if id.Principal != "" {
						rq.Principal = id.Principal
					}
				}
				if a, ok := ratelimit.SourceAddr(x.Remote()); ok {
					rq.Source = a
				}
				d := l.Allow(rq)
				if d.Allowed {
					return nil
				}
				catalog := x.Cat.Name
				switch {
				case d.Dimension == ratelimit.DimCatalog:
					catalog = d.Subject
				case x.Leg != nil && len(x.Plan().Legs) > 1:
					catalog = monitoring.FanoutCatalog
				}
				if m != nil {
					m.RateLimited(d.Dimension, d.Scope, x.Method(), string(spec.Family), catalog)
				}
				return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "rate_limit", Message: d.Message(), Status: monitoring.StatusThrottled}
			})
			if err != nil {
				return err
			}
			return next(ctx, x)
		}
	}
}
