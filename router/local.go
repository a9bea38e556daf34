package router

import (
	"github.com/hms-proxy/hms-proxy/audit"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/router/synthetic"
	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/wire"
)

// local serves the answers the proxy gives itself.
func (r *Router) local(req *request) {
	m := req.msg
	switch req.plan.Local {
	case planner.AnswerOneway:
		// HiveServer2 sends fb303 shutdown every time it closes a client:
		// expected, so DEBUG.
		r.log.Debug("answered an fb303 control call locally; it never reaches a backend", "method", m.Name, "remote", req.conn.Remote)
		if m.Type == wire.Oneway {
			return
		}
		r.declaredException(req, req.plan.Spec.MetaExcField, m.Name+" is not forwarded by hms-proxy")
	case planner.AnswerSetUGI:
		r.setUGI(req)
	case planner.AnswerCatalogs:
		// Catalog ownership is policy-managed in the proxy configuration.
		names := wire.List(wire.TString)
		for _, cat := range r.ns.Catalogs() {
			names.Elems = append(names.Elems, wire.Str(cat.Name))
		}
		body := wire.Struct(wire.Field{ID: 0, V: wire.Struct(wire.Field{ID: 1, V: names})})
		req.out = wire.AppendMessage(req.out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
	case planner.AnswerEmpty:
		r.emptyReply(req)
	case planner.AnswerRefreshPrivileges:
		// HiveServer2's PrivilegeSynchronizer calls it for every table on a
		// timer; the metastore's answer when the refresh worked.
		req.out = synthetic.RefreshPrivilegesSuccess(req.out, m.SeqID)
	case planner.AnswerVersion:
		body := wire.Struct(wire.Field{ID: 0, V: wire.Str(req.conn.Frontend.Runtime.Version)})
		req.out = wire.AppendMessage(req.out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
	}
}

// setUGI binds the caller's identity to the connection and answers as HMS
// does (the group list). It is never sent to a backend: with impersonation,
// the user's own backend sessions carry the identity; without it, the
// backend sees the proxy. Until a plain connection sends set_ugi it has no
// identity and its calls run as the proxy (the shared pool).
func (r *Router) setUGI(req *request) {
	m := req.msg
	v, err := wire.DecodeStruct(m.Body())
	if err != nil {
		r.refuse(req, &planner.Refusal{Kind: planner.RefuseMeta, Reason: "bad_arguments", Message: "set_ugi: cannot read arguments: " + err.Error()})
		return
	}
	user := v.Field(1).String()
	var groups []string
	if g := v.Field(2); g != nil {
		for _, e := range g.Elems {
			groups = append(groups, string(e.Str))
		}
	}
	if cur := req.conn.Identity(); cur.Authenticated() {
		// A SASL-authenticated connection keeps its verified identity, as
		// Hive's TUGIAssumingProcessor ignores set_ugi; the call is still
		// answered as HMS answers it.
		r.log.Debug("set_ugi on an authenticated connection does not change its identity",
			"remote", req.conn.Remote, "user", cur.User, "asserted", audit.Clip(user, audit.MaxValueLen))
	} else {
		req.conn.SetIdentity(&security.Identity{User: user, Groups: groups, Mechanism: security.SetUGI})
	}
	// HMS answers the groups it was sent with the user name appended
	// (HiveMetaStore.set_ugi: Collections.addAll(groupNames, username)).
	list := wire.List(wire.TString)
	for _, s := range append(groups[:len(groups):len(groups)], user) {
		list.Elems = append(list.Elems, wire.Str(s))
	}
	body := wire.Struct(wire.Field{ID: 0, V: list})
	req.out = wire.AppendMessage(req.out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
}
