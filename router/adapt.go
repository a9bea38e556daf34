package router

import (
	"context"
	"fmt"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// backendCaller lets compat adapters call one catalog's backend.
type backendCaller struct {
	ctx     context.Context
	b       *Backend
	rt      *compat.Runtime
	dialect *compat.Dialect
	guard   *compat.Guard // drop implied fields; for writes (strict) refuse what the runtime would lose
	strict  bool
	trace   Tracer
	id      uint64 // request id (tracing)
	seq     int32
	dropped []guardDrop
}

// guardDrop is one field the guard left out, with the call it was left out
// of (the client's method for request fields an adapter does not carry).
type guardDrop struct {
	from string
	d    compat.Drop
}

func (bc *backendCaller) Runtime() *compat.Runtime { return bc.rt }

func (bc *backendCaller) Leftover(method string, req *wire.Value, structName string, carried func(int16) bool) error {
	if !bc.strict {
		return nil // a read: request fields left behind are hints
	}
	drops, err := bc.guard.Leftover(method, req, structName, carried)
	for _, d := range drops {
		bc.dropped = append(bc.dropped, guardDrop{method, d})
	}
	return err
}

func (bc *backendCaller) Call(method string, args wire.Value) (wire.Value, error) {
	bc.seq++
	body := args.Encode()
	if bc.guard != nil {
		check := bc.guard.Trim
		if bc.strict {
			check = bc.guard.Check
		}
		v, err := check(method, body)
		if err != nil {
			return wire.Value{}, err
		}
		body = wire.Apply(nil, body, v.Patches)
		for _, d := range v.Dropped {
			bc.dropped = append(bc.dropped, guardDrop{method, d})
		}
	}
	req := append(wire.AppendHeader(nil, wire.Header{Name: method, Type: wire.Call, SeqID: bc.seq}), body...)
	var err error
	if bc.dialect.Touches(method, false) {
		if req, err = remapMessage(req, bc.dialect.ToWire, false); err != nil {
			return wire.Value{}, err
		}
	}
	if bc.trace != nil {
		bc.trace.Backend(bc.id, bc.b.Name(), req)
	}
	reply, done, err := bc.b.Call(bc.ctx, req, false)
	if bc.trace != nil {
		bc.trace.BackendReply(bc.id, bc.b.Name(), reply, err)
	}
	if err != nil {
		return wire.Value{}, err
	}
	defer done()
	if reply.Type == wire.Exception {
		typ, msg, _ := wire.ParseAppException(reply.Body())
		return wire.Value{}, &compat.AppError{Type: typ, Message: msg}
	}
	rbody := reply.Body()
	if bc.dialect.Touches(method, true) {
		if rbody, err = bc.dialect.ToCanonical(method, true, rbody); err != nil {
			return wire.Value{}, err
		}
	}
	return wire.DecodeStruct(rbody)
}

// remapMessage applies a dialect mapping to the body of a whole message.
func remapMessage(raw []byte, mapBody func(method string, result bool, body []byte) ([]byte, error), result bool) ([]byte, error) {
	m, err := wire.ParseMessage(raw, 0)
	if err != nil {
		return nil, err
	}
	body, err := mapBody(m.Name, result, m.Body())
	if err != nil {
		return nil, err
	}
	return append(append([]byte(nil), raw[:m.BodyOff]...), body...), nil
}

// clientDialect is the field-id dialect of a door's clients (nil: canonical).
func clientDialect(f *planner.Frontend) *compat.Dialect {
	if f == nil {
		return nil
	}
	return f.Dialect
}

// serveDialect serves a client whose profile numbers some struct fields
// differently: the call is mapped to canonical ids first and the answer back
// to the client's ids.
func (r *Router) serveDialect(ctx context.Context, req *request, d *compat.Dialect) {
	m := req.msg
	body, err := d.ToCanonical(m.Name, false, m.Body())
	if err != nil {
		req.status = "error"
		req.out = append(req.out, wire.AppException(m.Name, m.SeqID, wire.AppProtocolError, err.Error())...)
		return
	}
	raw := append(append([]byte(nil), m.Raw[:m.BodyOff]...), body...)
	req.msg = &wire.Message{Header: m.Header, Raw: raw, BodyOff: m.BodyOff}
	mark := len(req.out)
	r.serve(ctx, req)
	if len(req.out) == mark {
		return
	}
	reply, err := wire.ParseMessage(req.out[mark:], 0)
	if err == nil && reply.Type != wire.Reply {
		return
	}
	var mapped []byte
	if err == nil {
		mapped, err = d.ToWire(m.Name, true, reply.Body())
	}
	if err != nil {
		// Never send an unmapped answer: the client would read one
		// field's value as another's.
		req.status = "error"
		req.out = append(req.out[:mark], wire.AppException(m.Name, m.SeqID, wire.AppInternalError,
			fmt.Sprintf("%s: the answer cannot be mapped to the client's field ids: %v", m.Name, err))...)
		return
	}
	req.out = append(req.out[:mark+reply.BodyOff], mapped...)
}

// guardCall applies the catalog's lossless-write guard to the arguments of
// a call forwarded as it is (body: canonical ids, after the inward name
// rewrites): fields the backend runtime lacks but implies are spliced out,
// each counted in hms_proxy_backend_fallback_total with to_api
// "dropped_default:<Struct.field>"; for a write, anything else it lacks
// refuses the call (for a read it goes through as a hint). It returns the
// body to send (body itself when nothing was dropped).
func (r *Router) guardCall(req *request, cat *naming.Catalog, body []byte, write bool) ([]byte, error) {
	check := r.lane(cat).guard.Trim
	if write {
		check = r.lane(cat).guard.Check
	}
	v, err := check(req.plan.Spec.Name, body)
	if err != nil || len(v.Patches) == 0 {
		return body, err
	}
	for _, d := range v.Dropped {
		if r.metrics != nil {
			r.metrics.BackendFallback(req.msg.Name, req.plan.Spec.Name, d.API())
		}
	}
	req.fallback = true
	return wire.Apply(nil, body, v.Patches), nil
}

// emptyReply builds the empty compatibility answer of a method: its success
// value with every required field at its zero value.
func (r *Router) emptyReply(req *request) {
	m := req.msg
	body := wire.Struct()
	if f := req.plan.Spec.Method.Result.FieldByID(0); f != nil {
		body.Set(0, zeroValue(f.Type, 0))
	}
	req.out = wire.AppendMessage(req.out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
}

func zeroValue(t *thriftgen.Type, depth int) wire.Value {
	switch t.Kind {
	case thriftgen.KindString, thriftgen.KindBinary:
		return wire.Value{Type: wire.TString}
	case thriftgen.KindList, thriftgen.KindSet:
		return wire.Value{Type: wire.WireType(t), ElemType: wire.WireType(t.Elem)}
	case thriftgen.KindMap:
		return wire.Value{Type: wire.TMap, KeyType: wire.WireType(t.Key), ElemType: wire.WireType(t.Value)}
	case thriftgen.KindStruct:
		v := wire.Struct()
		if s := thriftgen.LookupStruct(t.Name); s != nil && depth < 8 {
			for _, f := range s.Fields {
				if requiredSomewhere(f) {
					v.Fields = append(v.Fields, wire.Field{ID: f.ID, V: zeroValue(f.Type, depth+1)})
				}
			}
		}
		return v
	}
	return wire.Value{Type: wire.WireType(t)}
}

// requiredSomewhere: a field any profile requires must be present, or that
// profile's client fails to read the answer.
func requiredSomewhere(f *thriftgen.Field) bool {
	for _, rt := range compat.Runtimes() {
		if f.RequirednessIn(rt.Bit) == thriftgen.RequirednessRequired {
			return true
		}
	}
	return false
}
