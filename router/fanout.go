package router

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/hms-proxy/hms-proxy/wire"
)

// callValue sends a call built from a Value to one catalog and returns the
// decoded result struct, with backend exceptions turned into errors that
// name the catalog.
func (r *Router) callValue(ctx context.Context, id uint64, cat *Catalog, method string, args wire.Value, outward bool) (wire.Value, error) {
	req := wire.AppendMessage(nil, wire.Header{Name: method, Type: wire.Call, SeqID: 1}, &args)
	if r.trace != nil {
		r.trace.Backend(id, cat.Name, req)
	}
	b, err := r.backendFor(ctx, cat)
	if err != nil {
		return wire.Value{}, &backendError{cat: cat, err: fmt.Errorf("catalog %s: %w", cat.Name, err)}
	}
	reply, done, err := b.Call(ctx, req, true)
	if r.trace != nil {
		r.trace.BackendReply(id, cat.Name, reply, err)
	}
	if err != nil {
		return wire.Value{}, &backendError{cat: cat, err: fmt.Errorf("catalog %s: %w", cat.Name, err)}
	}
	defer done()
	if reply.Type == wire.Exception {
		_, msg, _ := wire.ParseAppException(reply.Body())
		if r.metrics != nil {
			r.metrics.BackendFailure(cat.Name, "TApplicationException")
		}
		return wire.Value{}, fmt.Errorf("catalog %s: %s failed: %s", cat.Name, method, msg)
	}
	body := reply.Body()
	if outward {
		spec := r.table.Lookup(method)
		if spec != nil && spec.Result != nil {
			patches, err := r.outwardPatches(spec.Result, cat, body, nil)
			if err != nil {
				return wire.Value{}, fmt.Errorf("catalog %s: unreadable %s reply: %v", cat.Name, method, err)
			}
			body = wire.Apply(nil, body, patches)
		}
	}
	v, err := wire.DecodeStruct(body)
	if err != nil {
		return v, fmt.Errorf("catalog %s: unreadable %s reply: %v", cat.Name, method, err)
	}
	if exc := exceptionField(body); exc != 0 {
		if r.metrics != nil {
			name := "MetaException"
			if spec := r.table.Lookup(method); spec != nil {
				name = spec.exceptionName(exc)
			}
			r.metrics.BackendFailure(cat.Name, name)
		}
		return v, fmt.Errorf("catalog %s: %s failed: %s", cat.Name, method, v.Field(exc).Field(1).String())
	}
	return v, nil
}

// callList calls a list-returning method and returns the list's elements.
func (r *Router) callList(ctx context.Context, id uint64, cat *Catalog, method string, args wire.Value, outward bool) ([]wire.Value, error) {
	v, err := r.callValue(ctx, id, cat, method, args, outward)
	if err != nil {
		return nil, err
	}
	if list := v.Field(0); list != nil {
		return list.Elems, nil
	}
	return nil, nil
}

// hivePattern compiles a metastore name pattern as HMS does: alternatives
// split on '|', '*' matches anything, the rest is a regex, case-insensitive,
// whole name.
func hivePattern(p string) (*regexp.Regexp, error) {
	parts := strings.Split(strings.TrimSpace(p), "|")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(s, "*", ".*")
	}
	re, err := regexp.Compile("(?i)^(?:" + strings.Join(parts, "|") + ")$")
	if err != nil {
		return nil, fmt.Errorf("database pattern %q is not valid: %v", p, err)
	}
	return re, nil
}

// fanOut runs the legs of a fan-out plan through the policy chain in
// parallel; the first failure cancels the others and fails the call, naming
// its catalog. The answers are merged in catalog order.
func (r *Router) fanOut(ctx context.Context, req *request) {
	p, m := &req.plan, req.msg
	req.routed = true
	if len(p.Legs) == 1 {
		req.catalog = p.Legs[0].Cat.Name
	} else {
		req.fanout = true
	}
	xs := make([]Exchange, len(p.Legs))
	for i := range p.Legs {
		xs[i] = Exchange{req: req, Cat: p.Legs[i].Cat, Leg: &p.Legs[i]}
	}
	var err error
	if len(xs) == 1 {
		err = r.chain(ctx, &xs[0]) // nothing to overlap: no goroutine
	} else {
		g, gctx := errgroup.WithContext(ctx)
		for i := range xs {
			g.Go(func() error { return r.chain(gctx, &xs[i]) })
		}
		err = g.Wait()
	}
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			r.refuse(req, ref)
			return
		}
		var be *backendError
		if errors.As(err, &be) && r.metrics != nil {
			r.metrics.BackendFailure(be.cat.Name, "TTransportException")
		}
		msg := m.Name + ": " + err.Error()
		if len(xs) > 1 {
			msg = m.Name + " fans out to every catalog and " + err.Error()
		}
		r.refuse(req, &Refusal{Kind: RefuseMeta, Reason: "fanout_failed", Message: msg})
		return
	}
	var all []wire.Value
	for i := range xs {
		all = append(all, xs[i].results...)
	}
	elem := wire.TString
	if p.Merge == MergeTableMeta {
		elem = wire.TStruct
	}
	body := wire.Struct(wire.Field{ID: 0, V: wire.List(elem, all...)})
	req.out = wire.AppendMessage(req.out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
}

// execLeg runs one fan-out leg against its catalog.
func (r *Router) execLeg(ctx context.Context, x *Exchange) error {
	leg, id := x.Leg, x.req.info.ID
	var err error
	switch leg.Op {
	case LegDatabases:
		x.results, err = r.databasesOf(ctx, x, leg.BackendPattern, leg.Match)
	case LegTableMeta:
		x.results, err = r.tableMetaOf(ctx, x, leg.Args)
	case LegTableMetaOfMatching:
		var dbs []wire.Value
		if dbs, err = r.databasesOf(ctx, x, "", leg.Match); err != nil || len(dbs) == 0 {
			return err
		}
		names := make([]string, len(dbs))
		for i, d := range dbs {
			_, names[i], _ = r.ns.SplitDB(string(d.Str))
		}
		a := wire.Value{Type: wire.TStruct, Fields: append([]wire.Field(nil), leg.Args.Fields...)}
		a.Set(1, wire.Str(strings.Join(names, "|")))
		x.results, err = r.tableMetaOf(ctx, x, a)
	}
	_ = id
	return err
}

// tableMetaOf asks one catalog for table metadata (outward names) and hides
// what exposure hides.
func (r *Router) tableMetaOf(ctx context.Context, x *Exchange, args wire.Value) ([]wire.Value, error) {
	cat := x.Cat
	metas, err := r.callList(ctx, x.req.info.ID, cat, "get_table_meta", args, true)
	exp := r.policies[cat].exposure
	if err != nil || !exp.active() {
		return metas, err
	}
	var kept []wire.Value
	hidden := 0
	for _, tm := range metas {
		_, db, _ := r.ns.SplitDB(tm.Field(1).String())
		if exp.TableVisible(db, tm.Field(2).String()) {
			kept = append(kept, tm)
		} else {
			hidden++
		}
	}
	if hidden > 0 && r.metrics != nil {
		r.metrics.FilteredObjects(x.Method(), cat.Name, "table", hidden)
	}
	return kept, nil
}

// databasesOf lists one catalog's databases in external form, filtered by
// exposure (counted) and by an optional pattern on the external names.
func (r *Router) databasesOf(ctx context.Context, x *Exchange, backendPattern string, match *regexp.Regexp) ([]wire.Value, error) {
	cat := x.Cat
	var names []wire.Value
	var err error
	if backendPattern == "" {
		names, err = r.callList(ctx, x.req.info.ID, cat, "get_all_databases", wire.Struct(), false)
	} else {
		names, err = r.callList(ctx, x.req.info.ID, cat, "get_databases", wire.Struct(wire.Field{ID: 1, V: wire.Str(backendPattern)}), false)
	}
	if err != nil {
		return nil, err
	}
	exp := r.policies[cat].exposure
	var out []wire.Value
	hidden := 0
	for _, e := range names {
		db := string(e.Str)
		if exp.active() && !exp.DBVisible(db) {
			hidden++
			continue
		}
		ext := r.ns.ExternalDB(cat, db)
		if match != nil && !match.MatchString(ext) {
			continue
		}
		out = append(out, wire.Str(ext))
	}
	if hidden > 0 && r.metrics != nil {
		r.metrics.FilteredObjects(x.Method(), cat.Name, "database", hidden)
	}
	return out, nil
}
