package router

import (
	"context"
	"errors"
)

// DatabaseWrites calls done(catalog) after a database write of a single
// catalog (or, while the caches hold tables, any write naming a database or
// table: Router.cacheWrite) reached its backend, whatever the answer (a write that timed out
// may still have happened), before the client is answered; a call refused
// before it was sent changes nothing and calls nothing. The cache coherence
// of several replicas hangs here (app: cachesync.Sync.Bump), in
// Options.Inner.
func DatabaseWrites(done func(ctx context.Context, catalog string)) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, x *Exchange) error {
			if x.Leg != nil || !x.req.r.cacheWrite(x.Spec()) {
				return next(ctx, x)
			}
			err := next(ctx, x)
			var be *backendError
			if err == nil || errors.As(err, &be) {
				done(ctx, x.Cat.Name)
			}
			return err
		}
	}
}
