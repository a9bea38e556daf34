package router

import (
	"context"
	"fmt"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// backendCaller lets compat adapters call one catalog's backend.
type backendCaller struct {
	ctx     context.Context
	b       *Backend
	dialect *compat.Dialect
	guard   *compat.Guard // set for writes: refuse what the runtime would drop
	trace   Tracer
	id      uint64 // request id (tracing)
	seq     int32
}

func (bc *backendCaller) Call(method string, args wire.Value) (wire.Value, error) {
	bc.seq++
	req := wire.AppendMessage(nil, wire.Header{Name: method, Type: wire.Call, SeqID: bc.seq}, &args)
	var err error
	if bc.guard != nil {
		if err := bc.guard.Check(method, args.Encode()); err != nil {
			return wire.Value{}, err
		}
	}
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
	body := reply.Body()
	if bc.dialect.Touches(method, true) {
		if body, err = bc.dialect.ToCanonical(method, true, body); err != nil {
			return wire.Value{}, err
		}
	}
	return wire.DecodeStruct(body)
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

func (f *Frontend) dialect() *compat.Dialect {
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

// optionalReads answer empty on any backend failure: they only carry
// optional workload-management and diagnostic data.
var optionalReads = map[string]bool{"get_active_resource_plan": true, "get_all_resource_plans": true, "get_runtime_stats": true}

// emptyCompatible reports whether an UNKNOWN_METHOD from the backend may be
// answered with an empty result: read-only service APIs (notifications,
// privilege introspection, token/key listings, txn/lock/compaction status).
func emptyCompatible(s *Spec) bool {
	if s.IsWrite() || s.Method.Result == nil {
		return false
	}
	switch s.Family {
	case ServiceGlobalRead, ACIDIDBoundLifecycle, AdminIntrospection:
		return true
	}
	return false
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
	for _, p := range []thriftgen.ProfileSet{thriftgen.ProfileApache313, thriftgen.ProfileApache410, thriftgen.ProfileHDP78, thriftgen.ProfileHDP315} {
		if f.RequirednessIn(p) == thriftgen.RequirednessRequired {
			return true
		}
	}
	return false
}
