package router

import (
	"context"
	"errors"
	"fmt"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/wire"
)

// backendError is a failed call to a catalog's metastore (transport,
// budget, a reply that does not belong to its request): the client gets a
// MetaException naming the catalog.
type backendError struct {
	cat *naming.Catalog
	err error
}

func (e *backendError) Error() string { return e.err.Error() }
func (e *backendError) Unwrap() error { return e.err }

// execute is the innermost handler: it sends the exchange to its catalog.
func (r *Router) execute(ctx context.Context, x *Exchange) error {
	if x.Leg != nil {
		return r.execLeg(ctx, x)
	}
	if x.req.plan.Mode == compat.Adapted {
		return r.execAdapted(ctx, x)
	}
	return r.execNative(ctx, x)
}

// execNative sends the call as it is, with the inward rewrites spliced in,
// and relays the answer with the outward rewrites spliced in.
func (r *Router) execNative(ctx context.Context, x *Exchange) error {
	req, cat := x.req, x.Cat
	m, spec, p := req.msg, req.plan.Spec, &req.plan
	reqp := r.bufs.Get().(*[]byte)
	defer r.bufs.Put(reqp)
	buf := wire.AppendHeader((*reqp)[:0], wire.Header{Name: m.Name, Type: wire.Call, SeqID: m.SeqID})
	bodyAt := len(buf)
	if x.args != nil {
		buf = append(buf, x.args...)
	} else {
		buf = wire.Apply(buf, m.Body(), p.Patches)
	}
	*reqp = buf
	// compat guard: implied fields dropped (counted); for writes the rest refused
	if body, err := r.guardCall(req, cat, buf[bodyAt:], p.Writes); err != nil {
		return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "lossless", Message: fmt.Sprintf("%s on catalog %s refused: %v", m.Name, cat.Name, err)}
	} else if len(body) != len(buf)-bodyAt { // drops only shorten the body
		buf = append(buf[:bodyAt], body...)
		*reqp = buf
	}
	dialect := r.lane(cat).dialect
	if dialect.Touches(spec.Name, false) {
		var err error
		if buf, err = remapMessage(buf, dialect.ToWire, false); err != nil {
			return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "dialect", Message: err.Error()}
		}
	}
	if key, ok := r.metadataKey(x, buf[bodyAt:], false); ok && !dialect.Touches(spec.Name, true) && !dialect.Touches(spec.Name, false) {
		return r.execCachedNative(ctx, x, key, buf)
	}
	if r.trace != nil {
		r.trace.Backend(req.info.ID, cat.Name, buf)
	}
	// Names are collected while the reply is read, unless a field-id
	// dialect changes the body before it is rewritten; a reply filter that
	// changes it makes replyOutward walk the new body again.
	var rw *ReplyWalk
	if spec.Result != nil && !dialect.Touches(spec.Name, true) {
		req.out2 = outward{ns: r.ns, cat: cat, patches: p.PatchScratch()}
		req.rw = ReplyWalk{Plan: spec.Result, V: &req.out2}
		rw = &req.rw
	}
	b, err := r.lane(cat).backendFor(ctx)
	if err != nil {
		return &backendError{cat: cat, err: err}
	}
	reply, done, walked, err := b.CallWalk(ctx, buf, !spec.IsWrite(), rw)
	if r.trace != nil {
		r.trace.BackendReply(req.info.ID, cat.Name, reply, err)
	}
	if err != nil {
		if spec.EmptyOnAnyFailure() {
			r.fallbackEmpty(req, "error")
			return nil
		}
		return &backendError{cat: cat, err: err}
	}
	defer done()
	if reply.Type == wire.Reply && dialect.Touches(spec.Name, true) {
		raw, err := remapMessage(reply.Raw, dialect.ToCanonical, true)
		if err != nil {
			return &backendError{cat: cat, err: err}
		}
		reply = &wire.Message{Header: reply.Header, Raw: raw, BodyOff: reply.BodyOff}
	}
	var pre *outward
	if walked {
		pre = &req.out2
	}
	return r.replyOutward(x, reply, pre)
}

// execAdapted serves a call through a compat adapter: the (already
// internalized) arguments are decoded, mapped to what the backend runtime
// speaks, and the answer mapped back to the client's result, then rewritten
// outward as any reply. The metadata cache holds adapted get_database_req
// answers in the client's form.
func (r *Router) execAdapted(ctx context.Context, x *Exchange) error {
	req, cat := x.req, x.Cat
	m, ad := req.msg, req.plan.Adapter
	args := x.Args()
	var res []byte
	var err error
	if key, ok := r.metadataKey(x, args, true); ok {
		kind, _ := r.cacheKind(m.Name)
		id := r.loaderIdentity(kind, x.Identity())
		own := append([]byte(nil), args...)
		bufp := r.bufs.Get().(*[]byte)
		defer r.bufs.Put(bufp)
		res, err = r.cachedReply(ctx, x, key, (*bufp)[:0], func(ctx context.Context) ([]byte, bool, error) {
			out, err := r.runAdapter(withIdentity(ctx, m.Name, id), cat, ad, own, 0, false, []byte{wire.Reply})
			return out, err == nil && methods.ExceptionField(out[1:]) == 0, err
		})
		*bufp = res[:0]
		if err == nil {
			res = res[1:]
		}
	} else {
		res, err = r.runAdapter(ctx, cat, ad, args, req.info.ID, req.plan.Writes, nil)
	}
	req.fallback = true
	if err != nil {
		var refused *compat.RefusedError
		var app *compat.AppError
		switch {
		case errors.As(err, &refused):
			return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "adapter", Message: fmt.Sprintf("%s on catalog %s (%s): %s", m.Name, cat.Name, r.lane(cat).runtime.Name, refused.Reason)}
		case errors.As(err, &app):
			req.status = "error"
			if r.metrics != nil {
				r.metrics.BackendFailure(cat.Name, "TApplicationException")
			}
			req.out = append(req.out, wire.AppException(m.Name, m.SeqID, app.Type, r.errText(x, app.Message))...)
			return nil
		case errors.As(err, new(*planner.Refusal)), errors.As(err, new(*backendError)):
			return err
		}
		return &backendError{cat: cat, err: err}
	}
	reply := &wire.Message{Header: wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, Raw: res}
	return r.replyOutward(x, reply, nil)
}

// runAdapter runs the adapter of a call with internalized arguments on cat
// (the pool of ctx's caller) and appends the encoded client result to dst.
func (r *Router) runAdapter(ctx context.Context, cat *naming.Catalog, ad *compat.Adapter, args []byte, id uint64, strict bool, dst []byte) ([]byte, error) {
	v, err := wire.DecodeStruct(args)
	if err != nil {
		return nil, &planner.Refusal{Kind: planner.RefuseProtocol, Reason: "bad_arguments", Message: ad.Method + ": cannot read arguments: " + err.Error()}
	}
	b, err := r.lane(cat).backendFor(ctx)
	if err != nil {
		return nil, &backendError{cat: cat, err: err}
	}
	bc := &backendCaller{ctx: ctx, b: b, rt: r.lane(cat).runtime, dialect: r.lane(cat).dialect, trace: r.trace,
		id: id, guard: r.lane(cat).guard, strict: strict}
	res, err := ad.Run(bc, &v)
	if r.metrics != nil {
		r.metrics.BackendFallback(ad.Method, ad.Method, ad.ToAPI())
		for _, d := range bc.dropped {
			r.metrics.BackendFallback(ad.Method, d.from, d.d.API())
		}
	}
	if err != nil {
		return nil, err
	}
	return res.Append(dst), nil
}

// replyOutward relays a backend reply with names rewritten to the client's
// view and the exchange's filters applied.
func (r *Router) replyOutward(x *Exchange, reply *wire.Message, pre *outward) error {
	req, cat := x.req, x.Cat
	m, spec := req.msg, req.plan.Spec
	if reply.Type == wire.Exception {
		if spec.EmptyOnAnyFailure() {
			r.fallbackEmpty(req, "error")
			return nil
		}
		typ, msg, perr := wire.ParseAppException(reply.Body())
		if perr == nil && typ == wire.AppUnknownMethod && spec.EmptyOnUnknownMethod() {
			r.fallbackEmpty(req, "unknown_method")
			return nil
		}
		req.status = "error"
		if r.metrics != nil {
			r.metrics.BackendFailure(cat.Name, "TApplicationException")
		}
		if perr != nil || cat.Default {
			req.out = wire.AppendHeader(req.out, wire.Header{Name: m.Name, Type: wire.Exception, SeqID: m.SeqID})
			req.out = append(req.out, reply.Body()...)
		} else {
			req.out = append(req.out, wire.AppException(m.Name, m.SeqID, typ, r.errText(x, msg))...)
		}
		return nil
	}
	body := reply.Body()
	for _, f := range x.filters {
		nb, err := f(body)
		if err != nil {
			var ref *planner.Refusal
			if errors.As(err, &ref) {
				return ref // the answer is about an object the client may not see
			}
			return &backendError{cat: cat, err: err}
		}
		if len(nb) != len(body) || len(nb) > 0 && &nb[0] != &body[0] {
			pre = nil // the names collected while reading point into the old body
		}
		body = nb
	}
	if exc := methods.ExceptionField(body); exc != 0 {
		// A declared exception: an error for metrics and audit, whatever
		// the RPC's result carries.
		req.status = "error"
		if r.metrics != nil {
			r.metrics.BackendFailure(cat.Name, spec.ExceptionName(exc))
		}
	}
	mark := len(req.out)
	req.out = wire.AppendHeader(req.out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID})
	if spec.Result == nil && (cat.Default || req.status != "error") {
		req.out = append(req.out, body...)
		return nil
	}
	var patches []wire.Patch
	var err error
	switch {
	case pre != nil:
		patches = pre.patches // collected while the reply was read
	case spec.Result != nil:
		patches, err = r.outwardPatches(spec.Result, cat, body, req.plan.PatchScratch())
	}
	if err == nil && !cat.Default && req.status == "error" {
		patches, err = r.errTextPatches(x, body, patches)
	}
	if err != nil {
		req.status = "error"
		req.out = append(req.out[:mark], wire.AppException(m.Name, m.SeqID, wire.AppInternalError,
			fmt.Sprintf("%s: backend %s sent a reply hms-proxy cannot read: %v", m.Name, cat.Name, err))...)
		return nil
	}
	req.out = wire.Apply(req.out, body, patches)
	return nil
}

// answer writes the client's answer for an error of the chain.
func (r *Router) answer(req *request, err error) {
	var ref *planner.Refusal
	var be *backendError
	switch {
	case errors.As(err, &ref):
		r.refuse(req, ref)
	case errors.As(err, &be):
		r.backendFailed(req, be.cat, be.err)
	default:
		req.status = "error"
		r.refuse(req, &planner.Refusal{Kind: planner.RefuseMeta, Reason: "internal", Message: fmt.Sprintf("hms-proxy: %s failed: %v", req.msg.Name, err)})
	}
}

// refuse answers with the exception of the refusal's kind; a kind the method
// does not declare falls back to its MetaException, and to a
// TApplicationException when it declares none.
func (r *Router) refuse(req *request, ref *planner.Refusal) {
	req.status, req.reason = "error", ref.Reason
	if ref.Status != "" {
		req.status = ref.Status
	}
	m, spec := req.msg, req.plan.Spec
	if req.catalog == "" {
		req.catalog = ref.Catalog
	}
	r.logs.refusal(m.Name, req.catalog, ref)
	if spec == nil {
		req.out = append(req.out, wire.AppException(m.Name, m.SeqID, appType(ref.Kind), ref.Message)...)
		return
	}
	field := spec.MetaExcField
	switch ref.Kind {
	case planner.RefuseUnknownMethod, planner.RefuseProtocol, planner.RefuseMessageType:
		req.out = append(req.out, wire.AppException(m.Name, m.SeqID, appType(ref.Kind), ref.Message)...)
		return
	case planner.RefuseNoSuchObject:
		field = spec.NotFoundField(ref.Table)
	case planner.RefuseInvalidOperation:
		if spec.InvalidOperationField >= 0 {
			field = spec.InvalidOperationField
		}
	case planner.RefuseTxnAborted:
		if spec.TxnAbortedField >= 0 {
			field = spec.TxnAbortedField
		}
	}
	r.declaredException(req, field, ref.Message)
}

func appType(k planner.RefusalKind) int32 {
	switch k {
	case planner.RefuseUnknownMethod:
		return wire.AppUnknownMethod
	case planner.RefuseProtocol:
		return wire.AppProtocolError
	case planner.RefuseMessageType:
		return wire.AppInvalidMessageType
	}
	return wire.AppInternalError
}

func (r *Router) declaredException(req *request, field int16, why string) {
	m := req.msg
	if field < 0 {
		req.out = append(req.out, wire.AppException(m.Name, m.SeqID, wire.AppInternalError, why)...)
		return
	}
	body := wire.Struct(wire.Field{ID: field, V: wire.Struct(wire.Field{ID: 1, V: wire.Str(why)})})
	req.out = wire.AppendMessage(req.out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
}

func (r *Router) backendFailed(req *request, cat *naming.Catalog, err error) {
	req.status = "error"
	exc := backendExceptionLabel(err)
	if r.metrics != nil {
		r.metrics.BackendFailure(cat.Name, exc)
	}
	r.logs.backendFailure(req.msg.Name, cat.Name, exc, err)
	r.declaredException(req, req.plan.Spec.MetaExcField,
		fmt.Sprintf("hms-proxy: catalog %s backend failed for %s: %s", cat.Name, req.msg.Name, failureText(err, cat.Name)))
}

// fallbackEmpty answers the empty compatibility response and counts it.
func (r *Router) fallbackEmpty(req *request, why string) {
	req.status, req.fallback = "fallback", true
	if r.metrics != nil {
		r.metrics.BackendFallback(req.msg.Name, req.msg.Name, "empty_"+why)
	}
	r.emptyReply(req)
}
