package router

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/hms-proxy/hms-proxy/wire"
)

// callValue sends a call built from a Value to one catalog and returns the
// decoded result struct, with backend exceptions turned into errors that
// name the catalog.
func (r *Router) callValue(ctx context.Context, cat *Catalog, method string, args wire.Value, outward bool) (wire.Value, error) {
	req := wire.AppendMessage(nil, wire.Header{Name: method, Type: wire.Call, SeqID: 1}, &args)
	ri := Info(ctx)
	if r.trace != nil && ri != nil {
		r.trace.Backend(ri.ID, cat.Name, req)
	}
	reply, done, err := r.backends[cat].Call(ctx, req, true)
	if r.trace != nil && ri != nil {
		r.trace.BackendReply(ri.ID, cat.Name, reply, err)
	}
	if err != nil {
		if r.metrics != nil {
			r.metrics.BackendFailure(cat.Name, "TTransportException")
		}
		return wire.Value{}, fmt.Errorf("catalog %s: %v", cat.Name, err)
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
	for _, f := range v.Fields {
		if f.ID != 0 && f.V.Type == wire.TStruct {
			if r.metrics != nil {
				r.metrics.BackendFailure(cat.Name, "MetaException")
			}
			return v, fmt.Errorf("catalog %s: %s failed: %s", cat.Name, method, f.V.Field(1).String())
		}
	}
	return v, nil
}

// callList calls a list-returning method and returns the list's elements.
func (r *Router) callList(ctx context.Context, cat *Catalog, method string, args wire.Value, outward bool) ([]wire.Value, error) {
	v, err := r.callValue(ctx, cat, method, args, outward)
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

// fanOut runs fn for every catalog in parallel and returns the results in
// catalog order; the first failure fails the whole call, naming the catalog.
func (r *Router) fanOut(cats []*Catalog, fn func(*Catalog) ([]wire.Value, error)) ([]wire.Value, error) {
	if len(cats) == 1 {
		return fn(cats[0]) // nothing to overlap: no goroutine
	}
	results := make([][]wire.Value, len(cats))
	errs := make([]error, len(cats))
	var wg sync.WaitGroup
	for i, cat := range cats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = fn(cat)
		}()
	}
	wg.Wait()
	var all []wire.Value
	for i := range cats {
		if errs[i] != nil {
			return nil, errs[i]
		}
		all = append(all, results[i]...)
	}
	return all, nil
}

func (r *Router) replyList(c *call, out []byte, elemType byte, elems []wire.Value) []byte {
	m := c.msg
	body := wire.Struct(wire.Field{ID: 0, V: wire.List(elemType, elems...)})
	return wire.AppendMessage(out, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
}

// databasesOf lists one catalog's databases in external form, filtered by
// exposure (counted) and by an optional pattern on the external names.
func (r *Router) databasesOf(ctx context.Context, c *call, cat *Catalog, backendPattern string, match *regexp.Regexp) ([]wire.Value, error) {
	var names []wire.Value
	var err error
	if backendPattern == "" {
		names, err = r.callList(ctx, cat, "get_all_databases", wire.Struct(), false)
	} else {
		names, err = r.callList(ctx, cat, "get_databases", wire.Struct(wire.Field{ID: 1, V: wire.Str(backendPattern)}), false)
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
		r.metrics.FilteredObjects(c.msg.Name, cat.Name, "database", hidden)
	}
	return out, nil
}

// fanOutDatabases serves get_all_databases and get_databases(pattern).
func (r *Router) fanOutDatabases(ctx context.Context, c *call, out []byte) []byte {
	m := c.msg
	pattern := ""
	var only *Catalog
	if m.Name == "get_databases" {
		v, err := wire.DecodeStruct(m.Body())
		if err != nil {
			return r.refuse(c, out, "get_databases: cannot read arguments: "+err.Error())
		}
		// Hive 3 clients send "@<catalog>#<pattern>"; "@hive#" alone means
		// every database (getAllDatabases).
		ref := parseDBRef(v.Field(1).String())
		only, pattern = r.ns.markerCatalog(ref), ref.name
	}
	if only != nil {
		c.catalog, c.routed = only.Name, true
		p := pattern
		if p == "" {
			p = "*"
		}
		dbs, err := r.databasesOf(ctx, c, only, "", nil)
		if err == nil && p != "*" {
			var re *regexp.Regexp
			if re, err = hivePattern(p); err == nil {
				var kept []wire.Value
				for _, d := range dbs {
					_, internal, _ := r.ns.SplitDB(string(d.Str))
					if re.MatchString(internal) || re.MatchString(string(d.Str)) {
						kept = append(kept, d)
					}
				}
				dbs = kept
			}
		}
		if err != nil {
			return r.refuse(c, out, m.Name+": "+err.Error())
		}
		return r.replyList(c, out, wire.TString, dbs)
	}
	if pattern != "" {
		if cat, rest, ok := r.ns.SplitPattern(pattern); ok {
			c.catalog, c.routed = cat.Name, true
			dbs, err := r.databasesOf(ctx, c, cat, rest, nil)
			if err != nil {
				return r.refuse(c, out, m.Name+": "+err.Error())
			}
			return r.replyList(c, out, wire.TString, dbs)
		}
	}
	var match *regexp.Regexp
	if pattern != "" && pattern != "*" {
		var err error
		if match, err = hivePattern(pattern); err != nil {
			return r.refuse(c, out, m.Name+": "+err.Error())
		}
	}
	c.fanout, c.routed = true, true
	all, err := r.fanOut(r.ns.Catalogs(), func(cat *Catalog) ([]wire.Value, error) {
		if cat.Default && pattern != "" {
			// The default catalog's names are unprefixed: its backend can
			// apply the pattern itself.
			return r.databasesOf(ctx, c, cat, pattern, nil)
		}
		return r.databasesOf(ctx, c, cat, "", match)
	})
	if err != nil {
		return r.refuse(c, out, m.Name+" fans out to every catalog and "+err.Error())
	}
	return r.replyList(c, out, wire.TString, all)
}

// fanOutTableMeta serves get_table_meta(db_patterns, tbl_patterns, tbl_types).
func (r *Router) fanOutTableMeta(ctx context.Context, c *call, out []byte) []byte {
	m := c.msg
	args, err := wire.DecodeStruct(m.Body())
	if err != nil {
		return r.refuse(c, out, "get_table_meta: cannot read arguments: "+err.Error())
	}
	// Hive 3 clients send "@<catalog>#<pattern>": a proxy catalog there
	// narrows the call to that catalog; a backend name ("hive") does not.
	ref := parseDBRef(args.Field(1).String())
	dbPattern := ref.name
	if mc := r.ns.markerCatalog(ref); mc != nil {
		dbPattern = mc.Name + r.ns.Separator() + dbPattern
	}
	call := func(cat *Catalog, backendDBPattern string) ([]wire.Value, error) {
		a := wire.Value{Type: wire.TStruct, Fields: append([]wire.Field(nil), args.Fields...)}
		a.Set(1, wire.Str(backendDBPattern))
		metas, err := r.callList(ctx, cat, "get_table_meta", a, true)
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
			r.metrics.FilteredObjects(m.Name, cat.Name, "table", hidden)
		}
		return kept, nil
	}
	if cat, rest, ok := r.ns.SplitPattern(dbPattern); ok {
		c.catalog, c.routed = cat.Name, true
		metas, err := call(cat, rest)
		if err != nil {
			return r.refuse(c, out, m.Name+": "+err.Error())
		}
		return r.replyList(c, out, wire.TStruct, metas)
	}
	var match *regexp.Regexp
	if dbPattern != "" && dbPattern != "*" {
		if match, err = hivePattern(dbPattern); err != nil {
			return r.refuse(c, out, m.Name+": "+err.Error())
		}
	}
	c.fanout, c.routed = true, true
	all, err := r.fanOut(r.ns.Catalogs(), func(cat *Catalog) ([]wire.Value, error) {
		if cat.Default || match == nil {
			p := dbPattern
			if !cat.Default || p == "" {
				p = "*"
			}
			return call(cat, p)
		}
		// Match the client's pattern against this catalog's external names,
		// then ask the backend for exactly those databases.
		dbs, err := r.databasesOf(ctx, c, cat, "", match)
		if err != nil || len(dbs) == 0 {
			return nil, err
		}
		names := make([]string, len(dbs))
		for i, d := range dbs {
			_, names[i], _ = r.ns.SplitDB(string(d.Str))
		}
		return call(cat, strings.Join(names, "|"))
	})
	if err != nil {
		return r.refuse(c, out, m.Name+" fans out to every catalog and "+err.Error())
	}
	return r.replyList(c, out, wire.TStruct, all)
}
