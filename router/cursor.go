package router

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/wire"
)

// cursor is a request as the plan primitives see it (planner.Cursor): it
// sends exchanges through the policy chain to their lanes, answers the
// client and records what happened. It is the request itself, so running a
// plan allocates nothing for it.
type cursor request

// serve plans the request and runs the plan.
func (r *Router) serve(ctx context.Context, req *request) {
	r.plan(req)
	if r.trace != nil {
		r.trace.Plan(req.info.ID, &req.plan)
	}
	req.r = r
	req.plan.Execute(ctx, (*cursor)(req))
}

// plan decides what to do with req (no I/O): it fills req.plan.
func (r *Router) plan(req *request) {
	r.planner.Plan(&req.plan, req.msg, req.conn.Frontend)
}

// Run sends the target's exchange (leg < 0) or fan-out leg i through the
// policy chain.
func (c *cursor) Run(ctx context.Context, leg int) error {
	req, r := (*request)(c), c.r
	if leg >= 0 {
		return r.runLeg(ctx, &req.legs[leg])
	}
	p := &req.plan
	req.catalog, req.routed, req.defaultRouted = p.Target.Name, true, p.DefaultRouted
	req.x = Exchange{req: req, Cat: p.Target, lane: r.lane(p.Target)}
	return r.chain(ctx, &req.x)
}

// Fail answers an error of the chain.
func (c *cursor) Fail(err error) { c.r.answer((*request)(c), err) }

// Refuse answers a refusal the planner decided (an ambiguous request is
// counted as such).
func (c *cursor) Refuse(ref *planner.Refusal) {
	if ref.Reason == "ambiguous" && c.r.metrics != nil {
		c.r.metrics.RoutingAmbiguous()
	}
	c.r.refuse((*request)(c), ref)
}

// Answer writes an answer the proxy gives itself.
func (c *cursor) Answer(ctx context.Context, a planner.Local) {
	req, r := (*request)(c), c.r
	if a == planner.AnswerHandler {
		r.serveLocalCall(ctx, req, r.locals[req.msg.Name])
		return
	}
	r.local(req)
}

// Begin prepares the legs' exchanges, each bounded by
// routing.hedged-read.fanout-timeout-ms, and leaves out the degraded lanes
// under SAFE_FANOUT_READS (a degraded catalog whose list the cache holds
// fresh is served from the cache, not left out).
func (c *cursor) Begin(f *planner.FanOut) (int, planner.Schedule) {
	req, r := (*request)(c), c.r
	req.routed = true
	if len(f.Legs) == 1 {
		req.catalog = f.Legs[0].Cat.Name
	} else {
		req.fanout = true
	}
	var by time.Time // the fan-out's bound, passed down as a value
	if t := r.res.opt.FanoutTimeout; t > 0 {
		by = time.Now().Add(t)
	}
	if len(f.Legs) == 1 {
		req.legs = unsafe.Slice(&req.x, 1) // the single-catalog exchange is free
	} else {
		req.legs = make([]Exchange, len(f.Legs))
	}
	req.asked = req.askedArr[:0]
	for i := range f.Legs {
		x := &req.legs[i]
		*x = Exchange{req: req, Cat: f.Legs[i].Cat, lane: r.lane(f.Legs[i].Cat), Leg: &f.Legs[i], by: by}
		if r.res.opt.SafeFanoutReads {
			if why := x.lane.degradedNow(); why != "" && !r.legCached(x) {
				x.omitted = why
				continue
			}
		}
		req.asked = append(req.asked, x.Cat.Name)
	}
	if h := r.res.opt.Hedge; h.Enabled {
		n := h.MaxParallelism
		if n <= 0 {
			n = len(req.legs)
		}
		req.fanSem = make(chan struct{}, n)
		return len(req.asked), planner.Parallel
	}
	return len(req.asked), r.schedule(req.legs)
}

// Asked reports whether leg i is asked.
func (c *cursor) Asked(i int) bool { return c.legs[i].omitted == "" }

// Tolerates: under SAFE_FANOUT_READS a failure of a lane's backend leaves
// its leg out.
func (c *cursor) Tolerates(err error) bool {
	return c.r.res.opt.SafeFanoutReads && omissionReason(err) != ""
}

// Merge answers the fan-out: its failure, or the legs' elements after one
// list header, the omitted legs counted, logged and audited; a fan-out
// whose every leg was left out is refused. The legs' buffers go back to
// their pool.
func (c *cursor) Merge(f *planner.FanOut, fail error) {
	req, r, m := (*request)(c), c.r, c.msg
	xs := req.legs
	defer func() {
		for i := range xs {
			xs[i].releaseLeg(r)
		}
	}()
	if fail != nil {
		r.fanOutFailed(req, fail)
		return
	}
	var total int
	var omitted []string
	for i := range xs {
		x := &xs[i]
		if x.omitted == "" && x.legErr != nil {
			x.omitted = omissionReason(x.legErr) // safe: Tolerates let it pass
		}
		if x.omitted != "" {
			r.recordOmission(m.Name, x.lane, x.omitted, x.legErr)
			req.omitted = append(req.omitted, x.Cat.Name)
			omitted = append(omitted, x.Cat.Name+" ("+x.omitted+")")
			continue
		}
		total += x.legN
	}
	if len(omitted) == len(xs) {
		r.refuse(req, &planner.Refusal{Kind: planner.RefuseMeta, Reason: "fanout_degraded", Message: fmt.Sprintf(
			"%s: every catalog it asks is degraded and was left out (routing.degraded-routing-policy=SAFE_FANOUT_READS): %s",
			m.Name, strings.Join(omitted, ", "))})
		return
	}
	elem := byte(wire.TString)
	if f.Merge == planner.MergeTableMeta {
		elem = wire.TStruct
	}
	out := wire.AppendHeader(req.out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID})
	out = wire.AppendFieldHeader(out, wire.TList, 0)
	out = append(out, elem)
	out = binary.BigEndian.AppendUint32(out, uint32(total))
	for i := range xs {
		if xs[i].omitted == "" {
			out = append(out, xs[i].legOut...)
		}
	}
	req.out = append(out, wire.TStop)
}

// runLeg runs one leg through the policy chain (within max-parallelism
// when hedged reads bound it) and keeps its error.
func (r *Router) runLeg(ctx context.Context, x *Exchange) error {
	if sem := x.req.fanSem; sem != nil {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		case <-ctx.Done():
			x.legErr = &backendError{cat: x.Cat, err: ctx.Err()}
			return x.legErr
		}
	}
	x.legErr = r.chain(ctx, x)
	return x.legErr
}
