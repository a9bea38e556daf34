package router

import (
	"context"

	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/wire"
)

// LocalHandler answers one call the proxy serves itself (Options.Local: the
// delegation-token calls when the front door issues tokens). It answers
// through c: Reply for the result, or Refuse.
type LocalHandler func(ctx context.Context, c *LocalCall)

// LocalCall is a call served by a LocalHandler.
type LocalCall struct {
	r        *Router
	req      *request
	answered bool
}

// Method is the RPC's name.
func (c *LocalCall) Method() string { return c.req.msg.Name }

// Args decodes the call's arguments struct.
func (c *LocalCall) Args() (wire.Value, error) { return wire.DecodeStruct(c.req.msg.Body()) }

// Identity is who the connection's requests run for (nil: anonymous).
func (c *LocalCall) Identity() *security.Identity { return c.req.info.Identity }

// Remote is the client's address (host:port).
func (c *LocalCall) Remote() string { return c.req.conn.Remote }

// Reply answers with the RPC's success value (result field 0); a void RPC
// passes nil.
func (c *LocalCall) Reply(success *wire.Value) {
	c.answered = true
	m := c.req.msg
	var body wire.Value
	if success == nil {
		body = wire.Struct()
	} else {
		body = wire.Struct(wire.Field{ID: 0, V: *success})
	}
	c.req.out = wire.AppendMessage(c.req.out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
}

// Refuse answers with the exception of the refusal's kind (as a policy
// refusal is answered) and counts the call as an error.
func (c *LocalCall) Refuse(ref *planner.Refusal) {
	c.answered = true
	c.r.refuse(c.req, ref)
}

// serveLocalCall runs a LocalHandler; one that answers nothing is a bug,
// answered as an internal error rather than leaving the client waiting.
func (r *Router) serveLocalCall(ctx context.Context, req *request, h LocalHandler) {
	c := &LocalCall{r: r, req: req}
	h(ctx, c)
	if !c.answered {
		r.refuse(req, &planner.Refusal{Kind: planner.RefuseMeta, Reason: "internal", Message: "hms-proxy: " + req.msg.Name + " was not answered"})
	}
}
