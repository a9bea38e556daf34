package router

import (
	"context"
	"fmt"
	"strings"

	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/security/ranger"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Ranger in the request path: the authorization link of the chain
// (Options.Authorize), after exposure. It judges every exchange to a lane
// that holds a Ranger authorizer (a single call's, each fan-out leg's, the
// REST door's, which reaches the router as in-process Thrift calls), by the
// method table's Ranger column (methods.Authz):
//
//   - the request's objects, walked once as exposure walks them
//     (visitObjects), in backend names (apache__marketing.campaigns is
//     database marketing, table campaigns): an object the caller has no
//     access at all to does not exist for it (the RPC's not-found
//     exception, as exposure answers); one it may see but not act on as
//     the row asks (create, alter, drop, update, lock, select) is a
//     MetaException naming the user, the access and the object. A created
//     object is judged by the row's access only (it does not exist yet);
//   - the answer keeps the caller's own: lists of databases, tables and
//     functions lose what it has no access to, other answers lose the
//     elements about such objects (the exposure answer filter with Ranger
//     as the judge), and an answer about one becomes not-found;
//   - a fan-out leg's merged elements (database names, TableMeta) are
//     filtered after the leg ran: the leg's own scheduling is untouched.
//
// A lane whose plugin has no policies in force refuses every call with a
// MetaException that says why: never allow-all for lack of policies.

// Words of the link's refusals the REST door maps to HTTP statuses (a
// denial is a 403, policies not in force a 503).
const (
	RangerDenied   = "denied by the Ranger policies"
	RangerNotReady = "Ranger policies are not in force"
)

// RangerOptions configure the authorization link.
type RangerOptions struct {
	// Groups adds the group mapping's groups (security.groups.mapping) to
	// the identity's; nil: the identity's groups only.
	Groups *ranger.Groups
}

// Ranger is the authorization link of the chain (Options.Authorize).
func Ranger(o RangerOptions) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, x *Exchange) error {
			return x.req.r.authorize(ctx, x, o, next)
		}
	}
}

// rangerCheck is one exchange's judge: the caller and what was decided.
type rangerCheck struct {
	r    *Router
	x    *Exchange
	subj ranger.Subject
	memo map[object]string // visibility by object
}

func (r *Router) authorize(ctx context.Context, x *Exchange, o RangerOptions, next Handler) error {
	p, spec := x.Plan(), x.Spec()
	if x.lane.authorizer == nil && !(p.SplitLock && r.guarded) {
		return next(ctx, x)
	}
	k := &rangerCheck{r: r, x: x}
	id := x.Identity()
	k.subj.User = id.Name()
	var fromIdentity []string
	if id != nil {
		fromIdentity = id.Groups
	}
	groups, err := o.Groups.Resolve(ctx, k.subj.User, fromIdentity)
	if err != nil {
		return k.refuse(&planner.Refusal{Kind: planner.RefuseMeta, Reason: "ranger", Catalog: x.Cat.Name, Message: fmt.Sprintf(
			"ranger: the groups of user %s cannot be resolved (security.groups.mapping): %v", k.subj.User, err)}, -1)
	}
	k.subj.Groups = groups
	if ref := k.notReady(x.lane.authorizer); ref != nil {
		return k.refuse(ref, -1)
	}
	if x.Leg != nil {
		if err := next(ctx, x); err != nil {
			return err
		}
		return k.filterLeg()
	}
	var ref *planner.Refusal
	if spec.Authz.UDF {
		ref = k.function()
	} else {
		ref = r.visitObjects(x, k.judge)
	}
	if ref != nil {
		return ref
	}
	if spec.Name == "get_notification_events_count" && x.lane.authorizer != nil {
		// The metastore counts the events of tables the caller has no
		// access to: the proxy counts what the caller may read, judging
		// each event by exposure's rules and Ranger's policies.
		hidden := func(o object) string {
			if what := r.hiddenOf(o); what != "" {
				return what
			}
			return k.hidden(o)
		}
		if handled, err := r.countVisibleEvents(ctx, x, func(string) bool { return true }, hidden); handled {
			return err
		}
	}
	if x.lane.authorizer != nil && (spec.ResultObjects != nil || spec.Authz.Answer != methods.AnswerObjects) {
		x.OnReply(k.filterAnswer)
	}
	k.note("allowed", -1)
	return next(ctx, x)
}

// note records the decision for the request's audit record.
func (k *rangerCheck) note(decision string, policy int64) {
	req := k.x.req
	req.rangerMu.Lock()
	defer req.rangerMu.Unlock()
	if req.rangerDecision == "denied" {
		return
	}
	req.rangerDecision = decision
	if policy >= 0 {
		req.rangerPolicy = &policy
	}
}

// refuse records a refusal of the link.
func (k *rangerCheck) refuse(ref *planner.Refusal, policy int64) *planner.Refusal {
	k.note("denied", policy)
	return ref
}

// filtered counts objects an answer lost.
func (k *rangerCheck) filtered(a *ranger.Authorizer, typ string, n int) {
	if n <= 0 {
		return
	}
	a.Filtered(typ, n)
	req := k.x.req
	req.rangerMu.Lock()
	req.rangerFiltered += n
	req.rangerMu.Unlock()
}

// notReady is the refusal of a lane whose plugin has no policies in force.
func (k *rangerCheck) notReady(a *ranger.Authorizer) *planner.Refusal {
	if a == nil {
		return nil
	}
	if err := a.Plugin().Ready(); err != nil {
		return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "ranger_not_ready", Catalog: k.x.Cat.Name, Message: fmt.Sprintf(
			"catalog %s is guarded by %s: its %s, so hms-proxy serves none of its calls: %v",
			k.x.Cat.Name, a, RangerNotReady, err)}
	}
	return nil
}

// decide asks a's plugin.
func (k *rangerCheck) decide(a *ranger.Authorizer, db, table, udf, access string) ranger.Decision {
	return a.IsAllowed(&ranger.Request{User: k.subj.User, Groups: k.subj.Groups, Roles: k.subj.Roles,
		Database: db, Table: table, UDF: udf, Access: access})
}

// hidden says what of o the caller has no access at all to ("database",
// "table" or ""): Ranger's "any access", as SHOW DATABASES and SHOW TABLES
// ask. Objects of a catalog without an authorizer are all visible.
func (k *rangerCheck) hidden(o object) string {
	a := k.r.lane(o.cat).authorizer
	if a == nil || o.db == "" || strings.EqualFold(o.db, naming.DummyDatabase) {
		return ""
	}
	key := object{cat: o.cat, db: o.db, table: o.table}
	if what, ok := k.memo[key]; ok {
		return what
	}
	what := ""
	if o.table != "" && !k.decide(a, o.db, o.table, "", methods.AccessAny).Allowed {
		what = "table"
	}
	if (o.table == "" || what != "") && !k.decide(a, o.db, "", "", methods.AccessAny).Allowed {
		what = "database"
	}
	if k.memo == nil {
		k.memo = map[object]string{}
	}
	k.memo[key] = what
	return what
}

// notFound is the answer to a request naming an object the caller has no
// access to: it does not exist for the caller.
func (k *rangerCheck) notFound(o object, what, name string) *planner.Refusal {
	ext := k.r.ns.ExternalDB(o.cat, o.db)
	if name != "" {
		ext += "." + name
	}
	a := k.r.lane(o.cat).authorizer
	a.Filtered(what, 1)
	return k.refuse(&planner.Refusal{Kind: planner.RefuseNoSuchObject, Reason: "ranger", Catalog: o.cat.Name,
		Message: what + " " + ext + " not found", Table: what == "table"}, -1)
}

// denied is the answer to a request whose access the policies deny on an
// object the caller may see.
func (k *rangerCheck) denied(o object, kind, name, access string, d ranger.Decision) *planner.Refusal {
	ext := k.r.ns.ExternalDB(o.cat, o.db)
	if name != "" {
		ext += "." + name
	}
	by := "no policy allows it"
	if d.PolicyID >= 0 {
		by = fmt.Sprintf("policy %d decides", d.PolicyID)
	}
	user := k.subj.User
	if user == "" {
		user = "(anonymous)"
	}
	backend := o.db
	if name != "" {
		backend += "." + name
	}
	return k.refuse(&planner.Refusal{Kind: planner.RefuseMeta, Reason: "ranger", Catalog: o.cat.Name, Message: fmt.Sprintf(
		"ranger: %s access to %s %s (backend %s) is %s for user %s (%s: %s)",
		access, kind, ext, backend, RangerDenied, user, k.r.lane(o.cat).authorizer, by)}, d.PolicyID)
}

// judge checks one object a request names against the row's access.
func (k *rangerCheck) judge(o object, alone bool) *planner.Refusal {
	a := k.r.lane(o.cat).authorizer
	if a == nil {
		return nil
	}
	if ref := k.notReady(a); ref != nil {
		return k.refuse(ref, -1)
	}
	rule := k.x.Spec().Authz
	access, kind := rule.Table, "table"
	if o.table == "" {
		if !alone {
			return nil // the tables beside it are judged, with it
		}
		access, kind = rule.DB, "database"
	}
	if access == "" || rule.Defines && !o.def {
		access = methods.AccessAny // what a create names besides its object need only exist
	}
	if !o.def {
		if what := k.hidden(o); what != "" {
			name := ""
			if what == "table" {
				name = o.table
			}
			return k.notFound(o, what, name)
		}
	} else if o.table != "" && k.hidden(object{cat: o.cat, db: o.db}) != "" {
		return k.notFound(o, "database", "") // a table defined in a database the caller cannot see
	}
	if access == methods.AccessAny {
		return nil
	}
	d := k.decide(a, o.db, o.table, "", access)
	if !d.Allowed {
		return k.denied(o, kind, o.table, access, d)
	}
	k.note("allowed", d.PolicyID)
	return nil
}

// function judges a request naming a function (Ranger's udf resource):
// create_function's Function, or the database and function name of
// drop_function, alter_function and get_function.
func (k *rangerCheck) function() *planner.Refusal {
	x := k.x
	p := x.Plan()
	a := x.lane.authorizer
	v, err := wire.DecodeStruct(x.req.msg.Body())
	if err != nil || len(p.DBs) == 0 {
		return k.refuse(&planner.Refusal{Kind: planner.RefuseMeta, Reason: "ranger", Catalog: x.Cat.Name,
			Message: fmt.Sprintf("ranger: %s names no function hms-proxy can judge", x.Method())}, -1)
	}
	name := ""
	if f := v.Field(1); f != nil && f.Type == wire.TStruct {
		name = f.Field(1).String() // Function.functionName
	} else if f := v.Field(2); f != nil {
		name = f.String()
	}
	o := object{cat: x.Cat, db: p.DBs[0]}
	if k.hidden(o) != "" {
		return k.notFound(o, "database", "")
	}
	access := x.Spec().Authz.DB
	d := k.decide(a, o.db, "", name, access)
	if !d.Allowed {
		if access == methods.AccessAny {
			return k.notFound(o, "function", name)
		}
		return k.denied(o, "function", name, access, d)
	}
	k.note("allowed", d.PolicyID)
	return nil
}

// filterAnswer keeps the caller's own in a result body (backend names).
func (k *rangerCheck) filterAnswer(body []byte) ([]byte, error) {
	if methods.ExceptionField(body) != 0 {
		return body, nil
	}
	x := k.x
	a := x.lane.authorizer
	db := ""
	if p := x.Plan(); len(p.DBs) > 0 {
		db = p.DBs[0]
	}
	answer := x.Spec().Authz.Answer
	if answer != methods.AnswerObjects {
		v, err := wire.DecodeStruct(body)
		if err != nil {
			return nil, fmt.Errorf("ranger filter of %s: %w", x.Method(), err)
		}
		list := v.Field(0)
		if list != nil && list.Type == wire.TList && (len(list.Elems) == 0 || list.Elems[0].Type == wire.TString) {
			kept := list.Elems[:0]
			typ := ranger.ResourceTable
			for _, el := range list.Elems {
				o, udf := object{cat: x.Cat, db: db}, ""
				switch answer {
				case methods.AnswerDatabases:
					o.db, typ = string(el.Str), ranger.ResourceDatabase
				case methods.AnswerTables:
					o.table = string(el.Str)
				case methods.AnswerFunctions:
					udf, typ = string(el.Str), ranger.ResourceUDF
				}
				ok := k.hidden(o) == ""
				if ok && udf != "" {
					ok = k.decide(a, o.db, "", udf, methods.AccessAny).Allowed
				}
				if ok {
					kept = append(kept, el)
				}
			}
			n := len(list.Elems) - len(kept)
			if n == 0 {
				return body, nil
			}
			list.Elems = kept
			k.filtered(a, typ, n)
			return v.Encode(), nil
		}
		if x.Spec().ResultObjects == nil {
			return body, nil
		}
	}
	return k.r.filterObjects(x, body, db, k.hidden, func(typ string, n int) { k.filtered(a, typ, n) },
		func(o object, what string) *planner.Refusal {
			name := ""
			if what == "table" {
				name = o.table
			}
			return k.notFound(o, what, name)
		})
}

// filterLeg removes from a fan-out leg's merged elements (outward names)
// the databases and tables the caller has no access to.
func (k *rangerCheck) filterLeg() error {
	x := k.x
	cat, a := x.Cat, x.lane.authorizer
	if a == nil || x.legN == 0 {
		return nil
	}
	backend := func(ext []byte) string {
		s := string(ext)
		if !cat.Default {
			s = strings.TrimPrefix(s, cat.Name+k.r.ns.Separator())
		}
		return s
	}
	b := wire.Buf{B: x.legOut}
	out := x.legOut[:0]
	kept := 0
	typ := ranger.ResourceDatabase
	for i := 0; i < x.legN; i++ {
		start := b.Pos
		o := object{cat: cat}
		if x.Leg.Op == planner.LegDatabases {
			name, err := b.Bytes()
			if err != nil {
				return fmt.Errorf("ranger filter of %s: catalog %s: %v", x.Method(), cat.Name, err)
			}
			o.db = backend(name)
		} else {
			typ = ranger.ResourceTable
			if err := b.Skip(wire.TStruct, 1); err != nil {
				return fmt.Errorf("ranger filter of %s: catalog %s: %v", x.Method(), cat.Name, err)
			}
			tm, err := wire.DecodeStruct(x.legOut[start:b.Pos])
			if err != nil {
				return fmt.Errorf("ranger filter of %s: catalog %s: %v", x.Method(), cat.Name, err)
			}
			o.db, o.table = backend(tm.Field(1).Str), tm.Field(2).String()
		}
		if k.hidden(o) != "" {
			continue
		}
		out = append(out, x.legOut[start:b.Pos]...) // out never passes the element it copies
		kept++
	}
	k.filtered(a, typ, x.legN-kept)
	x.legOut, x.legN = out, kept
	k.note("allowed", -1)
	return nil
}
