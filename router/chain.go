package router

import (
	"context"
	"time"

	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Policy is a chain of small handlers around one executor, in the net/http
// middleware shape: each Middleware wraps the next Handler and may refuse the
// exchange (return a *Refusal), change its arguments, add a filter for the
// answer, or serve it itself. The same chain runs for a single-catalog call
// and for every leg of a fan-out, so a rate limit, an access rule or a
// breaker applies to each catalog a request touches. links lists the chain
// in order; its comment is the one place that order is explained.

// Handler serves one exchange. On success it has written the client's answer
// (single-catalog calls) or the leg's results (fan-out legs); an error is a
// *Refusal, a backend failure, or ctx's.
type Handler func(ctx context.Context, x *Exchange) error

// Middleware wraps a Handler.
type Middleware func(next Handler) Handler

// Exchange is one backend-bound call as the policy chain sees it: the client
// request with its plan, and the catalog this exchange goes to (the plan's
// target, or one fan-out leg's).
type Exchange struct {
	req  *request
	Cat  *naming.Catalog
	lane *Lane        // Cat's
	Leg  *planner.Leg // nil for a single-catalog call

	args      []byte // the arguments as they will be sent, once materialised
	filters   []ReplyFilter
	filterArr [2]ReplyFilter

	// A fan-out leg's answer (fanout.go): its encoded list elements with
	// outward names, how many, and why it was left out ("": it was not).
	legOut, scratch      []byte
	legPool, scratchPool *[]byte
	legN                 int
	legErr               error
	omitted              string
	by                   time.Time // the fan-out's bound (zero: none)
}

// ReplyFilter changes the body of the backend's answer (a *_result struct
// with backend names) before it is rewritten to the client's names. A
// filter that changes nothing returns the body it got (the names collected
// while the reply was read stay valid); one that changes it returns a new
// slice and never writes into the one it got.
type ReplyFilter func(body []byte) ([]byte, error)

// Method is the RPC's name.
func (x *Exchange) Method() string { return x.req.msg.Name }

// Spec is the RPC's method-table row.
func (x *Exchange) Spec() *methods.Spec { return x.req.plan.Spec }

// Plan is the request's plan.
func (x *Exchange) Plan() *planner.Plan { return &x.req.plan }

// Conn is the client connection.
func (x *Exchange) Conn() *ConnInfo { return x.req.conn }

// Identity is who the request runs for (nil: anonymous).
func (x *Exchange) Identity() *security.Identity { return x.req.info.Identity }

// Remote is the client's address.
func (x *Exchange) Remote() string { return x.req.conn.Remote }

// Args returns the arguments struct as it will be sent to the catalog
// (backend names). The executor avoids the copy when no middleware asks.
func (x *Exchange) Args() []byte {
	if x.args == nil {
		x.args = wire.Apply(nil, x.req.msg.Body(), x.req.plan.Patches)
	}
	return x.args
}

// Catalogs are the catalogs the client request asks: the target of a
// single-catalog call, or every leg of a fan-out that is not left out (a
// rate limit takes one token of each).
func (x *Exchange) Catalogs() []string {
	if x.Leg == nil {
		return []string{x.Cat.Name}
	}
	return x.req.asked
}

// Once runs f once per client request (the legs of a fan-out share it) and
// returns its result to every exchange of the request: a decision about the
// whole request, such as a rate limit, is taken once.
func (x *Exchange) Once(f func() error) error {
	x.req.once.Do(func() { x.req.onceErr = f() })
	return x.req.onceErr
}

// SetArgs replaces the arguments struct sent to the catalog.
func (x *Exchange) SetArgs(body []byte) { x.args = body }

// OnReply adds a filter of the backend's answer.
func (x *Exchange) OnReply(f ReplyFilter) {
	if x.filters == nil {
		x.filters = x.filterArr[:0]
	}
	x.filters = append(x.filters, f)
}

// links are the policy chain, outermost first. The order, and why:
//
//  1. Options.Outer: the rate limit. It decides once per client request, with
//     every catalog the plan asks known, before any other work is spent.
//  2. abortRefusedLock: a lock of a transaction that anything inside refuses
//     ends its transaction (lockabort.go), so it wraps every policy.
//  3. accessMode: a write the catalog's access mode forbids is refused
//     before anything about it is looked at.
//  4. exposure: a request naming an object the catalog's expose rules hide
//     is answered "not found"; answers lose what the rules hide. Before
//     any policy that reads or rewrites the objects, so none of them learns
//     of a hidden one.
//  5. Options.Authorize: the Ranger slot (a lane's authorizer): after
//     exposure, which decides what exists at all, before the table policies
//     change the request.
//  6. the table policies (tables.go): view SQL rewrite, the transactional
//     DDL and Iceberg pointer guards, the drop purge. They may rewrite the
//     Table a create or alter carries.
//  7. acidTables: a transactional table left after the DDL guard (which may
//     have made it external) is refused outside the default catalog.
//  8. lockShim (with a lock shim): locks, their lifecycle calls and the end
//     of transactions on non-default catalogs are answered by the shim,
//     after every policy above judged the request.
//  9. Options.Inner: cache coherence across replicas (DatabaseWrites): only
//     calls that pass every policy reach it.
//  10. invalidateDatabases, innermost: only calls that reach the executor can
//     have changed a database.
//
// Then the executor (exec.go), whose backend pool asks the lane's breaker
// first (an open circuit fails the call before a session is borrowed) and
// runs the call within its adaptive timeout.
func (r *Router) links(opt Options, tables *tablePolicy) []Middleware {
	mws := append([]Middleware{}, opt.Outer...)
	mws = append(mws, r.abortRefusedLock, r.accessMode, r.exposure)
	mws = append(mws, opt.Authorize...)
	mws = append(mws, tables.middleware, r.acidTables)
	if r.shim != nil {
		mws = append(mws, r.lockShim)
	}
	mws = append(mws, opt.Inner...)
	return append(mws, r.invalidateDatabases)
}

// compose builds the chain around the executor.
func compose(exec Handler, mws ...Middleware) Handler {
	h := exec
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			h = mws[i](h)
		}
	}
	return h
}

// accessMode refuses writes a catalog's access mode does not allow (a
// SELECT's SHARED_READ lock is a read and passes, and so does the lifecycle
// of its transaction: planner.TxnLifecycle).
func (r *Router) accessMode(next Handler) Handler {
	return func(ctx context.Context, x *Exchange) error {
		p := x.Plan()
		if x.Leg == nil && p.Writes && !p.TxnLifecycle {
			if why := x.lane.policy.callRefusal(x.Cat.Name, x.Method(), p.DBs, x.req.msg.Body()); why != "" {
				if p.Spec.PollsForWork() {
					// A poll for work (HiveServer2's scheduled-query executor,
					// a compactor worker) records the work it hands out: on a
					// catalog that refuses writes nothing is due for the
					// caller, which is what it hears, every poll, quietly
					// (counted as an empty answer, like a runtime without it).
					r.fallbackEmpty(x.req, "access_mode")
					return nil
				}
				return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "access_mode", Message: why}
			}
		}
		return next(ctx, x)
	}
}
