package router

import (
	"context"
	"errors"
	"strings"

	"github.com/hms-proxy/hms-proxy/router/dbcache"
	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/wire"
)

// The database metadata cache (routing.database-metadata-cache.*) holds
// backend reply bodies of get_database and get_database_req (native, or the
// adapter's answer when the call is adapted), keyed by catalog, backend
// database name and, for get_database_req, the whole request; a hit is a
// copy of the cached bytes rewritten outward like a backend reply. Database
// writes through the proxy invalidate (invalidateDatabases).

// metadataCached are the methods the metadata cache serves.
var metadataCached = map[string]bool{"get_database": true, "get_database_req": true}

// Shared across users (routing.database-*-cache.shared-across-users), the
// caches also hold tables, filled once for every caller and filtered per
// caller by Ranger (ranger.go) on the way out: the metadata cache the table
// objects (sharedTableObjects), the list cache the table lists of a
// database (sharedTableLists). Their entries are keyed by the database, so
// a write naming it, through this replica or any other (cachesync), drops
// them (invalidateDatabases, cacheWrite).
var (
	sharedTableObjects = map[string]bool{"get_table": true, "get_table_req": true,
		"get_table_objects_by_name": true, "get_table_objects_by_name_req": true}
	sharedTableLists = map[string]bool{"get_all_tables": true, "get_tables": true, "get_tables_by_type": true}
)

// cacheKind is the cache a single-catalog read is served from, ok false
// when none serves it.
func (r *Router) cacheKind(method string) (dbcache.Kind, bool) {
	c := r.res.cache
	switch {
	case metadataCached[method] && c.Enabled(dbcache.DatabaseMetadata):
		return dbcache.DatabaseMetadata, true
	case sharedTableObjects[method] && c.Shared(dbcache.DatabaseMetadata):
		return dbcache.DatabaseMetadata, true
	case sharedTableLists[method] && c.Shared(dbcache.DatabaseList):
		return dbcache.DatabaseList, true
	}
	return "", false
}

// tablesCached reports whether a cache holds tables (shared across users).
func (r *Router) tablesCached() bool {
	c := r.res.cache
	return c.Shared(dbcache.DatabaseMetadata) || c.Shared(dbcache.DatabaseList)
}

// cacheWrite reports whether a write may change what the caches hold: a
// database write, or, while they hold tables, any write naming a database
// or table.
func (r *Router) cacheWrite(spec *methods.Spec) bool {
	return spec.DatabaseWrite || spec.IsWrite() && spec.Objects != nil && r.tablesCached()
}

// metadataKey is the cache key of a single-catalog call the caches serve
// (cacheKind), ok false when none does.
func (r *Router) metadataKey(x *Exchange, args []byte, adapted bool) (dbcache.Key, bool) {
	p := x.Plan()
	if _, ok := r.cacheKind(x.Method()); !ok || len(p.DBs) == 0 {
		return dbcache.Key{}, false
	}
	// p.DBs are views of the request buffer: the cache keeps its key.
	k := dbcache.Key{Catalog: x.Cat.Name, Name: strings.Clone(p.DBs[0]), User: userKey(x.Identity())}
	if x.Method() != "get_database" || adapted {
		// get_database's only argument is the name; other requests carry
		// more that the answer may depend on.
		k.Variant = x.Method() + "\x00" + string(args)
	}
	return k, true
}

// loaderIdentity is the identity a cache loader calls the backend as: the
// caller's, unless the cache is shared (then the proxy's own, whoever asked
// first, so that a shared entry does not depend on who that was).
func (r *Router) loaderIdentity(kind dbcache.Kind, id *security.Identity) *security.Identity {
	if r.res.cache.Shared(kind) {
		return nil
	}
	return id
}

// withIdentity is a context for a loader: backendFor picks the pool of id.
func withIdentity(ctx context.Context, method string, id *security.Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, &RequestInfo{Method: method, Identity: id})
}

// execCachedNative serves a native get_database* call from the metadata
// cache: req is the whole call as it would be sent (backend names).
func (r *Router) execCachedNative(ctx context.Context, x *Exchange, key dbcache.Key, req []byte) error {
	cat, m := x.Cat, x.req.msg
	kind, _ := r.cacheKind(m.Name)
	id := r.loaderIdentity(kind, x.Identity())
	call := append([]byte(nil), req...)
	load := func(ctx context.Context) ([]byte, bool, error) {
		ctx = withIdentity(ctx, m.Name, id)
		b, err := r.lane(cat).backendFor(ctx)
		if err != nil {
			return nil, false, &backendError{cat: cat, err: err}
		}
		own := append([]byte(nil), call...) // the pool stamps its sequence id into the call
		reply, done, err := b.Call(ctx, own, true)
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
	return r.serveCached(ctx, x, key, load)
}

// serveCached answers x from the metadata cache (or the load it joins).
func (r *Router) serveCached(ctx context.Context, x *Exchange, key dbcache.Key, load dbcache.Loader) error {
	bufp := r.bufs.Get().(*[]byte)
	defer r.bufs.Put(bufp)
	val, err := r.cachedReply(ctx, x, key, (*bufp)[:0], load)
	*bufp = val[:0]
	if err != nil {
		return err
	}
	m := x.req.msg
	reply := &wire.Message{Header: wire.Header{Name: m.Name, Type: val[0], SeqID: m.SeqID}, Raw: val, BodyOff: 1}
	return r.replyOutward(x, reply, nil)
}

// cachedReply gets a cached reply (its message type, then its body).
func (r *Router) cachedReply(ctx context.Context, x *Exchange, key dbcache.Key, dst []byte, load dbcache.Loader) ([]byte, error) {
	kind, _ := r.cacheKind(x.Method())
	val, _, err := r.res.cache.Get(ctx, kind, key, dst, load)
	if err == nil && len(val) == 0 {
		err = &backendError{cat: x.Cat, err: errors.New("empty cached reply")}
	}
	return val, err
}

// invalidateDatabases drops the cache entries a database write through the
// proxy may have changed: that database's metadata (every caller's) and its
// catalog's database lists. It runs whatever the answer once the call was
// sent (a write that timed out may still have happened); a call refused
// before it reached the backend changes nothing.
func (r *Router) invalidateDatabases(next Handler) Handler {
	return func(ctx context.Context, x *Exchange) error {
		if x.Leg != nil || r.res.cache == nil || !r.cacheWrite(x.Spec()) {
			return next(ctx, x)
		}
		err := next(ctx, x)
		var be *backendError
		if err == nil || errors.As(err, &be) {
			dbs := x.Plan().DBs
			if len(dbs) == 0 {
				r.res.cache.InvalidateCatalog(x.Cat.Name)
			}
			for _, db := range dbs {
				r.res.cache.InvalidateDatabase(x.Cat.Name, db)
			}
		}
		return err
	}
}
