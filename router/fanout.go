package router

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/hms-proxy/hms-proxy/router/breaker"
	"github.com/hms-proxy/hms-proxy/router/dbcache"
	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Fan-out reads (get_all_databases, get_databases, get_table_meta over
// several catalogs). Every leg runs through the policy chain in parallel,
// each bounded by its own catalog's budget (the pool's deadline), the whole
// by routing.hedged-read.fanout-timeout-ms. A leg works on bytes: it reads
// the backend's list in place, hides what exposure hides, rewrites each name
// outward and appends the encoded elements to its buffer; the merge writes
// one list header and the legs' buffers after it. Nothing is decoded into
// values unless exposure has to look inside a TableMeta.
//
// A failing leg fails the call fast, naming its catalog (STRICT), or, under
// routing.degraded-routing-policy=SAFE_FANOUT_READS, is left out: a catalog
// whose circuit is open or whose last background probe failed is not asked,
// a leg whose backend fails (transport, time, breaker, pool) is dropped; each
// omission is counted (hms_proxy_fanout_omitted_total), logged, listed in the
// audit record (omittedCatalogs) and in /readyz. A refusal or an exception the
// backend answered still fails the call, and so does a fan-out whose every
// catalog was left out.

// allDatabases is the list cache's name of get_all_databases.
var allDatabases = dbcache.ListName("get_all_databases", "")

// schedule decides how a fan-out's legs run (hedged reads aside, which run
// Parallel): one after the other when the list cache holds every leg fresh
// (copies of cached bytes: nothing to overlap), Parallel when a leg would
// load a database list into the cache (a load blocks until its backend
// answers, so it cannot be sent and read later), Chained otherwise: every
// leg's call is sent before the first answer is read, on this goroutine.
func (r *Router) schedule(xs []Exchange) planner.Schedule {
	if !r.res.cache.Enabled(dbcache.DatabaseList) {
		return planner.Chained
	}
	all := true
	for i := range xs {
		if x := &xs[i]; x.omitted == "" && !r.legCached(x) {
			if x.Leg.Op != planner.LegTableMeta {
				return planner.Parallel
			}
			all = false
		}
	}
	if all {
		return planner.Serial
	}
	return planner.Chained
}

// legCached reports whether a leg is a database list the list cache holds
// fresh (a get_table_meta leg never is).
func (r *Router) legCached(x *Exchange) bool {
	c := r.res.cache
	if x.Leg.Op != planner.LegDatabases || !c.Enabled(dbcache.DatabaseList) {
		return false
	}
	name := allDatabases
	if p := x.Leg.BackendPattern; p != "" {
		name = dbcache.ListName("get_databases", p)
	}
	return c.Fresh(dbcache.DatabaseList, dbcache.Key{Catalog: x.Cat.Name, Name: name, User: r.listUser(x)})
}

// listUser is the list cache's caller key of x ("" when the cache is shared).
func (r *Router) listUser(x *Exchange) string {
	if r.res.cache.Shared(dbcache.DatabaseList) {
		return ""
	}
	return userKey(x.Identity())
}

// fanOutFailed answers a fan-out whose leg failed.
func (r *Router) fanOutFailed(req *request, err error) {
	m := req.msg
	var ref *planner.Refusal
	if errors.As(err, &ref) {
		r.refuse(req, ref)
		return
	}
	msg := m.Name + ": " + err.Error()
	var be *backendError
	if errors.As(err, &be) {
		exc := backendExceptionLabel(be.err)
		if r.metrics != nil {
			r.metrics.BackendFailure(be.cat.Name, exc)
		}
		r.logs.backendFailure(m.Name, be.cat.Name, exc, be.err)
		msg = fmt.Sprintf("%s: catalog %s failed: %s", m.Name, be.cat.Name, failureText(be.err, be.cat.Name))
		if len(req.plan.Legs) > 1 {
			msg += " (the call asks every catalog; routing.degraded-routing-policy=SAFE_FANOUT_READS would leave a failing catalog out)"
		}
	}
	r.refuse(req, &planner.Refusal{Kind: planner.RefuseMeta, Reason: "fanout_failed", Message: msg})
}

// backendExceptionLabel is the exception label of a failed backend call.
func backendExceptionLabel(err error) string {
	switch {
	case errors.Is(err, breaker.ErrOpen):
		return "CircuitOpen"
	case errors.Is(err, ErrPoolExhausted):
		return "PoolExhausted"
	case errors.Is(err, ErrBadReply):
		return "BadReply"
	case errors.Is(err, ErrBudgetExceeded):
		return "BudgetExceeded"
	}
	return "TTransportException"
}

// execLeg runs one fan-out leg against its catalog: its encoded list
// elements end up in x.legOut (outward names), their number in x.legN.
func (r *Router) execLeg(ctx context.Context, x *Exchange) error {
	leg := x.Leg
	x.legOut = x.legBuf(r)
	switch leg.Op {
	case planner.LegDatabases:
		return r.legDatabases(ctx, x, leg.Method, leg.Args, leg.BackendPattern, leg.Match, nil)
	case planner.LegTableMeta:
		return r.legTableMeta(ctx, x, leg.Args)
	case planner.LegTableMetaOfMatching:
		var names []string
		if err := r.legDatabases(ctx, x, "get_all_databases", planner.EmptyArgs, "", leg.Match, &names); err != nil {
			return err
		}
		x.legOut, x.legN = x.legOut[:0], 0
		if len(names) == 0 {
			return nil
		}
		a, err := wire.DecodeStruct(leg.Args)
		if err != nil {
			return fmt.Errorf("fan-out leg of %s: %v", x.Method(), err)
		}
		a.Set(1, wire.Str(strings.Join(names, "|")))
		return r.legTableMeta(ctx, x, a.Encode())
	}
	return fmt.Errorf("fan-out leg of %s: unknown operation %d", x.Method(), leg.Op)
}

// legBuf takes a pooled buffer for the leg's elements.
func (x *Exchange) legBuf(r *Router) []byte {
	if x.legPool == nil {
		x.legPool = r.bufs.Get().(*[]byte)
	}
	return (*x.legPool)[:0]
}

// releaseLeg gives the leg's buffers back (after the merge copied them).
func (x *Exchange) releaseLeg(r *Router) {
	if x.legPool != nil {
		if cap(x.legOut) <= 1<<20 {
			*x.legPool = x.legOut[:0]
			r.bufs.Put(x.legPool)
		}
		x.legPool = nil
	}
	if x.scratchPool != nil {
		if cap(x.scratch) <= 1<<20 {
			*x.scratchPool = x.scratch[:0]
			r.bufs.Put(x.scratchPool)
		}
		x.scratchPool = nil
	}
}

// legDatabases lists one catalog's databases in external form, filtered by
// exposure (counted) and by an optional pattern on the external names, and
// appends them to x.legOut; with names set it collects the backend names
// instead.
func (r *Router) legDatabases(ctx context.Context, x *Exchange, method string, args []byte, backendPattern string, match *regexp.Regexp, names *[]string) error {
	cat := x.Cat
	name := allDatabases
	if backendPattern != "" && r.res.cache.Enabled(dbcache.DatabaseList) {
		name = dbcache.ListName(method, backendPattern)
	}
	body, release, _, err := r.legFetch(ctx, x, method, args, name, nil)
	if err != nil {
		return err
	}
	defer release()
	b := wire.Buf{B: body}
	n, err := r.resultList(&b, cat, method, body, wire.TString)
	if err != nil {
		return err
	}
	exp := r.lane(cat).policy.exposure
	filtering := exp.active()
	hidden := 0
	var ext []byte // scratch: the external name, for Match
	for i := 0; i < n; i++ {
		db, err := b.Bytes()
		if err != nil {
			return fmt.Errorf("catalog %s: unreadable %s reply: %v", cat.Name, method, err)
		}
		if filtering && !exp.DBVisible(wire.View(db)) {
			hidden++
			continue
		}
		if match != nil {
			if cat.Default {
				ext = append(ext[:0], db...)
			} else {
				ext = append(append(append(ext[:0], cat.Name...), r.ns.Separator()...), db...)
			}
			if !match.Match(ext) {
				continue
			}
		}
		if names != nil {
			*names = append(*names, string(db))
			continue
		}
		if cat.Default {
			x.legOut = wire.AppendBytes(x.legOut, db)
		} else {
			x.legOut = naming.AppendPrefixed(x.legOut, cat.Name, r.ns.Separator(), "", db)
		}
		x.legN++
	}
	if hidden > 0 && r.metrics != nil {
		r.metrics.FilteredObjects(x.Method(), cat.Name, "database", hidden)
	}
	return nil
}

// resultList reads the head of a list-returning *_result body: an
// exception field is the backend's error (named, counted), field 0 the list
// of elem elements, whose count it returns with b at the first element.
func (r *Router) resultList(b *wire.Buf, cat *naming.Catalog, method string, body []byte, elem byte) (int, error) {
	t, id, err := b.FieldHeader()
	switch {
	case err != nil:
		return 0, fmt.Errorf("catalog %s: unreadable %s reply: %v", cat.Name, method, err)
	case t == wire.TStop:
		return 0, nil // no success value: an empty answer
	case id != 0:
		name, msg := "MetaException", ""
		if v, err := wire.DecodeStruct(body); err == nil {
			msg = v.Field(id).Field(1).String()
		}
		if spec := r.table.Lookup(method); spec != nil {
			name = spec.ExceptionName(id)
		}
		if r.metrics != nil {
			r.metrics.BackendFailure(cat.Name, name)
		}
		return 0, fmt.Errorf("catalog %s: %s failed: %s: %s", cat.Name, method, name, msg)
	case t != wire.TList:
		return 0, fmt.Errorf("catalog %s: %s answered a field of type %d, not a list", cat.Name, method, t)
	}
	et, n, err := b.ListHeader()
	if err != nil {
		return 0, fmt.Errorf("catalog %s: unreadable %s reply: %v", cat.Name, method, err)
	}
	if et != elem && n > 0 {
		return 0, fmt.Errorf("catalog %s: %s answered a list of type %d", cat.Name, method, et)
	}
	return n, nil
}

// legTableMeta asks one catalog for table metadata, rewrites it outward and
// appends its elements, hiding what exposure hides. The reply's names are
// found while the pool reads it (one walk); without exposure rules the
// elements are copied into the leg's buffer with the rewrites spliced in,
// never decoded.
func (r *Router) legTableMeta(ctx context.Context, x *Exchange, args []byte) error {
	cat := x.Cat
	spec := r.table.Lookup("get_table_meta")
	o := &outward{ns: r.ns, cat: cat}
	body, release, walked, err := r.legFetch(ctx, x, "get_table_meta", args, "", &ReplyWalk{Plan: spec.Result, V: o})
	if err != nil {
		return err
	}
	defer release()
	patches := o.patches
	if !walked {
		if patches, err = r.outwardPatches(spec.Result, cat, body, nil); err != nil {
			return fmt.Errorf("catalog %s: unreadable get_table_meta reply: %v", cat.Name, err)
		}
	}
	b := wire.Buf{B: body}
	n, err := r.resultList(&b, cat, "get_table_meta", body, wire.TStruct)
	if err != nil {
		return err
	}
	exp := r.lane(cat).policy.exposure
	if !exp.active() {
		from := b.Pos
		for i := 0; i < n; i++ {
			if err := b.Skip(wire.TStruct, 1); err != nil {
				return fmt.Errorf("catalog %s: unreadable get_table_meta reply: %v", cat.Name, err)
			}
		}
		x.legOut = applyRange(x.legOut, body, from, b.Pos, patches)
		x.legN += n
		return nil
	}
	if len(patches) > 0 {
		body = wire.Apply(nil, body, patches)
		b = wire.Buf{B: body, Pos: b.Pos} // the list's header is before any rewrite
	}
	hidden := 0
	for i := 0; i < n; i++ {
		start := b.Pos
		if err := b.Skip(wire.TStruct, 1); err != nil {
			return fmt.Errorf("catalog %s: unreadable get_table_meta reply: %v", cat.Name, err)
		}
		el := body[start:b.Pos]
		tm, err := wire.DecodeStruct(el)
		if err != nil {
			return fmt.Errorf("catalog %s: unreadable get_table_meta reply: %v", cat.Name, err)
		}
		_, db, _ := r.ns.SplitDB(tm.Field(1).String())
		if !exp.TableVisible(db, tm.Field(2).String()) {
			hidden++
			continue
		}
		x.legOut = append(x.legOut, el...)
		x.legN++
	}
	if hidden > 0 && r.metrics != nil {
		r.metrics.FilteredObjects(x.Method(), cat.Name, "table", hidden)
	}
	return nil
}

// applyRange appends src[from:to] to dst with the patches inside that range
// spliced in (patches in position order, as a walk reports them).
func applyRange(dst, src []byte, from, to int, patches []wire.Patch) []byte {
	pos := from
	for _, p := range patches {
		if p.Start < from || p.End > to {
			continue
		}
		dst = append(dst, src[pos:p.Start]...)
		dst = append(dst, p.Data...)
		pos = p.End
	}
	return append(dst, src[pos:to]...)
}

func noRelease() {}

// legFetch returns the result body of method(args) on the leg's catalog,
// valid until release: from the database list cache when it is on and
// cacheName names the request, else from the backend. A transport failure
// is a *backendError; a TApplicationException an error naming the catalog.
// Given rw, a reply from the backend is walked while it is read (walked).
func (r *Router) legFetch(ctx context.Context, x *Exchange, method string, args []byte, cacheName string, rw *ReplyWalk) (body []byte, release func(), walked bool, err error) {
	cat := x.Cat
	if cacheName != "" && r.res.cache.Enabled(dbcache.DatabaseList) {
		id := x.Identity()
		load := r.listLoader(cat, id, method, args, cacheName == allDatabases)
		if x.scratchPool == nil {
			x.scratchPool = r.bufs.Get().(*[]byte)
			x.scratch = (*x.scratchPool)[:0]
		}
		val, _, err := r.res.cache.Get(ctx, dbcache.DatabaseList,
			dbcache.Key{Catalog: cat.Name, Name: cacheName, User: r.listUser(x)}, x.scratch[:0], load)
		x.scratch = val
		if err != nil {
			return nil, nil, false, err
		}
		body, err := cachedBody(val, cat, method)
		return body, noRelease, false, err
	}
	bufp := r.bufs.Get().(*[]byte)
	req := wire.AppendHeader((*bufp)[:0], wire.Header{Name: method, Type: wire.Call, SeqID: 1})
	req = append(req, args...)
	*bufp = req
	var reply *wire.Message
	var done func()
	if f := &x.req.plan.FanOut; f.Chained() {
		reply, done, walked, err = r.fetchChained(ctx, x, f, req, rw)
	} else {
		reply, done, walked, err = r.fetch(ctx, x.req.info.ID, cat, req, x.req.fanSem, x.by, rw)
	}
	r.bufs.Put(bufp)
	if err != nil {
		if !x.by.IsZero() && !time.Now().Before(x.by) && !errors.Is(err, ErrBudgetExceeded) {
			err = fmt.Errorf("catalog %s: no answer within the fan-out's bound of %v (routing.hedged-read.fanout-timeout-ms): %w",
				cat.Name, r.res.opt.FanoutTimeout, err)
		}
		return nil, nil, false, &backendError{cat: cat, err: err}
	}
	if reply.Type == wire.Exception {
		done()
		return nil, nil, false, appFailure(r, cat, method, reply.Body())
	}
	return reply.Body(), done, walked, nil
}

// appFailure is the error of a TApplicationException answer, counted.
func appFailure(r *Router, cat *naming.Catalog, method string, body []byte) error {
	_, msg, _ := wire.ParseAppException(body)
	if r.metrics != nil {
		r.metrics.BackendFailure(cat.Name, "TApplicationException")
	}
	return fmt.Errorf("catalog %s: %s failed: %s", cat.Name, method, msg)
}

// A cached reply is the message type followed by the backend's body.
func cachedBody(val []byte, cat *naming.Catalog, method string) ([]byte, error) {
	if len(val) == 0 {
		return nil, fmt.Errorf("catalog %s: %s: empty cached reply", cat.Name, method)
	}
	if val[0] == wire.Exception {
		_, msg, _ := wire.ParseAppException(val[1:])
		return nil, fmt.Errorf("catalog %s: %s failed: %s", cat.Name, method, msg)
	}
	return val[1:], nil
}

// userKey is the cache's per-caller key of an identity.
func userKey(id *security.Identity) string {
	if id == nil {
		return ""
	}
	return dbcache.UserKey(id.User, id.Groups)
}

// listLoader loads a database list reply for the cache. It keeps copies of
// what it needs (it may run again in a background refresh after the request
// ended) and loads as the caller (its identity picks the impersonation pool)
// unless the cache is shared across users: a shared entry is loaded by the
// proxy itself, whoever asked first. The shared get_all_databases loader of
// a catalog is built once.
func (r *Router) listLoader(cat *naming.Catalog, id *security.Identity, method string, args []byte, all bool) dbcache.Loader {
	if r.res.cache.Shared(dbcache.DatabaseList) {
		id = nil
		if all {
			if l := r.lane(cat).allLoader; l != nil {
				return l
			}
		}
	}
	return r.newListLoader(cat, id, method, append([]byte(nil), args...))
}

func (r *Router) newListLoader(cat *naming.Catalog, id *security.Identity, method string, args []byte) dbcache.Loader {
	return func(ctx context.Context) ([]byte, bool, error) {
		ctx = context.WithValue(ctx, ctxKey{}, &RequestInfo{Method: method, Identity: id})
		req := wire.AppendHeader(make([]byte, 0, 64+len(args)), wire.Header{Name: method, Type: wire.Call, SeqID: 1})
		req = append(req, args...)
		// The cache runs a load detached from its first caller: bound it as
		// a fan-out is bounded.
		var by time.Time
		if t := r.res.opt.FanoutTimeout; t > 0 {
			by = time.Now().Add(t)
		}
		reply, done, _, err := r.fetch(ctx, 0, cat, req, nil, by, nil)
		if err != nil {
			return nil, false, &backendError{cat: cat, err: err}
		}
		defer done()
		body := reply.Body()
		val := make([]byte, 1+len(body))
		val[0] = reply.Type
		copy(val[1:], body)
		return val, reply.Type == wire.Reply && methods.ExceptionField(body) == 0, nil
	}
}

// fetch sends one call (a whole message, which it may modify) to cat on the
// pool of ctx's caller; with hedged reads on, a second attempt goes to
// another session once the first has taken longer than the hedge delay.
func (r *Router) fetch(ctx context.Context, id uint64, cat *naming.Catalog, req []byte, sem chan struct{}, by time.Time, rw *ReplyWalk) (*wire.Message, func(), bool, error) {
	b, err := r.lane(cat).backendFor(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	if r.trace != nil {
		r.trace.Backend(id, cat.Name, req)
	}
	var reply *wire.Message
	var done func()
	walked := false
	if r.res.opt.Hedge.Enabled {
		reply, done, err = r.hedged(ctx, b, cat, req, sem, by)
	} else {
		reply, done, walked, err = b.call(ctx, req, true, rw, b.opt.Guard, by)
	}
	if r.trace != nil {
		r.trace.BackendReply(id, cat.Name, reply, err)
	}
	return reply, done, walked, err
}

// fetchChained is fetch for a leg of a Chained fan-out: it sends the call,
// runs the fan-out's later legs (f.Continue: they send theirs, and read
// them), then reads this leg's answer, or drops it unread when a later leg
// failed the call. The time the later legs took is not this catalog's
// latency (its breaker and adaptive timeout do not count it).
func (r *Router) fetchChained(ctx context.Context, x *Exchange, f *planner.FanOut, req []byte, rw *ReplyWalk) (*wire.Message, func(), bool, error) {
	b, err := x.lane.backendFor(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	id, cat := x.req.info.ID, x.Cat
	if r.trace != nil {
		r.trace.Backend(id, cat.Name, req)
	}
	var p pending
	if err = b.sendBefore(ctx, &p, req, x.by); err == nil {
		t := time.Now()
		f.Continue()
		paused := time.Since(t)
		if f.Failed() != nil {
			b.drop(&p)
			return nil, nil, false, context.Canceled
		}
		reply, done, walked, err := b.receive(ctx, &p, paused, rw)
		if r.trace != nil {
			r.trace.BackendReply(id, cat.Name, reply, err)
		}
		return reply, done, walked, err
	}
	if r.trace != nil {
		r.trace.BackendReply(id, cat.Name, nil, err)
	}
	return nil, nil, false, err
}

// attempt is one of the two calls of a hedged read.
type attempt struct {
	reply  *wire.Message
	done   func()
	err    error
	second bool
}

// hedgeDelay is how long the first attempt may take before a second one is
// sent: max(MinDelay, latency EWMA × DelayMultiplier); 0 before the catalog
// has answered once (nothing to compare with).
func (r *Router) hedgeDelay(cat *naming.Catalog) time.Duration {
	ewma, ok := r.lane(cat).breaker.LatencyEWMA()
	if !ok {
		return 0
	}
	h := r.res.opt.Hedge
	mult, floor := h.DelayMultiplier, h.MinDelay
	if mult <= 0 {
		mult = DefaultHedgeDelayMultiplier
	}
	if floor <= 0 {
		floor = DefaultHedgeMinDelay
	}
	return max(floor, time.Duration(float64(ewma)*mult))
}

// hedged sends req to b and, when the answer is late and another session is
// free, a copy on a second session as soon as the fan-out has room under
// max-parallelism (a leg that ends makes room): the first answer wins, the other attempt is cancelled (its
// session closed; the breaker counts a cancelled call neither way). When the
// first to return failed, the other one is waited for.
func (r *Router) hedged(ctx context.Context, b *Backend, cat *naming.Catalog, req []byte, sem chan struct{}, by time.Time) (*wire.Message, func(), error) {
	delay := r.hedgeDelay(cat)
	if delay <= 0 {
		return b.CallBefore(ctx, req, true, by)
	}
	ch := make(chan attempt, 2)
	ctx1, cancel1 := context.WithCancel(ctx)
	req1 := append([]byte(nil), req...) // a losing attempt may outlive the caller's buffer
	go func() {
		rep, done, err := b.CallBefore(ctx1, req1, true, by)
		ch <- attempt{reply: rep, done: done, err: err}
	}()
	t := time.NewTimer(delay)
	var a attempt
	select {
	case a = <-ch:
		t.Stop()
		cancel1()
		return a.reply, a.done, a.err
	case <-t.C:
	}
	if b.Free() == 0 { // no session for a second attempt
		a = <-ch
		cancel1()
		return a.reply, a.done, a.err
	}
	if sem != nil { // room under max-parallelism: now, or when another leg ends
		select {
		case sem <- struct{}{}:
		case a = <-ch:
			cancel1()
			return a.reply, a.done, a.err
		}
	}
	req2 := append([]byte(nil), req...)
	ctx2, cancel2 := context.WithCancel(ctx)
	go func() {
		rep, done, err := b.CallBefore(ctx2, req2, true, by)
		if sem != nil {
			<-sem
		}
		ch <- attempt{reply: rep, done: done, err: err, second: true}
	}()
	a = <-ch
	if a.err != nil {
		o := <-ch // both returned
		if o.err == nil {
			a = o
		} else if a.second {
			a = o // report the first attempt's error
		}
	} else {
		go func() { // the loser: cancelled below, its session freed when it returns
			if o := <-ch; o.err == nil {
				o.done()
			}
		}()
	}
	cancel1()
	cancel2()
	if a.err == nil {
		if a.second {
			r.res.m.hedge(cat.Name, HedgeWon)
		} else {
			r.res.m.hedge(cat.Name, HedgeLost)
		}
	}
	return a.reply, a.done, a.err
}
